package accountant

import (
	"cmp"
	"math"
)

// This file holds zero-concentrated DP (Bun & Steinke 2016) of the Gaussian
// mechanism and its conversions to (eps, delta)-DP. Throughout, L = log(1/delta).

// GaussianRho returns the zCDP parameter of the Gaussian mechanism with L2
// sensitivity and noise standard deviation std: rho = sensitivity^2/(2 std^2)
// (Bun & Steinke 2016, Proposition 1.6), rounded up. Compositions add their
// rho (Lemma 1.7).
//
// Special cases are:
//
//	GaussianRho(s, v) = +Inf when rho overflows
//	GaussianRho(s, v) is an error if s or v is <= 0, +Inf or NaN
func GaussianRho(sensitivity, std float64) (float64, error) {
	if err := cmp.Or(checkPositive("sensitivity", sensitivity), checkPositive("std", std)); err != nil {
		return 0, err
	}
	// Rounded up at every step, also where rho is subnormal or below
	// 5e-324: a rho rounded to 0 would claim no privacy loss.
	r := divUp(sensitivity, std)
	return up(mulUp(mulUp(r, r), 0.5)), nil
}

// ZCDPEpsilon returns the eps for which rho-zCDP implies (eps, delta)-DP by
// Bun & Steinke 2016, Proposition 1.3: eps = rho + 2 sqrt(rho log(1/delta)),
// rounded up.
//
// Special cases are:
//
//	ZCDPEpsilon(0, delta) = 0
//	ZCDPEpsilon(rho, delta) is an error for rho < 0, rho = +Inf or NaN
//	ZCDPEpsilon(rho, delta) is an error unless 0 < delta < 1
func ZCDPEpsilon(rho, delta float64) (float64, error) {
	if err := checkRhoDelta(rho, delta); err != nil {
		return 0, err
	}
	return up(bsEpsilon(rho, -logf(delta))), nil
}

// ZCDPRho returns the largest rho for which rho-zCDP implies (eps, delta)-DP
// by Bun & Steinke's conversion, the inverse of [ZCDPEpsilon]:
// rho = (sqrt(eps + L) - sqrt(L))^2, evaluated as eps^2/(sqrt(eps + L) + sqrt(L))^2
// so that nothing cancels, and rounded down. The paper's baseline
// (Liu et al. 2023) uses it with V^2 = 2 B_g^2 / rho.
//
// Special cases are:
//
//	ZCDPRho(eps, delta) is an error for eps <= 0, eps = +Inf or NaN
//	ZCDPRho(eps, delta) is an error unless 0 < delta < 1
func ZCDPRho(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	return down(bsRho(eps, -logf(delta))), nil
}

// CKSEpsilon returns the eps for which rho-zCDP implies (eps, delta)-DP by
// Canonne, Kamath & Steinke 2020 (the same conversion as Balle et al. 2020
// applied to the Renyi curve alpha rho of rho-zCDP):
//
//	eps = inf_{alpha > 1} alpha rho + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1),
//
// never more than [ZCDPEpsilon]. The objective has a single minimum, where
// rho (alpha-1)^2 = log(1/(alpha delta)); it is found by bisection. Any
// alpha gives a valid bound, so an inexact minimiser errs only toward a
// larger eps. The result is rounded up and is never negative: a negative
// infimum means (0, delta)-DP and is returned as 0.
//
// Special cases are:
//
//	CKSEpsilon(0, delta) = 0
//	CKSEpsilon(rho, delta) is an error for rho < 0, rho = +Inf or NaN
//	CKSEpsilon(rho, delta) is an error unless 0 < delta < 1
func CKSEpsilon(rho, delta float64) (float64, error) {
	if err := checkRhoDelta(rho, delta); err != nil {
		return 0, err
	}
	return up(cksEpsilon(rho, -logf(delta))), nil
}

// CKSRho returns the largest rho, to a relative 1e-12 and rounded down, for
// which rho-zCDP implies (eps, delta)-DP by [CKSEpsilon]'s conversion. It is
// at least [ZCDPRho].
//
// Special cases are:
//
//	CKSRho(eps, delta) is an error for eps <= 0, eps = +Inf or NaN
//	CKSRho(eps, delta) is an error unless 0 < delta < 1
func CKSRho(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	return down(cksRho(eps, -logf(delta))), nil
}

func checkRhoDelta(rho, delta float64) error {
	return cmp.Or(checkNonNegative("rho", rho), checkDelta(delta))
}

// bsEpsilon is Bun & Steinke's rho + 2 sqrt(rho L).
func bsEpsilon(rho, L float64) float64 {
	return rho + 2*math.Sqrt(rho*L)
}

// bsRho is its inverse eps^2/(sqrt(eps + L) + sqrt(L))^2.
func bsRho(eps, L float64) float64 {
	s := math.Sqrt(eps+L) + math.Sqrt(L)
	return (eps / s) * (eps / s)
}

// rdpConversion returns the part of the Balle et al. 2020 / CKS conversion
// that does not depend on rho, written in x = alpha - 1 > 0 so that orders
// close to 1 lose nothing:
//
//	log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1) = -log1p(1/x) + (L - log1p(x))/x.
func rdpConversion(x, L float64) float64 {
	return -math.Log1p(1/x) + (L-math.Log1p(x))/x
}

// cksEpsilon returns max(0, inf_alpha g(alpha)), g(alpha) = alpha rho + rdpConversion.
// With x = alpha - 1, g'(alpha) = rho + log(alpha delta)/x^2, which is
// negative exactly where rho x^2 < L - log1p(x); the right-hand side
// decreases and the left increases in x, so g is unimodal and its minimiser
// is the one root of rho x^2 = L - log1p(x), bracketed from
// x = sqrt(L/rho) (where the left side is larger) and bisected in log x.
func cksEpsilon(rho, L float64) float64 {
	if rho == 0 {
		return 0
	}
	if math.IsInf(rho, 1) {
		return rho
	}
	g := func(x float64) float64 { return (1+x)*rho + rdpConversion(x, L) }
	past := func(x float64) bool { return rho*x*x >= L-math.Log1p(x) } // at or past the minimum
	hi := math.Sqrt(L / rho)
	if !(hi > 0) || math.IsInf(hi, 1) {
		hi = 1
	}
	lo, x := leastSafe(hi, past)
	// Either end of the bracket is a valid order; take the better.
	if lo > 0 && g(lo) < g(x) {
		x = lo
	}
	return math.Max(0, g(x))
}

// cksRho returns the largest rho with cksEpsilon(rho) <= eps, searched as the
// least safe 1/rho (larger 1/rho is more noise). It starts from the larger
// of Bun & Steinke's rho and the grid RDP rho, both safe because CKS
// optimises the same bound over all orders (the grid one matters for a tiny
// eps, where Bun & Steinke's rho underflows but large orders still reach
// eps because the conversion term is negative). Where both underflow (an
// eps far below delta: the grid's orders stop at 10^9, and the largest rho
// is of order delta^2, reached at orders near 1/delta) the search starts
// from 1/rho = 1 instead of +Inf, from which it could not move.
func cksRho(eps, L float64) float64 {
	safe := func(u float64) bool { return cksEpsilon(1/u, L) <= eps }
	start := 1 / math.Max(bsRho(eps, L), rdpGridRho(eps, L, Balle2020))
	if math.IsInf(start, 1) {
		start = 1
	}
	_, u := leastSafe(start, safe)
	return 1 / u
}
