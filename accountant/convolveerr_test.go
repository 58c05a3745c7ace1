package accountant

import (
	"math"
	"testing"
)

// tailOnlyDist returns a lossDist at tilt t with masses mass (from index
// lo) and errors e (returned, the exact masses being mass + e) whose tail
// sums meet the bound e^(L - t j) at every index of the array: e_i =
// e^(L - t i) - e^(L - t (i+1)), and e^(L - t hi) at the top. That is all
// a per-index FFT bound promises (selfConvolve's output), and their
// weighted l1 norm is e^L (1 + (n-1)(1 - e^-t)), about n t times e^L.
func tailOnlyDist(lo int, mass []float64, t, L float64) (*lossDist, []float64) {
	n := len(mass)
	e := make([]float64, n)
	for i := range e {
		j := float64(lo + i)
		e[i] = math.Exp(L - t*j)
		if i < n-1 {
			e[i] -= math.Exp(L - t*(j+1))
		}
	}
	d := &lossDist{lo: lo, mass: mass, tau: t, logErr: L}
	setTailOnly(d)
	return d, e
}

// setTailOnly records that d's error bound is one on tail sums only: its
// weighted l1 norm is bounded by Abel summation over the array,
// sum_i |e_i| e^(t i) = S(lo) e^(t lo) + sum_{i > lo} S(i) (e^(t i) - e^(t (i-1)))
// <= e^L (1 + (n-1)(1 - e^-t)).
func setTailOnly(d *lossDist) {
	d.logGapW = math.Log1p(float64(len(d.mass)-1) * -math.Expm1(-d.tau))
}

// TestConvolveAtTailOnlyErrors composes two distributions whose errors
// have tail sums exactly at their bounds, placed so that the product of
// the two errors dominates (masses 1e-9 of the errors' size), and checks
// the composition's error against the exact composition of the exact
// masses, summed directly in float64 (all terms non-negative, so it is
// within 1e-13 relatively). Taking the tail-sum bound of one input as its
// weighted l1 norm, as convolveAt did, undercounts the product term by the
// full 1 + (n-1)(1 - e^-t) = 25.6 (n = 40, t = 1): at j = hi_a + lo_b the
// tail sum of e^a * e^b is exactly e^(L - t j) ||e^b||_t, so the fixed
// bound is met within 1e-11 (the first-order terms' share).
func TestConvolveAtTailOnlyErrors(t *testing.T) {
	const n, tilt = 40, 1.0
	mk := func(lo int) []float64 {
		m := make([]float64, n)
		for i := range m {
			m[i] = 1e-12 * math.Exp(-tilt*float64(lo+i))
		}
		return m
	}
	L := math.Log(1e-3)
	for _, los := range [][2]int{{0, 0}, {-5, 3}} {
		a, ea := tailOnlyDist(los[0], mk(los[0]), tilt, L)
		b, eb := tailOnlyDist(los[1], mk(los[1]), tilt, L)
		ma, mb := append([]float64(nil), a.mass...), append([]float64(nil), b.mass...)
		r, err := convolveAt(a, b, tilt)
		if err != nil {
			t.Fatal(err)
		}
		lo := a.lo + b.lo
		exact := make([]float64, 2*n-1)
		for i := range n {
			for k := range n {
				exact[i+k] += (ma[i] + ea[i]) * (mb[k] + eb[k])
			}
		}
		comp := make([]float64, len(exact))
		for i, v := range r.mass {
			comp[r.lo-lo+i] = v
		}
		worst := 0.0
		tailDiff, tailComp := 0.0, 0.0
		for s := len(exact) - 1; s >= 0; s-- {
			tailDiff += math.Abs(exact[s] - comp[s])
			tailComp += comp[s]
			// The exact masses are within 1 + rel of the computed ones
			// after the additive error (1e-13 for the float64 sum).
			allowed := (1+r.rel)*r.errFrom(float64(lo+s)) + r.rel*tailComp
			if q := tailDiff / (allowed * (1 + 1e-13)); q > worst {
				worst = q
			}
		}
		t.Logf("los %v: largest ratio of the error's tail sum to its bound %.12g", los, worst)
		if worst > 1 {
			t.Errorf("los %v: the error's tail sum exceeds its bound by a factor %.3g", los, worst)
		}
	}
}

// TestSelfConvolveTailOnlyErrors is TestConvolveAtTailOnlyErrors for a
// self-composition (k = 2, on a window holding the whole composition),
// whose input error grows to 2 e * m + e * e: bounding its product by the
// input's tail-sum bound in place of its weighted l1 norm, as selfConvolve
// did, undercounts it by up to 1 + (n-1)(1 - e^-t) = 13 (n = 20, t = 1).
// The errors are 10^4 times the masses so that the product dominates.
func TestSelfConvolveTailOnlyErrors(t *testing.T) {
	const n, tilt = 20, 1.0
	m := make([]float64, n)
	for i := range m {
		m[i] = math.Exp(-tilt * float64(i))
	}
	scale(m, 1/sum(m))
	d, e := tailOnlyDist(0, slicesClone(m), tilt, math.Log(1e4))
	r, err := selfConvolve(nil, d, 2, 0.01, 1e-300, 1e-300, true)
	if err != nil {
		t.Fatal(err)
	}
	exact := make([]float64, 2*n-1)
	for i := range n {
		for k := range n {
			exact[i+k] += (m[i] + e[i]) * (m[k] + e[k])
		}
	}
	comp := make([]float64, len(exact))
	for i, v := range r.mass {
		comp[r.lo+i] = v
	}
	if r.lo < 0 || r.lo+len(r.mass) > len(exact) || r.inf != 0 {
		t.Fatalf("window [%d, %d) inf %g: not the whole composition", r.lo, r.lo+len(r.mass), r.inf)
	}
	worst := 0.0
	tailDiff, tailComp := 0.0, 0.0
	for s := len(exact) - 1; s >= 0; s-- {
		tailDiff += math.Abs(exact[s] - comp[s])
		tailComp += comp[s]
		allowed := (1+r.rel)*r.errFrom(float64(s)) + r.rel*tailComp
		if q := tailDiff / (allowed * (1 + 1e-13)); q > worst {
			worst = q
		}
	}
	t.Logf("largest ratio of the error's tail sum to its bound %.12g", worst)
	if worst > 1 {
		t.Errorf("the error's tail sum exceeds its bound by a factor %.3g", worst)
	}
}

// slicesClone returns a copy of x.
func slicesClone(x []float64) []float64 { return append([]float64(nil), x...) }
