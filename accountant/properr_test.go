package accountant

import (
	"math"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// perIdxDist returns a lossDist at tilt tau with masses mass (from index
// lo) carrying the per-index form of its error bound (|e_i| <=
// e^(logPer - tau i) at each index, plus a part of weighted l1 norm
// e^logC), and errors e (returned, the exact masses being mass + e) that
// meet it: e_i = e^(logPer - tau i) everywhere and e^(logC - tau hi) more
// at the top, hi. logErr is the plain tail-sum bound at tau,
// log(C + P sum_{m < n} e^(-tau m)), logGapW that of the weighted norm.
func perIdxDist(lo int, mass []float64, tau, logPer, logC float64) (*lossDist, []float64) {
	n := len(mass)
	hi := lo + n - 1
	e := make([]float64, n)
	sumW := 0.0
	for i := range e {
		e[i] = math.Exp(logPer - tau*float64(lo+i))
		sumW += math.Exp(-tau * float64(i))
	}
	e[n-1] += math.Exp(logC - tau*float64(hi))
	// e^(tau j) S(j) = P sum_{m=0}^{hi-j} e^(-tau m) + C e^(-tau (hi-j))
	// <= P sumW + C for j <= hi (and S(j) = S(lo) below lo).
	d := &lossDist{lo: lo, mass: mass, tau: tau, perIdx: true, logPer: logPer, logC: logC,
		logErr: logAdd(logC, logPer+math.Log(sumW))}
	d.logGapW = math.Max(logAdd(logC, logPer+math.Log(float64(n)))-d.logErr, 0)
	return d, e
}

// TestPerIndexBoundCarried checks logErrAt and logErrWAt of a distribution
// with the per-index form of the error bound against the tail sums and
// weighted l1 norm of errors that meet that bound, summed directly, at
// tilts from the distribution's own up: every tail sum
// sum_{i >= j} |e_i| must be at most e^(logErrAt(t) - t j), for j from
// below the array to above it, and sum_i |e_i| e^(t i) at most
// e^(logErrWAt(t)). It also checks that the per-index form is the one
// taken where it is smaller: at t = 0.05 above tau = 0 on 400 indices it
// is about 400 * 0.05 = 20 times below the l1 form.
func TestPerIndexBoundCarried(t *testing.T) {
	for _, c := range []struct {
		lo  int
		tau float64
	}{{-7, 0}, {-200, 0}, {5, 0.1}, {-30, 0.02}} {
		mass := make([]float64, 400)
		for i := range mass {
			mass[i] = math.Exp(-0.01 * float64(i))
		}
		d, e := perIdxDist(c.lo, mass, c.tau, math.Log(1e-17), math.Log(2e-17))
		hi := c.lo + len(mass) - 1
		for _, tt := range []float64{c.tau, c.tau + 1e-4, c.tau + 0.05, c.tau + 0.3, c.tau + 1} {
			la, laW := d.logErrAt(tt), d.logErrWAt(tt)
			for j := c.lo - 5; j <= hi+5; j++ {
				s := 0.0
				for i := max(j, c.lo); i <= hi; i++ {
					s += e[i-c.lo]
				}
				if b := math.Exp(la - tt*float64(j)); s > b*(1+1e-12) {
					t.Fatalf("lo %d tau %v t %v: tail sum at %d is %.6g above its bound %.6g", c.lo, c.tau, tt, j, s, b)
				}
			}
			w := 0.0
			for i, v := range e {
				w += v * math.Exp(tt*float64(c.lo+i))
			}
			if b := math.Exp(laW); w > b*(1+1e-12) {
				t.Fatalf("lo %d tau %v t %v: weighted norm %.6g above its bound %.6g", c.lo, c.tau, tt, w, b)
			}
		}
		if c.tau == 0 {
			plain := d.logErr + 0.05*float64(hi)
			if got := d.logErrAt(0.05); !(got < plain-math.Log(10)) {
				t.Errorf("lo %d: logErrAt(0.05) = %.4g, not 10 times below the l1 form %.4g", c.lo, got, plain)
			}
		}
	}
}

// TestSelfComposePropagatedError self-composes (k = 3) a distribution with
// the per-index form of an error at tilt 0, as Compose of two single events
// leaves one, with errors at that bound (perIdxDist), on a window cut below
// the composition's top, and composes the result at a higher tilt with a
// distribution of 15 points, so that the propagated part of the error
// (prop, bounded at several tilts, the least taken) is both queried and
// carried to another tilt. The reference is the exact composition of the
// exact masses, summed directly in float64 (non-negative terms; 1e-12
// relatively allowed), and its delta(eps) at every grid eps from 0 to past
// the top: the safe side must be at least it, the optimistic one at most
// it.
func TestSelfComposePropagatedError(t *testing.T) {
	const h = 0.1
	n := 40
	decay := make([]float64, n)
	for i := range decay {
		decay[i] = math.Exp(-2 * float64(i))
	}
	scale(decay, 1/sum(decay))
	bm := make([]float64, 15)
	for i := range bm {
		bm[i] = 1.0 / 15
	}
	for _, pes := range []bool{true, false} {
		d, e := perIdxDist(-4, slicesClone(decay), 0, math.Log(1e-9), math.Log(1e-8))
		r1, err := selfConvolve(nil, d, 3, h, 1e-8, 1e-8, pes)
		if err != nil {
			t.Fatal(err)
		}
		if len(r1.prop) == 0 || r1.tau == 0 {
			t.Fatalf("no propagated error part, or tilt 0: not the case to test")
		}
		top1 := r1.lo + len(r1.mass) - 1
		if top1 >= 3*(d.lo+n-1) {
			t.Fatalf("the window [%d, %d] holds the whole composition: not the case to test", r1.lo, top1)
		}
		b := &lossDist{mass: slicesClone(bm), tau: 2 * r1.tau, logErr: math.Inf(-1)}
		r2, err := convolveAt(r1, b, 2*r1.tau)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = decay[i] + e[i]
		}
		exact3 := make([]float64, 3*n-2) // from index 3 d.lo
		for i := range n {
			for j := range n {
				for k := range n {
					exact3[i+j+k] += x[i] * x[j] * x[k]
				}
			}
		}
		exact2 := make([]float64, len(exact3)+len(bm)-1)
		for i, v := range exact3 {
			for l, w := range bm {
				exact2[i+l] += v * w
			}
		}
		for _, c := range []struct {
			name  string
			r     *lossDist
			exact []float64
			lo    int
		}{{"SelfCompose", r1, exact3, 3 * d.lo}, {"then convolveAt", r2, exact2, 3 * d.lo}} {
			cv := newCurve(c.r, h, pes)
			for j := 0; j <= c.lo+len(c.exact)+2; j++ {
				eps := float64(j) * h
				ref := 0.0
				for i, v := range c.exact {
					if l := float64(c.lo+i) * h; l > eps {
						ref += v * -math.Expm1(eps-l)
					}
				}
				got := cv.value(eps)
				if pes && got < ref*(1-1e-12) {
					t.Errorf("%s: safe delta(%.1f) = %.6g below the exact %.6g", c.name, eps, got, ref)
				}
				if !pes && got > ref*(1+1e-12) {
					t.Errorf("%s: optimistic delta(%.1f) = %.6g above the exact %.6g", c.name, eps, got, ref)
				}
			}
		}
	}
}

// TestPLDSelfComposeOfComposedTight checks that a self-composition of a
// composed PLD is tight: Compose(G, G).SelfCompose(8) (sigma = 3, interval
// 1e-3) must bracket the exact mu-GDP values (mu = 4/3, refDelta in
// math/big) of delta(eps) and eps(delta), report Delta(1) within 1e-5
// relatively of the exact 0.253978, and eps(1e-10) with a relative width
// below 1.5e-5. Before the composed PLD's error was bounded per index and
// propagated at tilts below the composition's, it reported Delta(1) = 1
// (Optimistic 0) and eps(1e-10) in [8.97771, 9.02869] (width 5.65e-3);
// now [9.003982, 9.004060] (8.66e-6), where G.SelfCompose(16) gives
// 1.56e-6 (logged). The same bracketing is checked for orders that feed
// the propagated part into further compositions, and for
// G.SelfCompose(2).SelfCompose(8) and Compose(G,G).SelfCompose(8)
// .SelfCompose(2), which SelfCompose now composes from their base (the
// first reported Delta(1) = 1 before; both are held to the same widths).
// SampledGaussianPLD(0.2, 0.5, ReplaceOne).SelfCompose(3), a composed PLD
// too (it reported delta(1) in [0, 0.2955]), must overlap
// SampledGaussian's bounds for the same composition (another route:
// replaceOneSteps) and have a width below 1e-4 at eps = 1.
func TestPLDSelfComposeOfComposedTight(t *testing.T) {
	testutil.SkipOn386Short(t, "compositions of at most 32 copies: float64")
	t.Parallel()
	const sigma = 3.0
	must := mustPLD(t)
	g := must(GaussianPLD(sigma, coarse))
	// A twin of g, built apart: Compose of g with itself is
	// g.SelfCompose(2), and this test is about composed masses.
	gg := must(g.Compose(must(GaussianPLD(sigma, coarse))))
	gg8 := must(gg.SelfCompose(8))
	g16 := must(g.SelfCompose(16))
	cases := []struct {
		name  string
		k     int
		p     *PLD
		tight bool
	}{
		{"Compose(G,G').SelfCompose(8)", 16, gg8, true},
		{"Compose(G,G').SelfCompose(8).SelfCompose(2)", 32, must(gg8.SelfCompose(2)), true},
		{"Compose(G,G').SelfCompose(8).Compose(G)", 17, must(gg8.Compose(g)), false},
		{"Compose(Compose(G,G'),G).SelfCompose(5)", 15, must(must(gg.Compose(g)).SelfCompose(5)), false},
		{"G.SelfCompose(2).SelfCompose(8)", 16, must(must(g.SelfCompose(2)).SelfCompose(8)), true},
	}
	w16, err := g16.EpsilonBounds(1e-10)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("G.SelfCompose(16): eps(1e-10) in [%.9g, %.9g], width %.3g", w16.Optimistic, w16.Safe, w16.Width())
	for _, c := range cases {
		mu := math.Sqrt(float64(c.k)) / sigma
		for _, eps := range []float64{0.25, 1, 3, 9} {
			b, err := c.p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := refDelta(eps, mu).Float64()
			if !(b.Optimistic <= exact*(1+1e-12) && exact <= b.Safe*(1+1e-12)) {
				t.Errorf("%s: delta(%v) bounds [%.12g, %.12g] miss the exact %.12g", c.name, eps, b.Optimistic, b.Safe, exact)
			}
			if c.tight && eps == 1 && !(b.Safe <= exact*(1+1e-5) && b.Optimistic >= exact*(1-1e-5)) {
				t.Errorf("%s: delta(1) bounds [%.9g, %.9g] not within 1e-5 of the exact %.9g", c.name, b.Optimistic, b.Safe, exact)
			}
		}
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			b, err := c.p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := refDelta(b.Safe, mu).Float64()
			do, _ := refDelta(b.Optimistic, mu).Float64()
			if !(ds <= delta*(1+1e-12) && (b.Optimistic == 0 || do >= delta*(1-1e-12))) {
				t.Errorf("%s: eps(%v) bounds [%.12g, %.12g]: exact delta there %.6g, %.6g", c.name, delta, b.Optimistic, b.Safe, do, ds)
			}
			if delta == 1e-10 {
				t.Logf("%s: eps(1e-10) in [%.9g, %.9g], width %.3g", c.name, b.Optimistic, b.Safe, b.Width())
				if c.tight && !(b.Width() < 1.5e-5) {
					t.Errorf("%s: eps(1e-10) width %.3g, want below 1.5e-5 (G.SelfCompose(16): %.3g)", c.name, b.Width(), w16.Width())
				}
			}
		}
	}

	// A composed replace-one step, self-composed, against SampledGaussian.
	s3 := must(must(SampledGaussianPLD(0.2, 0.5, ReplaceOne, coarse)).SelfCompose(3))
	ref := must(SampledGaussian(0.2, 0.5, 3, ReplaceOne))
	for _, eps := range []float64{0, 1, 2} {
		b, err := s3.DeltaBounds(eps)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ref.DeltaBounds(eps)
		if err != nil {
			t.Fatal(err)
		}
		if !(b.Optimistic <= b.Safe && math.Max(b.Optimistic, r.Optimistic) <= math.Min(b.Safe, r.Safe)) {
			t.Errorf("replace-one SelfCompose(3): delta(%v) in [%.9g, %.9g], SampledGaussian's [%.9g, %.9g]", eps, b.Optimistic, b.Safe, r.Optimistic, r.Safe)
		}
		if eps == 1 && !(b.Width() < 1e-4) {
			t.Errorf("replace-one SelfCompose(3): delta(1) in [%.9g, %.9g], width %.3g, want below 1e-4", b.Optimistic, b.Safe, b.Width())
		}
	}
}
