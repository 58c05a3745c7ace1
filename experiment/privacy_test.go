package experiment

import (
	"context"
	"math"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// An experiment calibrates, builds the mechanisms from the factorization and
// records the privacy every evaluated round; a mechanism whose std differs
// from the calibration is refused.
func TestExperimentPrivacy(t *testing.T) {
	const n, R, tau, d = 4, 30, 2, 5
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	for _, algo := range []fedopt.Algorithm{fedopt.Correlated, fedopt.Independent, fedopt.BaselineCorrelated} {
		e := Experiment{
			Problem: p,
			Config:  fedopt.Config{Algorithm: algo, Eta: 0.05, EtaG: 1, Clip: 1.5, EvalEvery: 10},
			Plan:    &plan.Plan{Strategy: factorize.StrategySqrt, Target: &plan.Target{Eps: 2, Delta: 1e-5}},
			Repeat:  RepeatOptions{Reps: 2},
			Seed:    3,
			Seeded:  true,
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		w, _ := factorize.Prefix(R)
		gamma, strategy := 1.0, factorize.StrategyIdentity
		if algo != fedopt.Independent {
			f, _ := factorize.SqrtStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
			gamma, strategy = f.Metrics.Gamma, factorize.StrategySqrt
		}
		sens := 2 * gamma * 1.5 / n
		want, _ := accountant.NoiseStd(2, 1e-5, sens, accountant.Exact)
		if res.Factorization.Strategy != strategy || math.Abs(res.Privacy.Sensitivity-sens) > 1e-15*sens || res.Privacy.NoiseStd != want {
			t.Errorf("%v: %s factorization, sensitivity %v, std %v; want %s, %v, %v", algo, res.Factorization.Strategy, res.Privacy.Sensitivity, res.Privacy.NoiseStd, strategy, sens, want)
		}
		for _, tr := range res.Summary.Traces {
			if len(tr.Privacy) != len(tr.Rounds) || tr.Privacy[1].Round != 10 || tr.Privacy[1].NoiseStd != want {
				t.Errorf("%v: privacy records %+v", algo, tr.Privacy)
			}
		}
		// The same calibration with another std is refused.
		f := res.Factorization
		m, err := FactorizationNoise(f, d, 2*want, 1)(0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.Config
		cfg.Privacy = res.Privacy
		if _, err := Run(t.Context(), p, cfg, m); err == nil {
			t.Errorf("%v: mechanism with twice the calibrated std accepted", algo)
		}
		cfg.Clip = 3
		m, _ = FactorizationNoise(f, d, want, 1)(0)
		if _, err := Run(t.Context(), p, cfg, m); err == nil {
			t.Errorf("%v: calibration for another clipping bound accepted", algo)
		}
	}
	// A factorization for another number of rounds is refused.
	w, _ := factorize.Prefix(R + 1)
	id, _ := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	e := Experiment{Problem: p, Config: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1}, Factorization: id, Plan: &plan.Plan{Target: &plan.Target{Eps: 1, Delta: 1e-5}}, Repeat: RepeatOptions{Reps: 1}}
	if _, err := e.Run(t.Context()); err == nil {
		t.Error("factorization for R+1 rounds accepted")
	}
}

// With the real mechanism (optimal factorization), learners in goroutines
// give the same numbers bit for bit.
func TestExperimentParallelLearners(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 6}.Dataset(5, 40, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	run := func(par bool) *Summary {
		e := Experiment{
			Problem: p,
			Config:  fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.05, EtaG: 1, Clip: 1, EvalEvery: 8, ParallelLearners: par},
			Plan:    &plan.Plan{Target: &plan.Target{Eps: 1, Delta: 1e-5}},
			Repeat:  RepeatOptions{Reps: 3},
			Seed:    5,
			Seeded:  true,
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if res.Factorization.Strategy != factorize.StrategyOptimal {
			t.Fatalf("default strategy %s", res.Factorization.Strategy)
		}
		return res.Summary
	}
	seq, par := run(false), run(true)
	for k := range seq.Traces {
		a, b := seq.Traces[k], par.Traces[k]
		if !testutil.SameBits(a.X, b.X) || !testutil.SameBits(a.LossError, b.LossError) || !testutil.SameBits(a.Regret, b.Regret) || !testutil.SameBits(a.Accuracy, b.Accuracy) {
			t.Errorf("repetition %d differs between sequential and parallel learners", k)
		}
	}
}

// Convergence with privacy: n = 10, tau = 5, R = 200 on synthetic(0.1, 0.1)
// with d = 60 at (5, 1e-3)-DP, exact calibration, the optimal
// factorization, B_g = 5, eta = 0.01: the mean final loss error over 4
// repetitions is below 0.08 (from 0.48 at x^0), and below 0.4 at
// (1, 1e-3), where the noise std is about 3.7 times larger.
func TestConvergencePrivate(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 200, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-4})
	for _, c := range []struct{ eps, bound float64 }{{5, 0.08}, {1, 0.4}} {
		e := Experiment{
			Problem: p,
			Config:  fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.01, EtaG: 1, Clip: 5, EvalEvery: 100},
			Plan:    &plan.Plan{Target: &plan.Target{Eps: c.eps, Delta: 1e-3}},
			Repeat:  RepeatOptions{Reps: 4},
			Seed:    1,
			Seeded:  true,
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		mean, std, _, _ := res.Summary.Final()
		t.Logf("eps %v: final loss error %.4f +- %.4f", c.eps, mean, std)
		if mean > c.bound {
			t.Errorf("eps %v: final loss error %v, want < %v", c.eps, mean, c.bound)
		}
	}
}

// With the identity factorization fedopt.BaselineCorrelated is the fedopt.Independent
// baseline: same sensitivity (gamma = 1), same noise for the same seed,
// the same numbers bit for bit.
func TestBaselineCorrelatedIdentityIsIndependent(t *testing.T) {
	const n, R, tau, d = 3, 20, 3, 4
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 5)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	run := func(algo fedopt.Algorithm, strategy string) *Result {
		e := Experiment{
			Problem: p,
			Config:  fedopt.Config{Algorithm: algo, Eta: 0.05, EtaG: 1, EtaInd: 0.1, Clip: 1, EvalEvery: 5},
			Plan:    &plan.Plan{Strategy: strategy, Target: &plan.Target{Eps: 1, Delta: 1e-5}},
			Repeat:  RepeatOptions{Reps: 3},
			Seed:    7,
			Seeded:  true,
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ind := run(fedopt.Independent, "")
	bc := run(fedopt.BaselineCorrelated, factorize.StrategyIdentity)
	if bc.Privacy.NoiseStd != ind.Privacy.NoiseStd || bc.Privacy.Sensitivity != ind.Privacy.Sensitivity {
		t.Errorf("std %v, sensitivity %v; independent %v, %v", bc.Privacy.NoiseStd, bc.Privacy.Sensitivity, ind.Privacy.NoiseStd, ind.Privacy.Sensitivity)
	}
	for k := range ind.Summary.Traces {
		a, b := ind.Summary.Traces[k], bc.Summary.Traces[k]
		if !testutil.SameBits(a.X, b.X) || !testutil.SameBits(a.LossError, b.LossError) || !testutil.SameBits(a.Regret, b.Regret) {
			t.Errorf("repetition %d: baseline-correlated with identity differs from independent", k)
		}
	}
	// A non-trivial factorization changes the noise.
	sq := run(fedopt.BaselineCorrelated, factorize.StrategySqrt)
	if testutil.SameBits(sq.Summary.Traces[0].X, ind.Summary.Traces[0].X) {
		t.Error("sqrt factorization gave the independent baseline's numbers")
	}
}

// A data set replayed for k epochs is fixed-epoch participation; the
// experiment calibrates to the factorization's sensitivity under it: for
// the identity (the baseline's noise) sqrt(k) times the single-participation
// sensitivity, by hand.
func TestExperimentEpochs(t *testing.T) {
	const n, R, tau, d, k = 3, 8, 2, 4, 3
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 5)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ds.Epochs(k)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds != k*R || rep.Validate() != nil {
		t.Fatalf("replayed data: %d rounds, %v", rep.Rounds, rep.Validate())
	}
	for r := 0; r < k*R; r++ {
		x, y := rep.Sample(1, r, 1)
		x0, y0 := ds.Sample(1, r%R, 1)
		if y != y0 || x[0] != x0[0] {
			t.Fatalf("round %d is not round %d of the data", r, r%R)
		}
	}
	p := mustProblem(t, rep, model.Logistic{L2: 1e-3})
	e := Experiment{
		Problem: p,
		Config:  fedopt.Config{Algorithm: fedopt.Independent, Eta: 0.05, EtaG: 1, EtaInd: 0.1, Clip: 1, EvalEvery: 8},
		Plan:    &plan.Plan{Participation: "epochs:3", Target: &plan.Target{Eps: 1, Delta: 1e-5}},
		Repeat:  RepeatOptions{Reps: 1},
		Seed:    1,
		Seeded:  true,
	}
	res, err := e.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := math.Sqrt(k) * 2 * 1 / n
	if math.Abs(res.Privacy.Sensitivity-want) > 1e-15*want || res.Privacy.Participation != "epochs:3" {
		t.Errorf("sensitivity %v under %s, want %v under epochs:3", res.Privacy.Sensitivity, res.Privacy.Participation, want)
	}
	e.Plan = &plan.Plan{Participation: "epochs:5", Target: e.Plan.Target} // 24 rounds are not 5 epochs
	if _, err := e.Run(t.Context()); err == nil {
		t.Error("no error for 5 epochs of 24 rounds")
	}
	if _, err := ds.Epochs(0); err == nil {
		t.Error("no error for 0 epochs")
	}
}

// An experiment's plan may leave the algorithm, learners, rounds and
// clipping bound to the experiment; setting one otherwise is an error, and
// the plan given is not modified.
func TestExperimentPlanAgrees(t *testing.T) {
	e := Experiment{Config: fedopt.Config{Algorithm: fedopt.Correlated, Clip: 2}, Plan: &plan.Plan{Strategy: "sqrt", Target: &plan.Target{Eps: 1, Delta: 1e-5}}}
	_, p, err := e.noise(t.Context(), 3, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Algorithm != "correlated" || p.Learners != 3 || p.Rounds != 8 || p.Tau != 2 || p.Clip != 2 || p.Privacy == nil || e.Plan.Learners != 0 || e.Plan.Privacy != nil {
		t.Errorf("plan %+v; given %+v", p, e.Plan)
	}
	for _, bad := range []plan.Plan{{Learners: 4}, {Rounds: 9}, {Tau: 3}, {Clip: 1}, {Algorithm: "independent"}} {
		bad.Target = e.Plan.Target
		if _, _, err := (&Experiment{Config: e.Config, Plan: &bad}).noise(t.Context(), 3, 8, 2); err == nil {
			t.Errorf("plan %+v accepted for n = 3, R = 8, tau = 2, clip 2", bad)
		}
	}
	// The experiment's tau reaches the plan, so add/remove neighbours,
	// which do not hold for Algorithm 1 with local steps
	// (fedopt.TestAddRemoveAlgorithm1), are refused at tau = 2.
	ar := Experiment{Config: e.Config, Plan: &plan.Plan{Target: &plan.Target{Eps: 1, Delta: 1e-5, Relation: "add-remove"}}}
	if _, p, err := ar.noise(t.Context(), 3, 8, 2); err == nil {
		t.Errorf("Algorithm 1 with tau = 2 under add/remove calibrated at sensitivity %v", p.Privacy.Sensitivity)
	}
	e.Config.Algorithm = fedopt.NonPrivate
	if _, _, err := e.noise(t.Context(), 3, 8, 2); err == nil {
		t.Error("noise of the nonprivate algorithm")
	}
}

// At tau = 1 fedopt.BaselineCorrelated's update is Algorithm 1's: one
// clipped gradient at x^r per learner, the same sensitivity 2 gamma B_g / n
// and the same noise, so with the same server step (eta eta_g = eta_ind)
// and seed the two release the same models bit for bit, as
// docs/beyond.md says of its tau = 1 row. At tau = 2 they differ (local
// steps).
func TestBaselineCorrelatedIsAlgorithm1AtTau1(t *testing.T) {
	const n, R, d = 3, 20, 4
	run := func(algo fedopt.Algorithm, tau int) *Result {
		ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 5)
		if err != nil {
			t.Fatal(err)
		}
		e := Experiment{
			Problem: mustProblem(t, ds, model.Logistic{L2: 1e-3}),
			Config:  fedopt.Config{Algorithm: algo, Eta: 0.05, EtaG: 2, EtaInd: 0.1, Clip: 1, EvalEvery: 5},
			Plan:    &plan.Plan{Target: &plan.Target{Eps: 1, Delta: 1e-5}},
			Repeat:  RepeatOptions{Reps: 2},
			Seed:    7,
			Seeded:  true,
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a1, bc := run(fedopt.Correlated, 1), run(fedopt.BaselineCorrelated, 1)
	if a1.Privacy.NoiseStd != bc.Privacy.NoiseStd || a1.Privacy.Sensitivity != bc.Privacy.Sensitivity {
		t.Errorf("std %v, sensitivity %v; Algorithm 1 %v, %v", bc.Privacy.NoiseStd, bc.Privacy.Sensitivity, a1.Privacy.NoiseStd, a1.Privacy.Sensitivity)
	}
	for k := range a1.Summary.Traces {
		a, b := a1.Summary.Traces[k], bc.Summary.Traces[k]
		if !testutil.SameBits(a.X, b.X) || !testutil.SameBits(a.LossError, b.LossError) || !testutil.SameBits(a.Regret, b.Regret) {
			t.Errorf("repetition %d: at tau = 1 baseline-correlated differs from Algorithm 1", k)
		}
	}
	if testutil.SameBits(run(fedopt.Correlated, 2).Summary.Traces[0].X, run(fedopt.BaselineCorrelated, 2).Summary.Traces[0].X) {
		t.Error("at tau = 2 baseline-correlated gave Algorithm 1's numbers")
	}
}
