package factorize

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The structured path's claimed relative error for momentum workloads
// (A^{-1} with two subdiagonals, evaluated by the double-word band kernel)
// must cover its true error against the double-double reference of
// refsqrt_test.go (for A = L^{-1} formed in double-double from the same L,
// newRefSqrtBand), at multipliers near the optimum (from the dense path,
// whose v does not depend on the structured evaluator's own accuracy),
// every entry (up to the reference's own error bound: the difference of
// the two values is at most the sum of their bounds); and it must be small
// enough to certify 1e-10 (it is about
// the rational approximation's 3e-15: the float64 band kernel's error
// was 1e-12 to 8e-9 here, and its bound up to 690 times that).
func TestStructuredBoundMomentum(t *testing.T) {
	betas := []float64{0.5, 0.9, 0.95, 0.99}
	rs := []int{20, 40, 100, 200}
	if testing.Short() {
		rs = []int{20, 100}
	}
	ctx := context.Background()
	t.Log("beta    R   cond(M) | max rel diff | bound  ratio | reference abs err")
	for _, beta := range betas {
		for _, n := range rs {
			w, err := Momentum(n, beta)
			require.NoError(t, err)
			opt, _ := Options{}.withDefaults()
			opt.Tol = 1e-6
			sol, err := fixedPoint(ctx, newDenseEvaluator(w), n, opt)
			require.NoError(t, err, "beta=%g R=%d", beta, n)
			v := sol.vUpper
			ref, err := newRefSqrtBand(w, v)
			require.NoError(t, err, "beta=%g R=%d", beta, n)
			st := make([]float64, n)
			se := newStructuredEvaluator(w)
			claim, err := se.phi(ctx, v, st)
			require.NoError(t, err)
			bound, err := se.errorBound(ctx, v, st)
			require.NoError(t, err)
			require.Equal(t, claim, bound, "phi's bound and errorBound's")
			worst := 0.0
			for i := range st {
				d := ref.absDiff(i, st[i])
				worst = math.Max(worst, d/ref.phi[i])
				require.LessOrEqual(t, d, claim*st[i]+ref.absErr, "beta=%g R=%d entry %d (reference error %.2g)", beta, n, i, ref.absErr)
			}
			assert.Less(t, claim, 1e-13, "beta=%g R=%d: the claimed relative error", beta, n)
			t.Logf("%.2f %4d %8.1e | %9.2e | %9.2e %6.1f | %9.2e", beta, n, ref.cond, worst, claim, claim/worst, ref.absErr)
		}
	}
}
