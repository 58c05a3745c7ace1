package accountant

import (
	"cmp"
	"errors"
	"math"
)

// slack is the relative amount by which results of the closed forms and
// one-dimensional optimisations (every method but Exact) are rounded
// outward: sigma and eps up, rho down. Their float64 evaluation errors are a
// few ulps of the terms involved, which 1e-12 covers with room while staying
// far below the 1e-9 the package promises. (Where the terms of a conversion
// nearly cancel, for an eps far below them, the error is a few ulps of the
// terms instead; what keeps those results safe is the conversion's distance
// from the exact curve, which the tests check every method against.)
const slack = 1e-12

// up and down widen x by the relative slack; for a subnormal x, where a
// relative change of 1e-12 is lost to rounding, they move x by at least
// 2^10 ulps outward (the error of a subnormal result is absolute, a few
// ulps of the smallest normal's scale relative to the terms), and never
// through zero.
func up(x float64) float64 {
	y := x * (1 + slack)
	if x > 0 && x < 0x1p-1022 {
		y = max(y, x+0x1p-1064)
	}
	return y
}

func down(x float64) float64 {
	y := x * (1 - slack)
	if x > 0 && x < 0x1p-1022 {
		y = max(0, min(y, x-0x1p-1064))
	}
	return y
}

// Sigma returns the noise multiplier sigma = std / sensitivity for which the
// Gaussian mechanism is (eps, delta)-DP by method m.
//
// For Exact it is the least such sigma to a relative 1e-12 and never below
// it: the search keeps a bracket whose upper end has been checked to satisfy
// delta(eps; sigma) <= delta with the evaluation error of delta counted
// against it, and returns that end. (That error bound is about 1e-13 in
// log delta, more than log(1/delta) for delta near 1; for delta >= 1/2 the
// check is also made on 1 - delta, whose relative error bound is the same,
// so the 1e-12 holds up to the largest float64 below 1.) The other methods
// are upper bounds on Exact's curve, so their sigma is larger; they are
// rounded up by a relative 1e-12.
//
// Special cases are:
//
//	Sigma(eps, delta, m) is an error for eps <= 0, eps = +Inf or NaN
//	Sigma(eps, delta, m) is an error for delta <= 0 (pure DP needs infinite
//	    Gaussian noise), delta >= 1 (no guarantee) or NaN
//	Sigma(eps, delta, DworkRoth) is an error for eps >= 1
//	Sigma(eps, delta, RDP or RDPMironov) is an error if no order of the grid
//	    reaches eps: for RDPMironov an eps below about log(1/delta)/1e9; for
//	    RDP only where delta is below about 1e-9 as well (above it, the
//	    conversion reaches every eps > 0 at the largest orders)
//	Sigma(eps, delta, m) is an error if sigma overflows float64 (for Paper,
//	    ZCDP and DworkRoth, whose sigma grows like 1/eps, at eps below about
//	    1e-308; Exact's sigma has a finite limit as eps -> 0)
//	Sigma(eps, delta, CKS) is ZCDP's sigma (an upper bound on CKS's) where
//	    CKS's rho is below the normal float64 range (delta below about
//	    1e-154 and eps below about 1e-154 sqrt(log(1/delta))), and an error
//	    where that overflows too (eps below about 1e-308)
func Sigma(eps, delta float64, m Method) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	L := -logf(delta)
	var s float64
	switch m {
	case Exact:
		s = exactSigma(eps, delta)
	case Paper:
		s = up(paperSigma(eps, L))
	case ZCDP:
		s = up(bsSigma(eps, L))
	case CKS:
		rho := cksRho(eps, L)
		if rho >= 0x1p-1022 {
			s = up(sigmaFromRho(rho))
			break
		}
		// rho is subnormal (it has lost the precision the slack assumes)
		// or underflowed to 0, while sigma is still finite: Bun &
		// Steinke's sigma, which CKS's bound improves on, is an upper
		// bound on CKS's, as in [Epsilon] for a subnormal rho.
		s = up(bsSigma(eps, L))
		if math.IsInf(s, 1) {
			return 0, &MethodError{Method: m, Reason: "eps = " + ftoa(eps) + " at delta = " + ftoa(delta) + " needs a rho below the float64 range, where the CKS sigma is not computed (ZCDP's, which bounds it, overflows); use method exact"}
		}
	case RDP, RDPMironov:
		rho := rdpGridRho(eps, L, rdpConv(m))
		if rho == 0 {
			return 0, &MethodError{Method: m, Reason: "eps = " + ftoa(eps) + " is too small for the Renyi order grid (alpha <= 1 + 1e9) at delta = " + ftoa(delta) + "; use method exact"}
		}
		s = up(sigmaFromRho(rho))
	case DworkRoth:
		if eps >= 1 {
			return 0, errDworkRoth(eps)
		}
		s = up(drConstant(delta) / eps)
	default:
		return 0, errMethod(m)
	}
	if math.IsInf(s, 1) {
		return 0, &MethodError{Method: m, Reason: "sigma for eps = " + ftoa(eps) + ", delta = " + ftoa(delta) + " overflows float64"}
	}
	return s, nil
}

// NoiseStd returns the noise standard deviation sigma * sensitivity for which
// the Gaussian mechanism with L2 sensitivity is (eps, delta)-DP by method m,
// with sigma from [Sigma]. The product is rounded up, never down.
//
// For dpmf's online federated learning with single participation, clipping
// to B_g, n learners and a factor C with largest column norm gamma, the
// sensitivity is 2 gamma B_g / n (the paper states the conservative
// 2 gamma B_g); see docs/privacy.md.
//
// Special cases are those of [Sigma], and:
//
//	NoiseStd(eps, delta, s, m) is an error for s <= 0, s = +Inf or NaN
//	    (a zero sensitivity needs no noise, but it more often means an
//	    unset clipping norm, so it is refused)
//	NoiseStd(eps, delta, s, m) is an error if the product overflows, and a
//	    *ParamError naming the sensitivity if it is below the normal
//	    float64 range (see [Scale])
func NoiseStd(eps, delta, sensitivity float64, m Method) (float64, error) {
	if err := checkPositive("sensitivity", sensitivity); err != nil {
		return 0, err
	}
	s, err := Sigma(eps, delta, m)
	if err != nil {
		return 0, err
	}
	return Scale(s, sensitivity)
}

// Scale returns the noise standard deviation sigma * sensitivity of a noise
// multiplier sigma, rounded up (never down): the smallest float64 at least
// the exact product.
//
// Special cases are:
//
//	Scale(sigma, s) is an error for sigma or s <= 0, +Inf or NaN
//	Scale(sigma, s) is an error if the product overflows
//	Scale(sigma, s) is a *ParamError naming the sensitivity if the product
//	    is below the normal float64 range (2.2e-308): a subnormal keeps too
//	    few significant bits (3.73 * 5e-324 gives 2e-323, 7% off)
func Scale(sigma, sensitivity float64) (float64, error) {
	if err := cmp.Or(checkPositive("sigma", sigma), checkPositive("sensitivity", sensitivity)); err != nil {
		return 0, err
	}
	v := mulUp(sigma, sensitivity)
	if math.IsInf(v, 1) {
		return 0, errors.New("accountant: noise std sigma * sensitivity = " + ftoa(sigma) + " * " + ftoa(sensitivity) + " overflows float64")
	}
	if v < smallestNormal {
		return 0, &ParamError{Param: "sensitivity", Value: sensitivity,
			Want: "a value for which the noise std sigma * sensitivity = " + ftoa(sigma) + " * " + ftoa(sensitivity) + " is at least 2.2e-308 (the normal float64 range, where it keeps its precision)"}
	}
	return v, nil
}

// Epsilon returns the eps for which k adaptive compositions of the Gaussian
// mechanism with noise multiplier sigma (std / sensitivity) are
// (eps, delta)-DP by method m. The k releases compose exactly to one
// Gaussian mechanism with mu = sqrt(k)/sigma, and every method is applied
// to that mechanism (for ZCDP, CKS, RDP and RDPMironov this is the same as
// adding rho, or the Renyi curves, over the k releases).
//
// For Exact it is the least such eps to a relative 1e-12, never below it;
// the other methods are rounded up by a relative 1e-12. The result is never
// negative or NaN; it is 0 when the mechanism is (0, delta)-DP.
//
// Special cases are:
//
//	Epsilon(sigma, delta, k, m) = +Inf if eps overflows float64 (sigma
//	    below about sqrt(k) 1e-154)
//	Epsilon(sigma, delta, k, m) is an error for sigma <= 0, sigma = +Inf or NaN
//	Epsilon(sigma, delta, k, m) is an error unless 0 < delta < 1
//	Epsilon(sigma, delta, k, m) is an error for k < 1
//	Epsilon(sigma, delta, k, DworkRoth) is an error if eps >= 1
func Epsilon(sigma, delta float64, k int, m Method) (float64, error) {
	if err := cmp.Or(checkPositive("sigma", sigma), checkDelta(delta), checkCount("compositions", k)); err != nil {
		return 0, err
	}
	if !m.valid() {
		return 0, errMethod(m)
	}
	L := -logf(delta)
	mu := gdpMu(sigma, k)
	rho := up(0.5 * mu * mu)
	if rho < 0x1p-1022 && (m == ZCDP || m == CKS) {
		// rho is subnormal or 0 (mu below about 1e-154): Bun & Steinke's
		// rho + 2 sqrt(rho L) is mu sqrt(2 L) to within the rounding, an
		// upper bound on CKS's too. From rho it lost its precision, or
		// was 0 (pure DP) for mu below about 1e-162.
		e := up(up(mu * math.Sqrt(2*L)))
		if m == CKS {
			// CKS's eps rises with rho, so its value at the smallest
			// normal rho bounds it too, and is 0 where delta is large
			// enough for (0, delta)-DP, as it is at larger rho (it was
			// the positive e here, above 0 at a smaller sigma).
			e = min(e, up(cksEpsilon(0x1p-1022, L)))
		}
		return e, nil
	}
	switch m {
	case Exact:
		return exactEpsilon(mu, delta), nil
	case Paper:
		return up(paperEpsilon(mu, L)), nil
	case ZCDP:
		return up(bsEpsilon(rho, L)), nil
	case CKS:
		return up(cksEpsilon(rho, L)), nil
	case RDP, RDPMironov:
		return up(rdpGridEpsilon(rho, L, rdpConv(m))), nil
	}
	// DworkRoth
	eps := up(drConstant(delta) * mu)
	if eps >= 1 {
		return 0, errDworkRoth(eps)
	}
	return eps, nil
}

// sigmaFromRho returns 1/sqrt(2 rho), without overflow for a huge rho.
// bsSigma is the sigma of Bun & Steinke's zCDP conversion,
// 1/sqrt(2 bsRho(eps, L)), formed without rho (which underflows first).
func bsSigma(eps, L float64) float64 {
	return (math.Sqrt(eps+L) + math.Sqrt(L)) / eps / math.Sqrt2
}

func sigmaFromRho(rho float64) float64 { return 1 / (math.Sqrt2 * math.Sqrt(rho)) }

func rdpConv(m Method) Conversion {
	if m == RDPMironov {
		return Mironov2017
	}
	return Balle2020
}

func errMethod(m Method) error {
	return &ParamError{Param: "method", Value: float64(m), Want: "one of the Method constants"}
}
