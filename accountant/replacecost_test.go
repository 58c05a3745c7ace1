package accountant

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestRefineIntervalPairStep: under ReplaceOne with q < 1, refineInterval
// returns the step it predicted the width from, the add/remove PLD at
// sqrt2 sigma on the interval it chose, so that replaceOneSteps composes
// that one instead of discretising it a second time (at q = 1e-4,
// sigma = 0.5, T = 10^6 a discretisation is about 0.7 s of CPU, an eighth
// of issue 20's 5 s). It returned nil. Checked against a fresh
// SampledGaussianPLD on the returned options: the same masses, bit for
// bit, on every side.
func TestRefineIntervalPairStep(t *testing.T) {
	testutil.SkipOn386Short(t, "float64 bounds of the refined grid at T = 1000, far from int's bounds")
	t.Parallel()
	for _, c := range []struct {
		q, sigma float64
		steps    int
	}{{1e-3, 1, 1000}, {1e-4, 0.5, 1000}} {
		o := autoOptions(c.q, c.sigma, c.steps, gridBudget, 0, ReplaceOne)
		o, one, err := refineInterval(c.q, c.sigma, c.steps, ReplaceOne, o)
		if err != nil {
			t.Fatal(err)
		}
		if one == nil {
			t.Errorf("q=%v sigma=%v T=%d: refineInterval returned no step PLD", c.q, c.sigma, c.steps)
			continue
		}
		want, err := SampledGaussianPLD(c.q, math.Sqrt2*c.sigma, AddRemove, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			g, w := one.dist(i), want.dist(i)
			if g.lo != w.lo || len(g.mass) != len(w.mass) || g.inf != w.inf {
				t.Fatalf("q=%v sigma=%v side %d: grid %d+%d inf %v, want %d+%d inf %v", c.q, c.sigma, i, g.lo, len(g.mass), g.inf, w.lo, len(w.mass), w.inf)
			}
			for j := range g.mass {
				if g.mass[j] != w.mass[j] {
					t.Fatalf("q=%v sigma=%v side %d: mass %d is %v, want %v", c.q, c.sigma, i, j, g.mass[j], w.mass[j])
				}
			}
		}
	}
}

// TestPairPowerWindowBelow: the mass that pairPower's stored result
// lacks below its window (cut by the window, which now starts at the
// tilted composition's lower Chernoff end where that lies above the
// untilted one, or dropped by trim) is an error below the window that its
// bound must cover. With a large fold (1e-4), so that real mass is
// missing, against a direct convolution of the same masses (as in
// TestPairPowerDirect): at every index j from the composition's first,
// the tail sums from j of the direct masses and of pairPower's (with its
// infinite mass on the pessimistic side) differ by at most the error bound
// from j, up to the factor 1 + rel and the direct sums' rounding; and mass
// is missing, so that the check is not empty. (It passed before the
// window's lower end moved too: here trim drops more than the window
// cuts.)
func TestPairPowerWindowBelow(t *testing.T) {
	t.Parallel()
	const h, k, fold = 0.05, 6, 1e-4
	ar, err := SampledGaussianPLD(0.1, math.Sqrt2, AddRemove, PLDOptions{Interval: h, TailMass: 1e-15})
	if err != nil {
		t.Fatal(err)
	}
	conv := func(x []float64, xlo int, y []float64, ylo int) ([]float64, int) {
		z := make([]float64, len(x)+len(y)-1)
		for i, u := range x {
			for j, v := range y {
				z[i+j] += u * v
			}
		}
		return z, xlo + ylo
	}
	for side := 0; side < 4; side += 2 {
		a, b := ar.dist(side), ar.dist(side+1)
		pes := side == 0
		r, err := pairPower(nil, a, b, k, h, ar.tail, fold, pes)
		if err != nil {
			t.Fatal(err)
		}
		step, slo := conv(a.mass, a.lo, b.mass, b.lo)
		m, mlo := []float64{1}, 0
		for range k {
			m, mlo = conv(m, mlo, step, slo)
		}
		left := 0.0 // direct mass below the window
		for i, v := range m {
			if mlo+i < r.lo {
				left += v
			}
		}
		if !(left > 1e-6) {
			t.Errorf("side %d: the window (from %d) leaves out %.3g of the direct mass (from %d): no check", side, r.lo, left, mlo)
		}
		inf := 0.0
		if pes {
			inf = r.inf
		}
		// Tail sums from the top down, on the direct grid (which holds
		// pairPower's window).
		var se, sr float64
		for i := len(m) - 1; i >= 0; i-- {
			j := mlo + i
			se += m[i]
			if k := j - r.lo; k >= 0 && k < len(r.mass) {
				sr += r.mass[k]
			}
			diff := math.Abs(se - (sr + inf))
			bound := (1+r.rel)*r.errFrom(float64(j)) + r.rel*se + 1e-14*se + 1e-15
			if !(diff <= bound) {
				t.Fatalf("side %d index %d (window from %d): direct tail sum %.15g, pairPower's %.15g: differ by %.3g > bound %.3g", side, j, r.lo, se, sr+inf, diff, bound)
			}
		}
		t.Logf("side %d: window %d from %d, direct %d from %d, %.3g of the mass below the window", side, len(r.mass), r.lo, len(m), mlo, left)
	}
}

// TestPairPowerGuessSkipsLook: where epsGuess puts the unrefined powers'
// error bound well above roundingMatters' threshold, pairPower refines
// without first transforming back the unrefined powers (which took an
// inverse transform and an untilting per side only to hear yes: q = 1e-4,
// sigma = 0.5, T = 10^6, 0.75 s of CPU), and its result is the one it
// reached before through that look, bit for bit: the decision without the
// guess (pairNoGuess), a second path, looks on both sides, finds that the
// rounding matters on both, and refines to the same masses and bounds.
// Where the rounding does not matter (q = 0.01, sigma = 1), both paths
// look, on both sides. Before, pairPower looked at the first point too.
func TestPairPowerGuessSkipsLook(t *testing.T) {
	testutil.SkipOn386Short(t, "two paths of pairPower compared bit for bit at T = 1000: the same float64 code everywhere")
	for _, c := range []struct {
		q, sigma float64
		steps    int
		looks    int64 // with the guess, over the two sides
	}{{1e-4, 0.5, 1000, 0}, {0.01, 1, 1000, 2}} {
		run := func(noGuess bool) (*PLD, int64) {
			pairNoGuess = noGuess
			defer func() { pairNoGuess = false }()
			n0 := pairLooks.Load()
			p, err := SampledGaussian(c.q, c.sigma, c.steps, ReplaceOne)
			if err != nil {
				t.Fatal(err)
			}
			return p, pairLooks.Load() - n0
		}
		old, oldLooks := run(true)
		p, looks := run(false)
		if oldLooks != 2 || looks != c.looks {
			t.Errorf("q=%v sigma=%v T=%d: %d unrefined looks without the guess (want 2), %d with it (want %d)", c.q, c.sigma, c.steps, oldLooks, looks, c.looks)
		}
		for i := range 4 {
			g, w := p.dist(i), old.dist(i)
			if g.lo != w.lo || len(g.mass) != len(w.mass) || g.inf != w.inf || g.logErr != w.logErr || g.rel != w.rel {
				t.Fatalf("q=%v sigma=%v side %d: grid %d+%d inf %v logErr %v, without the guess %d+%d inf %v logErr %v", c.q, c.sigma, i, g.lo, len(g.mass), g.inf, g.logErr, w.lo, len(w.mass), w.inf, w.logErr)
			}
			for j := range g.mass {
				if g.mass[j] != w.mass[j] {
					t.Fatalf("q=%v sigma=%v side %d: mass %d is %v, without the guess %v", c.q, c.sigma, i, j, g.mass[j], w.mass[j])
				}
			}
		}
	}
}

// TestMemoMGF: memoMGF's function returns f's values, each computed once
// when the calls come one after the other, and the same values when many
// come at once (run under -race).
func TestMemoMGF(t *testing.T) {
	t.Parallel()
	calls := 0
	f := func(s float64) float64 { calls++; return math.Log1p(s * s) }
	m := memoMGF(f)
	for range 3 {
		for _, s := range []float64{0.5, -2, 1e-9} {
			if got, want := m(s), math.Log1p(s*s); got != want {
				t.Fatalf("memoMGF(%v) = %v, want %v", s, got, want)
			}
		}
	}
	if calls != 3 {
		t.Errorf("f called %d times for 3 points asked 3 times each, want 3", calls)
	}
	g := memoMGF(func(s float64) float64 { return math.Exp(-s) })
	var wg sync.WaitGroup
	bad := make([]bool, 8)
	for i := range bad {
		wg.Go(func() {
			for j := range 100 {
				s := float64(j % 10)
				bad[i] = bad[i] || g(s) != math.Exp(-s)
			}
		})
	}
	wg.Wait()
	if slices.Contains(bad, true) {
		t.Error("memoMGF returned a wrong value under concurrent calls")
	}
}
