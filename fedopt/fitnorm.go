package fedopt

import (
	"math"
	"math/big"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"gonum.org/v1/gonum/floats"
)

// normWithin reports whether the Euclidean norm of the finite vector u is
// at most tau clip, both taken as exact real numbers (no rounding in the
// norm, the product or the comparison). clip must be finite and > 0.
//
// A compensated (double-double) sum of squares decides whenever it is
// farther from (tau clip)^2 than its rigorous error bound, a relative
// (8d + 64) 2^-106 ([fastWithin]); only within that band, in practice an
// exact tie, is the sum computed exactly ([exactWithin]). A single entry
// (and, in that band, a single nonzero entry) is compared with tau clip
// exactly in float64 ([singleWithin]).
func normWithin(u []float64, clip float64, tau int) bool {
	return normWithinMax(u, maxAbs(u), clip, tau)
}

// normWithinMax is [normWithin] for a caller that knows m = max_k |u_k|
// exactly, which saves fastWithin's pass to find it.
func normWithinMax(u []float64, m, clip float64, tau int) bool {
	if len(u) == 1 {
		if within, ok := singleWithin(u[0], clip, tau); ok {
			return within
		}
	}
	if within, ok := fastWithinMax(u, m, clip, tau); ok {
		return within
	}
	return exactWithin(u, clip, tau)
}

// maxAbs returns max_k |u_k| (0 for an empty u).
func maxAbs(u []float64) float64 {
	m := 0.0
	for _, v := range u {
		m = max(m, math.Abs(v))
	}
	return m
}

// fastWithin decides whether sum_k u_k^2 <= (tau clip)^2 in exact
// arithmetic, as [normWithin] does, from a compensated float64 sum; ok is
// false where that sum is too close to the bound to decide (then within is
// meaningless). u must be finite, clip finite and > 0.
//
// Write eps = 2^-53 (round to nearest), d = len(u) < 2^40, and scale by
// 2^-e, 2^(e-1) <= max |u_k| < 2^e, so that the scaled entries a_k are
// below 1 and the largest is at least 1/2: their exact sum of squares S
// lies in [1/4, d], and a_k is exact but where it is subnormal (rounded by
// at most 2^-1075). Each square is split without error, p = fl(a^2) and
// q = fl(a^2 - p) by a fused multiply-add, p + q = a^2, |q| <= eps p,
// as long as a^2 - p is not below the normal range (|a| >= 2^-485);
// otherwise p + q is within 2^-1075 of a^2 and |q| <= eps p + 2^-1074.
// A running sum is a pair (s, c), s >= 0, s = fl(s + c) (so |c| <= eps s),
// and a step ([addSquare]) is
//
//	(h, t) = TwoSum(s, p)       h + t = s + p exactly
//	v = fl(t + fl(c + q))
//	(s, c) = Fast2Sum(h, v)     s + c = h + v exactly (|v| < h)
//
// TwoSum and Fast2Sum are exact whatever the magnitudes (sums of float64s
// round only in the normal range), so the step's only rounding is in v:
// with P the exact partial sum, |t| <= eps h, |c| <= eps s, |q| <= eps p
// and s + p <= (1 + 3 eps) P, it is at most eps(|c| + |q|) + eps(|t| +
// (|c| + |q|)(1 + eps)) <= (3 + 8 eps) eps^2 P <= 3.01 eps^2 S. Four such
// sums (entries k mod 4) are added at the end by the same step with
// (s', c') for (p, q) ([addPair]), three steps of at most 3.01 eps^2 S
// each. With the subnormal roundings above (at most 2^-1073 an entry,
// below 2^-1033 in all, negligible against eps^2 S >= 2^-108), the final
// pair differs from S by at most 3.02 (d + 3) eps^2 S.
//
// The bound T = tau clip 2^-e is exactly Th + Tl (a product of two
// float64s by a fused multiply-add, tau < 2^53; Th < 1/4 or Th > 2 sqrt(d)
// + 1 decide at once, as T^2 < 1/4 <= S or T^2 > d > S, and otherwise
// every part is normal), and T^2 = P2 + Q2 + 2 Th Tl + Tl^2 with
// (P2, Q2) the exact square of Th, |Q2| <= eps P2, |Tl| <= eps Th: the
// pair (P2, Q = fl(Q2 + fl(2 Th Tl))) is within 6.01 eps^2 T^2 of T^2.
// The difference T^2 - S is computed as r = fl(x + fl(fl(Q - c) + y)),
// (x, y) = TwoSum(P2, -s) exactly, |y| <= eps |x|: the two inner roundings
// are at most 3.01 eps^2 (T^2 + S) and 4.01 eps^2 (T^2 + S), the last
// eps |r|. So |r - (T^2 - S)| < (3.02 d + 23) eps^2 (T^2 + S) + eps |r|,
// below half the band (8d + 64) eps^2 fl(P2 + s) (P2 + s is within a
// relative 3 eps of T^2 + S) where |r| exceeds the band: r beyond the
// band has the sign of T^2 - S.
func fastWithin(u []float64, clip float64, tau int) (within, ok bool) {
	return fastWithinMax(u, maxAbs(u), clip, tau)
}

// fastWithinMax is [fastWithin] for m = max_k |u_k|, exactly.
func fastWithinMax(u []float64, m, clip float64, tau int) (within, ok bool) {
	e, s, c, nz := sumSquaresMax(u, m)
	if !nz {
		return true, true
	}
	d := float64(len(u))
	if d >= 0x1p40 || int64(tau) >= 1<<53 {
		return false, false
	}
	// T = tau clip 2^-e. Outside [1/2, 2 sqrt(d)] it is far from sqrt(S),
	// which is in [1/2, sqrt(d)].
	ft := float64(tau)
	cs := math.Ldexp(clip, -e)
	th, tl := ddfloat.TwoProd(ft, cs)
	switch {
	case th < 0.25:
		return false, true
	case th > 2*math.Sqrt(d)+1:
		return true, true
	}
	p2, q2 := ddfloat.TwoProd(th, th)
	q2 = float64(q2 + float64(2*th*tl))
	x, y := ddfloat.TwoSum(p2, -s)
	r := float64(x + float64(float64(q2-c)+y))
	band := (8*d + 64) * 0x1p-106 * float64(p2+s)
	switch {
	case r > band:
		return true, true
	case r < -band:
		return false, true
	}
	return false, false
}

// sumSquares returns, for a finite u, the exponent e with 2^(e-1) <=
// max |u_k| < 2^e and the compensated sum (s, c) of the squares of the
// scaled entries u_k 2^-e, as [fastWithin] describes (their exact sum lies
// in [1/4, d], and s + c is within 3.02 (d + 3) 2^-106 of it); nz is false,
// and the rest zero, where every entry is zero.
func sumSquares(u []float64) (e int, s, c float64, nz bool) {
	return sumSquaresMax(u, maxAbs(u))
}

// sumSquaresMax is [sumSquares] for m = max_k |u_k|, exactly.
func sumSquaresMax(u []float64, m float64) (e int, s, c float64, nz bool) {
	if m == 0 {
		return 0, 0, 0, false
	}
	_, e = math.Frexp(m)
	pre, sc := scaleExp(e)
	// Four independent pairs (entries k mod 4), for speed: the steps of
	// one pair form a chain of dependent additions.
	var s0, c0, s1, c1, s2, c2, s3, c3 float64
	k := 0
	for ; k+4 <= len(u); k += 4 {
		s0, c0 = addSquare(s0, c0, u[k]*pre*sc)
		s1, c1 = addSquare(s1, c1, u[k+1]*pre*sc)
		s2, c2 = addSquare(s2, c2, u[k+2]*pre*sc)
		s3, c3 = addSquare(s3, c3, u[k+3]*pre*sc)
	}
	for ; k < len(u); k++ {
		s0, c0 = addSquare(s0, c0, u[k]*pre*sc)
	}
	s0, c0 = addPair(s0, c0, s1, c1)
	s2, c2 = addPair(s2, c2, s3, c3)
	s, c = addPair(s0, c0, s2, c2)
	return e, s, c, true
}

// scaleExp returns two powers of two whose product is 2^-e, for an
// exponent -1073 <= e <= 1024 of a finite nonzero float64 ([math.Frexp]):
// v pre sc is v 2^-e, exact but where it is subnormal (rounded there once,
// as math.Ldexp does). 2^-e is a float64 for e >= -1023 (pre = 1); below,
// it takes two factors.
func scaleExp(e int) (pre, sc float64) {
	if e < -1023 {
		return 0x1p600, math.Ldexp(1, -e-600)
	}
	return 1, math.Ldexp(1, -e)
}

// addSquare returns the pair (s, c) plus a^2, renormalized, as
// [fastWithin] describes: for s >= 0, |c| <= 2^-53 s, the pair that it
// returns has the same properties and differs from s + c + a^2 by at most
// 3.01 2^-106 (s + c + a^2) plus, where a^2 or its low part is subnormal,
// 2^-1073.
func addSquare(s, c, a float64) (float64, float64) {
	p := float64(a * a)
	q := math.FMA(a, a, -p)
	h, t := ddfloat.TwoSum(s, p)
	// |v| <= 3.01 2^-53 h: Fast2Sum (h + v, exact as h's exponent is
	// at least v's).
	v := float64(t + float64(c+q))
	s = h + v
	return s, v - (s - h)
}

// addPair returns the sum of two pairs as in [addSquare] (s >= 0,
// |c| <= 2^-53 s), renormalized, with the same error bound, 3.01 2^-106
// times the sum.
func addPair(s, c, s2, c2 float64) (float64, float64) {
	h, t := ddfloat.TwoSum(s, s2)
	v := float64(t + float64(c+c2))
	return ddfloat.FastTwoSum(h, v)
}

// exactWithin reports whether sum_k u_k^2 <= (tau clip)^2 in exact
// arithmetic, for a finite u and a finite clip > 0.
func exactWithin(u []float64, clip float64, tau int) bool {
	// A finite nonzero v with 2^(e-1) <= |v| < 2^e is a multiple of
	// 2^max(e-53, -1074): its square lies below 2^(2e) and is a multiple
	// of 2^(2 max(e-53, -1074)). The sum of d < 2^63 of them spans fewer
	// than hi - lo + 64 bits, so that precision keeps every sum exact.
	hi, lo, nz, last := 0, 0, 0, 0.0
	for _, v := range u {
		if v == 0 {
			continue
		}
		_, e := math.Frexp(v)
		h, l := 2*e, 2*max(e-53, -1074)
		if nz == 0 {
			hi, lo = h, l
		}
		hi, lo, nz, last = max(hi, h), min(lo, l), nz+1, v
	}
	switch {
	case nz == 0:
		return true
	case nz == 1:
		// A single nonzero entry (every d = 1 vector): its norm is |v|,
		// a tie at the bound is decided without math/big.
		if within, ok := singleWithin(last, clip, tau); ok {
			return within
		}
	}
	prec := uint(hi-lo) + 64
	ss := new(big.Float).SetPrec(prec)
	sq := new(big.Float).SetPrec(prec)
	for _, v := range u {
		if v == 0 {
			continue
		}
		sq.SetFloat64(v)
		ss.Add(ss, sq.Mul(sq, sq))
	}
	// tau < 2^63 and clip's 53 bits: the product has at most 117 bits and
	// its square 234.
	b := new(big.Float).SetPrec(256).SetInt64(int64(tau))
	b.Mul(b, new(big.Float).SetFloat64(clip))
	b.Mul(b, b)
	return ss.Cmp(b) <= 0
}

// singleWithin reports whether |v| <= tau clip in exact arithmetic, for a
// finite v and a finite clip > 0, from float64 operations alone; ok is
// false where it cannot (tau >= 2^53, or tau clip near or past the ends
// of the normal range). With p = fl(tau clip) and its rounding error
// lo = tau clip - p exact (a fused multiply-add, p >= 2^-968), |lo| is at
// most half the gap from p to its neighbour on lo's side: |v| > p means
// |v| >= p's successor > p + lo, |v| < p means |v| <= p's predecessor <
// p + lo, and |v| = p is within iff lo >= 0.
func singleWithin(v, clip float64, tau int) (within, ok bool) {
	a := math.Abs(v)
	if tau == 1 {
		return a <= clip, true
	}
	if int64(tau) >= 1<<53 {
		return false, false
	}
	ft := float64(tau)
	p, lo := ddfloat.TwoProd(ft, clip)
	if math.IsInf(p, 0) || p < 0x1p-968 {
		return false, false
	}
	return a < p || a == p && lo >= 0, true
}

// clearlyWithin reports whether a norm measured by [measureNorm] proves
// that u, of d entries, has norm at most tau clip in exact arithmetic
// without a further pass over u; false means undecided (then [normWithin]
// decides). It decides only where norm is plain (fl(sqrt(ss)), ss the
// recursive sum of the rounded squares, in [2^-968, MaxFloat64]), d <
// 2^40, tau < 2^53 and t = fl(tau clip) is finite, and then accepts a norm
// at most fl(t (1 - m)), m = (2d + 16) 2^-53 (as [clipNeeded]'s band),
// about four times what the bound below needs.
//
// With eps = 2^-53 and S the exact sum of squares: each square rounds to
// v^2 (1 + delta), |delta| <= eps, or, below the normal range, to within
// 2^-1075 of v^2; the recursive sum of d nonnegative terms carries at most
// d - 1 further roundings of each term (Higham's gamma_(d-1), gamma_n =
// n eps / (1 - n eps)), and no partial sum overflows as ss is finite. So ss >=
// (1 - gamma_d) S - d 2^-1075, and, as d 2^-1074 < 2^-1034 <= 2^-66 ss,
// S <= ss (1/(1 - gamma_d) + 2^-66). The square root of the normal ss
// rounds by a relative eps: sqrt(ss) <= norm/(1 - eps). The products t and
// t (1 - m) (1 - m exact: m is a multiple of eps below 1/2) round by a
// relative eps each where normal, and an accepted norm is at least 2^-484,
// so normal: norm <= fl(t (1 - m)) gives ||u|| = sqrt(S) <= tau clip
// (1 - m) (1 + eps)^2/(1 - eps) sqrt(1/(1 - gamma_d) + 2^-66) <= tau clip
// (1 - m)(1 + (0.51 d + 3.1) eps) <= tau clip, as gamma_d <= 1.0001 d eps for
// d < 2^40.
func clearlyWithin(norm float64, plain bool, d int, clip float64, tau int) bool {
	if !plain || int64(d) >= 1<<40 || int64(tau) >= 1<<53 {
		return false
	}
	t := float64(tau) * clip
	if math.IsInf(t, 1) {
		return false
	}
	m := (2*float64(d) + 16) * 0x1p-53
	return norm <= t*(1-m)
}

// fitNorm makes an accepted update u exactly within the bound the
// sensitivity analysis uses. If the finite vector u has norm at most tau
// clip in exact arithmetic ([normWithin]), it returns false and writes
// nothing. Otherwise it writes into dst (len(dst) == len(u); dst must not
// share memory with u) u scaled to norm a few ulps below tau clip, by the
// accurate factor [Clip] uses ([scaleTo]), and then checked: the exact
// norm of dst is at most tau clip, shrinking dst further if the check
// fails (and dst is zero if nothing else passes). It returns true then.
// clip must be finite and > 0.
//
// An update the server accepts ([UpdateBound]) exceeds tau clip by a
// relative 1e-9 at most, plus the rounding of the server's norm, so the
// factor is within about 1e-9 of 1.
func fitNorm(dst, u []float64, clip float64, tau int) bool {
	if normWithin(u, clip, tau) {
		return false
	}
	scaleInto(dst, u, clip, tau)
	return true
}

// scaleInto is [fitNorm] for an update u known to exceed tau clip. The
// factor is [scaleTo]'s, for t = fl(tau clip) (finite: where tau clip
// overflows no finite u exceeds it): the exact norm of the result is at
// most (1 - 1.99 2^-53) t <= tau clip but where entries round below the
// normal range, so that the check passes at once. Before, the factor was
// t / ||u|| with a margin of 4d + 32 ulps, which left the server's copy
// that far below tau clip (4.4e-10 relative at d = 10^6) where [Clip]
// leaves a gradient within 6 ulps of its bound.
func scaleInto(dst, u []float64, clip float64, tau int) {
	_, plain := measureNorm(u)
	t := min(float64(tau)*clip, math.MaxFloat64)
	copy(dst, u)
	gmax := scaleTo(dst, t, plain)
	// As fitWithin, for the exact bound tau clip rather than t.
	for m := 0x1p-52; !normWithinMax(dst, gmax, clip, tau); m *= 2 {
		if m >= 1 {
			clear(dst)
			return
		}
		floats.Scale(1-m, dst)
		gmax *= 1 - m // rounding is monotone: still the largest |dst_k|
	}
}
