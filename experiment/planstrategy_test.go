package experiment

import (
	"strings"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// An Experiment given a Factorization records in Result.Plan the strategy
// that computed it, with its settings: the calibrated plan must describe
// its own factorization. Before, the plan took the factorization's
// strategy name only ("banded" for banded:bands=2), overwriting the spec
// Plan.Strategy gave, so the plan's factorization was another (the
// default bands) than the one its record's metrics and operator digest
// were of: Plan.VerifyRecord refused it, and a server built from it
// streams other noise. The check is Plan.VerifyRecord, which computes the
// plan's factorization again; a factorization of other settings than the
// plan's strategy is an error naming both.
func TestPlanNamesGivenFactorization(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 6}.Dataset(5, 40, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	w, err := factorize.Prefix(p.Data.Rounds)
	if err != nil {
		t.Fatal(err)
	}
	f, err := factorize.BandedStrategy{Bands: 2}.Factorize(t.Context(), w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	run := func(spec string) (*Result, error) {
		e := Experiment{Problem: p, Config: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1}, Factorization: f,
			Plan: &plan.Plan{Strategy: spec, Target: &plan.Target{Eps: 1, Delta: 1e-5}}, Repeat: RepeatOptions{Reps: 1}}
		return e.Run(t.Context())
	}
	res, err := run("banded:bands=2")
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Strategy != "banded:bands=2" {
		t.Errorf("plan strategy %q, want banded:bands=2", res.Plan.Strategy)
	}
	if err := res.Plan.VerifyRecord(t.Context()); err != nil {
		t.Errorf("the calibrated plan is not of its factorization: %v", err)
	}
	for _, spec := range []string{"", "banded:bands=3", "sqrt"} {
		if _, err := run(spec); err == nil || !strings.Contains(err.Error(), "banded/bands=2") {
			t.Errorf("plan strategy %q with a banded:bands=2 factorization: err %v, want one naming the factorization's strategy key", spec, err)
		}
	}
}
