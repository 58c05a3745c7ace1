package accountant

import (
	"cmp"
	"math"
)

// This file holds the exact privacy curve of the Gaussian mechanism (Balle &
// Wang 2018, Theorem 8; Dong, Roth & Su 2022, Corollary 2.13) and its
// inverses.

// Delta returns the least delta for which mu-GDP, equivalently the Gaussian
// mechanism with sensitivity/std = mu, is (eps, delta)-DP:
//
//	delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
//
// The value has a relative error below 1e-13 + 1e-15 a^2, a = eps/mu - mu/2
// (a^2 is about 2 log(1/delta): 1.5e-12 at delta = 1e-300), and is in [0, 1].
//
// Special cases are:
//
//	Delta(eps, +Inf) = 1
//	Delta(eps, mu) = 4.9e-324 (math.SmallestNonzeroFloat64) when delta is
//	    below it: a positive delta is never reported as 0 (pure DP), and
//	    the value returned is still an upper bound; [LogDelta] gives the
//	    bound in the log domain, where it does not underflow
//	Delta(eps, mu) is an error for eps <= 0, eps = +Inf or NaN
//	Delta(eps, mu) is an error for mu <= 0 or NaN
func Delta(eps, mu float64) (float64, error) {
	if err := checkPositive("eps", eps); err != nil {
		return 0, err
	}
	if !(mu > 0) {
		return 0, &ParamError{Param: "mu", Value: mu, Want: "> 0"}
	}
	d := math.Exp(logDeltaGDP(eps, mu))
	if d == 0 {
		return math.SmallestNonzeroFloat64, nil
	}
	return d, nil
}

// LogDelta returns an upper bound on log delta(eps) for mu-GDP (see
// [Delta]): the computed log delta plus its error bound 1e-13 + 1e-15 a^2,
// so that exp(LogDelta) >= delta(eps) holds with the evaluation error
// counted. It does not underflow where delta does: at eps = 1 and
// sigma = 40 (mu = 0.025), delta is about exp(-811.49), far below the
// smallest float64.
//
// Special cases are:
//
//	LogDelta(eps, +Inf) = 0
//	LogDelta(eps, mu) = -Inf when delta is below exp(-1.8e308)
//	LogDelta(eps, mu) is an error for eps <= 0, eps = +Inf or NaN
//	LogDelta(eps, mu) is an error for mu <= 0 or NaN
func LogDelta(eps, mu float64) (float64, error) {
	if err := checkPositive("eps", eps); err != nil {
		return 0, err
	}
	if !(mu > 0) {
		return 0, &ParamError{Param: "mu", Value: mu, Want: "> 0"}
	}
	ld := logDeltaGDP(eps, mu)
	if math.IsInf(ld, 0) {
		return ld, nil
	}
	return math.Min(0, ld+logDeltaMargin(eps, mu)), nil
}

// Mu returns the GDP parameter of k adaptive compositions of the Gaussian
// mechanism with noise multiplier sigma (std / sensitivity): mu = sqrt(k)/sigma,
// rounded up (toward less privacy).
//
// Special cases are:
//
//	Mu(sigma, k) = +Inf when sqrt(k)/sigma overflows
//	Mu(sigma, k) is an error for sigma <= 0, sigma = +Inf or NaN
//	Mu(sigma, k) is an error for k < 1
func Mu(sigma float64, k int) (float64, error) {
	if err := cmp.Or(checkPositive("sigma", sigma), checkCount("compositions", k)); err != nil {
		return 0, err
	}
	return gdpMu(sigma, k), nil
}

// gdpMu returns sqrt(k)/sigma rounded up by two ulps, which covers the two
// roundings of the computation.
func gdpMu(sigma float64, k int) float64 {
	return nextUp(nextUp(math.Sqrt(float64(k)) / sigma))
}

// ComposeGaussian returns the GDP parameter of the adaptive composition of
// Gaussian mechanisms j = 0, 1, ... with L2 sensitivities[j] and noise
// standard deviations stds[j]: mu = sqrt(sum_j (sensitivities[j]/stds[j])^2)
// (Dong, Roth & Su 2022, Corollary 3.3). The composition is exact: the
// result is itself one Gaussian mechanism, so [Delta] of it is the exact
// curve. The sum is formed without overflow and rounded up.
//
// Special cases are:
//
//	ComposeGaussian(s, v) = +Inf when mu overflows
//	ComposeGaussian(s, v) is an error if len(s) != len(v) or len(s) == 0
//	ComposeGaussian(s, v) is an error if any s[j] or v[j] is <= 0, +Inf or NaN
func ComposeGaussian(sensitivities, stds []float64) (float64, error) {
	if len(stds) == 0 {
		return 0, &ParamError{Param: "len(stds)", Value: 0, Want: ">= 1 (one standard deviation per mechanism)"}
	}
	if len(sensitivities) != len(stds) {
		return 0, &ParamError{Param: "len(stds)", Value: float64(len(stds)), Want: "len(sensitivities) = " + itoa(len(sensitivities))}
	}
	m := 0.0
	for j, s := range sensitivities {
		if err := cmp.Or(checkPositive("sensitivities["+itoa(j)+"]", s), checkPositive("stds["+itoa(j)+"]", stds[j])); err != nil {
			return 0, err
		}
		m = math.Hypot(m, s/stds[j])
	}
	// Each hypot and division is within an ulp; round up by one ulp per term
	// and one more.
	for range len(stds) + 1 {
		m = nextUp(m)
	}
	return m, nil
}

// logDeltaMargin bounds the error of logDeltaGDP(eps, mu) in absolute log
// units (relative units of delta): 1e-13 plus 1e-15 a^2, a = eps/mu - mu/2.
// The tests measure at most a quarter of this bound against a big-float
// evaluation; the a^2 term is the amplification of the rounding of a by
// delta ~ exp(-a^2/2).
func logDeltaMargin(eps, mu float64) float64 {
	a := eps/mu - 0.5*mu
	return 1e-13 + 1e-15*a*a
}

// exactSafe reports whether the Gaussian mechanism with GDP parameter mu is
// (eps, delta)-DP, with the evaluation error counted against it. It holds if
// log delta(eps) plus its error bound is at most log delta, or, for
// delta >= 1/2, if 1 - delta(eps) less its relative error bound (the same
// margin; see [complementGDP]) is at least 1 - delta, which is exact there.
// Either test alone is sound; the second is what resolves delta near 1,
// where the first one's absolute error bound of 1e-13 exceeds
// log(1/delta) and made Sigma(1, 1 - 2^-53) 12% too large.
func exactSafe(eps, mu, delta float64) bool {
	ld := logDeltaGDP(eps, mu)
	if math.IsInf(ld, -1) { // delta below exp(-1e300): safe, whatever the margin
		return true
	}
	m := logDeltaMargin(eps, mu)
	if ld+m <= logf(delta) {
		return true
	}
	if delta < 0.5 {
		return false
	}
	c, ok := complementGDP(eps, mu)
	return ok && c*(1-m) >= 1-delta
}

// exactSigma returns the least noise multiplier sigma, to about 1e-12,
// for which the Gaussian mechanism is (eps, delta)-DP, or +Inf if that
// exceeds the float64 range.
//
// The search starts from the smaller of two bounds that are always safe:
// the classical sqrt(2 log(1/delta) + eps)/eps (see [Paper]) and
// 1/(delta sqrt(2 pi)), which holds because delta(eps) <= delta(0) =
// 2 Phi(mu/2) - 1 <= mu phi(0); the second keeps the search finite as
// eps -> 0, where the exact sigma tends to a finite limit. It then halves
// until unsafe and bisects; every returned value passed exactSafe.
func exactSigma(eps, delta float64) float64 {
	logTarget := logf(delta)
	// mu from gdpMu, rounded up as Epsilon rounds it, so that Epsilon of the
	// result finds eps itself safe.
	safe := func(s float64) bool { return exactSafe(eps, gdpMu(s, 1), delta) }
	// (leastSafe finding no unsafe sigma below a finite one is unreachable:
	// delta(eps; sigma) -> 1 as sigma -> 0.)
	_, s := leastSafe(math.Min(paperSigma(eps, -logTarget), 1/(delta*sqrt2Pi)), safe)
	return s
}

// exactEpsilon returns the least eps >= 0, to about 1e-12, for which
// mu-GDP is (eps, delta)-DP, or +Inf if that exceeds the float64 range. The
// search starts from the Bun-Steinke bound, which is always safe.
func exactEpsilon(mu, delta float64) float64 {
	logTarget := logf(delta)
	safe := func(e float64) bool { return exactSafe(e, mu, delta) }
	if safe(0) {
		return 0
	}
	lo, e := leastSafe(bsEpsilon(0.5*mu*mu, -logTarget), safe)
	if lo == 0 && !math.IsInf(e, 1) { // every eps down to 2^-1022 is safe: report the least tried
		return 0x1p-1022
	}
	return e
}

// nextUp returns the least float64 above x.
func nextUp(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }

// mulUp returns the smallest float64 >= x y for finite x, y > 0 (+Inf when
// x y exceeds the largest float64). The product of the mantissas (in
// [1/4, 1)) is normal, so the fused multiply-add's residual is exact and
// says whether it was rounded down; ldexpUp then scales it, rounding up
// again where the result is subnormal or below 5e-324. (The residual of
// x y itself is not enough: below 2^-1022 it underflows to 0 and hides a
// rounding down, and a product below 2^-1075 rounds to 0.)
func mulUp(x, y float64) float64 {
	mx, ex := math.Frexp(x)
	my, ey := math.Frexp(y)
	p := mx * my
	if math.FMA(mx, my, -p) > 0 {
		p = nextUp(p)
	}
	return ldexpUp(p, ex+ey)
}

// divUp returns the smallest float64 >= x / y for finite x, y > 0, as
// mulUp does for a product.
func divUp(x, y float64) float64 {
	mx, ex := math.Frexp(x)
	my, ey := math.Frexp(y)
	q := mx / my
	if math.FMA(q, my, -mx) < 0 {
		q = nextUp(q)
	}
	return ldexpUp(q, ex-ey)
}

// ldexpUp returns the smallest float64 >= f 2^e for f in [1/4, 2): scaling
// back a subnormal or zero result is exact, so it shows whether the scaling
// lost bits, and the result then goes up by one unit (0 becomes 5e-324).
func ldexpUp(f float64, e int) float64 {
	r := math.Ldexp(f, e)
	if !math.IsInf(r, 1) && math.Ldexp(r, -e) < f {
		r = nextUp(r)
	}
	return r
}
