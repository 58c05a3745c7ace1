package accountant

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
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
	testutil.SkipOn386Short(t, "compositions of at most 16 copies: float64")
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
	sg := sharedSampled(t, 0.01, 1, 16, AddRemove)
	for _, c := range []chain{
		{"S.Compose(S).SelfCompose(8)", 16, must(must(s.Compose(s)).SelfCompose(8))},
		{"S.SelfCompose(4).Compose(S.SelfCompose(12))", 16, must(must(s.SelfCompose(4)).Compose(must(s.SelfCompose(12))))},
	} {
		check(t, c, s16, nil, s16, sg)
	}
}

// TestComposeDifferentTilts checks Compose of the masses of PLDs of
// different tilts (self-compositions of different counts, of events built
// apart, and a Compose of single events, at tilt 0, with a
// self-composition): the lower-tilted input's error is bounded at tilts
// from its own up to the composition's. Gaussians, whose truth is mu-GDP
// with mu^2 = sum of k_j / sigma_j^2 (refDelta, math/big): delta(eps)
// must contain it, eps(delta) be bracketed by it, and, for twins of
// sigma = 3 (a G' built apart from G, so that Compose composes the
// masses), eps(1e-5) and eps(1e-10) be within 10 times the width of
// G.SelfCompose(12) (and 1e-6). Before, G.SelfCompose(8).Compose(
// G'.SelfCompose(4)) gave eps(1e-5) in [5.0231, 5.2260] (width 3.9e-2;
// G.SelfCompose(12): 1.3e-6): G.SelfCompose(8)'s error was carried to the
// 4-fold's higher tilt by e^((t - tau) hi).
func TestComposeDifferentTilts(t *testing.T) {
	testutil.SkipOn386Short(t, "compositions of at most 23 copies: float64")
	t.Parallel()
	must := mustPLD(t)
	g := must(GaussianPLD(3, coarse))
	tw := must(GaussianPLD(3, coarse))
	h := must(GaussianPLD(2, coarse))
	g12 := must(g.SelfCompose(12))
	cases := []struct {
		name  string
		mu2   float64
		p     *PLD
		tight bool
	}{
		{"G.SelfCompose(8).Compose(G'.SelfCompose(4))", 12.0 / 9, must(must(g.SelfCompose(8)).Compose(must(tw.SelfCompose(4)))), true},
		{"G.SelfCompose(4).Compose(G'.SelfCompose(8))", 12.0 / 9, must(must(g.SelfCompose(4)).Compose(must(tw.SelfCompose(8)))), true},
		{"G.SelfCompose(10).Compose(Compose(G',G))", 12.0 / 9, must(must(g.SelfCompose(10)).Compose(must(tw.Compose(g)))), true},
		{"Compose(G',G).Compose(G.SelfCompose(10))", 12.0 / 9, must(must(tw.Compose(g)).Compose(must(g.SelfCompose(10)))), true},
		{"G.SelfCompose(8).Compose(H.SelfCompose(3))", 8.0/9 + 3.0/4, must(must(g.SelfCompose(8)).Compose(must(h.SelfCompose(3)))), false},
		{"H.SelfCompose(2).Compose(G.SelfCompose(20)).Compose(G')", 2.0/4 + 21.0/9, must(must(must(h.SelfCompose(2)).Compose(must(g.SelfCompose(20)))).Compose(tw)), false},
	}
	for _, c := range cases {
		mu := math.Sqrt(c.mu2)
		for _, eps := range []float64{0.25, 1, 3, 6, 9} {
			b, err := c.p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := refDelta(eps, mu).Float64()
			if !(b.Optimistic <= exact*(1+1e-12) && exact <= b.Safe*(1+1e-12)) {
				t.Errorf("%s: delta(%v) in [%.12g, %.12g] misses the exact %.12g", c.name, eps, b.Optimistic, b.Safe, exact)
			}
		}
		for _, delta := range []float64{1e-3, 1e-5, 1e-10} {
			b, err := c.p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := refDelta(b.Safe, mu).Float64()
			do, _ := refDelta(b.Optimistic, mu).Float64()
			if !(ds <= delta*(1+1e-12) && (b.Optimistic == 0 || do >= delta*(1-1e-12))) {
				t.Errorf("%s: eps(%v) in [%.12g, %.12g]: exact delta there %.6g, %.6g", c.name, delta, b.Optimistic, b.Safe, do, ds)
			}
			if !c.tight || delta == 1e-3 {
				continue
			}
			r, err := g12.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if !(b.Width() <= math.Max(10*r.Width(), 1e-6)) {
				t.Errorf("%s: eps(%v) in [%.9g, %.9g], width %.3g; G.SelfCompose(12): width %.3g", c.name, delta, b.Optimistic, b.Safe, b.Width(), r.Width())
			}
		}
	}
}

// TestComposeSingleEventsTilted checks Compose of sampled-Gaussian single
// events built apart (S and S', the same parameters: Compose composes
// their masses), which runs the remove direction at a positive tilt and
// records the lowest index of its errors, so that a self-composition, or
// a composition with a self-composition, carries the bound to lower
// tilts. No closed form: each result must overlap two other routes to
// the same steps, S.SelfCompose(n) and SampledGaussian (its own grid and
// tilt), in delta at eps 0.25, 1, 2 and in eps at delta 1e-5 and 1e-10,
// and there be within 10 times S.SelfCompose(n)'s width (and 1e-6), at
// q = 0.01, sigma = 1, interval 1e-3. Different events (q = 0.02,
// sigma = 1.2 for the second) must overlap their self-compositions
// composed, and a coarse grid with cut tails (interval 1e-2, tail mass
// 1e-3) SampledGaussian. Before, S.Compose(S').SelfCompose(8) gave
// eps(1e-10) in [1.7308, 6.764] (width 0.74; S.SelfCompose(16): 9.5e-6)
// and S.SelfCompose(14).Compose(S.Compose(S')) eps(1e-5) in [0.0937,
// 5.306]: Compose ran at tilt 0, its rounding bound about u times the
// largest mass at every index up to loss 8.3.
func TestComposeSingleEventsTilted(t *testing.T) {
	testutil.SkipOn386Short(t, "composition brackets at 16 steps: float64, far from int's bounds")
	t.Parallel()
	must := mustPLD(t)
	overlap := func(t *testing.T, name string, p *PLD, ref *PLD, tight bool, others ...*PLD) {
		t.Helper()
		for _, eps := range []float64{0.25, 1, 2} {
			b, err := p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range append([]*PLD{ref}, others...) {
				r, err := o.DeltaBounds(eps)
				if err != nil {
					t.Fatal(err)
				}
				if !(math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
					t.Errorf("%s: delta(%v) in [%.12g, %.12g], another route [%.12g, %.12g]", name, eps, b.Optimistic, b.Safe, r.Optimistic, r.Safe)
				}
			}
		}
		for _, delta := range []float64{1e-5, 1e-10} {
			b, err := p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range append([]*PLD{ref}, others...) {
				r, err := o.EpsilonBounds(delta)
				if err != nil {
					t.Fatal(err)
				}
				if !(math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
					t.Errorf("%s: eps(%v) in [%.12g, %.12g], another route [%.12g, %.12g]", name, delta, b.Optimistic, b.Safe, r.Optimistic, r.Safe)
				}
				if i == 0 && tight && !(b.Width() <= math.Max(10*r.Width(), 1e-6)) {
					t.Errorf("%s: eps(%v) in [%.9g, %.9g], width %.3g; one self-composition: width %.3g", name, delta, b.Optimistic, b.Safe, b.Width(), r.Width())
				}
			}
		}
	}
	s := must(SampledGaussianPLD(0.01, 1, AddRemove, coarse))
	tw := must(SampledGaussianPLD(0.01, 1, AddRemove, coarse))
	ss := must(s.Compose(tw))
	s16 := must(s.SelfCompose(16))
	sg16 := sharedSampled(t, 0.01, 1, 16, AddRemove)
	overlap(t, "S.Compose(S').SelfCompose(8)", must(ss.SelfCompose(8)), s16, true, sg16)
	overlap(t, "S.SelfCompose(14).Compose(S.Compose(S'))", must(must(s.SelfCompose(14)).Compose(ss)), s16, true, sg16)
	overlap(t, "S.Compose(S').Compose(S).SelfCompose(4)", must(must(ss.Compose(s)).SelfCompose(4)), must(s.SelfCompose(12)), true, must(SampledGaussian(0.01, 1, 12, AddRemove)))

	u := must(SampledGaussianPLD(0.02, 1.2, AddRemove, coarse))
	overlap(t, "S.Compose(U).SelfCompose(6)", must(must(s.Compose(u)).SelfCompose(6)),
		must(must(s.SelfCompose(6)).Compose(must(u.SelfCompose(6)))), false)

	o := PLDOptions{Interval: 1e-2, TailMass: 1e-3}
	c := must(SampledGaussianPLD(0.01, 1, AddRemove, o))
	ct := must(SampledGaussianPLD(0.01, 1, AddRemove, o))
	overlap(t, "coarse S.Compose(S').SelfCompose(8)", must(must(c.Compose(ct)).SelfCompose(8)), must(c.SelfCompose(16)), false, sg16)
}

// TestComposeTiltedErrorLowered checks the bound of a Compose of two
// single events run at a positive tilt, carried to lower tilts with the
// lowest index of its errors (logErrAt below tau), against the error
// itself: the two sampled-Gaussian remove distributions' masses are
// convolved directly in math/big (200 bits), and at tilts 0, tau/4,
// tau/2 and tau, for every index j, the computed masses' error summed
// from j up must be within e^(logErrAt(s) - s j) plus rel times the
// exact masses from j up (the relative part of the bound).
func TestComposeTiltedErrorLowered(t *testing.T) {
	t.Parallel()
	must := mustPLD(t)
	o := PLDOptions{Interval: 1e-2}
	a := must(SampledGaussianPLD(0.05, 0.8, AddRemove, o))
	b := must(SampledGaussianPLD(0.05, 0.8, AddRemove, o))
	r := must(a.Compose(b)).remove
	if !(r.tau > 0 && r.hasErrLo) {
		t.Fatalf("remove direction composed at tilt %v (errLo recorded: %v), want a positive tilt with errLo", r.tau, r.hasErrLo)
	}
	x, y := a.remove, b.remove
	n := len(x.mass) + len(y.mass) - 1
	exact := make([]*big.Float, n)
	for i := range exact {
		exact[i] = new(big.Float).SetPrec(200)
	}
	p := new(big.Float).SetPrec(200)
	for i, u := range x.mass {
		for j, v := range y.mass {
			p.SetFloat64(u)
			p.Mul(p, new(big.Float).SetFloat64(v))
			exact[i+j].Add(exact[i+j], p)
		}
	}
	lo := x.lo + y.lo
	// err[k] and mass[k] at absolute index lo + k; r may start above lo
	// (trim), its dropped masses counted as computed 0.
	errs := make([]float64, n)
	ex := make([]float64, n)
	for k := range n {
		c := 0.0
		if m := lo + k - r.lo; m >= 0 && m < len(r.mass) {
			c = r.mass[m]
		}
		e, _ := exact[k].Float64()
		ex[k] = e
		errs[k] = math.Abs(c - e)
	}
	if r.lo+len(r.mass) > lo+n {
		t.Fatalf("composition stored up to index %d, the exact one ends at %d", r.lo+len(r.mass)-1, lo+n-1)
	}
	for _, s := range []float64{0, r.tau / 4, r.tau / 2, r.tau} {
		l := r.logErrAt(s)
		if math.IsInf(l, 1) {
			t.Errorf("tilt %v: no bound", s)
			continue
		}
		var S, E float64
		for k := n - 1; k >= 0; k-- {
			S += errs[k]
			E += ex[k]
			j := float64(lo + k)
			if bound := math.Exp(l-s*j) + r.rel*E; !(S <= bound) {
				t.Errorf("tilt %.4g: the error from index %v up is %.4g, above the bound %.4g", s, j, S, bound)
				break
			}
		}
	}
}
