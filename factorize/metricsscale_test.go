package factorize

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestComputeMetricsScaledFactors: B = s [[1, 0], [1, 1]] and C = I / s
// have the loss of B = [[1, 0], [1, 1]], C = I (sensitivity 1, ||B||_F^2
// = 3, worst row 2) whatever s, by hand: sens^2 ||B||_F^2 = s^-2 3 s^2.
// At s = 1e-200 the squares of B underflow to 0 and sens^2 overflows, and
// the loss was 0 * +Inf = NaN (found by review12); ||B||_F^2 itself is
// 3e-400, below the float64 range, so 0 is its value.
func TestComputeMetricsScaledFactors(t *testing.T) {
	for _, s := range []float64{1, 1e-200, 1e200, 0x1p-1000, 1e-300} {
		b := mat.NewDense(2, 2, []float64{s, 0, s, s})
		c := mat.NewDense(2, 2, []float64{1 / s, 0, 0, 1 / s})
		if math.IsInf(1/s, 0) {
			continue
		}
		m, err := ComputeMetrics(b, c, SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		near := func(name string, got, want float64) {
			if !(math.Abs(got-want) <= 1e-14*want) {
				t.Errorf("s = %g: %s = %v, want %v", s, name, got, want)
			}
		}
		near("Loss", m.Loss, 3)
		near("MaxSE", m.MaxSE, 2)
		near("RMSE", m.RMSE, math.Sqrt(1.5))
		if want := 3 * s * s; !(m.FrobBSq == want || math.Abs(m.FrobBSq-want) <= 1e-14*want+0x1p-1074) {
			t.Errorf("s = %g: FrobBSq = %v, want %v", s, m.FrobBSq, want)
		}
	}
}
