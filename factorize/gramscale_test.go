package factorize

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Gram matrices with entries near the top of the float64 range: X = M J
// (J all ones, n x n), the Gram matrix of the 1 x n factor C with every
// entry sqrt(M), whose sensitivity when all n rounds take part (epochs:n,
// minsep:1 with n participations) is ||C 1|| = n sqrt(M), finite for every
// M up to MaxFloat64, and sqrt(M) for one participation. Before, the sums
// of X's entries overflowed and EpochSensitivity, MinSepSensitivity and
// MinSepBound returned +Inf (EpochSensitivity as an exact value) with no
// error. A symmetric X that is no Gram matrix (off-diagonal entries far
// above the diagonal) whose sensitivity overflows is a *ParamError naming
// X, not +Inf.
func TestGramNearOverflow(t *testing.T) {
	for _, m := range []float64{math.MaxFloat64 / 4, math.MaxFloat64, 0x1p1000} {
		for _, n := range []int{2, 3, 5} {
			data := make([]float64, n*n)
			for i := range data {
				data[i] = m
			}
			x := mat.NewSymDense(n, data)
			want := float64(n) * math.Sqrt(m)
			close := func(what string, got float64, err error) {
				t.Helper()
				if err != nil || !(math.Abs(got-want) <= 4e-16*want) {
					t.Errorf("M = %g, n = %d: %s = %v (%v), want %v", m, n, what, got, err, want)
				}
			}
			s, err := EpochSensitivity(x, n)
			close("EpochSensitivity", s.Value, err)
			if !s.Exact {
				t.Errorf("M = %g, n = %d: EpochSensitivity not exact for X >= 0", m, n)
			}
			s, err = MinSepSensitivity(x, 1, n)
			close("MinSepSensitivity", s.Value, err)
			v, err := MinSepBound(x, 1, n)
			close("MinSepBound", v, err)
			c := mat.NewDense(1, n, nil)
			for j := 0; j < n; j++ {
				c.Set(0, j, math.Sqrt(m))
			}
			s, err = SensitivityOf(c, MinSeparation(1, n))
			close("SensitivityOf", s.Value, err)
			// M I (n orthogonal columns of norm sqrt(M)) in all n rounds:
			// sqrt(n M).
			wantI := math.Sqrt(float64(n)) * math.Sqrt(m)
			if v, err := MinSepBanded(mat.NewDiagDense(n, data[:n]), 1, n); err != nil || math.Abs(v-wantI) > 4e-16*wantI {
				t.Errorf("M = %g, n = %d: MinSepBanded of M I = %v (%v), want %v", m, n, v, err, wantI)
			}
		}
	}
	big := mat.NewSymDense(2, []float64{1, math.MaxFloat64, math.MaxFloat64, 1})
	var pe *ParamError
	if s, err := EpochSensitivity(big, 2); !errors.As(err, &pe) || pe.Param != "X" {
		t.Errorf("EpochSensitivity of a non-Gram X whose sum overflows: %v, %v, want a *ParamError naming X", s, err)
	}
	if v, err := MinSepBound(big, 1, 2); !errors.As(err, &pe) || pe.Param != "X" {
		t.Errorf("MinSepBound of a non-Gram X whose sum overflows: %v, %v, want a *ParamError naming X", v, err)
	}
}
