package factorize

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/testutil"
)

// The structured path gives the same bits whatever GOMAXPROCS is: its
// loops run by fixed chunks and its kernels by fixed groups of shifts. R
// is above minParallel, so the chunked loops do run concurrently, and
// above minStructuredWarm, so the coarse start runs too.
func TestStructuredSameBitsAnyGOMAXPROCS(t *testing.T) {
	testutil.SkipOn386Short(t, "same bits for any GOMAXPROCS: the chunking is the same Go code on every platform")
	w := prefix(t, minParallel+5000)
	opt := Options{LossOnly: true, Tol: 1e-6}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref *Factorization
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		f, err := Optimal(context.Background(), w, opt)
		require.NoError(t, err)
		assert.LessOrEqual(t, f.Gap, opt.Tol)
		if ref == nil {
			ref = f
			continue
		}
		assert.Equal(t, ref.Metrics, f.Metrics, "GOMAXPROCS=%d", procs)
		assert.Equal(t, ref.Iterations, f.Iterations, "GOMAXPROCS=%d", procs)
		assert.Equal(t, ref.Gap, f.Gap, "GOMAXPROCS=%d", procs)
	}
}

// The coarse start changes the path, not the answer: started from v = 1
// and from the interpolated optimum at R/10, the certified bounds of each
// run contain the other's loss, and both are certified.
func TestStructuredWarmStartAgrees(t *testing.T) {
	ctx := context.Background()
	w := prefix(t, minStructuredWarm+1234)
	opt, err := Options{Tol: 1e-8}.withDefaults()
	require.NoError(t, err)
	x0, err := structuredWarmStart(ctx, w)
	require.NoError(t, err)
	require.NotNil(t, x0)
	warm, err := fixedPointFrom(ctx, newStructuredEvaluator(w), x0, opt)
	require.NoError(t, err)
	cold, err := fixedPointFrom(ctx, newStructuredEvaluator(w), make([]float64, w.R()), opt)
	require.NoError(t, err)
	for _, s := range []*solution{warm, cold} {
		assert.LessOrEqual(t, s.gap, opt.Tol)
	}
	assert.LessOrEqual(t, warm.lower, cold.upper)
	assert.LessOrEqual(t, cold.lower, warm.upper)
	assert.Less(t, warm.iter, cold.iter+5, "the start should not cost iterations")
}

// coveredByScaling claims that the interval in use covers T(v)'s spectrum
// only where it does: checked against a dense symmetric eigensolver on
// multipliers perturbed from the reference by up to a factor e^{+-0.8}.
func TestCoveredByScalingIsSound(t *testing.T) {
	const n = 150
	w := prefix(t, n)
	e := newStructuredEvaluator(w)
	rng := rand.New(rand.NewPCG(3, 4))
	v0 := make([]float64, n)
	for i := range v0 {
		v0[i] = math.Exp(rng.NormFloat64())
	}
	require.NoError(t, e.setup(v0, 1e-8))
	covered, not := 0, 0
	for trial := 0; trial < 40; trial++ {
		amp := 0.8 * float64(trial) / 40
		v := make([]float64, n)
		for i := range v {
			v[i] = v0[i] * math.Exp(amp*(2*rng.Float64()-1))
		}
		if !e.coveredByScaling(v) {
			not++
			continue
		}
		covered++
		// T = G G^T, G = D^{-1} L, L the prefix-sum inverse (1 on the
		// diagonal, -1 below).
		tm := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				s := 0.0
				if i == j {
					s = 1 / v[i]
					if i > 0 {
						s += 1 / v[i]
					}
				} else if i == j+1 {
					s = -1 / math.Sqrt(v[i]*v[j])
				}
				tm.SetSym(i, j, s)
			}
		}
		var eig mat.EigenSym
		require.True(t, eig.Factorize(tm, false))
		vals := eig.Values(nil)
		assert.GreaterOrEqual(t, vals[0], e.qlo, "trial %d: lambda_min below the interval", trial)
		assert.LessOrEqual(t, vals[n-1], e.qhi, "trial %d: lambda_max above the interval", trial)
	}
	assert.Positive(t, covered)
	assert.Positive(t, not)
}
