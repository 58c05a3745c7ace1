package accountant

import (
	"context"
	"math"
	"testing"
	"time"
)

// extremes are valid inputs at the edges of the float64 range.
var extremes = []float64{5e-324, 1e-300, 1e-100, 1e-10, 1e-3, 0.5, 1, 7, 100, 1e10, 1e100, 1e300, math.MaxFloat64}

func TestExtremeInputs(t *testing.T) {
	// Every valid input gives a number that is not NaN, not negative, and
	// on the safe side, or a typed error; nothing hangs.
	deltas := []float64{5e-324, 1e-300, 1e-20, 1e-5, 0.5, 1 - 0x1p-53}
	for _, m := range Methods() {
		for _, x := range extremes {
			for _, delta := range deltas {
				s, err := Sigma(x, delta, m)
				if err == nil {
					if !(s > 0) || math.IsInf(s, 0) {
						t.Errorf("Sigma(%v, %v, %v) = %v", x, delta, m, s)
					} else if !exactSafe(x, 1/s, delta) {
						t.Errorf("Sigma(%v, %v, %v) = %v is not safe", x, delta, m, s)
					}
				} else if _, ok := err.(*MethodError); !ok {
					t.Errorf("Sigma(%v, %v, %v): %v", x, delta, m, err)
				}
				for _, k := range fitInts(1, 1<<40) {
					e, err := Epsilon(x, delta, k, m)
					if err == nil && (!(e >= 0) || math.IsNaN(e)) {
						t.Errorf("Epsilon(%v, %v, %d, %v) = %v", x, delta, k, m, e)
					}
					if err != nil && m != DworkRoth {
						t.Errorf("Epsilon(%v, %v, %d, %v): %v", x, delta, k, m, err)
					}
				}
			}
		}
	}
	for _, eps := range extremes {
		for _, mu := range extremes {
			d, err := Delta(eps, mu)
			if err != nil || !(d >= 0 && d <= 1) {
				t.Errorf("Delta(%v, %v) = %v, %v", eps, mu, d, err)
			}
		}
	}
}

func TestTinyEps(t *testing.T) {
	// As eps -> 0 the exact curve tends to delta(0) = 2 Phi(mu/2) - 1, about
	// mu phi(0) for small mu, so the exact sigma tends to a finite limit:
	// sigma = 1/mu with 2 Phi(mu/2) - 1 = delta. At delta = 1e-5 that is
	// 1/(1e-5 sqrt(2 pi)) to within 1e-10 (the next term is mu^3/24 phi(0);
	// eps = 1e-20 moves delta by about eps/2, 5e-16 relative).
	want := 1 / (1e-5 * math.Sqrt(2*math.Pi))
	for _, eps := range []float64{1e-20, 1e-100, 1e-300} {
		s, err := Sigma(eps, 1e-5, Exact)
		if err != nil || math.Abs(s-want) > 1e-9*want {
			t.Errorf("Sigma(%v, 1e-5) = %.12g, %v; want %.12g", eps, s, err, want)
		}
		// CKS and RDP reach a tiny eps through large orders, and stay above
		// Exact and in their order.
		c, err1 := Sigma(eps, 1e-5, CKS)
		r, err2 := Sigma(eps, 1e-5, RDP)
		if err1 != nil || err2 != nil || !(s <= c && c <= r*(1+1e-12)) {
			t.Errorf("eps = %v: exact %v, cks %v (%v), rdp %v (%v)", eps, s, c, err1, r, err2)
		}
	}
}

// FuzzSigma checks that every method's sigma, for any eps and delta the
// package accepts, is on the safe side of the exact curve and comes back
// through Epsilon at or below eps: exactly so for Exact (up to the 1e-13
// bisection width), and up to the outward roundings (3e-12 relative) and
// an absolute 1e-15 for the conversions, whose terms nearly cancel when eps
// is tiny. The seeds run in every plain go test.
func FuzzSigma(f *testing.F) {
	for _, s := range [][2]float64{{1, 1e-5}, {100, 1e-300}, {1e-300, 0.5}, {0.999, 0.999}, {5e-324, 1e-5}, {37, 5e-324}} {
		f.Add(s[0], s[1], uint8(0))
	}
	f.Fuzz(func(t *testing.T, eps, delta float64, mi uint8) {
		m := Method(int(mi) % int(numMethods))
		s, err := Sigma(eps, delta, m)
		if err != nil {
			return
		}
		if !(s > 0) || math.IsInf(s, 0) || !exactSafe(eps, 1/s, delta) {
			t.Fatalf("Sigma(%v, %v, %v) = %v", eps, delta, m, s)
		}
		e, err := Epsilon(s, delta, 1, m)
		tol := eps * 1e-13
		if m != Exact {
			tol = eps*3e-12 + 1e-15
		}
		if err != nil || !(e >= 0) || e > eps+tol {
			t.Fatalf("Epsilon(Sigma(%v, %v, %v) = %v) = %v, %v", eps, delta, m, s, e, err)
		}
	})
}

// TestSampledHugeSigmaAndSteps: a huge noise multiplier is accounted as
// safe and finite (the losses are below the grid; the delta of the
// unsampled Gaussian with mu = sqrt(10)/1e8 at eps 0.5 is below 1e-300, so
// anything above 1e-9 is the accounting failing), and a number of steps that
// would take the composed grid's indices beyond 2^52 is an error, not a
// panic. (Every int of a 32-bit platform is a count it accounts, as amd64
// does: its composition's offsets are int64s.)
func TestSampledHugeSigmaAndSteps(t *testing.T) {
	for _, s := range []float64{1e9, 1e15, 1e20, 1e200, math.MaxFloat64} {
		d, err := SampledGaussianDelta(0.01, s, 10, 0.5, AddRemove)
		if err != nil || !(d >= 0 && d < 1e-9) {
			t.Errorf("SampledGaussianDelta(0.01, %g, 10, 0.5, AddRemove) = %v, %v; want in [0, 1e-9)", s, d, err)
		}
		e, err := SampledGaussianEpsilon(0.01, s, 10, 1e-6, AddRemove)
		if err != nil || !(e >= 0 && e < 1e-3) {
			t.Errorf("SampledGaussianEpsilon(0.01, %g, 10, 1e-6, AddRemove) = %v, %v; want in [0, 1e-3)", s, e, err)
		}
	}
	for _, steps := range fitInts(math.MaxInt64, math.MaxInt64/3, 1<<50) {
		if d, err := SampledGaussianDelta(0.01, 1, steps, 1, AddRemove); err == nil {
			t.Errorf("SampledGaussianDelta(0.01, 1, %d, 1, AddRemove) = %v, want an error", steps, d)
		}
	}
}

// Budgets so small that the sampled calibration's central-limit guess
// overflows to +Inf return (an error or a safe sigma) at once: before, the
// bracket search stepped down from +Inf forever and mfsolve -sampling with
// -eps 1e-300 -delta 1e-300 hung, ignoring SIGTERM.
func TestSampledSigmaTinyBudgetReturns(t *testing.T) {
	for _, c := range [][2]float64{{1e-300, 1e-300}, {5e-324, 5e-324}} {
		done := make(chan struct{})
		var s float64
		var err error
		go func() {
			s, err = SampledGaussianSigma(context.Background(), 0.01, 16, c[0], c[1], AddRemove)
			close(done)
		}()
		select {
		case <-done:
			if err == nil {
				if d, derr := SampledGaussianDelta(0.01, s, 16, c[0], AddRemove); derr != nil || d > c[1] {
					t.Errorf("eps %g delta %g: sigma %g has delta %g, %v", c[0], c[1], s, d, derr)
				}
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("SampledGaussianSigma(context.Background(), 0.01, 16, %g, %g, AddRemove) still running after 20 s", c[0], c[1])
		}
	}
}

// fitInts returns the values of vs that an int holds, in order: the cases
// beyond math.MaxInt run only on a 64-bit platform.
func fitInts(vs ...int64) []int {
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		if v <= math.MaxInt {
			out = append(out, int(v))
		}
	}
	return out
}
