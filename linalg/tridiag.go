package linalg

import (
	"fmt"
	"math"
)

// SymTridiag is a symmetric tridiagonal matrix T given by its entries:
// T[i][i] = Diag[i] and T[i][i-1] = T[i-1][i] = Off[i] (Off[0] is ignored).
// Unlike [BidiagGram] it works on formed entries, so its relative accuracy
// for the smallest eigenvalues is the usual u ||T|| / lambda.
type SymTridiag struct {
	Diag, Off []float64
}

// N returns the order of T.
func (t SymTridiag) N() int { return len(t.Diag) }

func (t SymTridiag) check(n int) {
	if len(t.Off) != len(t.Diag) {
		panic(fmt.Sprintf("linalg: tridiagonal with %d diagonal and %d off-diagonal entries", len(t.Diag), len(t.Off)))
	}
	if n < len(t.Diag) {
		panic(fmt.Sprintf("linalg: slice of length %d, want at least %d", n, len(t.Diag)))
	}
}

// CountBelow returns the number of eigenvalues of T less than x (Sturm
// count from the LDL^T factorization of T - x I).
func (t SymTridiag) CountBelow(x float64) int {
	n := t.N()
	t.check(n)
	tiny := math.SmallestNonzeroFloat64 * 4
	count := 0
	d := 1.0
	for i := 0; i < n; i++ {
		if i == 0 {
			d = t.Diag[0] - x
		} else {
			d = t.Diag[i] - x - t.Off[i]*t.Off[i]/d
		}
		// A pivot too small to divide by is moved away from zero on the
		// side it was counted on, so that the count is the inertia of a
		// nearby matrix.
		if d < 0 {
			count++
			d = min(d, -tiny)
		} else if d < tiny {
			d = tiny
		}
	}
	return count
}

// Bounds returns lo <= lambda_min(T) and lambda_max(T) <= hi for a
// symmetric T, as [SymBand.Bounds] does: hi by Gershgorin, lo by bisection
// on [SymTridiag.CountBelow] to within a factor 1.01, lowered by a
// relative 1e-8 or by the backward error of the Sturm count, whichever is
// more. The count at x is exact for a matrix within 8 u (hi + x) of
// T - x I in norm (Kahan's analysis: off-diagonals perturbed by a relative
// 2.5 u, each pivot's subtraction by u; see Demmel, Applied Numerical
// Linear Algebra, Lemma 5.3), plus the subnormal floor of its pivots. lo
// is 0 when no positive bound exists in floating point (T singular,
// numerically singular or indefinite, or not finite): a numerical
// breakdown for callers.
func (t SymTridiag) Bounds(guess float64) (lo, hi float64) {
	n := t.N()
	t.check(n)
	for i := 0; i < n; i++ {
		r := math.Abs(t.Diag[i])
		if i > 0 {
			r += math.Abs(t.Off[i])
		}
		if i+1 < n {
			r += math.Abs(t.Off[i+1])
		}
		hi = math.Max(hi, r)
	}
	hi *= 1 + 1e-12
	x := bisectLowestPoint(t.CountBelow, guess, hi)
	margin := 8*0x1p-53*(hi+x) + 16*math.SmallestNonzeroFloat64
	if lo = min(x*(1-1e-8), x-margin); !(lo > 0) {
		return 0, hi
	}
	return lo, hi
}

// bisectLowest returns a lower bound within a factor 1.01 of the smallest
// eigenvalue of a positive definite matrix with largest eigenvalue at most
// hi, given its eigenvalue count function, lowered by a relative 1e-8.
//
// Every loop is bounded whatever count returns: the search moves by factors
// of 4 at most maxBisectSteps times (more than the 2100 binary orders of
// float64 need) and bisects at most maxBisectSteps times. It returns 0 when
// no positive bound exists in floating point: hi not finite and positive
// (a NaN, infinite or zero matrix), or a smallest eigenvalue that counts as
// nonpositive down to the smallest subnormal. Callers treat 0 as a
// numerical breakdown.
func bisectLowest(count func(float64) int, guess, hi float64) float64 {
	return bisectLowestPoint(count, guess, hi) * (1 - 1e-8)
}

// bisectLowestPoint is [bisectLowest] without the final lowering: the
// largest point it found with count 0 (a point where count was
// evaluated), or 0.
func bisectLowestPoint(count func(float64) int, guess, hi float64) float64 {
	const maxBisectSteps = 1200
	if !(hi > 0) || math.IsInf(hi, 1) {
		return 0
	}
	if !(guess > 0 && guess <= hi) {
		guess = hi / 2
	}
	below, above := guess, guess
	if count(guess) == 0 {
		for i := 0; i < maxBisectSteps && above <= hi && count(above) == 0; i++ {
			below, above = above, above*4
		}
		above = math.Min(above, hi)
	} else {
		for i := 0; i < maxBisectSteps && below > 0 && count(below) > 0; i++ {
			above, below = below, below/4
		}
	}
	if !(below > 0) {
		return 0
	}
	for i := 0; i < maxBisectSteps && above > 1.01*below; i++ {
		mid := math.Sqrt(below * above)
		if !(mid > below && mid < above) {
			mid = below + (above-below)/2 // sqrt rounded onto an end (subnormal range)
			if !(mid > below && mid < above) {
				break
			}
		}
		if count(mid) == 0 {
			below = mid
		} else {
			above = mid
		}
	}
	return below
}
