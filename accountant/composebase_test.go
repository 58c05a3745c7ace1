package accountant

import (
	"math"
	"testing"
)

// TestComposeOfOneBaseTight checks Compose of compositions of one PLD,
// which composes that PLD from scratch: the orders docs/privacy.md left
// loose must be as tight as one self-composition of the same count
// (within 10 times its relative width, and 1e-6, at delta = 1e-5 and
// 1e-10) and contain the truth.
//
// Gaussian, sigma = 3 (interval 1e-3): the truth is mu-GDP with
// mu = sqrt(k) / 3 (refDelta, math/big), which delta(eps) must lie in
// and eps(delta) must be bracketed by. Before,
// G.SelfCompose(8).Compose(G.SelfCompose(4)) gave eps(1e-5) in [5.0231,
// 5.2260] (width 3.9e-2; G.SelfCompose(12): 1.3e-6) and
// G.SelfCompose(2).Compose(G).SelfCompose(4) eps(1e-5) in [0, 5.982]
// and Delta(1) = 1.
//
// Sampled Gaussian, q = 0.01, sigma = 1, add/remove: no closed form, so
// G.Compose(G).SelfCompose(8) must overlap two other routes to the same
// 16 steps, G.SelfCompose(16) and SampledGaussian (its own grid and
// tilt), at delta = 1e-5 and 1e-10 and at eps = 1. Before, its
// eps(1e-10) was in [1.7308, 6.764] (width 0.74; G.SelfCompose(16):
// 9.5e-6).
func TestComposeOfOneBaseTight(t *testing.T) {
	t.Parallel()
	must := mustPLD(t)
	type chain struct {
		name string
		k    int
		p    *PLD
	}
	check := func(t *testing.T, c chain, ref *PLD, truth func(k int, eps float64) float64, others ...*PLD) {
		t.Helper()
		for _, eps := range []float64{0.25, 1, 3, 6} {
			b, err := c.p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			if truth != nil {
				exact := truth(c.k, eps)
				if !(b.Optimistic <= exact*(1+1e-12) && exact <= b.Safe*(1+1e-12)) {
					t.Errorf("%s: delta(%v) in [%.12g, %.12g] misses the exact %.12g", c.name, eps, b.Optimistic, b.Safe, exact)
				}
			}
			for _, o := range others {
				r, err := o.DeltaBounds(eps)
				if err != nil {
					t.Fatal(err)
				}
				if !(math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
					t.Errorf("%s: delta(%v) in [%.12g, %.12g], another route [%.12g, %.12g]", c.name, eps, b.Optimistic, b.Safe, r.Optimistic, r.Safe)
				}
			}
		}
		for _, delta := range []float64{1e-5, 1e-10} {
			b, err := c.p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if truth != nil {
				ds, do := truth(c.k, b.Safe), truth(c.k, b.Optimistic)
				if !(ds <= delta*(1+1e-12) && do >= delta*(1-1e-12)) {
					t.Errorf("%s: eps(%v) in [%.12g, %.12g]: exact delta there %.6g, %.6g", c.name, delta, b.Optimistic, b.Safe, do, ds)
				}
			}
			for _, o := range others {
				r, err := o.EpsilonBounds(delta)
				if err != nil {
					t.Fatal(err)
				}
				if !(math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
					t.Errorf("%s: eps(%v) in [%.12g, %.12g], another route [%.12g, %.12g]", c.name, delta, b.Optimistic, b.Safe, r.Optimistic, r.Safe)
				}
			}
			r, err := ref.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if !(b.Width() <= math.Max(10*r.Width(), 1e-6)) {
				t.Errorf("%s: eps(%v) in [%.9g, %.9g], width %.3g; one self-composition: width %.3g", c.name, delta, b.Optimistic, b.Safe, b.Width(), r.Width())
			}
		}
	}

	const sigma = 3.0
	g := must(GaussianPLD(sigma, coarse))
	gaussTruth := func(k int, eps float64) float64 {
		v, _ := refDelta(eps, math.Sqrt(float64(k))/sigma).Float64()
		return v
	}
	g2, g4, g8 := must(g.SelfCompose(2)), must(g.SelfCompose(4)), must(g.SelfCompose(8))
	g12 := must(g.SelfCompose(12))
	for _, c := range []chain{
		{"G.SelfCompose(8).Compose(G.SelfCompose(4))", 12, must(g8.Compose(g4))},
		{"G.SelfCompose(2).Compose(G).SelfCompose(4)", 12, must(must(g2.Compose(g)).SelfCompose(4))},
		{"G.Compose(G.SelfCompose(2)).Compose(G).SelfCompose(3)", 12, must(must(must(g.Compose(g2)).Compose(g)).SelfCompose(3))},
		{"G.Compose(G).SelfCompose(2).Compose(G.SelfCompose(8))", 12, must(must(must(g.Compose(g)).SelfCompose(2)).Compose(g8))},
	} {
		check(t, c, g12, gaussTruth)
	}

	s := must(SampledGaussianPLD(0.01, 1, AddRemove, coarse))
	s16 := must(s.SelfCompose(16))
	sg := must(SampledGaussian(0.01, 1, 16, AddRemove))
	for _, c := range []chain{
		{"S.Compose(S).SelfCompose(8)", 16, must(must(s.Compose(s)).SelfCompose(8))},
		{"S.SelfCompose(4).Compose(S.SelfCompose(12))", 16, must(must(s.SelfCompose(4)).Compose(must(s.SelfCompose(12))))},
	} {
		check(t, c, s16, nil, s16, sg)
	}
}
