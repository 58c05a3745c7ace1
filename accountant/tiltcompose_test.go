package accountant

import (
	"math"
	"testing"
)

// TestComposeApartGaussianNoFloor composes Gaussian single events built
// apart (separate pointers, so Compose composes their masses): T Gaussians
// of noise multiplier sigma are one of sigma / sqrt(T), mu-GDP with
// mu = sqrt(T) / sigma, whose delta(eps) refDelta computes in math/big.
// At delta = 1e-12 and 1e-14 the two sides of eps must bracket the truth
// (the exact delta at Safe at most delta, at Optimistic at least it) with
// a relative width below 1e-3. Before, Compose of two such events ran at
// tilt 0, whose rounding bound put a floor under the safe delta: at
// sigma = 1, interval 1e-3, eps(1e-14) was +Inf and eps(1e-12) in
// [10.51, 10.71].
func TestComposeApartGaussianNoFloor(t *testing.T) {
	t.Parallel()
	must := mustPLD(t)
	for _, sigma := range []float64{1, 3} {
		g1 := must(GaussianPLD(sigma, coarse))
		g2 := must(GaussianPLD(sigma, coarse))
		g3 := must(GaussianPLD(sigma, coarse))
		two := must(g1.Compose(g2))
		for _, c := range []struct {
			name string
			T    int
			p    *PLD
		}{
			{"G.Compose(G')", 2, two},
			{"G.Compose(G').Compose(G'')", 3, must(two.Compose(g3))},
			{"G''.Compose(G.Compose(G'))", 3, must(g3.Compose(two))},
		} {
			mu := math.Sqrt(float64(c.T)) / sigma
			truth := func(eps float64) float64 { v, _ := refDelta(eps, mu).Float64(); return v }
			for _, delta := range []float64{1e-12, 1e-14} {
				b, err := c.p.EpsilonBounds(delta)
				if err != nil {
					t.Fatal(err)
				}
				if !(b.Width() < 1e-3) {
					// (A Safe of +Inf, the floor, has no truth to compare.)
					t.Errorf("sigma=%v %s: eps(%v) in [%.10g, %.10g], relative width %.3g, want below 1e-3", sigma, c.name, delta, b.Optimistic, b.Safe, b.Width())
					continue
				}
				t.Logf("sigma=%v %s: eps(%v) in [%.10g, %.10g]", sigma, c.name, delta, b.Optimistic, b.Safe)
				ds, do := truth(b.Safe), truth(b.Optimistic)
				if !(ds <= delta*(1+1e-12) && do >= delta*(1-1e-12)) {
					t.Errorf("sigma=%v %s: eps(%v) in [%.10g, %.10g]: exact delta there %.6g, %.6g", sigma, c.name, delta, b.Optimistic, b.Safe, do, ds)
				}
			}
			for _, eps := range []float64{0.5, 2, 6} {
				b, err := c.p.DeltaBounds(eps)
				if err != nil {
					t.Fatal(err)
				}
				if exact := truth(eps); !(b.Optimistic <= exact*(1+1e-12) && exact <= b.Safe*(1+1e-12)) {
					t.Errorf("sigma=%v %s: delta(%v) in [%.12g, %.12g] misses the exact %.12g", sigma, c.name, eps, b.Optimistic, b.Safe, exact)
				}
			}
		}
	}
}

// TestComposeReplaceOneStepApartNoFloor composes SampledGaussianPLD's
// replace-one step (q = 0.01, sigma = 1, interval 1e-3) with GaussianPLD(5)
// and with a copy of itself built apart. Step then Gaussian: the truth is
// the Laplace inversion of replaceTruth (T = 1, with the Gaussian's factor
// e^(mu^2 z (z + 1) / 2), mu = 1/5, in its moment generating function),
// which shares nothing with the accountant; at delta = 1e-12 and 1e-14 the
// two sides of eps must bracket it. Two steps: SampledGaussian(q, sigma, 2,
// ReplaceOne), a second algorithm (both steps in one transform, checked
// against the inversion by TestReplaceOneTruth), must meet its bracket
// (both hold the truth). Each relative width must be below 1e-3. Before,
// both compositions composed the step's tilt-0 base, whose floor made
// eps(1e-12) = +Inf.
func TestComposeReplaceOneStepApartNoFloor(t *testing.T) {
	t.Parallel()
	must := mustPLD(t)
	const q, sigma = 0.01, 1.0
	one := must(SampledGaussianPLD(q, sigma, ReplaceOne, coarse))
	twin := must(SampledGaussianPLD(q, sigma, ReplaceOne, coarse))
	g := must(GaussianPLD(5, coarse))
	two := sharedSampled(t, q, sigma, 2, ReplaceOne)
	rt := replaceTruth{q: q, s: math.Sqrt2 * sigma, T: 1, mu: 0.2, ranges: map[[2]float64][3]float64{}, xk: 24, memo: map[complex128]complex128{}}
	truth := func(eps float64) float64 {
		d1, ok1 := rt.delta(eps, 0.1, 2e4)
		d2, ok2 := rt.delta(eps, 0.05, 2e4)
		if !ok1 || !ok2 || !(math.Abs(d1-d2) < 1e-7*d2) {
			t.Fatalf("the inversion at eps = %v did not converge (%v %v, %.3g %.3g)", eps, ok1, ok2, d1, d2)
		}
		return d2
	}
	for _, c := range []struct {
		name  string
		p     *PLD
		truth bool
	}{
		{"step.Compose(G5)", must(one.Compose(g)), true},
		{"G5.Compose(step)", must(g.Compose(one)), true},
		{"step.Compose(step')", must(one.Compose(twin)), false},
	} {
		for _, delta := range []float64{1e-12, 1e-14} {
			b, err := c.p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if !(b.Width() < 1e-3) {
				t.Errorf("%s: eps(%v) in [%.10g, %.10g], relative width %.3g, want below 1e-3", c.name, delta, b.Optimistic, b.Safe, b.Width())
				continue
			}
			if !c.truth {
				r, err := two.EpsilonBounds(delta)
				if err != nil {
					t.Fatal(err)
				}
				if !(math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
					t.Errorf("%s: eps(%v) in [%.10g, %.10g], SampledGaussian's two steps [%.10g, %.10g]: disjoint", c.name, delta, b.Optimistic, b.Safe, r.Optimistic, r.Safe)
				}
				continue
			}
			t.Logf("%s: eps(%v) in [%.10g, %.10g]", c.name, delta, b.Optimistic, b.Safe)
			// The inversion converges to a relative 1e-7: allow 1e-6.
			ds, do := truth(b.Safe), truth(b.Optimistic)
			if !(ds <= delta*(1+1e-6) && do >= delta*(1-1e-6)) {
				t.Errorf("%s: eps(%v) in [%.10g, %.10g]: delta by Laplace inversion there %.6g, %.6g", c.name, delta, b.Optimistic, b.Safe, do, ds)
			}
		}
	}
}
