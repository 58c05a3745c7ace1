package factorize

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The semiseparable factorization's metrics, computed from its generators
// in O(R K^2), agree with those of its factors formed densely; A = B C,
// causality, and the loss is never below the certified optimal lower bound
// and falls towards it as K grows.
func TestSemiseparable(t *testing.T) {
	weights := make([]float64, 120)
	for i := range weights {
		weights[i] = 1 / math.Sqrt(1+float64(i)/30)
	}
	wt, err := WeightedPrefix(weights)
	require.NoError(t, err)
	for _, w := range []*Workload{prefix(t, 2), prefix(t, 150), wt} {
		prev := math.Inf(1)
		for _, k := range []int{1, 2, 4, 8, 16} {
			f, err := semiseparable(context.Background(), w, k, 0, true, Options{})
			require.NoError(t, err)
			checkFactors(t, f)
			m, err := ComputeMetrics(f.B, f.C, SingleParticipation())
			require.NoError(t, err)
			assert.InEpsilon(t, m.Gamma, f.Metrics.Gamma, 1e-12, "%s k=%d", w.Name(), k)
			assert.InEpsilon(t, m.Loss, f.Metrics.Loss, 1e-10, "%s k=%d", w.Name(), k)
			assert.InEpsilon(t, m.MaxSE, f.Metrics.MaxSE, 1e-10, "%s k=%d", w.Name(), k)
			assert.Equal(t, k, f.Semisep.C.K)
			assert.GreaterOrEqual(t, f.Metrics.Loss, f.Semisep.OptimalLower)
			assert.LessOrEqual(t, f.Metrics.Loss, prev*(1+1e-9), "%s k=%d: loss grew with k", w.Name(), k)
			prev = f.Metrics.Loss
			t.Logf("%s R=%d k=%d: excess %.3g", w.Name(), w.R(), k, f.Semisep.Excess)
		}
		assert.Less(t, math.Abs(prev/mustOptimalLoss(t, w)-1), 1e-6)
	}
	// Choosing K by the target excess.
	f, err := semiseparable(context.Background(), prefix(t, 800), 0, 0.01, false, Options{})
	require.NoError(t, err)
	assert.LessOrEqual(t, f.Semisep.Excess, 0.01)
	assert.LessOrEqual(t, f.Semisep.C.K, 8)
	assert.Nil(t, f.B)
	_, err = semiseparable(context.Background(), prefix(t, 1), 2, 0, false, Options{})
	assert.ErrorContains(t, err, "bidiagonal inverse")
	_, err = semiseparable(context.Background(), prefix(t, 10), -1, 0, false, Options{})
	assert.Error(t, err)
}

func mustOptimalLoss(t *testing.T, w *Workload) float64 {
	t.Helper()
	f, err := Optimal(context.Background(), w, Options{LossOnly: true})
	require.NoError(t, err)
	return f.Metrics.Loss
}

// A dense workload whose inverse is not kept as a band (here a 2 x 2 one
// scaled by 1e-40, whose inverse's entries are near 1e40) is refused with
// an error: before, asking the nil band for its width panicked.
func TestSemiseparableDenseWorkloadIsAnError(t *testing.T) {
	a := mat.NewTriDense(2, mat.Lower, []float64{1e-40, 0, 1e-40, 1e-40})
	w, err := NewWorkload(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, banded := w.InverseBand(); banded {
		t.Skip("this workload keeps an inverse band")
	}
	if _, err := semiseparable(context.Background(), w, 0, 0, false, Options{}); err == nil {
		t.Error("Semiseparable of a workload without a bidiagonal inverse: no error")
	}
}
