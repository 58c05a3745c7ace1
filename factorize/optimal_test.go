package factorize

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// Published small cases (notes.md section 3): R = 2 gives the golden ratio
// squared, R = 3 gives 4.607861648.
func TestOptimalSmallExact(t *testing.T) {
	phi := (1 + math.Sqrt(5)) / 2
	for _, m := range []Method{Structured, Dense} {
		f, err := Optimal(context.Background(), prefix(t, 2), Options{Method: m})
		require.NoError(t, err)
		assert.InEpsilon(t, phi*phi, f.Metrics.Loss, 1e-10, "%v", m)
		f, err = Optimal(context.Background(), prefix(t, 3), Options{Method: m})
		require.NoError(t, err)
		assert.InEpsilon(t, 4.607861648, f.Metrics.Loss, 1e-9, "%v", m)
	}
}

// R = 3: the multipliers at the optimum are [2.651863, 1.257352, 0.698646]
// (notes.md), and the optimal loss is their sum.
func TestOptimalMultipliers(t *testing.T) {
	opt, _ := Options{}.withDefaults()
	sol, err := fixedPoint(context.Background(), newStructuredEvaluator(prefix(t, 3)), 3, opt)
	require.NoError(t, err)
	want := []float64{2.651863, 1.257352, 0.698646}
	for i, v := range sol.vUpper {
		assert.InDelta(t, want[i], v, 2e-6)
	}
	assert.InEpsilon(t, 4.607861648, want[0]+want[1]+want[2], 1e-6)
}

// At the certified optimum: unit column norms, A = B C, causality, the loss
// within the certified gap, and sum(v) equal to the loss.
func TestOptimalCertificate(t *testing.T) {
	for _, r := range []int{1, 4, 37, 200} {
		var last Progress
		f, err := Optimal(context.Background(), prefix(t, r), Options{Progress: func(p Progress) { last = p }})
		require.NoError(t, err)
		checkFactors(t, f)
		assert.LessOrEqual(t, f.Gap, DefaultTol)
		assert.Equal(t, f.Iterations, last.Iter)
		assert.InDelta(t, 1, f.Metrics.Sensitivity, 1e-12)
		for j := 0; j < r; j++ {
			assert.InDelta(t, 1, mat.Norm(f.C.ColView(j), 2), 1e-12)
		}
		// The factorization's own loss lies between the certified bounds.
		assert.GreaterOrEqual(t, f.Metrics.Loss, last.Lower*(1-1e-12))
		assert.LessOrEqual(t, f.Metrics.Loss, last.Upper*(1+1e-12))
	}
}

// The structured (O(R) per iteration) and dense (eigendecomposition) paths
// are different algorithms for the same map; their certified losses agree.
func TestOptimalStructuredMatchesDense(t *testing.T) {
	workloads := map[string]*Workload{"prefix": prefix(t, 60)}
	w, err := Momentum(40, 0.9)
	require.NoError(t, err)
	workloads["momentum"] = w
	weights := make([]float64, 50)
	for i := range weights {
		weights[i] = 1 / math.Sqrt(float64(i+1))
	}
	w, err = WeightedPrefix(weights)
	require.NoError(t, err)
	workloads["weighted"] = w
	for name, w := range workloads {
		s, err := Optimal(context.Background(), w, Options{Method: Structured})
		require.NoError(t, err)
		d, err := Optimal(context.Background(), w, Options{Method: Dense})
		require.NoError(t, err)
		assert.InEpsilon(t, d.Metrics.Loss, s.Metrics.Loss, 1e-9, name)
		checkFactors(t, s)
		checkFactors(t, d)
	}
}

// A general (dense) workload: a random well-conditioned lower-triangular
// matrix. The optimum must beat identity and satisfy the certificate.
func TestOptimalGeneralWorkload(t *testing.T) {
	n := 12
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			a.Set(i, j, 1/float64(1+i-j))
		}
	}
	w, err := NewWorkload(a)
	require.NoError(t, err)
	assert.False(t, w.IsPrefix())
	f, err := Optimal(context.Background(), w, Options{})
	require.NoError(t, err)
	checkFactors(t, f)
	id := Identity(w)
	assert.Less(t, f.Metrics.Loss, id.Metrics.Loss)
	_, err = Optimal(context.Background(), w, Options{Method: Structured})
	assert.ErrorContains(t, err, "banded inverse")
}

func TestOptimalLossOnly(t *testing.T) {
	full, err := Optimal(context.Background(), prefix(t, 300), Options{})
	require.NoError(t, err)
	lo, err := Optimal(context.Background(), prefix(t, 300), Options{LossOnly: true})
	require.NoError(t, err)
	assert.Nil(t, lo.B)
	assert.Nil(t, lo.C)
	assert.InEpsilon(t, full.Metrics.Loss, lo.Metrics.Loss, 2e-10)
	assert.Equal(t, lo.Metrics.Loss, lo.Metrics.FrobBSq)
	// MaxSE of the loss-only path (O(R) recurrences) against the largest
	// squared row norm of the dense B.
	assert.InEpsilon(t, full.Metrics.MaxSE, lo.Metrics.MaxSE, 1e-8)
}

func TestOptimalOptionsAndCancel(t *testing.T) {
	w := prefix(t, 50)
	for _, tol := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := Optimal(context.Background(), w, Options{Tol: tol})
		assert.ErrorContains(t, err, "tolerance")
	}
	_, err := Optimal(context.Background(), w, Options{MaxIter: 2})
	var nc *NotConvergedError
	require.True(t, errors.As(err, &nc), "got %v", err)
	assert.Equal(t, 2, nc.Iter)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Optimal(ctx, w, Options{})
	assert.ErrorIs(t, err, context.Canceled)
}

// The certified loss at R = 100,000 (loss only, gap 1e-8) is gated: it takes
// about 20 s. Run with DPMF_LONG=1.
func TestOptimalLargeLossOnly(t *testing.T) {
	if testing.Short() || !longTests() {
		t.Skip("set DPMF_LONG=1")
	}
	f, err := Optimal(context.Background(), prefix(t, 100000), Options{LossOnly: true, Tol: 1e-8})
	require.NoError(t, err)
	assert.LessOrEqual(t, f.Gap, 1e-8)
	// Loss per round grows like log(R)^2: it lies between the square-root
	// factorization's bound and a tenth of it.
	assert.Less(t, f.Metrics.Loss, 100000*(1+math.Log(100000)/math.Pi)*(1+math.Log(100000)/math.Pi))
}
