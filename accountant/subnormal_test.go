package accountant

import (
	"math"
	"math/big"
	"testing"
)

// A delta below the smallest normal float64 (2.2e-308) is calibrated as
// what it is: delta(eps) at the returned sigma, evaluated in big-float
// arithmetic, is at most the target. Go's math.Log returns about -709.09
// for every subnormal argument on amd64, which used to calibrate 1e-320 as
// if it were 1e-308 (delta(eps; sigma) 1e12 times the target).
func TestSubnormalDeltaIsSafe(t *testing.T) {
	if got, want := logf(1e-320), -736.8272408909739; math.Abs(got-want) > 1e-12 {
		t.Fatalf("logf(1e-320) = %v, want %v", got, want)
	}
	if got, want := logf(5e-324), -744.4400719213812; math.Abs(got-want) > 1e-12 {
		t.Fatalf("logf(5e-324) = %v, want %v", got, want)
	}
	methods := []Method{Exact, Paper, ZCDP, CKS, RDP, RDPMironov, DworkRoth}
	for _, delta := range []float64{1e-320, 5e-324} {
		for _, eps := range []float64{0.5, 2} {
			for _, m := range methods {
				if m == DworkRoth && eps >= 1 {
					continue
				}
				sigma, err := Sigma(eps, delta, m)
				if err != nil {
					t.Fatalf("Sigma(%v, %v, %v): %v", eps, delta, m, err)
				}
				ref := refDelta(eps, 1/sigma)
				target := new(big.Float).SetFloat64(delta)
				if ref.Cmp(target) > 0 {
					t.Errorf("Sigma(%v, %v, %v) = %v gives delta %v, above the target", eps, delta, m, sigma, ref)
				}
				if m == Exact {
					// And it is the least such sigma, to the
					// documented 1e-12: delta is within 1e-9 below.
					r, _ := new(big.Float).Quo(ref, target).Float64()
					if r < 1-1e-9 {
						t.Errorf("Sigma(%v, %v, exact) = %v gives delta/target = %v, want about 1", eps, delta, sigma, r)
					}
				}
			}
		}
	}
}

// Where delta(eps) is positive but below the smallest float64, Delta
// returns that smallest value (an upper bound, never 0) and LogDelta an
// upper bound on log delta that holds against a big-float evaluation.
func TestLogDeltaBeyondFloat64(t *testing.T) {
	for _, c := range []struct{ eps, mu float64 }{{1, 0.025}, {2, 0.05}, {1, 0.3}, {0.5, 0.02}} {
		d, err := Delta(c.eps, c.mu)
		if err != nil {
			t.Fatal(err)
		}
		ld, err := LogDelta(c.eps, c.mu)
		if err != nil {
			t.Fatal(err)
		}
		ref := refDelta(c.eps, c.mu)
		if ref.Sign() <= 0 {
			t.Fatalf("reference delta(%v; mu = %v) = %v", c.eps, c.mu, ref)
		}
		if rf, _ := ref.Float64(); rf == 0 && d != math.SmallestNonzeroFloat64 {
			t.Errorf("Delta(%v, %v) = %v, want 5e-324 where delta underflows", c.eps, c.mu, d)
		}
		if r := bigRatio(ld, ref); !(r >= 1 && r <= 1+1e-9) {
			t.Errorf("exp(LogDelta(%v, %v)) / delta = %v, want in [1, 1 + 1e-9]", c.eps, c.mu, r)
		}
	}
}

// A noise multiplier so large that rho = mu^2/2 underflows (mu =
// sqrt(k)/sigma below about 1e-162): the zCDP conversions still give an
// eps at least Exact's, and ZCDP's is Bun & Steinke's rho + 2 sqrt(rho L)
// = mu sqrt(2 L) (the rho term is below the rounding), computed here from
// mu and L = log(1/delta). Before, rho was 0 and ZCDP and CKS reported
// eps = 0, a pure-DP claim below Exact's eps (found by FuzzAccountant).
func TestEpsilonRhoUnderflow(t *testing.T) {
	for _, c := range []struct {
		sigma, delta float64
		k            int
	}{{1e300, 1e-300, 8}, {1e200, 1e-5, 1}, {math.MaxFloat64, 0.5, 3}, {1e163, 1e-10, 2}} {
		ex, err := Epsilon(c.sigma, c.delta, c.k, Exact)
		if err != nil || !(ex >= 0) { // 0 where delta(0) <= delta
			t.Fatalf("Epsilon(%v, %v, %d, Exact) = %v, %v", c.sigma, c.delta, c.k, ex, err)
		}
		for _, m := range Methods()[1:] {
			e, err := Epsilon(c.sigma, c.delta, c.k, m)
			if err != nil || !(e >= ex) {
				t.Errorf("Epsilon(%v, %v, %d, %v) = %v, %v; want at least Exact's %v", c.sigma, c.delta, c.k, m, e, err, ex)
			}
		}
		mu := math.Sqrt(float64(c.k)) / c.sigma
		want := mu * math.Sqrt(2*math.Log(1/c.delta))
		if e, err := Epsilon(c.sigma, c.delta, c.k, ZCDP); err != nil || math.Abs(e-want) > 1e-9*want {
			t.Errorf("Epsilon(%v, %v, %d, ZCDP) = %v, %v; want mu sqrt(2 L) = %v", c.sigma, c.delta, c.k, e, err, want)
		}
	}
}
