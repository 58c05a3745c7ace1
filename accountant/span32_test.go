package accountant

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestSelfComposeRangeBeyondInt32: 10^8 compositions of the Gaussian of
// sigma = 10^4 are mu-GDP with mu = sqrt(10^8)/10^4 = 1 (the truth,
// gaussTruth; its eps at delta = 1e-6 is 4.886554117, by bisection on the
// closed form with erfc). At interval 10^-4 the step's grid has 19 points,
// so the composition's whole range of indices, k (|lo| + n - 1), is about
// 2.7 10^9, beyond a 32-bit int (and beyond 2^30 - 1, the bound 386 had),
// while its window, the losses within about 10 of 0.5, is a few 10^5
// indices near 0. On 386 this was a grid error ("span more than 2^30-1
// grid points"), and so was SampledGaussian(0.01, 1, 10^9, r), which amd64
// accounts: the composition's offsets are int64s now, and only the stored
// window's indices must be ints (windowLo). SampledGaussian under
// ReplaceOne at 10^9 steps took the pair path (pairPower) through the same
// change; it takes minutes, so it is not repeated here.
func TestSelfComposeRangeBeyondInt32(t *testing.T) {
	const k, sigma, h = 100_000_000, 1e4, 1e-4
	g, err := GaussianPLD(sigma, PLDOptions{Interval: h})
	if err != nil {
		t.Fatal(err)
	}
	d := g.remove
	if span := float64(k) * (float64(len(d.mass)-1) + math.Abs(float64(d.lo))); !(span > math.MaxInt32) {
		t.Fatalf("the step's grid (%d points from %d) spans only %g indices in %d compositions: not beyond a 32-bit int", len(d.mass), d.lo, span, k)
	}
	p, err := g.SelfCompose(k)
	if err != nil {
		t.Fatalf("GaussianPLD(%g, h = %g).SelfCompose(%d): %v", sigma, h, k, err)
	}
	checkAgainstTruth(t, fmt.Sprintf("Gaussian sigma=%g h=%g, %d compositions", sigma, h, k), p, gaussTruth(1), revEps, revDeltas)
	// The safe eps at delta = 1e-6 within 10% above the truth (the grid
	// is coarse: one step's loss has a standard deviation of one interval).
	const truth = 4.886554117
	if b, err := p.EpsilonBounds(1e-6); err != nil || !(b.Safe >= truth && b.Safe < 1.1*truth) {
		t.Errorf("EpsilonBounds(1e-6) = %+v, %v: want Safe in [%v, %v)", b, err, truth, 1.1*truth)
	}
}

// TestWindowLo: a stored window's indices lo .. lo + n - 1 must lie within
// maxSpan (2^52, or 2^30 - 1 on a 32-bit platform); one end past it is a
// one-line grid error naming the index, never a wrapped int.
func TestWindowLo(t *testing.T) {
	for _, c := range []struct {
		lo int64
		n  int
		ok bool
	}{
		{0, 1, true}, {-5, 10, true},
		{maxSpan - 9, 10, true}, {maxSpan - 9, 11, false},
		{-maxSpan, 1, true}, {-maxSpan - 1, 1, false},
		{maxSpan + 1, 1, false}, {-maxSpan - 1, 1 << 24, false},
	} {
		lo, err := windowLo(c.lo, c.n, 1e-3)
		switch {
		case c.ok && (err != nil || int64(lo) != c.lo):
			t.Errorf("windowLo(%d, %d) = %d, %v; want %d", c.lo, c.n, lo, err, c.lo)
		case !c.ok && (!errors.Is(err, ErrPLDGrid) || strings.Contains(err.Error(), "\n")):
			t.Errorf("windowLo(%d, %d) = %d, %v; want a one-line ErrPLDGrid", c.lo, c.n, lo, err)
		}
	}
}
