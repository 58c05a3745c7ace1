package fedopt

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// Clip scales g in place to Euclidean norm at most bound and returns the
// norm g had (rounded to float64). A vector whose exact norm is at most
// bound is left unchanged, bit for bit; otherwise g becomes bound g / ||g||
// up to rounding, the same direction, and if that rounded vector's exact
// norm exceeds bound, its entries are shrunk by a few ulps until it does
// not. Whatever finite g holds, the result has norm at most bound in exact
// arithmetic (decided by [normWithin]), which is what the sensitivity
// bound of the private algorithms needs:
//
//   - The norm is computed without overflow or underflow in the sum of
//     squares (gonum's scaled floats.Norm when the plain sum overflows), so
//     a gradient with entries near 1e300 is clipped along its direction,
//     not zeroed, also where its norm exceeds MaxFloat64 (Clip then
//     returns +Inf).
//   - Infinite entries: the direction of g is the limit of g/||g|| as its
//     infinite entries grow together, the vector of their signs (finite
//     entries become 0), so g becomes bound sign(g_k) / sqrt(m) on the m
//     infinite entries (shrunk as above if that rounds past bound); the
//     returned norm is +Inf.
//   - A NaN entry leaves no direction: g is set to zero (norm 0 <= bound)
//     and Clip returns NaN, so that the caller can report it.
//
// bound = +Inf leaves g unchanged (except for NaN entries) and bound = 0
// zeroes it. A negative or NaN bound is a programmer error ([Config.Validate]
// rejects it for a run) and panics: clipping to a negative norm would
// reverse the gradient.
func Clip(g []float64, bound float64) float64 {
	if !(bound >= 0) {
		panic(fmt.Sprintf("fedopt: Clip with bound %v, want >= 0", bound))
	}
	ss, infs := 0.0, 0
	for _, v := range g {
		switch {
		case math.IsNaN(v):
			clear(g)
			return math.NaN()
		case math.IsInf(v, 0):
			infs++
		}
		ss += v * v
	}
	if infs > 0 {
		s := bound / math.Sqrt(float64(infs))
		if math.IsInf(bound, 1) {
			return math.Inf(1) // nothing to clip: g keeps its infinite entries
		}
		for k, v := range g {
			switch {
			case math.IsInf(v, 1):
				g[k] = s
			case math.IsInf(v, -1):
				g[k] = -s
			default:
				g[k] = 0
			}
		}
		fitWithin(g, bound)
		return math.Inf(1)
	}
	norm := math.Sqrt(ss)
	plain := !(math.IsInf(ss, 1) || ss < 0x1p-968)
	if !plain {
		norm = floats.Norm(g, 2) // the scaled algorithm neither overflows nor underflows
	}
	if norm == 0 || math.IsInf(bound, 1) || bound > 0 && !clipNeeded(g, norm, bound, plain) {
		return norm // within the bound: g is zero, or g is finite
	}
	if math.IsInf(norm, 1) {
		// Finite entries whose norm exceeds MaxFloat64: bound/norm would
		// be 0. With m = max |g_k|, the entries g_k/m are in [-1, 1], the
		// sum of their squares r^2 in [1, d], and ||g|| = m r.
		m := 0.0
		for _, v := range g {
			m = max(m, math.Abs(v))
		}
		ss := 0.0
		for _, v := range g {
			ss += (v / m) * (v / m)
		}
		r := math.Sqrt(ss)
		for k, v := range g {
			g[k] = v / m / r * bound
		}
	} else if s := bound / norm; s >= 0x1p-1022 {
		floats.Scale(s, g)
	} else {
		// bound/norm is subnormal (a bound near 1e-16 and a norm near
		// 1e308): it keeps too few bits, or none, and g s could exceed
		// the bound by a third or lose its direction. g_k/norm is in
		// [-1, 1] with full precision.
		for k, v := range g {
			g[k] = v / norm * bound
		}
	}
	fitWithin(g, bound)
	return norm
}

// clipNeeded reports whether the finite vector g has norm above bound in
// exact arithmetic, for a finite bound > 0, where norm is g's norm as
// [Clip] computed it: plain means norm = fl(sqrt(ss)) for the recursive
// sum ss of the rounded squares, ss in [2^-968, MaxFloat64].
//
// Then, for d = len(g) < 2^40 and eps = 2^-53, ss is within a relative
// gamma_d = d eps / (1 - d eps) of the exact sum of squares (each term
// carries at most d roundings; the squares below the normal range add at
// most d 2^-1075 <= 2^-67 ss), so norm is within a relative (1.01 d + 2)
// eps of the exact norm. A norm below bound (1 - m) or above bound (1 + m),
// m = (2d + 16) eps (each product rounded by eps, or to below 2^-1022 where
// the plain norm, at least 2^-484, is far above it), decides with no
// further pass over g. Otherwise (within that band, or the norm from
// gonum's scaled algorithm) [normWithin] decides exactly.
func clipNeeded(g []float64, norm, bound float64, plain bool) bool {
	if d := float64(len(g)); plain && d < 0x1p40 {
		m := (2*d + 16) * 0x1p-53
		switch {
		case norm <= bound*(1-m):
			return false
		case norm > bound*(1+m):
			return true
		}
	}
	return !normWithin(g, bound, 1)
}

// fitWithin shrinks the finite vector g, just scaled to norm about bound
// (finite, or +Inf for nothing to do), until its exact norm is at most
// bound ([normWithin]): each try rounds every entry times 1 - m, m = 2 eps
// at first and doubled each time, which lowers every nonzero normal entry
// by at least one ulp and never raises one; after 52 tries g is set to
// zero.
func fitWithin(g []float64, bound float64) {
	if !(bound > 0) || math.IsInf(bound, 1) {
		return // g is zero for bound = 0
	}
	for m := 0x1p-52; !normWithin(g, bound, 1); m *= 2 {
		if m >= 1 {
			clear(g)
			return
		}
		floats.Scale(1-m, g)
	}
}
