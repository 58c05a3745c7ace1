package fedopt

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// Clip scales g in place to Euclidean norm at most bound and returns the
// norm g had. A vector of norm at most bound is left unchanged; otherwise
// g becomes bound g / ||g||, the same direction. Whatever g holds, the
// result has norm at most bound, up to the rounding of the norm and the
// scaling (at most a relative (d + 6) 2^-53 for d entries and a bound of
// at least 2^-1022, within the margin of [UpdateBound] for d below about
// 9e6), which is what the sensitivity bound of the private algorithms
// needs:
//
//   - The norm is computed without overflow or underflow in the sum of
//     squares (gonum's scaled floats.Norm when the plain sum overflows), so
//     a gradient with entries near 1e300 is clipped along its direction,
//     not zeroed.
//   - Infinite entries: the direction of g is the limit of g/||g|| as its
//     infinite entries grow together, the vector of their signs (finite
//     entries become 0), so g becomes bound sign(g_k) / sqrt(m) on the m
//     infinite entries; the returned norm is +Inf.
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
		return math.Inf(1)
	}
	norm := math.Sqrt(ss)
	if math.IsInf(ss, 1) || ss < 0x1p-968 {
		norm = floats.Norm(g, 2) // the scaled algorithm neither overflows nor underflows
	}
	if norm > bound {
		if s := bound / norm; s >= 0x1p-1022 {
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
	}
	return norm
}
