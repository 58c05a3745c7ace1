package linalg

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The grouped, checkpointed evaluation agrees with one shift at a time
// (InvSqrtDiag, a separate algorithm: one full pass per shift) to the
// rounding of the sum over shifts, and gives the same bits whatever the
// number of workers and whichever kernels (Go or assembly) run.
func TestInvSqrtDiagParallel(t *testing.T) {
	for _, small := range []int{0, smallInvSqrtOrder} {
		saved := smallInvSqrtOrder
		smallInvSqrtOrder = small
		testInvSqrtDiagParallel(t)
		smallInvSqrtOrder = saved
	}
}

func testInvSqrtDiagParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 127, 128, 129, 1001, 5000} {
		b := randomBidiag(rng, n, 1)
		lo, hi := b.Bounds(0)
		for _, tol := range []float64{1e-2, 1e-4, 1e-14} {
			q := NewInvSqrtRational(lo, hi, tol)
			want := make([]float64, n)
			b.InvSqrtDiag(q, want, make([]float64, 2*n))
			ws := NewInvSqrtWorkspace(n)
			got := make([]float64, n)
			b.InvSqrtDiagParallel(q, got, ws, 1)
			for _, w := range []int{2, 3, 7} {
				other := make([]float64, n)
				b.InvSqrtDiagParallel(q, other, ws, w)
				assert.Equal(t, got, other, "n=%d: %d workers changed the result", n, w)
			}
			for i := range want {
				assert.InEpsilon(t, want[i], got[i], float64(len(q.Shifts)+2)*0x1p-52, "n=%d i=%d", n, i)
			}
			// The Go kernels give the same bits as the ones in use.
			saved := [3]any{fwdLanes, bwdLanes, combineLanes}
			fwdLanes, bwdLanes, combineLanes = fwdLanesGo, bwdLanesGo, combineLanesGo
			goRes := make([]float64, n)
			b.InvSqrtDiagParallel(q, goRes, ws, 2)
			fwdLanes = saved[0].(func([]float64, []float64, *[nLanes]float64, *[nLanes]float64, []float64))
			bwdLanes = saved[1].(func([]float64, []float64, *[nLanes]float64, *[nLanes]float64, []float64))
			combineLanes = saved[2].(func([]float64, []float64, *[nLanes]float64, []float64))
			assert.Equal(t, got, goRes, "n=%d: the Go kernels differ from the assembly", n)
		}
	}
}

func BenchmarkInvSqrtDiag(b *testing.B) {
	// G = A^{-1} of the prefix-sum workload (v = 1).
	const n = 100000
	m := BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
	for i := range m.Diag {
		m.Diag[i], m.Sub[i] = 1, -1
	}
	lo, hi := m.Bounds(0)
	q := NewInvSqrtRational(lo, hi, 1e-14)
	dst := make([]float64, n)
	b.Run("one-shift-at-a-time", func(b *testing.B) {
		work := make([]float64, 2*n)
		for range b.N {
			m.InvSqrtDiag(q, dst, work)
		}
	})
	ws := NewInvSqrtWorkspace(n)
	saved := smallInvSqrtOrder
	smallInvSqrtOrder = 0 // the grouped kernel at this n
	defer func() { smallInvSqrtOrder = saved }()
	for _, w := range []int{1, 2} {
		b.Run("grouped-workers="+string(rune('0'+w)), func(b *testing.B) {
			for range b.N {
				m.InvSqrtDiagParallel(q, dst, ws, w)
			}
		})
	}
}

// The kernels that split their work over two goroutines give the same
// bits with GOMAXPROCS 1 and 2: the small kernel's two sums (from order
// smallParallelOrder on), the kernel on squares formed by the caller
// (InvSqrtDiagSquares) against InvSqrtDiagParallel, and the two
// recursions of QuasiSep.BidiagSolveNormsSq.
func TestTwoGoroutineKernelsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n := smallParallelOrder + 1001
	b := randomBidiag(rng, n, 1)
	lo, hi := b.Bounds(0)
	q := NewInvSqrtRational(lo, hi, 1e-14)
	x, _ := randomQuasiSepSPD(t, rng, 300, 3)
	cf, err := x.ReverseCholesky()
	require.NoError(t, err)
	ldiag, lsub := make([]float64, cf.N), make([]float64, cf.N)
	for i := range ldiag {
		ldiag[i], lsub[i] = 0.5+rng.Float64(), rng.NormFloat64()
	}
	run := func(procs int) (diag, sq, col, row []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ws := NewInvSqrtWorkspace(n)
		diag = make([]float64, n)
		b.InvSqrtDiagParallel(q, diag, ws, procs)
		g2, h2 := ws.Squares()
		for i := range g2 {
			g2[i], h2[i] = b.Diag[i]*b.Diag[i], b.Sub[i]*b.Sub[i]
		}
		sq = make([]float64, n)
		ws.InvSqrtDiagSquares(q, sq, procs)
		col, row = make([]float64, cf.N), make([]float64, cf.N)
		cf.BidiagSolveNormsSq(ldiag, lsub, col, row)
		return diag, sq, col, row
	}
	d1, s1, c1, r1 := run(1)
	d2, s2, c2, r2 := run(2)
	assert.Equal(t, d1, d2, "small kernel")
	assert.Equal(t, d1, s1, "InvSqrtDiagSquares")
	assert.Equal(t, s1, s2, "InvSqrtDiagSquares")
	assert.Equal(t, c1, c2, "column norms")
	assert.Equal(t, r1, r2, "row norms")
}
