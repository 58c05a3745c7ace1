package experiment

import (
	"math"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/model"
)

// x* and the per-round minimisers have (independently computed) gradients
// below tolerance, the per-round minimum is at most the round's loss at x*,
// and no model has a negative loss error.
func TestNewProblemReferences(t *testing.T) {
	const n, R, tau, d, l2 = 3, 12, 4, 6, 1e-3
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 5)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: l2})
	avgGrad := func(x []float64, s dataset.Samples) float64 {
		g := make([]float64, d)
		for j := 0; j < s.Len(); j++ {
			gj := logisticGrad(x, s.Row(j), s.Y[j], l2)
			for k := range g {
				g[k] += gj[k] / float64(s.Len())
			}
		}
		return math.Sqrt(dot(g, g))
	}
	if g := avgGrad(p.XStar, ds.All()); g > 1e-9 {
		t.Errorf("gradient norm at x* = %g", g)
	}
	for r := 0; r < R; r++ {
		if p.RoundStar[r] > p.RoundAtXStar[r] {
			t.Errorf("round %d: (f^r)* = %v > f^r(x*) = %v", r, p.RoundStar[r], p.RoundAtXStar[r])
		}
	}
	tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1}, gaussNoise(R, d, 0.5, 1))
	for k, e := range tr.LossError {
		if e < -1e-12 {
			t.Errorf("round %d: negative loss error %g", tr.Rounds[k], e)
		}
	}
	// Every round's dynamic regret term is >= 0, so the regret never
	// decreases, and it is at least the static regret.
	for k := 1; k < len(tr.Regret); k++ {
		if tr.Regret[k] < tr.Regret[k-1] || tr.Regret[k] < tr.StaticRegret[k]-1e-9 {
			t.Errorf("round %d: regret %v after %v, static %v", tr.Rounds[k], tr.Regret[k], tr.Regret[k-1], tr.StaticRegret[k])
		}
	}
	// The results do not depend on the number of workers.
	q, err := NewProblem(t.Context(), ds, model.Logistic{L2: l2}, ProblemOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !testutil.SameBits(p.RoundStar, q.RoundStar) || !testutil.SameBits(p.XStar, q.XStar) {
		t.Error("per-round minima depend on the number of workers")
	}
	// NoDynamic: the dynamic regret is NaN, the static one is computed.
	nd, err := NewProblem(t.Context(), ds, model.Logistic{L2: l2}, ProblemOptions{NoDynamic: true})
	if err != nil {
		t.Fatal(err)
	}
	tn := mustRun(t, nd, fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}, nil)
	if !math.IsNaN(tn.Regret[1]) || math.IsNaN(tn.StaticRegret[1]) {
		t.Errorf("NoDynamic: regret %v, static %v", tn.Regret, tn.StaticRegret)
	}
}

func TestNewProblemErrors(t *testing.T) {
	ds, _ := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 2}.Dataset(1, 2, 1, 1)
	bad := *ds
	bad.Features = slices.Clone(ds.Features)
	bad.Features[3] = math.NaN()
	if _, err := NewProblem(t.Context(), &bad, model.Logistic{}, ProblemOptions{}); err == nil {
		t.Error("NaN feature: no error")
	}
	short := *ds
	short.Labels = ds.Labels[:1]
	if _, err := NewProblem(t.Context(), &short, model.Logistic{}, ProblemOptions{}); err == nil {
		t.Error("missing label: no error")
	}
	// Two separable samples per round and no L2 term: the round minima are
	// not attained at a tolerance far below rounding.
	if _, err := NewProblem(t.Context(), ds, model.Logistic{}, ProblemOptions{RoundTol: 1e-200}); err == nil {
		t.Error("unattainable round minimum: no error")
	}
}

// Convergence on the paper's kind of data (synthetic(0.1, 0.1), d = 60)
// with n = 10 learners, tau = 5 and R = 200: without noise the loss error
// falls from 0.48 at x^0 = 0 to below 0.03, and the model classifies at
// least 85% of the samples correctly (x* itself reaches about 89%).
func TestConvergenceSynthetic(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 200, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-4})
	tr := mustRun(t, p, fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.03, EtaG: 1, Clip: 5, EvalEvery: 50}, nil)
	first, last := tr.LossError[0], tr.LossError[len(tr.LossError)-1]
	t.Logf("loss error %v", tr.LossError)
	if first < 0.3 || last > 0.03 {
		t.Errorf("loss error from %v to %v, want from > 0.3 to < 0.03", first, last)
	}
	if acc := tr.Accuracy[len(tr.Accuracy)-1]; acc < 0.85 {
		t.Errorf("accuracy %v, want >= 0.85", acc)
	}
}
