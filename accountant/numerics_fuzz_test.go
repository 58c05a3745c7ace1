package accountant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// fuzzParams reads a fuzz input as a stream of parameters; past its end
// every read is 0.
type fuzzParams struct {
	b []byte
	i int
}

func (f *fuzzParams) byte() byte {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return f.b[f.i-1]
}

// hostileParams are the values a fuzzed parameter is most often drawn from.
var hostileParams = []float64{0, 1, -1, 0.5, 1e-5, 1e-10, 2, 10, 1e300, 1e-300, 5e-324, -1e300, 1e-3, 0.01, 0.999,
	math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 1e-100, 100, 0.1, 3, 0.3, 30, 1e-12}

// float returns one of hostileParams, a small value k/8, or (for a first
// byte of 128 or more) the float64 of the next 8 bytes.
func (f *fuzzParams) float() float64 {
	k := int(f.byte())
	if k < len(hostileParams) {
		return hostileParams[k]
	}
	if k < 128 {
		return float64(k-len(hostileParams)) / 8
	}
	var b [8]byte
	for i := range b {
		b[i] = f.byte()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

// gaussDelta is the delta(eps) of the Gaussian mechanism with mu =
// sensitivity/std (Balle & Wang 2018, Theorem 8), written here from the
// closed form with math.Erfc: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu -
// mu/2). Each term is accurate to a few ulps where it does not underflow,
// so the difference is accurate to a few ulps of the first term.
func gaussDelta(eps, mu float64) float64 {
	a := 0.5 * math.Erfc((eps/mu-mu/2)/math.Sqrt2)
	b := 0.5 * math.Exp(eps) * math.Erfc((eps/mu+mu/2)/math.Sqrt2)
	return a - b
}

// gaussEpsilon is the least eps >= 0 with gaussDelta(eps, mu) <= delta, by
// bisection to the last bit, and false where the closed form cannot be
// trusted here (eps above 500, or the first term below 1e-250, near
// underflow).
func gaussEpsilon(mu, delta float64) (float64, bool) {
	if gaussDelta(0, mu) <= delta {
		return 0, true
	}
	hi := 1.0
	for gaussDelta(hi, mu) > delta {
		if hi *= 2; hi > 500 {
			return 0, false
		}
	}
	lo := 0.0
	for lo < hi {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if gaussDelta(mid, mu) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	if a := 0.5 * math.Erfc((hi/mu-mu/2)/math.Sqrt2); a < 1e-250 {
		return 0, false
	}
	return hi, true
}

// checkAccountantError fails t unless err is a one-line *ParamError
// naming a parameter, or a *MethodError.
func checkAccountantError(t *testing.T, call string, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("%s: error %q is not one line", call, msg)
	}
	var pe *ParamError
	var me *MethodError
	switch {
	case errors.As(err, &pe):
		if pe.Param == "" {
			t.Fatalf("%s: *ParamError %q names no parameter", call, msg)
		}
	case errors.As(err, &me):
	default:
		t.Fatalf("%s: error %T %q, want a *ParamError or *MethodError", call, err, msg)
	}
}

// FuzzAccountant calls the calibration and epsilon/delta entry points with
// parameters from the fuzz bytes (NaN, infinities, 0, negative, subnormal
// and huge values among them). Each call returns a one-line error naming
// its parameter, or a result that satisfies relations proved apart from
// the code:
//
//   - Epsilon(sigma, delta, k, Exact) is the least eps of the Gaussian
//     with mu = sqrt(k)/sigma, against a bisection here on Balle & Wang's
//     closed-form delta(eps), to 1e-10 relative (where that closed form is
//     accurate); every other method's eps is at least Exact's; eps does
//     not increase with sigma or with delta;
//   - Sigma(eps, delta, Exact) meets delta at eps by the closed form, and
//     every other method's sigma is at least Exact's;
//   - Delta(eps, mu) is in [0, 1] and matches the closed form;
//   - the PLD accountant's bounds are ordered (Optimistic <= Safe); for
//     q = 1 they bracket the analytic Gaussian's eps with mu =
//     sqrt(steps)/sigma; for q < 1 under AddRemove the optimistic eps is
//     at most that (sampling never costs privacy); the optimistic eps at
//     twice the sigma is at most the safe eps.
func FuzzAccountant(f *testing.F) {
	// Seeds, in the order read: sigma, delta, eps (indices into
	// hostileParams below 26, k/8 - 26/8 up to 127), steps, method, q,
	// relation.
	f.Add([]byte{1, 4, 1, 0, 0, 1, 0})        // sigma 1, delta 1e-5, eps 1, Exact, q 1
	f.Add([]byte{3, 5, 6, 3, 1, 22, 0})       // sigma 0.5, delta 1e-10, eps 2, Paper, q 0.1
	f.Add([]byte{6, 14, 7, 7, 4, 23, 1})      // sigma 2, delta 0.999, RDP, q 0.3, replace-one
	f.Add([]byte{15, 15, 15, 15, 15, 15, 15}) // NaN everywhere
	f.Add([]byte{10, 10, 10, 10, 10, 10, 10}) // 5e-324 everywhere
	f.Add([]byte{8, 9, 8, 9, 8, 9, 8})        // 1e300 and 1e-300
	f.Add([]byte{16, 17, 18, 2, 2, 16, 17})   // infinities, MaxFloat64
	f.Add([]byte{19, 4, 0, 4, 6, 13, 2})      // sigma 1e-100, eps 0, DworkRoth, bad relation
	f.Add([]byte{7, 12, 7, 2, 3, 14, 0})      // sigma 10, delta 1e-3, eps 10, CKS, q 0.999
	f.Add([]byte{21, 25, 24, 8, 5, 13, 1})    // sigma 0.1, delta 1e-12, eps 30, RDPMironov, q 0.01
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzParams{b: data}
		sigma, delta, eps := in.float(), in.float(), in.float()
		k := int(in.byte()%16) + 1
		m := Method(int(in.byte()) % int(numMethods))
		q := in.float()
		rel := Relation(in.byte() % 3) // 2: not a relation
		checkGaussian(t, sigma, delta, eps, k, m)
		checkPLD(t, q, sigma, k, delta, rel)
	})
}

// checkGaussian checks Epsilon, Sigma and Delta (see FuzzAccountant).
func checkGaussian(t *testing.T, sigma, delta, eps float64, k int, m Method) {
	call := fmt.Sprintf("Epsilon(%v, %v, %d, %v)", sigma, delta, k, m)
	e, err := Epsilon(sigma, delta, k, m)
	if err != nil {
		checkAccountantError(t, call, err)
	} else {
		if !(e >= 0) {
			t.Fatalf("%s = %v", call, e)
		}
		// (Exact is +Inf "if eps overflows float64 (sigma below about
		// sqrt(k) 1e-154)": at sigma = 2.46e-154, k = 2 it is +Inf where
		// the true eps, about mu^2/2 = 1.65e307, and Paper's 3.3e307 are
		// finite; the +Inf is safe, and skipped here.)
		ex, err := Epsilon(sigma, delta, k, Exact)
		if err != nil || !(e >= ex*(1-1e-12)) && !math.IsInf(ex, 1) {
			t.Fatalf("%s = %v, below Exact's %v (%v)", call, e, ex, err)
		}
		mu := math.Sqrt(float64(k)) / sigma
		if want, ok := gaussEpsilon(mu, delta); ok && mu > 1e-6 && mu < 1e6 {
			if !(math.Abs(ex-want) <= 1e-10*want+1e-13) {
				t.Fatalf("Epsilon(%v, %v, %d, Exact) = %v, the closed form's bisection %v", sigma, delta, k, ex, want)
			}
		}
		if e2, err := Epsilon(sigma*2, delta, k, m); err == nil && !(e2 <= e*(1+1e-12)) {
			t.Fatalf("%s = %v, but with sigma doubled %v", call, e, e2)
		}
		if d2 := math.Min(2*delta, (1+delta)/2); d2 < 1 {
			if e2, err := Epsilon(sigma, d2, k, m); err == nil && !(e2 <= e*(1+1e-12)) {
				t.Fatalf("%s = %v, but at delta %v %v", call, e, d2, e2)
			}
		}
	}

	call = fmt.Sprintf("Sigma(%v, %v, %v)", eps, delta, m)
	s, err := Sigma(eps, delta, m)
	if err != nil {
		checkAccountantError(t, call, err)
	} else {
		ex, err := Sigma(eps, delta, Exact)
		if !(s > 0) || math.IsInf(s, 0) || err != nil || !(s >= ex*(1-1e-12)) {
			t.Fatalf("%s = %v, Exact's %v (%v)", call, s, ex, err)
		}
		if mu := 1 / ex; mu > 1e-6 && mu < 1e6 && eps < 500 && delta > 1e-200 {
			if d := gaussDelta(eps, mu); !(d <= delta*(1+1e-9)+1e-16) {
				t.Fatalf("Sigma(%v, %v, Exact) = %v: the closed form's delta is %v", eps, delta, ex, d)
			}
		}
	}

	mu := sigma // reuse a fuzzed value as mu
	call = fmt.Sprintf("Delta(%v, %v)", eps, mu)
	d, err := Delta(eps, mu)
	if err != nil {
		checkAccountantError(t, call, err)
		return
	}
	if !(d >= 0 && d <= 1) {
		t.Fatalf("%s = %v", call, d)
	}
	if mu > 1e-3 && mu < 1e3 && eps < 500 {
		if want := gaussDelta(eps, mu); want > 1e-200 && !(math.Abs(d-want) <= 1e-9*want) {
			// The closed form cancels where its two terms are close: only
			// where the first term is not much above delta is it accurate.
			if a := 0.5 * math.Erfc((eps/mu-mu/2)/math.Sqrt2); a < 1e3*want {
				t.Fatalf("%s = %v, the closed form %v", call, d, want)
			}
		}
	}
}

// coarsePLD returns the eps bounds at delta of steps compositions of the
// sampled Gaussian on a grid of interval 1e-2 (as rigorous as the default
// grid, a hundred times faster), with the call that made them.
func coarsePLD(q, sigma float64, steps int, delta float64, rel Relation) (Bounds, string, error) {
	call := fmt.Sprintf("SampledGaussianPLD(%v, %v, %v, 1e-2).SelfCompose(%d).EpsilonBounds(%v)", q, sigma, rel, steps, delta)
	p, err := SampledGaussianPLD(q, sigma, rel, PLDOptions{Interval: 1e-2})
	if err == nil {
		p, err = p.SelfCompose(steps)
	}
	if err != nil {
		return Bounds{}, call, err
	}
	b, err := p.EpsilonBounds(delta)
	return b, call, err
}

// checkPLD checks the PLD accountant's eps bounds (see FuzzAccountant),
// on a coarse grid (coarsePLD), and with SampledGaussianEpsilonBounds's
// default grid for one or two Gaussian steps, or parameters it must
// refuse. Noise multipliers below 0.2 are skipped: their grids are large
// (correct, but slow for a fuzz target).
func checkPLD(t *testing.T, q, sigma float64, steps int, delta float64, rel Relation) {
	if sigma < 0.2 {
		return
	}
	b, call, err := coarsePLD(q, sigma, steps, delta, rel)
	if err != nil {
		checkAccountantError(t, call, err)
		// The entry point with the default grid refuses them too.
		if _, err := SampledGaussianEpsilonBounds(q, sigma, steps, delta, rel); err == nil {
			t.Fatalf("%s: %v, but SampledGaussianEpsilonBounds accepts them", call, err)
		}
		return
	}
	all := []Bounds{b}
	if q == 1 && steps <= 2 && sigma >= 0.5 && sigma <= 100 {
		fine, err := SampledGaussianEpsilonBounds(q, sigma, steps, delta, rel)
		if err != nil {
			t.Fatalf("SampledGaussianEpsilonBounds(%v, %v, %d, %v, %v): %v, but %s accepts them", q, sigma, steps, delta, rel, err, call)
		}
		all = append(all, fine)
	}
	want, ok := gaussEpsilon(math.Sqrt(float64(steps))/sigma, delta)
	for _, b := range all {
		if !(b.Optimistic >= 0) || !(b.Optimistic <= b.Safe) {
			t.Fatalf("%s = %+v: not ordered", call, b)
		}
		if !ok || math.IsInf(b.Safe, 1) {
			continue
		}
		slack := 1e-9*want + 1e-12
		if q == 1 && !(b.Safe >= want-slack && b.Optimistic <= want+slack) {
			t.Fatalf("%s = %+v: does not contain the analytic Gaussian's eps %v", call, b, want)
		}
		if rel == AddRemove && !(b.Optimistic <= want+slack) {
			// (Under ReplaceOne with q < 1 the optimistic eps is that of
			// a dominating pair, not of the mechanism.)
			t.Fatalf("%s = %+v: optimistic eps above the unsampled Gaussian's %v", call, b, want)
		}
	}
	if b2, call2, err := coarsePLD(q, 2*sigma, steps, delta, rel); err == nil && !(b2.Optimistic <= b.Safe*(1+1e-12)) {
		t.Fatalf("%s = %+v, but %s = %+v", call, b, call2, b2)
	}
}
