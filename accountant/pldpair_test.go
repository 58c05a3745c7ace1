package accountant

import (
	"math"
	"testing"
)

// TestPairPowerDirect checks pairPower against a direct convolution: k
// compositions of a coarse replace-one step (the remove and add pairs at
// q = 0.1, noise multiplier sqrt2, interval 0.05) formed by repeated
// direct (not FFT) convolution of the same discrete masses. On each side
// the composed delta(eps), with pairPower's bounds, brackets the direct
// one: Safe at or above it, Optimistic's masses (less the bound) at or
// below it, at eps from 0 to where it is 1e-12, and both within 1e-9 of
// it plus 1e-14 (the bounds, and the tails cut at 1e-15).
func TestPairPowerDirect(t *testing.T) {
	t.Parallel()
	const h, k = 0.05, 6
	ar, err := SampledGaussianPLD(0.1, math.Sqrt2, AddRemove, PLDOptions{Interval: h, TailMass: 1e-15})
	if err != nil {
		t.Fatal(err)
	}
	for side := 0; side < 4; side += 2 {
		a, b := ar.dist(side), ar.dist(side+1)
		pes := side == 0
		r, err := pairPower(nil, a, b, k, h, ar.tail, 1e-16, pes)
		if err != nil {
			t.Fatal(err)
		}
		// Direct: (a * b)^*k on absolute indices.
		conv := func(x []float64, xlo int, y []float64, ylo int) ([]float64, int) {
			z := make([]float64, len(x)+len(y)-1)
			for i, u := range x {
				for j, v := range y {
					z[i+j] += u * v
				}
			}
			return z, xlo + ylo
		}
		step, slo := conv(a.mass, a.lo, b.mass, b.lo)
		m, mlo := []float64{1}, 0
		for range k {
			m, mlo = conv(m, mlo, step, slo)
		}
		exact := &lossDist{lo: mlo, mass: m, logErr: math.Inf(-1)}
		inf := 1 - math.Pow((1-a.inf)*(1-b.inf), k)
		if !pes {
			inf = 0
		}
		exact.inf = inf
		ce := newCurve(exact, h, true)
		n := 0
		cr := newCurve(r, h, pes)
		for eps := 0.0; ; eps += 0.037 {
			de := ce.value(eps)
			dr := cr.value(eps)
			if pes && !(dr >= de*(1-1e-12)) || !pes && !(dr <= de*(1+1e-12)) {
				t.Errorf("side %d eps %.3f: pairPower's delta %.15g, direct %.15g", side, eps, dr, de)
			}
			if !(math.Abs(dr-de) <= 1e-9*de+1e-14) {
				t.Errorf("side %d eps %.3f: pairPower's delta %.15g, direct %.15g: not within 1e-9 + 1e-14", side, eps, dr, de)
			}
			n++
			if de < 1e-12 {
				break
			}
		}
		if n < 20 {
			t.Errorf("side %d: only %d points checked", side, n)
		}
		t.Logf("side %d: %d points, window %d from %d, direct %d from %d", side, n, len(r.mass), r.lo, len(m), mlo)
	}
}
