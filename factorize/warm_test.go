package factorize

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestCoarseWorkloadOfPrefix checks the coarsening on the case done by
// hand: the prefix-sum workload of order 8 m coarsens to 8 times the
// prefix-sum workload of order m.
func TestCoarseWorkloadOfPrefix(t *testing.T) {
	w, err := Prefix(8 * 7)
	require.NoError(t, err)
	ac := coarseWorkload(w.Matrix(), coarseFactor)
	r, c := ac.Dims()
	require.Equal(t, 7, r)
	require.Equal(t, 7, c)
	for i := 0; i < 7; i++ {
		for j := 0; j < 7; j++ {
			want := 0.0
			if j <= i {
				want = 8
			}
			assert.Equal(t, want, ac.At(i, j), "A_c[%d][%d]", i, j)
		}
	}
	// A partial last block: order 8 m + 3 keeps the last row and sums the
	// three last columns.
	w, err = Prefix(8*2 + 3)
	require.NoError(t, err)
	ac = coarseWorkload(w.Matrix(), coarseFactor)
	assert.Equal(t, mat.NewDense(3, 3, []float64{8, 0, 0, 8, 8, 0, 8, 8, 3}), ac)
}

// TestDenseWarmStartCertifies solves a non-prefix workload on the dense
// path from the coarse start and checks the certified loss against the
// structured path (an independent evaluation), and that the start
// converges in fewer iterations than v = 1.
func TestDenseWarmStartCertifies(t *testing.T) {
	w, err := Momentum(160, 0.5)
	require.NoError(t, err)
	ctx := context.Background()
	ref, err := Optimal(ctx, w, Options{LossOnly: true, Tol: 1e-11})
	require.NoError(t, err)
	x0, err := coarseStart(ctx, w)
	require.NoError(t, err)
	require.NotNil(t, x0)
	opt, _ := Options{Tol: 1e-9}.withDefaults()
	warm, err := fixedPointFrom(ctx, newDenseEvaluator(w), x0, opt)
	require.NoError(t, err)
	cold, err := fixedPointFrom(ctx, newDenseEvaluator(w), make([]float64, w.R()), opt)
	require.NoError(t, err)
	for name, sol := range map[string]*solution{"warm": warm, "cold": cold} {
		assert.LessOrEqual(t, sol.lower, ref.Metrics.Loss*(1+1e-11), name)
		assert.GreaterOrEqual(t, sol.upper, ref.Metrics.Loss/(1+1e-11)/(1+1e-11), name)
		assert.InDelta(t, 1, sol.upper/ref.Metrics.Loss, 2e-9, name)
	}
	assert.Less(t, warm.iter, cold.iter)
	t.Logf("momentum 0.5, R = %d: %d iterations from the coarse start, %d from v = 1", w.R(), warm.iter, cold.iter)
}
