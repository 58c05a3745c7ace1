package experiment

import (
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// TestRunTraceKeepsCheckedRecord: Run's server checks the privacy record
// it is given and keeps its own copy, but the evaluator recorded the
// caller's Config.Privacy at every evaluated round: a record changed
// during the run (here by OnRound, which runs on the run's goroutine,
// after round 1: its eps lowered from the target's 5 to 0.01) entered the
// trace as the guarantee of the later rounds, a claim no server checked.
// Every round of the trace must state the (5, 1e-3) the server checked.
func TestRunTraceKeepsCheckedRecord(t *testing.T) {
	const n, R, tau, d = 2, 4, 1, 3
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	pl := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: factorize.StrategyIdentity, Rounds: R, Learners: n, Tau: tau, Clip: 1, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	f, err := pl.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pr, err := fedopt.PrivacyOf(pl)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mechanism.New(f, p.Model.NumParams(d), pr.NoiseStd, mechanism.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr,
		OnRound: func(done int) {
			if done == 1 {
				pr.Eps = 0.01
			}
		}}
	tr, err := Run(t.Context(), p, cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Privacy) != R+1 {
		t.Fatalf("%d records in the trace, want one per evaluated round (%d)", len(tr.Privacy), R+1)
	}
	for _, rec := range tr.Privacy {
		if rec.Eps != 5 || rec.Delta != 1e-3 {
			t.Errorf("round %d: the trace states (%v, %v)-DP, want the (5, 1e-3) the server checked", rec.Round, rec.Eps, rec.Delta)
		}
	}
}
