package fedopt

import (
	"math"
	"math/big"
)

// normWithin reports whether the Euclidean norm of the finite vector u is
// at most tau clip, both taken as exact real numbers (no rounding in the
// norm, the product or the comparison). clip must be finite and > 0.
//
// A float64 sum of squares, scaled by a power of two so that it neither
// overflows nor loses the largest entries to underflow, decides whenever it
// is farther from (tau clip)^2 than its own rigorous error bound; only
// within that band (relative (2d + 16) 2^-53) is the sum computed exactly
// ([exactWithin]).
func normWithin(u []float64, clip float64, tau int) bool {
	m := 0.0
	for _, v := range u {
		m = max(m, math.Abs(v))
	}
	if m == 0 {
		return true
	}
	// 2^(e-1) <= m < 2^e: the scaled entries are below 1 in magnitude and
	// the largest is at least 1/2, so the scaled sum of squares S is in
	// [1/4, d]. Scaling down rounds only entries that become subnormal (an
	// absolute error below 2^-1074 each), and so do their squares: d 2^-1072
	// at most in all, relative d 2^-1070 to S. The sum's other rounding is
	// at most a relative gamma_d = d 2^-53 / (1 - d 2^-53).
	_, e := math.Frexp(m)
	ss := 0.0
	for _, v := range u {
		a := math.Ldexp(v, -e)
		ss += a * a
	}
	// tau clip 2^-e, exact but for the conversion of tau and the product
	// (the power of two is exact where the result is normal), and its
	// square: a relative 5 2^-53 in all where tt is normal.
	t := float64(tau) * math.Ldexp(clip, -e)
	tt := t * t
	if d := float64(len(u)); d < 0x1p40 && tt >= 0x1p-1022 && !math.IsInf(tt, 0) {
		// Twice the error bounds above, with room for the rounding of the
		// comparison's own products.
		marg := (2*d + 16) * 0x1p-53
		switch {
		case ss <= tt*(1-marg):
			return true
		case ss >= tt*(1+marg):
			return false
		}
	}
	return exactWithin(u, clip, tau)
}

// exactWithin reports whether sum_k u_k^2 <= (tau clip)^2 in exact
// arithmetic, for a finite u and a finite clip > 0.
func exactWithin(u []float64, clip float64, tau int) bool {
	// A finite nonzero v with 2^(e-1) <= |v| < 2^e is a multiple of
	// 2^max(e-53, -1074): its square lies below 2^(2e) and is a multiple
	// of 2^(2 max(e-53, -1074)). The sum of d < 2^63 of them spans fewer
	// than hi - lo + 64 bits, so that precision keeps every sum exact.
	hi, lo, seen := 0, 0, false
	for _, v := range u {
		if v == 0 {
			continue
		}
		_, e := math.Frexp(v)
		h, l := 2*e, 2*max(e-53, -1074)
		if !seen {
			hi, lo, seen = h, l, true
		}
		hi, lo = max(hi, h), min(lo, l)
	}
	if !seen {
		return true
	}
	prec := uint(hi-lo) + 64
	ss := new(big.Float).SetPrec(prec)
	sq := new(big.Float).SetPrec(prec)
	for _, v := range u {
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

// fitNorm makes an accepted update u exactly within the bound the
// sensitivity analysis uses. If the finite vector u has norm at most tau
// clip in exact arithmetic ([normWithin]), it returns false and writes
// nothing. Otherwise it writes into dst (len(dst) == len(u); dst must not
// share memory with u) the products c u_k rounded to float64, for a factor
// c < 1 computed with a margin of 4d + 32 ulps and then checked: the exact
// norm of dst is at most tau clip, shrinking c further if the check fails
// (and dst is zero if nothing else passes). It returns true then. clip
// must be finite and > 0.
//
// An update the server accepts ([UpdateBound]) exceeds tau clip by a
// relative 1e-9 at most, plus the rounding of the server's norm, so c is
// within about 1e-9 of 1.
func fitNorm(dst, u []float64, clip float64, tau int) bool {
	if normWithin(u, clip, tau) {
		return false
	}
	scaleInto(dst, u, clip, tau)
	return true
}

// scaleInto is [fitNorm] for an update u known to exceed tau clip.
func scaleInto(dst, u []float64, clip float64, tau int) {
	// n is finite and > 0 (the exact norm exceeds tau clip > 0), within a
	// relative d 2^-53 or so of the exact norm; t is within 2 2^-53 of
	// tau clip where it is finite. The first margin, four times that, puts
	// the scaled norm below normWithin's band, so that its float64 sum
	// decides the check without math/big.
	n := updateNorm(u)
	t := min(float64(tau)*clip, math.MaxFloat64)
	marg := (4*min(float64(len(u)), 0x1p40) + 32) * 0x1p-53
	for marg < 1 {
		c := t / n * (1 - marg)
		for k, v := range u {
			dst[k] = c * v
		}
		if normWithin(dst, clip, tau) {
			return
		}
		marg *= 2
	}
	clear(dst)
}
