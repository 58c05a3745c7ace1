package accountant

import "math"

// This file evaluates the normal tail quantities the exact privacy curve
// needs, in forms that neither underflow nor cancel.
//
// Notation: phi is the standard normal density, Phi its CDF, and
// Q(x) = Phi(-x) / phi(x) = integral_0^inf exp(-x t - t^2/2) dt the Mills ratio.

const (
	logSqrt2Pi = 0.918938533204672741780329736405617639861397473637783412817 // log(sqrt(2 pi))
	sqrtHalfPi = 1.253314137315500251207882642405522626503493370304969158314 // sqrt(pi/2)
	sqrt2Pi    = 2.506628274631000502415765284811045253006986740609938316629 // sqrt(2 pi)
)

// logPhiDensity returns log phi(x) = -x^2/2 - log sqrt(2 pi).
func logPhiDensity(x float64) float64 { return -0.5*x*x - logSqrt2Pi }

// millsCFStart is where mills switches from erfc to the continued fraction.
const millsCFStart = 2

// mills returns the Mills ratio Q(x) = Phi(-x)/phi(x) for x >= 0 with a
// relative error of a few ulps (checked against a big-float evaluation in
// the tests). Q(+Inf) = 0.
//
// For x < 2 it is sqrt(pi/2) erfc(x/sqrt 2) exp(x^2/2), whose rounding errors
// are amplified by at most x^2 <= 4. For x >= 2 it is Laplace's continued
// fraction Q(x) = 1/(x + 1/(x + 2/(x + 3/(x + ...)))), evaluated from the
// tail, where every step adds positive numbers; truncating after
// 600/x^2 + 12 terms leaves a relative error below 1e-17 (the depth needed
// was measured at 114 terms for x = 2, 36 for x = 4 and 13 for x = 10).
func mills(x float64) float64 {
	if x < millsCFStart {
		return sqrtHalfPi * math.Erfc(x/math.Sqrt2) * math.Exp(0.5*x*x)
	}
	if math.IsInf(x, 1) {
		return 0
	}
	n := int(600/(x*x)) + 12
	t := x
	for k := n; k >= 1; k-- {
		t = x + float64(k)/t
	}
	return 1 / t
}

// glNodes and glWeights are the nodes (on [-1, 1]) and weights of the 16-point
// Gauss-Legendre rule, computed once by Newton's method on the Legendre
// recurrence.
var glNodes, glWeights = gaussLegendre(16)

// gaussLegendre returns the n-point Gauss-Legendre nodes and weights on
// [-1, 1]: the roots x_i of P_n, found by Newton's method from the Chebyshev
// guesses cos(pi (i + 3/4) / (n + 1/2)), and w_i = 2 / ((1 - x_i^2) P_n'(x_i)^2).
func gaussLegendre(n int) (x, w []float64) {
	x = make([]float64, n)
	w = make([]float64, n)
	for i := range n {
		z := math.Cos(math.Pi * (float64(i) + 0.75) / (float64(n) + 0.5))
		var dp float64
		for range 100 {
			p0, p1 := 1.0, z
			for k := 2; k <= n; k++ {
				p0, p1 = p1, ((2*float64(k)-1)*z*p1-float64(k-1)*p0)/float64(k)
			}
			dp = float64(n) * (z*p1 - p0) / (z*z - 1)
			dz := p1 / dp
			z -= dz
			if math.Abs(dz) <= 1e-17 {
				break
			}
		}
		x[i] = z
		w[i] = 2 / ((1 - z*z) * dp * dp)
	}
	return x, w
}

// millsPanels returns the integral over s >= 0 of
// g(s) exp(-(a s/c + s^2/(2 c^2))) by logMillsDiff's panels and rule.
func millsPanels(a, c float64, g func(s float64) float64) float64 {
	ac := a / c
	f := func(s float64) float64 {
		return g(s) * math.Exp(-ac*s-0.5*(s*s)/(c*c))
	}
	sum := 0.0
	lo := 0.0
	for hi := 0.5; hi <= 64; hi *= 2 {
		if lo > 0 && ac*lo+0.5*lo*lo/(c*c) > 50 {
			break
		}
		mid, half := 0.5*(lo+hi), 0.5*(hi-lo)
		panel := 0.0
		for i, x := range glNodes {
			panel += glWeights[i] * f(mid+half*x)
		}
		sum += half * panel
		lo = hi
	}
	return sum
}

// tinyMillsStep is the mu/c below which logMillsDiff replaces
// 1 - e^(-mu t) by mu t.
const tinyMillsStep = 0x1p-60

// logMillsDiff returns log(Q(a) - Q(a+mu)) for mu > 0 and a > -1 from the
// integral
//
//	Q(a) - Q(a+mu) = integral_0^inf (1 - exp(-mu t)) exp(-a t - t^2/2) dt,
//
// whose integrand is positive, so nothing cancels however close Q(a) and
// Q(a+mu) are. With c = max(1, a) and t = s/c the integrand decays on the
// scale s = 1; it is integrated by 16-point Gauss-Legendre on the panels
// [0, 1/2], [1/2, 1], [1, 2], ..., [32, 64] until the integrand's envelope
// exp(-(a s/c + s^2/(2 c^2))) falls below e^-50 at a panel's left end
// (checked against big-float evaluations in the tests); the result is
// never below the truth by more than that integral's error.
//
// Where mu/c is below 2^-60, the integrand's 1 - e^(-mu t) is formed from
// a product mu t that is subnormal or underflows (LogDelta(3e-322, 3e-322)
// came out 0.096 below the true log delta, LogDelta(1e-284, 1e-300) -Inf):
// there it is replaced by mu t, which is larger by a relative mu t / 2 <
// 2^-54 on the panels (s = c t <= 64), and mu / c^2 is taken out of the
// integral in log space.
func logMillsDiff(a, mu float64) float64 {
	c := math.Max(1, a)
	if kc := mu / c; kc >= tinyMillsStep {
		return logf(millsPanels(a, c, func(s float64) float64 { return -math.Expm1(-kc * s) }) / c)
	}
	return logf(mu) - 2*logf(c) + logf(millsPanels(a, c, func(s float64) float64 { return s }))
}

// logDeltaGDP returns log delta(eps) of the mu-GDP curve (equivalently the
// Gaussian mechanism with sensitivity/std = mu),
//
//	delta(eps) = Phi(-a) - e^eps Phi(-b),  a = eps/mu - mu/2,  b = eps/mu + mu/2,
//
// for eps >= 0 and mu >= 0 (mu = 0 gives -Inf, mu = +Inf gives 0,
// eps = +Inf gives -Inf).
//
// Since b^2 - a^2 = 2 eps, e^eps Phi(-b) = phi(a) Q(b), and the two terms are
// T1 = Phi(-a) and T2 = phi(a) Q(b), each computed in log space without
// overflow or underflow. When T2 <= T1/2 the difference loses at most one
// bit and log delta = log T1 + log1p(-T2/T1). Otherwise (mu small next to a:
// tiny delta, or tiny eps and mu) delta = phi(a) (Q(a) - Q(b)) with the
// difference taken from [logMillsDiff], which does not cancel.
func logDeltaGDP(eps, mu float64) float64 {
	switch {
	case mu == 0 || math.IsInf(eps, 1):
		return math.Inf(-1)
	case math.IsInf(mu, 1):
		return 0
	}
	r := eps / mu
	a, b := r-0.5*mu, r+0.5*mu
	if math.IsInf(r, 1) {
		return math.Inf(-1)
	}
	var logT1, ratio float64 // ratio = T2/T1
	if a <= 0 {
		t1 := 0.5 * math.Erfc(a/math.Sqrt2)
		logT1 = logf(t1)
		ratio = math.Exp(logPhiDensity(a)+logf(mills(b))) / t1
	} else {
		qa := mills(a)
		logT1 = logPhiDensity(a) + logf(qa)
		ratio = mills(b) / qa
	}
	if ratio <= 0.5 {
		return logT1 + math.Log1p(-ratio)
	}
	return logPhiDensity(a) + logMillsDiff(a, mu)
}

// logf returns the natural logarithm of x, also for subnormal x (below
// 2^-1022, about 2.2e-308). Go's math.Log is not: on amd64 (Go 1.26) it
// returns about -709.09, the logarithm of 2^-1023, for every subnormal
// argument, so that log(1e-320) came out 28 too large and a delta of 1e-320
// was calibrated as if it were 1e-308 (an unsafe sigma). A subnormal x is
// scaled by 2^64 first, which is exact.
func logf(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p64) - 64*math.Ln2
	}
	return math.Log(x)
}

// complementGDP returns 1 - delta(eps) of the mu-GDP curve for eps >= 0 and
// a = eps/mu - mu/2 <= 0, the case of every delta >= 1/2:
//
//	1 - delta(eps) = Phi(a) + e^eps Phi(-b) = phi(a) (Q(-a) + Q(b)),
//
// a sum of two positive terms (e^eps Phi(-b) = phi(a) Q(b) as in
// [logDeltaGDP]), so its relative error is that of phi(a) and the Mills
// ratios, the same few ulps plus the a^2 amplification that
// [logDeltaMargin] bounds for log delta. For delta near 1 it keeps the
// digits that log delta, about -(1 - delta), loses against an absolute
// error bound: at the largest float64 below 1, 1 - delta = 1.1e-16 is a
// thousandth of that bound. It returns ok = false for a > 0 (delta < 1/2)
// and for NaN.
func complementGDP(eps, mu float64) (c float64, ok bool) {
	a := eps/mu - 0.5*mu
	if !(a <= 0) {
		return 0, false
	}
	b := eps/mu + 0.5*mu
	return math.Exp(logPhiDensity(a)) * (mills(-a) + mills(b)), true
}
