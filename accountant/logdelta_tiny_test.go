package accountant

import (
	"math"
	"testing"
)

// TestLogDeltaTinyMu: LogDelta is an upper bound on log delta(eps), and -Inf
// only below exp(-1.8e308). Where mu / max(1, a) was tiny, the factor
// 1 - e^(-mu t) of millsDiff was formed from a subnormal or underflowing
// product: LogDelta(3e-322, 3e-322) was -742.9146, 0.1 below the truth
// (-742.8143, delta 10% above the bound), LogDelta(1e-320, 1e-320) 1.3e-3
// below it, and LogDelta(1e-284, 1e-300), whose log delta is about
// -5e31, -Inf.
//
// Where delta is within reach of refDelta (a near 1), the reference is the
// math/big curve of bigref_test.go at the exact float64 inputs: the bound
// must be at least it and within a relative 1e-12 of it. Far out (a up to
// 2e23) it is the leading term of the expansion in mu, log phi(a) +
// log(mu) + log(1 - a Q(a)), with 1/(a^2 + 3) <= 1 - a Q(a) <= 1/(a^2 + 1)
// from the convergents x/(x^2 + 1) <= Q(x) <= (x^2 + 2)/(x (x^2 + 3)) of
// Laplace's continued fraction: the bound must be finite and lie within
// (widened by a relative 1e-12 for the rounding of a^2).
func TestLogDeltaTinyMu(t *testing.T) {
	for _, c := range []struct{ eps, mu float64 }{
		{3e-322, 3e-322}, {1e-320, 1e-320}, {5e-324, 5e-324}, {1e-310, 2e-310}, {2e-300, 1e-300},
	} {
		got, err := LogDelta(c.eps, c.mu)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(got, -1) {
			t.Errorf("LogDelta(%g, %g) = -Inf", c.eps, c.mu)
			continue
		}
		r := bigRatio(got, refDelta(c.eps, c.mu))
		if !(r >= 1 && r <= 1+1e-12) {
			t.Errorf("LogDelta(%g, %g) = %.17g: exp of it / big-float delta = %.17g, want in [1, 1 + 1e-12]", c.eps, c.mu, got, r)
		}
	}
	for _, c := range []struct{ eps, mu float64 }{
		{1e-300, 5e-324}, {1e-300, 1e-310}, {1e-284, 1e-300}, {1e-292, 1e-300},
	} {
		got, err := LogDelta(c.eps, c.mu)
		if err != nil {
			t.Fatal(err)
		}
		a := c.eps/c.mu - c.mu/2
		lead := -0.5*a*a - 0.5*math.Log(2*math.Pi) + math.Log(c.mu*0x1p64) - 64*math.Ln2
		lo, hi := lead-math.Log(a*a+3), lead-math.Log(a*a+1)
		if !(got >= lo-1e-12*math.Abs(lo) && got <= hi+1e-12*math.Abs(hi)) {
			t.Errorf("LogDelta(%g, %g) = %.17g, want in [%.17g, %.17g]", c.eps, c.mu, got, lo, hi)
		}
	}
}
