package factorize

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// diagCorrectionDense returns, densely, the d that minimises tr(W X W^T)
// with W = M (R + diag(d)), M = A^{-T} X, R the off-diagonal band of the
// band g of G (the solver's own band, so that only the correction is
// compared): the solution of (G^{-1} o X) d = -diag(G^{-1} R X) with
// G^{-1} = M^T M, by gonum's LU; and the objective as a function of d.
func diagCorrectionDense(t *testing.T, w *Workload, b int, x linalg.SymBand, g []float64) ([]float64, func([]float64) float64) {
	n := w.R()
	xd := mat.NewDense(n, n, nil)
	rd := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := max(0, i-b+1); j <= i; j++ {
			xd.Set(i, j, x.At(i, j))
			xd.Set(j, i, x.At(i, j))
			if j < i {
				rd.Set(i, j, g[i*b+i-j])
				rd.Set(j, i, g[i*b+i-j])
			}
		}
	}
	var ai, m, gi, grx mat.Dense
	require.NoError(t, ai.Inverse(w.Matrix()))
	m.Mul(ai.T(), xd)
	gi.Mul(m.T(), &m)
	grx.Product(&gi, rd, xd)
	h := mat.NewDense(n, n, nil)
	rhs := mat.NewVecDense(n, nil)
	for i := 0; i < n; i++ {
		rhs.SetVec(i, -grx.At(i, i))
		for j := 0; j < n; j++ {
			h.Set(i, j, gi.At(i, j)*xd.At(i, j))
		}
	}
	var d mat.VecDense
	require.NoError(t, d.SolveVec(h, rhs))
	obj := func(dv []float64) float64 {
		v := mat.DenseCopyOf(rd)
		for i := range dv {
			v.Set(i, i, dv[i])
		}
		var wm, p mat.Dense
		wm.Mul(&m, v)
		p.Product(&wm, xd, wm.T())
		return mat.Trace(&p)
	}
	return d.RawVector().Data, obj
}

// The diagonal correction of the dual point against a dense solve of its
// normal equations, at the start and near the optimum, for prefix sums,
// a weighted prefix and momentum (two bands in A^{-1}), and at R = 700,
// where the rows fall into three chunks of the two passes: tr(W X W^T)
// at the d returned equals the dense minimum (to 1e-9 relative) and is
// below its value at d = 0; the same bits on one core as on two.
func TestBandedDiagCorrection(t *testing.T) {
	cases := certificateCases(t)
	cases = append(cases, certificateCase{prefix(t, 700), 5})
	for _, c := range cases {
		bp := testBandedProblem(t, c.w, c.b)
		x0, err := bp.start()
		require.NoError(t, err)
		opt, err := Options{Tol: 1e-5}.withDefaults()
		require.NoError(t, err)
		sol, err := bp.solve(context.Background(), x0, opt)
		require.NoError(t, err)
		for k, x := range []linalg.SymBand{x0, sol.x} {
			n := c.w.R()
			grad, g := make([]float64, n*c.b), make([]float64, n*c.b)
			_, ok := bp.eval(x, grad, g)
			require.True(t, ok)
			bp.formM(x)
			bp.fillRF(g, nil)
			d := bp.diagCorrection(x, bp.rf)
			require.NotNil(t, d, "%s b=%d point %d", c.w.Name(), c.b, k)
			want, obj := diagCorrectionDense(t, c.w, c.b, x, g)
			got, best, zero := obj(d), obj(want), obj(make([]float64, n))
			assert.InDelta(t, best, got, 1e-9*best, "%s b=%d point %d", c.w.Name(), c.b, k)
			assert.Less(t, got, zero, "%s b=%d point %d", c.w.Name(), c.b, k)
			prev := runtime.GOMAXPROCS(1)
			one := bp.diagCorrection(x, bp.rf)
			runtime.GOMAXPROCS(prev)
			assert.Equal(t, d, one, "%s b=%d point %d", c.w.Name(), c.b, k)
		}
	}
	// Where the passes run on two goroutines (R = 1100 with 16 bands: two
	// chunks of each parity and more than two grains of work), the same
	// bits as on one; under -race, no two chunks that run at once touch
	// the same entries.
	const n, b = 1100, 16
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	require.Equal(t, 2, par.Workers(2, float64(n)*float64(4*b*b)/2), "the passes must run on two goroutines here")
	bp := testBandedProblem(t, prefix(t, n), b)
	x, err := bp.start()
	require.NoError(t, err)
	grad, g := make([]float64, n*b), make([]float64, n*b)
	_, ok := bp.eval(x, grad, g)
	require.True(t, ok)
	bp.formM(x)
	bp.fillRF(g, nil)
	two := bp.diagCorrection(x, bp.rf)
	runtime.GOMAXPROCS(1)
	one := bp.diagCorrection(x, bp.rf)
	require.NotNil(t, two)
	assert.Equal(t, one, two)
}
