package factorize

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// scaledMatrix returns s times a lower-triangular test matrix: the prefix
// sums (banded inverse) or a matrix with a dense inverse.
func scaledMatrix(r int, s float64, dense bool) *mat.Dense {
	a := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			v := 1.0
			if dense {
				v = 1 / float64(1+i-j)
			}
			a.Set(i, j, s*v)
		}
	}
	return a
}

// The optimal factorization of s A is that of A with B scaled by s and the
// loss by s^2. Workloads near 1e40 and 1e-40 used to send the eigenvalue
// search of the fixed-point map into an endless loop (or a panic); they are
// now solved, and agree with the unscaled answer within the certified gaps.
func TestOptimalScaleInvariance(t *testing.T) {
	const r = 24
	for _, dense := range []bool{false, true} {
		for _, method := range []Method{Auto, Dense} {
			w1, err := NewWorkload(scaledMatrix(r, 1, dense))
			require.NoError(t, err)
			ref, err := Optimal(context.Background(), w1, Options{Method: method})
			require.NoError(t, err)
			for _, s := range []float64{1e40, 1e-40, 0x1p100, 1e150} {
				w, err := NewWorkload(scaledMatrix(r, s, dense))
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				f, err := Optimal(ctx, w, Options{Method: method})
				cancel()
				require.NoError(t, err, "dense %v, method %v, scale %g", dense, method, s)
				want := ref.Metrics.Loss * s * s
				require.InEpsilon(t, want, f.Metrics.Loss, 3e-10, "dense %v, method %v, scale %g", dense, method, s)
				require.InEpsilon(t, ref.Metrics.Gamma, f.Metrics.Gamma, 1e-12)
				require.Same(t, w, f.Workload)
				// B C reproduces s A.
				var bc mat.Dense
				bc.Mul(factorsOf(t, f))
				worst := 0.0
				for i := 0; i < r; i++ {
					for j := 0; j <= i; j++ {
						worst = math.Max(worst, math.Abs(bc.At(i, j)/w.Matrix().At(i, j)-1))
					}
				}
				require.Less(t, worst, 1e-9, "dense %v, method %v, scale %g", dense, method, s)
				// Loss-only agrees too.
				lo, err := Optimal(context.Background(), w, Options{Method: method, LossOnly: true})
				require.NoError(t, err)
				require.InEpsilon(t, want, lo.Metrics.Loss, 3e-10)
			}
		}
	}
}

// The fixed-epoch optimum scales the same way.
func TestOptimalEpochsScaleInvariance(t *testing.T) {
	const r, k = 24, 3
	w1, err := NewWorkload(scaledMatrix(r, 1, false))
	require.NoError(t, err)
	ref, err := OptimalEpochs(context.Background(), w1, k, Options{})
	require.NoError(t, err)
	for _, s := range []float64{1e40, 1e-40} {
		w, err := NewWorkload(scaledMatrix(r, s, false))
		require.NoError(t, err)
		f, err := OptimalEpochs(context.Background(), w, k, Options{})
		require.NoError(t, err, "scale %g", s)
		require.InEpsilon(t, ref.Metrics.Loss*s*s, f.Metrics.Loss, 1e-8, "scale %g", s)
		require.InEpsilon(t, ref.Metrics.RMSE*s, f.Metrics.RMSE, 1e-8, "scale %g", s)
		m, err := ComputeMetrics(f.B, f.C, FixedEpochs(k)) // independent of the scaling back
		require.NoError(t, err)
		require.InEpsilon(t, m.Loss, f.Metrics.Loss, 1e-8, "metrics of the returned factors, scale %g", s)
	}
}
