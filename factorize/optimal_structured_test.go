package factorize

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The structured path's claimed relative error for momentum workloads
// (A^{-1} with two subdiagonals, T formed explicitly) must cover its true
// error against the double-double reference of refsqrt_test.go, at
// multipliers near the optimum (from the dense path, whose v does not
// depend on the structured evaluator's own accuracy): the band bound alone
// (the one used above R = bandDenseCheck) and combined with the dense
// path's second evaluation, each entry and the largest relative error.
func TestStructuredBoundMomentum(t *testing.T) {
	betas := []float64{0.5, 0.9, 0.95, 0.99}
	rs := []int{20, 40, 100, 200}
	if testing.Short() {
		rs = []int{20, 100}
	}
	ctx := context.Background()
	t.Log("beta    R   cond(M) | max rel err | band bound  ratio | with dense  ratio")
	for _, beta := range betas {
		for _, n := range rs {
			w, err := Momentum(n, beta)
			require.NoError(t, err)
			opt, _ := Options{}.withDefaults()
			opt.Tol = 1e-6
			sol, err := fixedPoint(ctx, newDenseEvaluator(w), n, opt)
			require.NoError(t, err, "beta=%g R=%d", beta, n)
			v := sol.vUpper
			ref, err := newRefSqrt(w.Matrix(), v)
			require.NoError(t, err, "beta=%g R=%d", beta, n)
			st := make([]float64, n)
			var claims [2]float64
			for pass, denseMax := range []int{0, bandDenseCheck} {
				se := newStructuredEvaluator(w)
				se.denseMax = denseMax
				eps, err := se.phi(ctx, v, st)
				require.NoError(t, err)
				require.True(t, math.IsNaN(eps), "the band case's bound needs errorBound")
				claim, err := se.errorBound(ctx, v, st)
				require.NoError(t, err)
				errs := se.entryErrors()
				worst := 0.0
				for i := range st {
					d := ref.absDiff(i, st[i]) + ref.absErr
					worst = math.Max(worst, d/(ref.phi[i]-ref.absErr))
					require.LessOrEqual(t, d, errs[i], "beta=%g R=%d dense=%d entry %d: its own bound", beta, n, denseMax, i)
				}
				assert.LessOrEqual(t, worst, claim, "beta=%g R=%d dense=%d: the claimed relative error", beta, n, denseMax)
				claims[pass] = claim
				if pass == 1 {
					t.Logf("%.2f %4d %8.1e | %9.2e | %9.2e %6.1f | %9.2e %6.1f", beta, n, ref.cond, worst, claims[0], claims[0]/worst, claim, claim/worst)
				}
			}
		}
	}
}
