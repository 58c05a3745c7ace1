package accountant

import (
	"math"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestSelfComposeCutThenHigherTilt builds the order the review named: a
// distribution with an additive error (as Compose leaves one) is
// self-composed (k = 2) on a window that ends below the composition's top,
// and the result is composed at a higher tilt with a distribution of 15
// points. The exact masses are mass + e, e >= 0 at its tail-sum bound at
// the tilt 0.2 per index (tailOnlyDist), largest relative to the masses at
// the top of the array: the exact composition has mass up to index
// 2 (n - 1), far above the window, which the masses alone (decaying like
// e^(-2 i)) place near 14; in the second case d is a point mass with
// zero masses above it, whose composition selfConvolve stores at one
// index. The reference is the exact composition of the exact masses,
// summed directly in float64 (non-negative terms, so within 1e-13
// relatively; 1e-12 is allowed), and its delta(eps) = sum_i x_i
// (1 - e^(eps - l_i))_+ at every grid eps from 0 to past the top. The safe
// side must be at least it, the optimistic one at most it.
//
// Before the fix logErrAt carried the self-composition's error bound to
// the higher tilt (2 per index) as though no error lay above its last
// stored index, so the composition's bound counted the self-composition's
// errors above its window at e^(-1.8) per index of their true size: the
// safe delta at eps = 2.8 was 1.37e-5 against an exact 5.79e-5 (a factor
// 4.2 below it), and in the point-mass case 4.04e-4 at eps = 1.4 against
// an exact 8.58e-4 (checked failing before the fix).
func TestSelfComposeCutThenHigherTilt(t *testing.T) {
	const t0, t2, h = 0.2, 2.0, 0.1
	decay := make([]float64, 20)
	for i := range decay {
		decay[i] = math.Exp(-2 * float64(i))
	}
	scale(decay, 1/sum(decay))
	point := make([]float64, 6)
	point[0] = 1
	bm := make([]float64, 15)
	for i := range bm {
		bm[i] = 1.0 / 15
	}
	for _, c := range []struct {
		name string
		m    []float64
	}{{"window cut", decay}, {"point mass", point}} {
		n := len(c.m)
		for _, pes := range []bool{true, false} {
			d, e := tailOnlyDist(0, slicesClone(c.m), t0, math.Log(1e-2))
			r1, err := selfConvolve(nil, d, 2, h, 1e-8, 1e-8, pes)
			if err != nil {
				t.Fatal(err)
			}
			top1 := r1.lo + len(r1.mass) - 1
			if top1 >= 2*(n-1) {
				t.Fatalf("%s: the window [%d, %d] holds the whole composition: not the case to test", c.name, r1.lo, top1)
			}
			b := &lossDist{mass: slicesClone(bm), tau: t2, logErr: math.Inf(-1)}
			r, err := convolveAt(r1, b, t2)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float64, n)
			for i := range x {
				x[i] = c.m[i] + e[i]
			}
			exact := make([]float64, 2*n-1+len(bm)-1)
			for i := range n {
				for k := range n {
					for l, w := range bm {
						exact[i+k+l] += x[i] * x[k] * w
					}
				}
			}
			cv := newCurve(r, h, pes)
			worst := 0.0
			for j := 0; j <= len(exact)+2; j++ {
				eps := float64(j) * h
				ref := 0.0
				for i, v := range exact {
					if l := float64(i) * h; l > eps {
						ref += v * -math.Expm1(eps-l)
					}
				}
				got := cv.value(eps)
				if pes && got < ref*(1-1e-12) {
					t.Errorf("%s: safe delta(%.1f) = %.6g below the exact %.6g (window top %d)", c.name, eps, got, ref, top1)
				}
				if !pes && got > ref*(1+1e-12) {
					t.Errorf("%s: optimistic delta(%.1f) = %.6g above the exact %.6g", c.name, eps, got, ref)
				}
				if pes && ref > 0 {
					worst = math.Max(worst, ref/got)
				}
			}
			if pes {
				t.Logf("%s: window top %d, largest exact / safe delta %.6g", c.name, top1, worst)
			}
		}
	}
}

// TestPLDComposeOrdersGaussian composes Gaussian PLDs through every public
// path the tilt bookkeeping can take (Compose of single events, whose
// error has tilt 0; SelfCompose of that, at a small tilt with its window
// cut below the composition's top; SelfCompose of a SelfCompose; Compose
// of results of different tilts, in both orders) and checks
// Optimistic <= exact <= Safe for delta(eps) and eps(delta), the exact
// values those of mu-GDP with mu = sqrt(k) / sigma for k Gaussians in all,
// computed in math/big (refDelta), and eps(delta) bracketed by them.
func TestPLDComposeOrdersGaussian(t *testing.T) {
	testutil.SkipOn386Short(t, "compositions of at most 31 copies: float64")
	t.Parallel()
	const sigma = 3.0
	must := mustPLD(t)
	g := must(GaussianPLD(sigma, coarse))
	// Compose of g with a twin built apart (with g itself it is
	// g.SelfCompose(2), whose error has the composition's tilt).
	gg := must(g.Compose(must(GaussianPLD(sigma, coarse))))
	cases := []struct {
		name string
		k    int
		p    func() *PLD
	}{
		{"Compose(G,G').SelfCompose(8).Compose(G.SelfCompose(2))", 18, func() *PLD {
			return must(must(gg.SelfCompose(8)).Compose(must(g.SelfCompose(2))))
		}},
		{"G.SelfCompose(2).Compose(Compose(G,G').SelfCompose(8))", 18, func() *PLD {
			return must(must(g.SelfCompose(2)).Compose(must(gg.SelfCompose(8))))
		}},
		{"Compose(G,G').SelfCompose(5).SelfCompose(3).Compose(G)", 31, func() *PLD {
			return must(must(must(gg.SelfCompose(5)).SelfCompose(3)).Compose(g))
		}},
		{"G.SelfCompose(20).Compose(Compose(G,G').SelfCompose(2))", 24, func() *PLD {
			return must(must(g.SelfCompose(20)).Compose(must(gg.SelfCompose(2))))
		}},
		{"G.Compose(G.SelfCompose(3)).SelfCompose(3).Compose(G.SelfCompose(4))", 16, func() *PLD {
			return must(must(must(g.Compose(must(g.SelfCompose(3)))).SelfCompose(3)).Compose(must(g.SelfCompose(4))))
		}},
	}
	for _, c := range cases {
		p := c.p()
		mu := math.Sqrt(float64(c.k)) / sigma
		for _, eps := range []float64{0.25, 1, 2, 3} {
			b, err := p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := refDelta(eps, mu).Float64()
			if !(b.Optimistic <= exact*(1+1e-12) && exact <= b.Safe*(1+1e-12)) {
				t.Errorf("%s: delta(%v) bounds [%.12g, %.12g] miss the exact %.12g", c.name, eps, b.Optimistic, b.Safe, exact)
			}
		}
		for _, delta := range []float64{1e-3, 1e-6, 1e-9} {
			b, err := p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			// The exact eps has delta(eps) = delta: delta(Safe) <= delta
			// and delta(Optimistic) >= delta show it lies between.
			ds, _ := refDelta(b.Safe, mu).Float64()
			do, _ := refDelta(b.Optimistic, mu).Float64()
			if !(ds <= delta*(1+1e-12) && (b.Optimistic == 0 || do >= delta*(1-1e-12))) {
				t.Errorf("%s: eps(%v) bounds [%.12g, %.12g]: exact delta there %.6g, %.6g", c.name, delta, b.Optimistic, b.Safe, do, ds)
			}
		}
	}
}

// TestPLDComposeAfterLargeTilt composes a self-composition of few steps of
// a sampled Gaussian, whose add direction (bounded losses) is tilted by
// 0.33 per index over its 3600 indices, with further steps: its untilted
// bottom masses, rounding noise times up to e^1180, overflowed to +Inf,
// trim stopped at them, and the composition's tilted sum was NaN (Delta
// and Floor NaN; checked failing before the fix). Each result must be
// finite and bracket the same composition built another way, one
// SelfCompose of the single step: both pairs of bounds contain the true
// delta and eps, so they overlap.
func TestPLDComposeAfterLargeTilt(t *testing.T) {
	t.Parallel()
	must := mustPLD(t)
	s := must(SampledGaussianPLD(0.01, 1, AddRemove, coarse))
	s3 := must(s.SelfCompose(3))
	// A twin of s, built apart: Compose of s3 with s itself is
	// s.SelfCompose(4), not the composition of s3's masses tested here.
	tw := must(SampledGaussianPLD(0.01, 1, AddRemove, coarse))
	for _, c := range []struct {
		name string
		k    int
		p    *PLD
	}{
		{"s.SelfCompose(3).Compose(s')", 4, must(s3.Compose(tw))},
		{"s'.Compose(s.SelfCompose(3))", 4, must(tw.Compose(s3))},
		{"s.SelfCompose(3).SelfCompose(2)", 6, must(s3.SelfCompose(2))},
	} {
		ref := must(s.SelfCompose(c.k))
		if f := c.p.Floor(); math.IsNaN(f) {
			t.Errorf("%s: Floor NaN", c.name)
		}
		for _, eps := range []float64{0, 0.5, 1} {
			b, err := c.p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ref.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			if !(b.Optimistic <= b.Safe && math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
				t.Errorf("%s: delta(%v) in [%.9g, %.9g], by SelfCompose(%d) in [%.9g, %.9g]", c.name, eps, b.Optimistic, b.Safe, c.k, r.Optimistic, r.Safe)
			}
		}
		b, err := c.p.EpsilonBounds(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ref.EpsilonBounds(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if !(b.Optimistic <= b.Safe && math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
			t.Errorf("%s: eps(1e-6) in [%.9g, %.9g], by SelfCompose(%d) in [%.9g, %.9g]", c.name, b.Optimistic, b.Safe, c.k, r.Optimistic, r.Safe)
		}
	}
}
