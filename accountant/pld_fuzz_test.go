package accountant

import (
	"math"
	"testing"
)

// fuzzPLDPoints bounds the grid points of one input of
// FuzzSampledGaussianPLD (see there).
const fuzzPLDPoints = 1 << 18

// FuzzSampledGaussianPLD feeds arbitrary parameters to the PLD of a
// sampled Gaussian on a coarse grid. Whatever they are, it must not panic;
// an accepted PLD must give a delta in [0, 1] that is at least the exact
// Gaussian's when q = 1, and an eps whose delta is within the target. The
// seeds (extreme q and sigma, where e^loss overflows) run in every go test.
//
// The work of an input is bounded, so that each runs in well under a
// second: the accountant's cost grows like the points of its grids, and at
// interval 1e-2 a small sigma with many steps is accepted (within the
// 2^24-point limit) but slow: q = 0.5, sigma = 0.02 and 35 steps, about
// 10^7 composed points, took 3 s (12 s on a loaded machine, past the
// fuzzer's 10 s limit for an input, which reported it as a hang). One step has
// about ((1 + 8.5 sigma)/sigma^2 + |log q|)/h points (autoOptions'
// estimate of its losses' range); an input whose step would exceed
// fuzzPLDPoints points is skipped, and the steps are cut to
// fuzzPLDPoints over the points of the step actually built, so that the
// composed grid has at most about fuzzPLDPoints points. Nothing is
// hidden: small sigmas are still fuzzed (with fewer steps, or a single
// step down to sigma about 0.021, where e^loss overflows as at 0.02), and
// the accountant's limit for the larger grids is its own, checked by its
// tests. At the bound an input takes about 0.2 s of CPU.
func FuzzSampledGaussianPLD(f *testing.F) {
	const h = 1e-2
	for _, s := range []struct {
		q, sigma, eps float64
		steps         uint8
	}{
		{0.2, 0.5, 1, 3},
		{1, 0.022, 1, 5},
		{0.5, 0.022, 3, 2},
		{1e-300, 1, 1, 7},
		{1e-9, 0.05, 0.1, 50},
		{0.999999, 2, 0.5, 20},
		{1, 1e3, 1e-3, 9},
		{0.3, math.Inf(1), 1, 4},
		{0.1, 1e-9, 1, 1},
		{0.1, 1, 0, 1},
	} {
		f.Add(s.q, s.sigma, s.eps, s.steps)
	}
	f.Fuzz(func(t *testing.T, q, sigma, eps float64, steps uint8) {
		k := int(steps%64) + 1
		if sigma > 1e6 {
			return // skipped, as before: its losses are all near 0
		}
		// sigma <= 0 or NaN goes on, to be refused.
		if sigma > 0 && ((1+8.5*sigma)/(sigma*sigma)+math.Min(math.Abs(math.Log(q)), 1e4))/h > fuzzPLDPoints {
			return
		}
		p, err := SampledGaussianPLD(q, sigma, AddRemove, PLDOptions{Interval: h})
		if err != nil {
			return
		}
		n := max(len(p.dist(0).mass), len(p.dist(1).mass), 1)
		k = max(1, min(k, fuzzPLDPoints/n))
		if p, err = p.SelfCompose(k); err != nil {
			return
		}
		d, err := p.Delta(eps)
		if err != nil {
			return
		}
		if !(d >= 0 && d <= 1) {
			t.Fatalf("q=%v sigma=%v eps=%v k=%d: delta %v", q, sigma, eps, k, d)
		}
		if q == 1 && eps > 0 && !math.IsInf(sigma, 1) {
			if exact, err := Delta(eps, math.Sqrt(float64(k))/sigma); err == nil && d < exact*(1-1e-9) {
				t.Fatalf("q=1 sigma=%v eps=%v k=%d: PLD delta %v below exact %v", sigma, eps, k, d, exact)
			}
		}
		if e, err := p.Epsilon(1e-3); err == nil && !math.IsInf(e, 1) {
			if d2, _ := p.Delta(e); d2 > 1e-3 {
				t.Fatalf("q=%v sigma=%v k=%d: Delta(Epsilon(1e-3)) = %v", q, sigma, k, d2)
			}
		}
	})
}
