package model

import (
	"context"
	"math"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// leastSquares is f(x; a, y) = (x.a - y)^2 / 2, a model without Minimize.
type leastSquares struct{}

func (leastSquares) NumParams(d int) int { return d }
func (leastSquares) Loss(x, a []float64, y float64) float64 {
	r := floats.Dot(x, a) - y
	return r * r / 2
}
func (leastSquares) Grad(dst, x, a []float64, y float64) {
	floats.ScaleTo(dst, floats.Dot(x, a)-y, a)
}

// L-BFGS on least squares agrees with the solution of the normal equations
// (A^T A) x = A^T y by a QR solve, to gradient norm 1e-12.
func TestLBFGSLeastSquares(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 5}.Dataset(2, 40, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.All()
	x := make([]float64, 5)
	if err := Minimize(context.Background(), leastSquares{}, x, make([]float64, 5), s, 1e-12); err != nil {
		t.Fatal(err)
	}
	var want mat.VecDense
	if err := want.SolveVec(mat.NewDense(s.Len(), 5, s.X), mat.NewVecDense(s.Len(), s.Y)); err != nil {
		t.Fatal(err)
	}
	for k := range x {
		if math.Abs(x[k]-want.AtVec(k)) > 1e-9 {
			t.Errorf("L-BFGS %v, least squares %v", x, want.RawVector().Data)
			break
		}
	}
}

// A quadratic with condition number 1000: L-BFGS reaches gradient norm
// 1e-12 at the known minimiser 1/c.
func TestLBFGSQuadratic(t *testing.T) {
	c := []float64{1, 10, 100, 0.1, 3}
	f := func(x []float64) float64 {
		s := 0.0
		for k := range x {
			s += c[k]*x[k]*x[k]/2 - x[k]
		}
		return s
	}
	g := func(g, x []float64) {
		for k := range x {
			g[k] = c[k]*x[k] - 1
		}
	}
	x := make([]float64, 5)
	if err := LBFGS(context.Background(), x, make([]float64, 5), f, g, 1e-12); err != nil {
		t.Fatal(err)
	}
	for k := range x {
		if math.Abs(x[k]-1/c[k]) > 1e-11 {
			t.Errorf("x = %v, want 1/c", x)
			break
		}
	}
}
