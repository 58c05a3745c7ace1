package accountant

import (
	"math"
	"testing"
)

// TestAutoOptionsReplaceOneStepRange checks autoOptions's interval for one
// replace-one step at q = 1e-4 against its documented bound (at most
// 2 gridBudget points in one step's losses, the range sampledStepSpan
// discretises) and against its neighbours in sigma: the number of points
// in the step's losses is within a factor 2 of those at sigma = 0.656 and
// 2, and the interval is not coarser than s1/16, s1 = q sqrt(e^(1/s^2) - 1)
// the step's loss spread at s = sqrt2 sigma. The rule of thumb for the
// largest loss, (1 + 8.5 s)/s^2 + log q, is below 0 there, and the
// interval was set by the grid limit instead: 2.4e-8, 4.2e6 points
// against 2.2e5 and 3.0e5 at the neighbours.
func TestAutoOptionsReplaceOneStepRange(t *testing.T) {
	const q = 1e-4
	points := map[float64]float64{}
	for _, sigma := range []float64{0.656, 0.8, 1, 1.2, 2} {
		o := autoOptions(q, sigma, 1, gridBudget, 0, ReplaceOne)
		s := math.Sqrt2 * sigma
		span := sampledStepSpan(q, s, o.TailMass)
		n := span / o.Interval
		points[sigma] = n
		if n > 2*gridBudget*1.01 {
			t.Errorf("sigma=%v: interval %.3g puts %.3g points in one step's losses (span %.3g), want at most %d",
				sigma, o.Interval, n, span, 2*gridBudget)
		}
		if s1 := q * math.Sqrt(math.Expm1(1/(s*s))); o.Interval > s1/16 {
			t.Errorf("sigma=%v: interval %.3g above s1/16 = %.3g", sigma, o.Interval, s1/16)
		}
	}
	for _, nb := range []float64{0.656, 2} {
		if r := points[1] / points[nb]; r > 2 || r < 0.5 {
			t.Errorf("sigma=1: %.3g points in one step's losses, %.3g times sigma=%v's %.3g; want within a factor 2",
				points[1], r, nb, points[nb])
		}
	}
}

// TestAutoOptionsStepRangeAnySteps checks autoOptions's bound on the
// points in one step's losses for more than one step: at most 4
// gridBudget (the spread's interval is kept up to there, then at most 2
// gridBudget), and never coarser than s1/16, over q in {1e-4, 1e-3},
// sigma in {0.656, 1, 2}, T in {2, 10, 100, 1000} and both relations.
// Before, only one step was bounded: 10 replace-one steps at q = 1e-4,
// sigma = 1 put 2.7e6 points in each step's losses (28 s and 2.2 GB to
// compose), 2 add-remove steps at q = 1e-4, sigma = 2 put 1.3e6 (checked
// to fail before: 7 of the 48 points). Where the bound moves the interval
// of replace-one steps, the composed bracket must still meet the one from
// composing the one-step PLD twice (a second path: the step's pair
// composed twice on the one step's grid, against both directions' spectra
// raised to the second power in one transform): both are rigorous, so
// they must overlap (not in -short: about 3 s).
func TestAutoOptionsStepRangeAnySteps(t *testing.T) {
	for _, rel := range []Relation{AddRemove, ReplaceOne} {
		for _, q := range []float64{1e-4, 1e-3} {
			for _, sigma := range []float64{0.656, 1, 2} {
				for _, T := range []int{2, 10, 100, 1000} {
					o := autoOptions(q, sigma, T, gridBudget, 0, rel)
					s := sigma
					if rel == ReplaceOne {
						s = math.Sqrt2 * sigma
					}
					span := sampledStepSpan(q, s, o.TailMass)
					if n := span / o.Interval; n > 4*gridBudget*1.001 {
						t.Errorf("%v q=%v sigma=%v T=%d: interval %.3g puts %.3g points in one step's losses (span %.3g), want at most %d",
							rel, q, sigma, T, o.Interval, n, span, 4*gridBudget)
					}
					if s1 := q * math.Sqrt(math.Expm1(1/(s*s))); o.Interval > s1/16*(1+1e-12) {
						t.Errorf("%v q=%v sigma=%v T=%d: interval %.3g above s1/16 = %.3g", rel, q, sigma, T, o.Interval, s1/16)
					}
				}
			}
		}
	}
	if testing.Short() {
		return
	}
	// The brackets: two steps composed in one transform on the two-step
	// grid, and the one-step PLD (its own grid) composed with itself.
	for _, c := range []struct {
		q, sigma float64
		rel      Relation
	}{{1e-4, 1, ReplaceOne}} {
		two, err := SampledGaussian(c.q, c.sigma, 2, c.rel)
		if err != nil {
			t.Fatal(err)
		}
		one := sharedSampled(t, c.q, c.sigma, 1, c.rel)
		twice, err := one.SelfCompose(2)
		if err != nil {
			t.Fatal(err)
		}
		for _, delta := range []float64{1e-6, 1e-10} {
			a, err := two.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			b, err := twice.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if a.Optimistic > b.Safe || b.Optimistic > a.Safe {
				t.Errorf("%v q=%v sigma=%v delta=%v: two steps' eps in [%.10g, %.10g], the one step composed twice [%.10g, %.10g]: disjoint",
					c.rel, c.q, c.sigma, delta, a.Optimistic, a.Safe, b.Optimistic, b.Safe)
			}
		}
	}
}
