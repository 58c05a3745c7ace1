package accountant

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// hugeSteps is 2^40 compositions where int holds it, and the largest int
// on 32-bit platforms.
var hugeSteps = int(min(1<<40, int64(math.MaxInt)))

// The grid of the extreme-input review: every exported calibration and
// epsilon function at eps and delta in extremeEps (delta only below 1 is
// valid; the rest must be errors) and sigma in extremeSigma. Each call must
// not panic, must not return NaN, must return either an error or a value
// in its range, and the values must be monotone where the theory says so
// (sigma falls as eps or delta rises, eps falls as sigma or delta rises,
// delta falls as eps rises and rises with mu, rho rises with eps and
// delta). An error is allowed anywhere (an input out of range); a value
// after an error in a monotone sequence is compared with the last value.
var (
	extremeEps   = []float64{1e-300, 1e-20, 1e-10, 0.5, 1, 100, 1e300}
	extremeSigma = []float64{1e-300, 1e-3, 1, 1e3, 1e300}
)

// call runs f, turning a panic into a test error.
func callGuarded(t *testing.T, name string, f func() (float64, error)) (v float64, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", name, r)
			v, err = math.NaN(), fmt.Errorf("panic")
		}
	}()
	v, err = f()
	if err == nil && math.IsNaN(v) {
		t.Errorf("%s = NaN without an error", name)
	}
	return v, err
}

// monotone checks that the values of successful calls, in the order of a
// rising argument, rise (dir = +1) or fall (dir = -1), ties allowed.
type monotone struct {
	t    *testing.T
	dir  float64
	last float64
	name string
	seen bool
}

func (m *monotone) add(name string, v float64, err error) {
	if err != nil || math.IsNaN(v) {
		return
	}
	if m.seen && (v-m.last)*m.dir < 0 {
		m.t.Errorf("%s = %v, after %s = %v: not monotone (want %+g direction)", name, v, m.name, m.last, m.dir)
	}
	m.last, m.name, m.seen = v, name, true
}

func TestGridExtremesClosedForms(t *testing.T) {
	// Sigma and NoiseStd: fall as eps rises (delta fixed) and as delta
	// rises (eps fixed); positive and finite when there is no error.
	for _, m := range Methods() {
		for _, delta := range extremeEps {
			mono := &monotone{t: t, dir: -1}
			for _, eps := range extremeEps {
				name := fmt.Sprintf("Sigma(%g, %g, %v)", eps, delta, m)
				s, err := callGuarded(t, name, func() (float64, error) { return Sigma(eps, delta, m) })
				if err == nil && !(s > 0 && s < math.Inf(1)) {
					t.Errorf("%s = %v", name, s)
				}
				if err == nil && delta >= 1 {
					t.Errorf("%s = %v, want an error (delta >= 1)", name, s)
				}
				mono.add(name, s, err)
				for _, sens := range extremeSigma {
					name := fmt.Sprintf("NoiseStd(%g, %g, %g, %v)", eps, delta, sens, m)
					v, err2 := callGuarded(t, name, func() (float64, error) { return NoiseStd(eps, delta, sens, m) })
					if err2 == nil && (err != nil || !(v >= s*sens*(1-1e-15)) || math.IsInf(v, 0)) {
						t.Errorf("%s = %v, %v (sigma %v, %v)", name, v, err2, s, err)
					}
				}
			}
		}
		for _, eps := range extremeEps {
			mono := &monotone{t: t, dir: -1}
			for _, delta := range extremeEps {
				name := fmt.Sprintf("Sigma(%g, %g, %v)", eps, delta, m)
				s, err := callGuarded(t, name, func() (float64, error) { return Sigma(eps, delta, m) })
				mono.add(name, s, err)
			}
		}
	}
	// Epsilon: falls as sigma rises and as delta rises, rises with k;
	// nonnegative, +Inf allowed (no guarantee).
	for _, m := range Methods() {
		for _, k := range []int{1, 1000, hugeSteps} {
			for _, delta := range extremeEps {
				mono := &monotone{t: t, dir: -1}
				for _, sigma := range extremeSigma {
					name := fmt.Sprintf("Epsilon(%g, %g, %d, %v)", sigma, delta, k, m)
					e, err := callGuarded(t, name, func() (float64, error) { return Epsilon(sigma, delta, k, m) })
					if err == nil && !(e >= 0) {
						t.Errorf("%s = %v", name, e)
					}
					if err == nil && delta >= 1 {
						t.Errorf("%s = %v, want an error (delta >= 1)", name, e)
					}
					mono.add(name, e, err)
				}
			}
			for _, sigma := range extremeSigma {
				mono := &monotone{t: t, dir: -1}
				for _, delta := range extremeEps {
					name := fmt.Sprintf("Epsilon(%g, %g, %d, %v)", sigma, delta, k, m)
					e, err := callGuarded(t, name, func() (float64, error) { return Epsilon(sigma, delta, k, m) })
					mono.add(name, e, err)
				}
			}
		}
		for _, sigma := range extremeSigma {
			for _, delta := range extremeEps {
				mono := &monotone{t: t, dir: +1}
				for _, k := range []int{1, 1000, hugeSteps} {
					name := fmt.Sprintf("Epsilon(%g, %g, %d, %v)", sigma, delta, k, m)
					e, err := callGuarded(t, name, func() (float64, error) { return Epsilon(sigma, delta, k, m) })
					mono.add(name, e, err)
				}
			}
		}
	}
	// Delta and LogDelta over eps (falling) and mu = 1/sigma (rising).
	for _, sigma := range extremeSigma {
		mu := 1 / sigma
		md, ml := &monotone{t: t, dir: -1}, &monotone{t: t, dir: -1}
		for _, eps := range extremeEps {
			name := fmt.Sprintf("Delta(%g, %g)", eps, mu)
			d, err := callGuarded(t, name, func() (float64, error) { return Delta(eps, mu) })
			if err == nil && !(d >= 0 && d <= 1) {
				t.Errorf("%s = %v", name, d)
			}
			md.add(name, d, err)
			name = fmt.Sprintf("LogDelta(%g, %g)", eps, mu)
			l, err := callGuarded(t, name, func() (float64, error) { return LogDelta(eps, mu) })
			if err == nil && !(l <= 0) {
				t.Errorf("%s = %v", name, l)
			}
			ml.add(name, l, err)
		}
	}
	for _, eps := range extremeEps {
		md, ml := &monotone{t: t, dir: -1}, &monotone{t: t, dir: -1}
		for _, sigma := range extremeSigma { // mu falls
			mu := 1 / sigma
			name := fmt.Sprintf("Delta(%g, %g)", eps, mu)
			d, err := callGuarded(t, name, func() (float64, error) { return Delta(eps, mu) })
			md.add(name, d, err)
			name = fmt.Sprintf("LogDelta(%g, %g)", eps, mu)
			l, err := callGuarded(t, name, func() (float64, error) { return LogDelta(eps, mu) })
			ml.add(name, l, err)
		}
	}
	// Mu, GaussianRho, ComposeGaussian, Scale: mu and rho fall as sigma
	// rises; Scale rises with sigma.
	for _, k := range []int{1, hugeSteps} {
		mm, mr, mc, ms := &monotone{t: t, dir: -1}, &monotone{t: t, dir: -1}, &monotone{t: t, dir: -1}, &monotone{t: t, dir: +1}
		for _, sigma := range extremeSigma {
			name := fmt.Sprintf("Mu(%g, %d)", sigma, k)
			v, err := callGuarded(t, name, func() (float64, error) { return Mu(sigma, k) })
			mm.add(name, v, err)
			name = fmt.Sprintf("GaussianRho(1, %g)", sigma)
			v, err = callGuarded(t, name, func() (float64, error) { return GaussianRho(1, sigma) })
			mr.add(name, v, err)
			name = fmt.Sprintf("ComposeGaussian([1 1], [%g %g])", sigma, sigma)
			v, err = callGuarded(t, name, func() (float64, error) { return ComposeGaussian([]float64{1, 1}, []float64{sigma, sigma}) })
			mc.add(name, v, err)
			name = fmt.Sprintf("Scale(%g, 1e-3)", sigma)
			v, err = callGuarded(t, name, func() (float64, error) { return Scale(sigma, 1e-3) })
			ms.add(name, v, err)
		}
	}
	// zCDP conversions: eps from rho rises with rho, falls with delta; rho
	// from eps rises with eps and with delta.
	type conv struct {
		name string
		eps  func(rho, delta float64) (float64, error)
		rho  func(eps, delta float64) (float64, error)
	}
	for _, c := range []conv{{"ZCDP", ZCDPEpsilon, ZCDPRho}, {"CKS", CKSEpsilon, CKSRho}} {
		for _, delta := range extremeEps {
			me, mr := &monotone{t: t, dir: +1}, &monotone{t: t, dir: +1}
			for _, x := range extremeEps {
				name := fmt.Sprintf("%sEpsilon(%g, %g)", c.name, x, delta)
				e, err := callGuarded(t, name, func() (float64, error) { return c.eps(x, delta) })
				if err == nil && !(e >= 0) {
					t.Errorf("%s = %v", name, e)
				}
				me.add(name, e, err)
				name = fmt.Sprintf("%sRho(%g, %g)", c.name, x, delta)
				r, err := callGuarded(t, name, func() (float64, error) { return c.rho(x, delta) })
				if err == nil && !(r >= 0 && r < math.Inf(1)) {
					t.Errorf("%s = %v", name, r)
				}
				mr.add(name, r, err)
			}
		}
		for _, x := range extremeEps {
			me, mr := &monotone{t: t, dir: -1}, &monotone{t: t, dir: +1}
			for _, delta := range extremeEps {
				name := fmt.Sprintf("%sEpsilon(%g, %g)", c.name, x, delta)
				e, err := callGuarded(t, name, func() (float64, error) { return c.eps(x, delta) })
				me.add(name, e, err)
				name = fmt.Sprintf("%sRho(%g, %g)", c.name, x, delta)
				r, err := callGuarded(t, name, func() (float64, error) { return c.rho(x, delta) })
				mr.add(name, r, err)
			}
		}
	}
	// RDP: the Gaussian's curve over the package's orders, converted.
	for _, c := range []Conversion{Balle2020, Mironov2017} {
		for _, delta := range extremeEps {
			mono := &monotone{t: t, dir: -1}
			for _, sigma := range extremeSigma {
				name := fmt.Sprintf("RDPEpsilon(Gaussian sigma %g, %g, %v)", sigma, delta, c)
				e, err := callGuarded(t, name, func() (float64, error) {
					alpha := RDPOrders()
					rdp := make([]float64, len(alpha))
					for j, a := range alpha {
						v, err := GaussianRDP(a, 1, sigma)
						if err != nil {
							return 0, err
						}
						rdp[j] = v
					}
					e, _, err := RDPEpsilon(alpha, rdp, delta, c)
					return e, err
				})
				if err == nil && !(e >= 0) {
					t.Errorf("%s = %v", name, e)
				}
				mono.add(name, e, err)
			}
		}
	}
}

// Sigma(eps, 1e-300, CKS) for eps from 3e-153 down to 1e-300: CKS's rho
// (about eps^2 / (4 log(1/delta))) leaves the normal float64 range, and
// Sigma reported "sigma ... overflows float64" although the sigma lies
// between Exact's and ZCDP's, both finite (about 1e153 to 1e301). Where
// rho is subnormal it has also lost the precision the slack assumes. It
// is now ZCDP's sigma (Bun & Steinke's bound, which CKS's improves on, so
// an upper bound on CKS's sigma): finite, safe by the exact curve, and
// monotone in eps.
func TestSigmaCKSTinyRho(t *testing.T) {
	const delta = 1e-300
	last := 0.0
	for e := -150.0; e >= -300; e -= 2.5 {
		eps := math.Pow(10, e)
		s, err := Sigma(eps, delta, CKS)
		z, errZ := Sigma(eps, delta, ZCDP)
		x, errX := Sigma(eps, delta, Exact)
		if err != nil || errZ != nil || errX != nil {
			t.Fatalf("eps = %g: Sigma CKS %v, %v; ZCDP %v, %v; Exact %v, %v", eps, s, err, z, errZ, x, errX)
		}
		if !(s >= x && s <= z) || !exactSafe(eps, 1/s, delta) {
			t.Errorf("eps = %g: Sigma CKS = %g, want in [%g (Exact), %g (ZCDP)] and safe", eps, s, x, z)
		}
		if s < last {
			t.Errorf("eps = %g: Sigma CKS = %g below %g at a larger eps", eps, s, last)
		}
		last = s
	}
	// Below about 1e-308 ZCDP's sigma overflows; CKS's does not (it tends
	// to a finite limit, as Exact's does), but it is not computed: the
	// error says so rather than that sigma overflows.
	if _, err := Sigma(5e-324, delta, CKS); err == nil || !strings.Contains(err.Error(), "not computed") {
		t.Errorf("Sigma(5e-324, 1e-300, CKS): %v, want an error that says the CKS sigma is not computed", err)
	}
}

// The PLD accountant's epsilon and delta of the subsampled Gaussian on the
// grid, where each call is fast (a noise multiplier of 1e-3 or 1 at tiny
// delta takes seconds each; TestSampledGaussian* cover those): no panic,
// no NaN, eps >= 0 (+Inf allowed: delta at or below the PLD's floor),
// delta in [0, 1] and falling in eps, errors for delta outside (0, 1).
// SampledGaussianSigma and AmplifiedBandedSigma at the invalid deltas and
// at eps = 1e300 (where one step of a nearly noiseless mechanism already
// suffices).
func TestGridExtremesSampled(t *testing.T) {
	ctx := t.Context()
	for _, rel := range []Relation{AddRemove, ReplaceOne} {
		for _, sigma := range []float64{1e-300, 1e3, 1e300} {
			for _, delta := range extremeEps {
				name := fmt.Sprintf("SampledGaussianEpsilon(0.01, %g, 10, %g, %v)", sigma, delta, rel)
				e, err := callGuarded(t, name, func() (float64, error) { return SampledGaussianEpsilon(0.01, sigma, 10, delta, rel) })
				if err == nil && (!(e >= 0) || delta >= 1) {
					t.Errorf("%s = %v", name, e)
				}
			}
			if sigma == 1e-300 {
				continue
			}
			mono := &monotone{t: t, dir: -1}
			for _, eps := range extremeEps {
				name := fmt.Sprintf("SampledGaussianDelta(0.01, %g, 10, %g, %v)", sigma, eps, rel)
				d, err := callGuarded(t, name, func() (float64, error) { return SampledGaussianDelta(0.01, sigma, 10, eps, rel) })
				if err == nil && !(d >= 0 && d <= 1) {
					t.Errorf("%s = %v", name, d)
				}
				mono.add(name, d, err)
			}
		}
		for _, eps := range extremeEps {
			for _, delta := range []float64{1, 100, 1e300} {
				name := fmt.Sprintf("SampledGaussianSigma(0.01, 10, %g, %g, %v)", eps, delta, rel)
				if s, err := callGuarded(t, name, func() (float64, error) { return SampledGaussianSigma(ctx, 0.01, 10, eps, delta, rel) }); err == nil {
					t.Errorf("%s = %v, want an error", name, s)
				}
				name = fmt.Sprintf("AmplifiedBandedSigma(0.01, 20, 2, %g, %g, %v)", eps, delta, rel)
				if s, err := callGuarded(t, name, func() (float64, error) { return AmplifiedBandedSigma(ctx, 0.01, 20, 2, eps, delta, rel) }); err == nil {
					t.Errorf("%s = %v, want an error", name, s)
				}
			}
		}
		for _, delta := range []float64{1e-10, 0.5} {
			name := fmt.Sprintf("SampledGaussianSigma(0.01, 10, 1e300, %g, %v)", delta, rel)
			s, err := callGuarded(t, name, func() (float64, error) { return SampledGaussianSigma(ctx, 0.01, 10, 1e300, delta, rel) })
			if err == nil && !(s > 0 && s < math.Inf(1)) {
				t.Errorf("%s = %v", name, s)
			}
		}
	}
}
