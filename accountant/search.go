package accountant

import "math"

// searchTol is the relative width at which the bracketing searches stop:
// far below the 1e-9 the package promises, far above float64 resolution.
const searchTol = 1e-13

// bisect narrows [lo, hi] around the switch of a monotone predicate ok,
// false at lo and true at hi, to a relative width of searchTol, and
// returns the last points on either side: ok(lo) is false (or lo is the
// start) and ok(hi) is true (or hi is the start). It keeps that invariant
// at every step: the midpoint replaces whichever end it agrees with, so
// hi is always a point known to satisfy ok. The midpoint is geometric if
// geo (for the scale parameters of leastSafe, 0 < lo < hi), else
// arithmetic.
//
// The loop ends when the bracket is narrower than searchTol, no float64
// lies strictly between lo and hi, or after 200 steps; halving log(hi/lo)
// each time, a geometric search takes at most about 60 steps for any
// bracket within the float64 range.
func bisect(ok func(float64) bool, lo, hi float64, geo bool) (float64, float64) {
	for range 200 {
		if hi-lo <= searchTol*hi {
			break
		}
		mid := 0.5 * (lo + hi)
		if geo {
			mid = math.Sqrt(lo) * math.Sqrt(hi)
		}
		if !(mid > lo && mid < hi) {
			break
		}
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, hi
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
// lo below it, and bisect between them. Where bracketDown finds no
// unsafe point (bracketUp's is +Inf, or every x down to the smallest
// normal number is safe) x is bracketUp's point and lo is 0.
func leastSafe(start float64, safe func(float64) bool) (lo, x float64) {
	hi := bracketUp(start, safe)
	if lo = bracketDown(hi, safe); lo == 0 {
		return 0, hi
	}
	_, x = bisect(safe, lo, hi, true)
	return lo, x
}
