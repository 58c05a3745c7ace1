package factorize

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/linalg"
)

// denseEvaluator evaluates phi(v) = diag((D S D)^{1/2}) for any workload.
//
// Each evaluation reduces M = D S D to tridiagonal form, M = Q T Q^T
// (Householder, LAPACK's Dsytrd and Dorgtr), and takes the square root of
// T through the rational approximation of its inverse square root:
// T^{1/2} = T sum_j w_j (T + s_j I)^{-1}, formed densely in O(n^2) per shift
// because the inverse of a tridiagonal matrix is semiseparable. Then
// diag(M^{1/2})_i = sum_k (Q T^{1/2})_ik Q_ik. This replaces the implicit QR
// sweeps of a full eigendecomposition (about 6 n^3 flops of plane
// rotations) by one matrix product, about three times faster in pure Go.
type denseEvaluator struct {
	n    int
	s    []float64 // S = A^T A, row-major
	m    []float64 // D S D, then Q
	d, e []float64
	tau  []float64
	work []float64
	y    []float64 // T^{-1/2}, then T^{1/2}
	qf   []float64 // Q T^{1/2}
	tri  linalg.SymTridiag
	tw   []float64
	lo   float64
	q    linalg.InvSqrtRational
	have bool
}

func newDenseEvaluator(w *Workload) *denseEvaluator {
	n := w.R()
	s := mat.NewSymDense(n, nil)
	s.SymOuterK(1, w.Matrix().T())
	full := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			full[i*n+j] = s.At(i, j)
		}
	}
	e := &denseEvaluator{
		n: n, s: full, m: make([]float64, n*n),
		d: make([]float64, n), e: make([]float64, max(n-1, 1)), tau: make([]float64, max(n-1, 1)),
		y: make([]float64, n*n), qf: make([]float64, n*n),
		tri: linalg.SymTridiag{Diag: make([]float64, n), Off: make([]float64, n)},
		tw:  make([]float64, 2*n),
	}
	var impl lapackgonum.Implementation
	q := []float64{0}
	impl.Dsytrd(blas.Upper, n, e.m, n, e.d, e.e, e.tau, q, -1)
	lw := int(q[0])
	impl.Dorgtr(blas.Upper, n, e.m, n, e.tau, q, -1)
	lw = max(lw, int(q[0]), 1)
	e.work = make([]float64, lw)
	return e
}

// sqrtT computes Q (in e.m) and Q T^{1/2} (in e.qf) for multipliers v.
func (e *denseEvaluator) sqrtT(ctx context.Context, v []float64) error {
	n := e.n
	sq := make([]float64, n)
	for i := range sq {
		sq[i] = math.Sqrt(v[i])
	}
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			e.m[i*n+j] = sq[i] * e.s[i*n+j] * sq[j]
		}
	}
	var impl lapackgonum.Implementation
	impl.Dsytrd(blas.Upper, n, e.m, n, e.d, e.e, e.tau, e.work, len(e.work))
	impl.Dorgtr(blas.Upper, n, e.m, n, e.tau, e.work, len(e.work))
	copy(e.tri.Diag, e.d)
	for i := 1; i < n; i++ {
		e.tri.Off[i] = e.e[i-1]
	}
	lo, hi := e.tri.Bounds(e.lo)
	e.lo = lo
	if !e.have || !e.q.Covers(lo, hi) {
		e.q = linalg.NewInvSqrtRational(lo/4, hi*4, quadTol)
		e.have = true
	}
	for i := range e.y {
		e.y[i] = 0
	}
	for j, s := range e.q.Shifts {
		if err := ctx.Err(); err != nil {
			return err
		}
		e.tri.AddShiftedInverse(e.y, s, e.q.Weights[j], e.tw)
	}
	// Mirror, then T^{1/2} = T Y, row by row into qf as scratch.
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			e.y[j*n+i] = e.y[i*n+j]
		}
	}
	t := e.qf
	for i := 0; i < n; i++ {
		out := t[i*n : i*n+n]
		yi := e.y[i*n : i*n+n]
		a := e.tri.Diag[i]
		for j := range out {
			out[j] = a * yi[j]
		}
		if i > 0 {
			c, up := e.tri.Off[i], e.y[(i-1)*n:i*n]
			for j := range out {
				out[j] += c * up[j]
			}
		}
		if i+1 < n {
			c, dn := e.tri.Off[i+1], e.y[(i+1)*n:(i+2)*n]
			for j := range out {
				out[j] += c * dn[j]
			}
		}
	}
	copy(e.y, t)
	// qf = Q T^{1/2}.
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: n, Cols: n, Stride: n, Data: e.m},
		blas64.General{Rows: n, Cols: n, Stride: n, Data: e.y},
		0, blas64.General{Rows: n, Cols: n, Stride: n, Data: e.qf})
	return nil
}

func (e *denseEvaluator) phi(ctx context.Context, v, dst []float64) (float64, error) {
	if err := e.sqrtT(ctx, v); err != nil {
		return 0, err
	}
	n := e.n
	for i := 0; i < n; i++ {
		a, b := e.qf[i*n:i*n+n], e.m[i*n:i*n+n]
		s := 0.0
		for k := range a {
			s += a[k] * b[k]
		}
		dst[i] = s
	}
	return 0, nil
}

func (e *denseEvaluator) root(ctx context.Context, v []float64) ([]float64, error) {
	if err := e.sqrtT(ctx, v); err != nil {
		return nil, err
	}
	n := e.n
	y := make([]float64, n*n)
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: n, Cols: n, Stride: n, Data: e.qf},
		blas64.General{Rows: n, Cols: n, Stride: n, Data: e.m},
		0, blas64.General{Rows: n, Cols: n, Stride: n, Data: y})
	return y, nil
}
