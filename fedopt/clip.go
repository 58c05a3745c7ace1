package fedopt

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"gonum.org/v1/gonum/floats"
)

// Clip scales g in place to Euclidean norm at most bound and returns the
// norm g had (rounded to float64). A vector whose exact norm is at most
// bound is left unchanged, bit for bit; otherwise g becomes bound g / ||g||
// rounded a few ulps below bound, the same direction (scaled by a factor
// computed from a compensated sum of squares, [scaleTo]: the exact norm of
// the result is between (1 - 2^-50) bound and bound where its entries are
// normal), and if the check of that rounded vector's exact norm finds it
// past bound, its entries are shrunk by a few ulps more until it is not.
// Whatever finite g holds, the result has norm at most bound in exact
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
//     infinite entries (rounded below bound and checked as above); the
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
		if math.IsInf(bound, 1) {
			return math.Inf(1) // nothing to clip: g keeps its infinite entries
		}
		for k, v := range g {
			switch {
			case math.IsInf(v, 1):
				g[k] = 1
			case math.IsInf(v, -1):
				g[k] = -1
			default:
				g[k] = 0
			}
		}
		if bound == 0 {
			floats.Scale(0, g)
		} else {
			// Entries 0 and +-1: the plain sum is in [1, d].
			fitWithin(g, bound, scaleTo(g, bound, true))
		}
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
	if bound == 0 {
		floats.Scale(0, g)
		return norm
	}
	fitWithin(g, bound, scaleTo(g, bound, plain))
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
// zero. gmax must be max_k |g_k| exactly (it saves the check a pass to
// find it). After [scaleTo] the first check passes but where entries were
// rounded below the normal range.
func fitWithin(g []float64, bound, gmax float64) {
	if !(bound > 0) || math.IsInf(bound, 1) {
		return // g is zero for bound = 0
	}
	for m := 0x1p-52; !normWithinMax(g, gmax, bound, 1); m *= 2 {
		if m >= 1 {
			clear(g)
			return
		}
		floats.Scale(1-m, g)
		gmax *= 1 - m // rounding is monotone: still the largest |g_k|
	}
}

// scaleTo scales the finite vector g, which has a nonzero entry, in place
// to bound g / ||g|| rounded a few ulps below bound, for a finite bound
// > 0, so that the exact check that follows ([fitWithin]) passes at once:
// the factor comes from the compensated sum of squares ([sumSquares]), not
// from the float64 norm, whose error (up to a relative (2d + 16) 2^-53)
// would leave the result that far on either side of bound. The bound
// itself rests on that check, never on this estimate.
//
// With u = 2^-53 and (s, c) from [estimateSquares] where g's plain sum
// of squares is in the normal range and does not overflow in its order
// (e = 0), otherwise e and (s, c) from sumSquares: A = ||g|| 2^-e is within
// a relative 2 (d + 4) u^2 (below 2^-11 u for d < 2^40), or for
// estimateSquares about (d u)^2 (below 2^-5 u for d <= 2^24), of nh + nl,
// nh = fl(sqrt(s)), nl = (s - nh^2 + c)/(2 nh) (s - nh^2 is exact by a
// fused multiply-add, the residual of a correctly rounded square root).
// Where f = fl(bound/nh) is a normal float64, its remainder bound - f nh
// is exact by a fused multiply-add too, bound/A = f + (bound - f nh -
// f nl)/A, and F = fl(f w + corr), corr the second term with nh for A,
// w = 1 - 4u, is bound w / A to a relative 1.001u. If sc = F 2^-e is
// normal, g becomes fl(sc g_k), each entry within a relative u: the norm
// is between (1 - 6.01u) bound and (1 - 1.99u) bound in exact arithmetic.
// Otherwise (f subnormal or past MaxFloat64, or sc subnormal: bound/||g||
// below 2^-1022) the entries are fl(fl(fl(g_k 2^-e) q) bound), q = w/A to
// a relative 1.001u by the same steps with 1 for bound: |g_k 2^-e q| < 1
// keeps every step finite, and the norm is between (1 - 7.01u) bound and
// (1 - 0.99u) bound. Both ranges hold but for entries rounded below the
// normal range (by at most 2^-1075 a step, absolute), where the check may
// still find the result past bound. It returns max_k |g_k| of the result.
func scaleTo(g []float64, bound float64, plain bool) (gmax float64) {
	const w = 1 - 4*0x1p-53
	e, s, c, m := 0, 0.0, 0.0, 0.0
	if plain {
		s, c, m = estimateSquares(g)
	}
	if !plain || !(s <= math.MaxFloat64 && math.Abs(c) <= math.MaxFloat64) {
		// Not plain, or a plain sum near MaxFloat64 that overflowed in
		// estimateSquares' order of additions: the scaled sum.
		m = maxAbs(g)
		e, s, c, _ = sumSquaresMax(g, m)
	}
	nh := math.Sqrt(s)
	nl := (math.FMA(-nh, nh, s) + c) / (2 * nh)
	// The new largest |g_k| is the old one through the same roundings
	// (each is monotone in |g_k| and symmetric in its sign).
	if f := bound / nh; f >= 0x1p-1022 && f <= math.MaxFloat64 {
		corr := (math.FMA(-f, nh, bound) - f*nl) / nh
		if sc := math.Ldexp(math.FMA(f, w, corr), -e); sc >= 0x1p-1022 && sc <= math.MaxFloat64 {
			floats.Scale(sc, g)
			return sc * m
		}
	}
	q := 1 / nh
	q = math.FMA(q, w, (math.FMA(-q, nh, 1)-q*nl)/nh)
	pre, sc := scaleExp(e)
	for k, v := range g {
		g[k] = v * pre * sc * q * bound
	}
	return m * pre * sc * q * bound
}

// estimateSquares returns the sum of squares of the entries of g as an
// unevaluated pair (s, c), for g whose plain float64 sum of squares is in
// [2^-968, MaxFloat64] (no square overflows): Ogita, Rump and Oishi's
// Dot2, each square split exactly by a fused multiply-add (p + q = v^2)
// and each addition's rounding error kept by TwoSum, in four independent
// sums for speed. Without renormalization it is cheaper than [sumSquares];
// s + c is within a relative gamma_d^2 (about (d u)^2, u = 2^-53) of the
// exact sum, plus d 2^-1074 where squares fall below the normal range, but
// s may overflow where the sum is near MaxFloat64. An estimate for
// [scaleTo], never a decision. It also returns max_k |g_k|.
func estimateSquares(g []float64) (s, c, gmax float64) {
	var s0, c0, s1, c1, s2, c2, s3, c3 float64
	k := 0
	for ; k+4 <= len(g); k += 4 {
		gmax = max(gmax, math.Abs(g[k]), math.Abs(g[k+1]), math.Abs(g[k+2]), math.Abs(g[k+3]))
		s0, c0 = dot2Step(s0, c0, g[k])
		s1, c1 = dot2Step(s1, c1, g[k+1])
		s2, c2 = dot2Step(s2, c2, g[k+2])
		s3, c3 = dot2Step(s3, c3, g[k+3])
	}
	for ; k < len(g); k++ {
		gmax = max(gmax, math.Abs(g[k]))
		s0, c0 = dot2Step(s0, c0, g[k])
	}
	s0, t0 := ddfloat.TwoSum(s0, s1)
	s2, t2 := ddfloat.TwoSum(s2, s3)
	s, t := ddfloat.TwoSum(s0, s2)
	return s, c0 + c1 + c2 + c3 + t0 + t2 + t, gmax
}

// dot2Step adds v^2 to the running sum s, whose collected rounding errors
// are c: one step of [estimateSquares].
func dot2Step(s, c, v float64) (float64, float64) {
	// ddfloat.TwoProd rounds p explicitly: where the compiler fuses x*y + z
	// (arm64, ppc64, s390x, riscv64, loong64), an unrounded v*v in TwoSum's
	// sum and its error term made them the error of s + v^2, not of s + p,
	// and the low part v^2 - p was then counted twice (an error of u, not
	// u^2).
	p, q := ddfloat.TwoProd(v, v)
	h, t := ddfloat.TwoSum(s, p)
	return h, c + (t + q)
}
