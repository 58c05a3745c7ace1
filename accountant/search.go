package accountant

import "math"

// searchTol is the relative width at which the bracketing searches stop:
// far below the 1e-9 the package promises, far above float64 resolution.
const searchTol = 1e-13

// bisectSafe returns the least x in [lo, hi], to a relative width of
// searchTol, at which the monotone predicate safe holds. It requires
// 0 < lo < hi, safe(hi) and !safe(lo), and keeps that invariant at every
// step: hi is always a point known to be safe, lo one known to be unsafe,
// and the midpoint (geometric, since the unknowns are scale parameters)
// replaces whichever end it agrees with. It returns hi, the safe end.
//
// The loop ends when the bracket is narrower than searchTol or no float64
// lies strictly between lo and hi; halving log(hi/lo) each time, that is at
// most about 60 iterations for any bracket within the float64 range.
func bisectSafe(lo, hi float64, safe func(float64) bool) float64 {
	for hi-lo > searchTol*hi {
		mid := math.Sqrt(lo) * math.Sqrt(hi)
		if !(mid > lo && mid < hi) {
			break
		}
		if safe(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// bracketDown returns an unsafe point below hi (where safe(hi) holds) by
// halving, or 0 if every positive float64 down to the smallest normal number
// is safe, or if hi is +Inf.
func bracketDown(hi float64, safe func(float64) bool) float64 {
	if math.IsInf(hi, 1) {
		return 0
	}
	for lo := hi / 2; lo >= 0x1p-1022; lo /= 2 {
		if !safe(lo) {
			return lo
		}
	}
	return 0
}

// bracketUp returns a safe point at or above start by doubling, or +Inf if
// none below the float64 overflow threshold is safe. A start that is not
// positive (an underflowed or NaN estimate) is replaced by the smallest
// normal number.
func bracketUp(start float64, safe func(float64) bool) float64 {
	if !(start > 0) {
		start = 0x1p-1022
	}
	for hi := start; !math.IsInf(hi, 1); hi *= 2 {
		if safe(hi) {
			return hi
		}
	}
	return math.Inf(1)
}

// leastSafe returns the least x at which the monotone predicate safe holds,
// searched from start: bracketUp's safe point, bracketDown's unsafe point
// lo below it, and bisectSafe between them. Where bracketDown finds no
// unsafe point (bracketUp's is +Inf, or every x down to the smallest
// normal number is safe) x is bracketUp's point and lo is 0.
func leastSafe(start float64, safe func(float64) bool) (lo, x float64) {
	hi := bracketUp(start, safe)
	if lo = bracketDown(hi, safe); lo == 0 {
		return 0, hi
	}
	return lo, bisectSafe(lo, hi, safe)
}
