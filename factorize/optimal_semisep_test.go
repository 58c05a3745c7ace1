package factorize

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// relMaxDiff returns max |a - b| / max |b| over all entries.
func relMaxDiff(a, b *mat.Dense) float64 {
	diff, scale := 0.0, 0.0
	r, c := b.Dims()
	for i := 0; i < r; i++ {
		ra, rb := a.RawRowView(i), b.RawRowView(i)
		for j := 0; j < c; j++ {
			diff = math.Max(diff, math.Abs(ra[j]-rb[j]))
			scale = math.Max(scale, math.Abs(rb[j]))
		}
	}
	return diff / scale
}

// The factors built from the quasiseparable structure of X (O(R^2 K)) agree
// with the dense construction (the square root formed densely, gonum's
// Cholesky factorization and triangular inverse, O(R^3)) to 1e-10 relative,
// reproduce A = B C and are causal.
func TestSemisepFactorsMatchDense(t *testing.T) {
	weights := make([]float64, 150)
	for i := range weights {
		weights[i] = 1 / math.Sqrt(1+float64(i)/30)
	}
	wt, err := WeightedPrefix(weights)
	require.NoError(t, err)
	for _, w := range []*Workload{prefix(t, 2), prefix(t, 97), prefix(t, 300), wt} {
		opt, _ := Options{}.withDefaults()
		ev := newStructuredEvaluator(w)
		sol, err := fixedPoint(context.Background(), ev, w.R(), opt)
		require.NoError(t, err)
		cf, err := ev.optimalFactor(sol.vUpper, false)
		require.NoError(t, err)
		b, c := quasiSepFactors(cf, w)
		// The metrics from the generators are those of the dense factors.
		gen := quasiSepResult(StrategyOptimal, w, w, 1, cf).Metrics
		assert.True(t, sameMetrics(mustMetrics(b, c), gen), "%s R=%d: metrics from the generators %+v", w.Name(), w.R(), gen)
		y, err := ev.root(context.Background(), sol.vUpper)
		require.NoError(t, err)
		bd, cd, err := factorsFromRoot(w, y, sol.vUpper, false)
		require.NoError(t, err)
		t.Logf("%s R=%d: relative differences C %.2g, B %.2g", w.Name(), w.R(), relMaxDiff(c, cd), relMaxDiff(b, bd))
		assert.LessOrEqual(t, relMaxDiff(c, cd), 1e-10, "%s R=%d: C", w.Name(), w.R())
		assert.LessOrEqual(t, relMaxDiff(b, bd), 1e-10, "%s R=%d: B", w.Name(), w.R())
		f := &Factorization{Strategy: StrategyOptimal, Operator: quasiSepOp{cf}, Workload: w, B: b, C: c, Available: squareAvailable(w.R()), Metrics: denseMetrics(b, c)}
		checkFactors(t, f)
		want := mustMetrics(bd, cd)
		assert.InEpsilon(t, want.Loss, f.Metrics.Loss, 1e-10)
		assert.InEpsilon(t, want.MaxSE, f.Metrics.MaxSE, 1e-10)
		assert.InDelta(t, 1, f.Metrics.Gamma, 1e-12)
		// denseMetrics is ComputeMetrics on raw rows.
		assert.Equal(t, mustMetrics(b, c), f.Metrics)
		// The loss lies within the certified bounds.
		assert.LessOrEqual(t, f.Metrics.Loss, sol.upper*(1+1e-12))
		assert.GreaterOrEqual(t, f.Metrics.Loss, sol.lower*(1-1e-12))
	}
}
