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
