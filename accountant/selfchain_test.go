package accountant

import (
	"math"
	"testing"
)

// TestSelfComposeOfSelfComposedMassesNotNaN checks the composition of a
// self-composition's computed masses, which SelfCompose still does where
// composing its base at once exceeds the grid's limits: the Gaussian of
// sigma 1 at interval 1, and of sigma 0.7 at interval 1e-2 with tail mass
// 1e-3, self-composed 2, 2 and 4 times (each from the last one's masses)
// must bracket the exact 16-fold delta (mu = 4 / sigma, refDelta) at
// every eps tested. A distribution with a propagated error part at a
// tilt above the next composition's lower tilts made logAdd(+Inf, +Inf)
// NaN, which passed the test for an absent bound: delta came out NaN.
func TestSelfComposeOfSelfComposedMassesNotNaN(t *testing.T) {
	t.Parallel()
	if l := logAdd(math.Inf(1), math.Inf(1)); !math.IsInf(l, 1) {
		t.Errorf("logAdd(+Inf, +Inf) = %v, want +Inf", l)
	}
	if l := logAdd(math.Inf(-1), math.Inf(-1)); !math.IsInf(l, -1) {
		t.Errorf("logAdd(-Inf, -Inf) = %v, want -Inf", l)
	}
	must := mustPLD(t)
	for _, c := range []struct {
		sigma float64
		o     PLDOptions
	}{{1, PLDOptions{Interval: 1}}, {0.7, PLDOptions{Interval: 1e-2, TailMass: 1e-3}}} {
		p := must(GaussianPLD(c.sigma, c.o))
		for _, k := range []int{2, 2, 4} {
			p = must(p.selfCompose(k, p.tail))
		}
		mu := 4 / c.sigma
		for _, eps := range []float64{0.5, 1, 5, 10, 30} {
			b, err := p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := refDelta(eps, mu).Float64()
			if !(b.Optimistic <= exact*(1+1e-12) && exact <= b.Safe*(1+1e-12)) {
				t.Errorf("sigma %v, interval %v: delta(%v) in [%.9g, %.9g] misses the exact %.9g", c.sigma, c.o.Interval, eps, b.Optimistic, b.Safe, exact)
			}
		}
	}
}
