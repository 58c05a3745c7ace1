package experiment

import (
	"slices"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// An Experiment that asks for no seed (the zero value of Seeded) draws
// every repetition's noise key from crypto/rand and says so: two runs of
// it differ (two 256-bit keys agree with probability 2^-256) and
// Result.NoiseSeeded is false. Before, the noise was seeded with
// RepSeed(Seed, k) whatever the caller asked, Seed = 0 included, so every
// such "real" run drew the same public noise. A seeded run repeats bit for
// bit and has NoiseSeeded true (not for a release); a NonPrivate run has
// no noise and NoiseSeeded false.
func TestExperimentNoiseKey(t *testing.T) {
	const n, R, tau, d = 3, 12, 2, 4
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	run := func(algo fedopt.Algorithm, seeded bool) *Result {
		t.Helper()
		e := Experiment{
			Problem: p,
			Config:  fedopt.Config{Algorithm: algo, Eta: 0.05, EtaG: 1, Clip: 1.5, EvalEvery: 4},
			Repeat:  RepeatOptions{Reps: 2},
			Seed:    3,
			Seeded:  seeded,
		}
		if algo.Private() {
			e.Plan = &plan.Plan{Strategy: factorize.StrategySqrt, Target: &plan.Target{Eps: 2, Delta: 1e-5}}
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(fedopt.Correlated, false), run(fedopt.Correlated, false)
	if a.NoiseSeeded || b.NoiseSeeded {
		t.Error("a run without Seeded reports NoiseSeeded")
	}
	if slices.Equal(a.Summary.LossErrorMean, b.Summary.LossErrorMean) {
		t.Errorf("two runs without Seeded have the same loss errors %v: their noise was not drawn from crypto/rand", a.Summary.LossErrorMean)
	}
	a, b = run(fedopt.Correlated, true), run(fedopt.Correlated, true)
	if !a.NoiseSeeded || !b.NoiseSeeded {
		t.Error("a seeded run does not report NoiseSeeded")
	}
	if !slices.Equal(a.Summary.LossErrorMean, b.Summary.LossErrorMean) {
		t.Errorf("two runs with Seed 3 differ: %v, %v", a.Summary.LossErrorMean, b.Summary.LossErrorMean)
	}
	if r := run(fedopt.NonPrivate, true); r.NoiseSeeded {
		t.Error("a NonPrivate run reports NoiseSeeded")
	}
}
