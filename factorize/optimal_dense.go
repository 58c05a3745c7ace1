package factorize

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// denseEvaluator evaluates phi(v) = diag((D S D)^{1/2}) with a dense
// symmetric eigendecomposition, for any workload.
type denseEvaluator struct {
	s   *mat.SymDense // S = A^T A
	m   *mat.SymDense // D S D
	eig mat.EigenSym
	vec mat.Dense
}

func newDenseEvaluator(w *Workload) *denseEvaluator {
	n := w.R()
	s := mat.NewSymDense(n, nil)
	s.SymOuterK(1, w.Matrix().T())
	return &denseEvaluator{s: s, m: mat.NewSymDense(n, nil)}
}

func (e *denseEvaluator) decompose(v []float64) ([]float64, *mat.Dense, error) {
	n := len(v)
	sq := make([]float64, n)
	for i := range sq {
		sq[i] = math.Sqrt(v[i])
	}
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			e.m.SetSym(i, j, sq[i]*e.s.At(i, j)*sq[j])
		}
	}
	if ok := e.eig.Factorize(e.m, true); !ok {
		return nil, nil, fmt.Errorf("factorize: symmetric eigendecomposition failed (R = %d)", n)
	}
	vals := e.eig.Values(nil)
	e.eig.VectorsTo(&e.vec)
	for k, l := range vals {
		vals[k] = math.Sqrt(math.Max(l, 0))
	}
	return vals, &e.vec, nil
}

func (e *denseEvaluator) phi(ctx context.Context, v, dst []float64) (float64, error) {
	vals, q, err := e.decompose(v)
	if err != nil {
		return 0, err
	}
	n := len(v)
	for i := 0; i < n; i++ {
		row := q.RawRowView(i)
		s := 0.0
		for k, x := range row {
			s += vals[k] * x * x
		}
		dst[i] = s
	}
	return 0, nil
}

func (e *denseEvaluator) root(ctx context.Context, v []float64) ([]float64, error) {
	vals, q, err := e.decompose(v)
	if err != nil {
		return nil, err
	}
	n := len(v)
	// Y = Q diag(sqrt(lambda)) Q^T.
	scaled := mat.DenseCopyOf(q)
	for k := 0; k < n; k++ {
		col := vals[k]
		for i := 0; i < n; i++ {
			scaled.Set(i, k, scaled.At(i, k)*col)
		}
	}
	y := mat.NewDense(n, n, nil)
	y.Mul(scaled, q.T())
	return y.RawMatrix().Data, nil
}
