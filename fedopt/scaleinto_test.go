package fedopt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestScaleIntoNearBound checks the server's copy of an update above
// tau clip (fitNorm, which Release and QuantizeUpdate use): its exact
// norm must be at most tau clip (squaresCmp, math/big) and, like a
// clipped gradient ([Clip]), within 8 ulps of it, at least
// (1 - 2^-50) tau clip in exact arithmetic. Before, a margin of 4d + 32
// ulps put it 4.5e-13 below at d = 1000 and 1.1e-11 at d = 25000 (the
// lower bound failed). Seeded random updates of exact norm tau clip
// (1 + x), x in (0, 1e-9] (UpdateBound's slack), entries of magnitudes
// 1e-150 to 1e150.
func TestScaleIntoNearBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	for it := 0; it < 60; it++ {
		d := []int{1, 2, 7, 1000, 25000}[it%5]
		tau := 1 + rng.IntN(4)
		scale := math.Pow(10, float64(rng.IntN(300)-150))
		clip := scale * (0.5 + rng.Float64())
		T := float64(tau) * clip
		u := withNorm(rng, d, scale, T*(1+1e-9*(0.01+rng.Float64())))
		if squaresCmp(u, tau, clip) <= 0 {
			continue // rounded within: nothing to scale
		}
		dst := make([]float64, d)
		if !fitNorm(dst, u, clip, tau) {
			t.Fatalf("d = %d: fitNorm left an update above tau clip unscaled", d)
		}
		if squaresCmp(dst, tau, clip) > 0 {
			t.Fatalf("d = %d, tau = %d, clip = %v: the scaled copy is above tau clip", d, tau, clip)
		}
		// (1 - 2^-50)^2 (tau clip)^2 <= sum dst_k^2, exactly.
		lo := new(big.Float).SetPrec(squaresPrec).SetInt64(int64(tau))
		lo.Mul(lo, new(big.Float).SetPrec(squaresPrec).SetFloat64(clip))
		lo.Mul(lo, new(big.Float).SetPrec(squaresPrec).SetFloat64(1-0x1p-50))
		if bigSquares(dst).Cmp(lo.Mul(lo, lo)) < 0 {
			n, _ := exactNorm(dst).Float64()
			t.Errorf("d = %d, tau = %d, clip = %v: the scaled copy has norm %v, a relative %.3g below tau clip, want within 2^-50 (as Clip)", d, tau, clip, n, 1-n/T)
		}
	}
}
