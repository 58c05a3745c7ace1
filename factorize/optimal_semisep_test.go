package factorize

import (
	"context"
	"math"
	"runtime"
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

// FactorsLazily checks as Factors does and forms nothing; each Form gives
// the same bits at GOMAXPROCS 1, 2 and 3 as Factors (which runs the two
// Forms at once) at the default, and B C reproduces the workload (A = B C,
// the defining identity, the independent check) to rounding. Where the factorization holds its factors, Form returns
// them; a loss-only result is refused as Factors refuses it.
func TestFactorsLazily(t *testing.T) {
	ctx := context.Background()
	w := prefix(t, 300)
	f, err := Optimal(ctx, w, Options{})
	require.NoError(t, err)
	require.Nil(t, f.B, "the structured optimum keeps C's generators, not dense factors")
	b, c, err := f.Factors()
	require.NoError(t, err)
	lb, lc, err := f.FactorsLazily()
	require.NoError(t, err)
	assert.Equal(t, [2]int{300, 300}, [2]int{lb.Rows, lb.Cols})
	assert.Equal(t, [2]int{300, 300}, [2]int{lc.Rows, lc.Cols})
	sameBits := func(x, y *mat.Dense) bool {
		rx, ry := x.RawMatrix(), y.RawMatrix()
		if rx.Rows != ry.Rows || rx.Cols != ry.Cols {
			return false
		}
		for i := 0; i < rx.Rows; i++ {
			for j := 0; j < rx.Cols; j++ {
				if math.Float64bits(rx.Data[i*rx.Stride+j]) != math.Float64bits(ry.Data[i*ry.Stride+j]) {
					return false
				}
			}
		}
		return true
	}
	for _, procs := range []int{1, 2, 3} {
		prev := runtime.GOMAXPROCS(procs)
		gb, gc := lb.Form(), lc.Form()
		runtime.GOMAXPROCS(prev)
		assert.True(t, sameBits(gb, b), "GOMAXPROCS=%d: B", procs)
		assert.True(t, sameBits(gc, c), "GOMAXPROCS=%d: C", procs)
	}
	var bc mat.Dense
	bc.Mul(lb.Form(), lc.Form())
	assert.LessOrEqual(t, relMaxDiff(&bc, mat.DenseCopyOf(w.Matrix())), 1e-12, "A = B C")

	// A strategy that forms its factors: Form returns them.
	fi, err := IdentityStrategy{}.Factorize(ctx, w, SingleParticipation())
	require.NoError(t, err)
	require.NotNil(t, fi.B)
	lb, lc, err = fi.FactorsLazily()
	require.NoError(t, err)
	assert.Same(t, fi.B, lb.Form())
	assert.Same(t, fi.C, lc.Form())

	// Loss only: refused, as by Factors.
	fl, err := Optimal(ctx, w, Options{LossOnly: true})
	require.NoError(t, err)
	_, _, ferr := fl.Factors()
	_, _, lerr := fl.FactorsLazily()
	require.Error(t, lerr)
	assert.Equal(t, ferr.Error(), lerr.Error())
	var pe *ParamError
	assert.ErrorAs(t, lerr, &pe)
	_, _, err = (*Factorization)(nil).FactorsLazily()
	assert.ErrorAs(t, err, &pe)
}
