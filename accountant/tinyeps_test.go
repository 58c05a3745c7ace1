package accountant

import (
	"math"
	"testing"
)

// CKSRho at an eps far below delta (1e-300, the smallest subnormal) is the
// largest rho, not 0: as eps -> 0 the CKS conversion still reaches delta
// with rho of order delta^2, because large orders make its log term
// negative. Two bounds, derived here without the package's search:
//
//   - below: at eps = 0 and alpha = e^{1/2} / delta, rho = delta^2 / 2 gives
//     exp((alpha-1)(alpha rho)) (1 - 1/alpha)^alpha / (alpha - 1)
//     <= exp(e / 2) / (e (alpha - 1)) = 0.867 delta (using (1 - 1/alpha)^alpha
//     < 1/e), so the largest rho is at least delta^2 / 2;
//   - above: any valid conversion is at most what the Gaussian mechanism's
//     exact curve allows, delta(0; mu) = 2 Phi(mu / 2) - 1, which for a
//     tiny delta is mu = delta sqrt(2 pi), rho = mu^2 / 2 = pi delta^2.
//
// Sigma(eps, delta, CKS) is then finite and at least the exact sigma,
// 1 / (delta sqrt(2 pi)). Before, both of CKSRho's starting estimates
// (Bun-Steinke's rho and the RDP grid's) underflowed to 0, its search
// started at 1/rho = +Inf and returned rho = 0, and Sigma reported an
// overflow for a sigma of about 1e10.
func TestCKSRhoTinyEps(t *testing.T) {
	for _, eps := range []float64{1e-300, 5e-324, 1e-200} {
		for _, delta := range []float64{1e-10, 1e-5, 1e-3} {
			rho, err := CKSRho(eps, delta)
			if err != nil {
				t.Fatalf("CKSRho(%v, %v): %v", eps, delta, err)
			}
			if lo, hi := delta*delta/2, math.Pi*delta*delta*(1+1e-4); !(rho >= lo && rho <= hi) {
				t.Errorf("CKSRho(%v, %v) = %v, want in [%v, %v]", eps, delta, rho, lo, hi)
			}
			sigma, err := Sigma(eps, delta, CKS)
			if err != nil {
				t.Fatalf("Sigma(%v, %v, CKS): %v", eps, delta, err)
			}
			if exact := 1 / (delta * math.Sqrt(2*math.Pi)); !(sigma >= exact*(1-1e-4) && sigma <= 2*exact) {
				t.Errorf("Sigma(%v, %v, CKS) = %v, want in [%v, %v]", eps, delta, sigma, exact, 2*exact)
			}
		}
	}
}
