package model

import (
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/dataset"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Logistic is binary logistic regression without intercept, the model of
// the paper's experiments, with an optional L2 term:
//
//	f(x; a, y) = log(1 + exp(-y x.a)) + (L2/2) ||x||^2,  y in {-1, +1}.
//
// With L2 > 0 every average loss is L2-strongly convex and has a unique
// minimiser, also on separable data (where it is otherwise not attained).
// Append a constant feature to the data for an intercept.
type Logistic struct {
	// L2 is the coefficient of the ridge term, >= 0.
	L2 float64
}

var (
	_ Model      = Logistic{}
	_ Minimizer  = Logistic{}
	_ Classifier = Logistic{}
)

// NumParams returns d: one weight per feature.
func (Logistic) NumParams(d int) int { return d }

// softplus returns log(1 + exp(z)) without overflow or loss of precision.
func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log1p(math.Exp(-z))
	}
	return math.Log1p(math.Exp(z))
}

// sigmoid returns 1 / (1 + exp(-z)).
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// Loss returns log(1 + exp(-y x.a)) + (L2/2) ||x||^2.
func (l Logistic) Loss(x, a []float64, y float64) float64 {
	f := softplus(-y * floats.Dot(x, a))
	if l.L2 != 0 {
		f += 0.5 * l.L2 * floats.Dot(x, x)
	}
	return f
}

// Grad writes -y sigmoid(-y x.a) a + L2 x into dst.
func (l Logistic) Grad(dst, x, a []float64, y float64) {
	c := -y * sigmoid(-y*floats.Dot(x, a))
	for k := range dst {
		dst[k] = c*a[k] + l.L2*x[k]
	}
}

// Correct reports whether sign(x.a) = y, counting x.a = 0 as +1.
func (Logistic) Correct(x, a []float64, y float64) bool {
	if floats.Dot(x, a) >= 0 {
		return y > 0
	}
	return y < 0
}

// newtonMaxIter bounds Newton's method; it converges quadratically, so
// reaching the bound means the minimum is not attained (or tol is below
// rounding).
const newtonMaxIter = 200

// Minimize runs Newton's method with a backtracking (Armijo) line search on
// the average loss over s from x0 until the gradient norm is at most tol.
// Each iteration forms the d x d Hessian (1/m) sum_j w_j a_j a_j^T + L2 I,
// w_j = sigmoid(z_j) sigmoid(-z_j), and solves by Cholesky. It returns an
// error if the iteration limit is reached, which happens when L2 = 0 and the
// samples are separable.
func (l Logistic) Minimize(ctx context.Context, dst, x0 []float64, s dataset.Samples, tol float64) error {
	checkSamples(s)
	d, m := s.Dim, s.Len()
	if len(dst) != d || len(x0) != d {
		panic(fmt.Sprintf("model: Minimize with len(dst) = %d, len(x0) = %d, dimension %d", len(dst), len(x0), d))
	}
	x := dst
	copy(x, x0)
	g := make([]float64, d)
	step := make([]float64, d)
	trial := make([]float64, d)
	wrow := make([]float64, m*d)
	h := mat.NewSymDense(d, nil)
	var chol mat.Cholesky
	inv := 1 / float64(m)
	f := l.averageLoss(x, s)
	for iter := 0; iter < newtonMaxIter; iter++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Gradient and weighted rows sqrt(w_j) a_j for the Hessian.
		for k := range g {
			g[k] = l.L2 * x[k]
		}
		for j := 0; j < m; j++ {
			a, y := s.Row(j), s.Y[j]
			z := y * floats.Dot(x, a)
			p := sigmoid(-z)
			floats.AddScaled(g, -y*p*inv, a)
			sw := math.Sqrt(p * (1 - p))
			floats.ScaleTo(wrow[j*d:(j+1)*d], sw, a)
		}
		if floats.Norm(g, 2) <= tol {
			return nil
		}
		hr := h.RawSymmetric()
		blas64.Syrk(blas.Trans, inv, blas64.General{Rows: m, Cols: d, Stride: d, Data: wrow}, 0, hr)
		for k := 0; k < d; k++ {
			hr.Data[k*hr.Stride+k] += l.L2
		}
		if ok := chol.Factorize(h); !ok {
			return fmt.Errorf("model: logistic Hessian is singular at iteration %d (L2 = %v); set L2 > 0", iter, l.L2)
		}
		sv := mat.NewVecDense(d, step)
		if err := chol.SolveVecTo(sv, mat.NewVecDense(d, g)); err != nil {
			return fmt.Errorf("model: logistic Newton step at iteration %d: %w", iter, err)
		}
		// step = H^{-1} g; move along -step. Armijo: f(x - t step) <=
		// f(x) - 1e-4 t g.step.
		slope := floats.Dot(g, step)
		if slope <= 1e-12*(1+math.Abs(f)) {
			// The predicted decrease slope/2 is below the rounding error of
			// f (a sum of m terms), so a line search would only see noise:
			// near the minimum the full Newton step converges quadratically.
			floats.AddScaled(x, -1, step)
			f = l.averageLoss(x, s)
			continue
		}
		t, ls := 1.0, 0
		for ; ls < 60; ls++ {
			floats.AddScaledTo(trial, x, -t, step)
			if ft := l.averageLoss(trial, s); ft <= f-1e-4*t*slope {
				copy(x, trial)
				f = ft
				break
			}
			t /= 2
		}
		if ls == 60 { // no step of the 60 was accepted
			return fmt.Errorf("model: logistic Newton line search failed with gradient norm %.3g > %.3g", floats.Norm(g, 2), tol)
		}
	}
	return fmt.Errorf("model: logistic Newton did not reach gradient norm %.3g in %d iterations (the minimum may not be attained: set L2 > 0)", tol, newtonMaxIter)
}

// averageLoss is AverageLoss without the interface call.
func (l Logistic) averageLoss(x []float64, s dataset.Samples) float64 {
	sum := 0.0
	for j := 0; j < s.Len(); j++ {
		sum += softplus(-s.Y[j] * floats.Dot(x, s.Row(j)))
	}
	return sum/float64(s.Len()) + 0.5*l.L2*floats.Dot(x, x)
}
