package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/internal/optim"
)

// Minimize writes into dst a minimiser of m's average loss over s, starting
// from x0, to gradient norm tol. It uses m's own [Minimizer] when m has one,
// and [LBFGS] otherwise (tol then relative to the gradient's scale at x0, see
// LBFGS). An L-BFGS failure names m's type and says what to change.
func Minimize(ctx context.Context, m Model, dst, x0 []float64, s dataset.Samples, tol float64) error {
	if m == nil {
		return &ParamError{Param: "model", Want: "a Model such as Logistic"}
	}
	checkSamples(s)
	if mm, ok := m.(Minimizer); ok {
		return mm.Minimize(ctx, dst, x0, s, tol)
	}
	buf := make([]float64, len(x0))
	err := LBFGS(ctx, dst, x0,
		func(x []float64) float64 { return AverageLoss(m, x, s) },
		func(g, x []float64) { AverageGrad(m, g, buf, x, s) },
		tol)
	var le *LBFGSError
	if errors.As(err, &le) {
		le.model = fmt.Sprintf("%T", m)
	}
	return err
}

// lbfgsMemory is the number of correction pairs L-BFGS keeps.
const lbfgsMemory = 10

// lbfgsMaxIter bounds the L-BFGS iterations.
const lbfgsMaxIter = 10000

// LBFGSError is an L-BFGS search that stopped above its tolerance: its
// message says where, and, when the model is known, which model and what to
// change.
type LBFGSError struct {
	model    string // the model's type, when Minimize knows it
	maxIter  bool   // the iteration limit, not the line search
	res      optim.Result
	tol, lim float64 // tol and the gradient norm it asked for
}

// Error says where the search stopped and, when the model is known, what
// to change.
func (e *LBFGSError) Error() string {
	var b strings.Builder
	b.WriteString("model: L-BFGS")
	if e.model != "" {
		fmt.Fprintf(&b, " on model %s", e.model)
	}
	if e.maxIter {
		fmt.Fprintf(&b, " did not reach gradient norm %.3g in %d iterations (it is at %.3g)", e.lim, e.res.Iter, e.res.GradNorm)
	} else {
		fmt.Fprintf(&b, ": line search failed at iteration %d with gradient norm %.3g > %.3g", e.res.Iter, e.res.GradNorm, e.lim)
	}
	if e.lim != e.tol {
		fmt.Fprintf(&b, " (tol %.3g times the starting gradient norm %.3g)", e.tol, e.res.Scale)
	}
	fmt.Fprintf(&b, ", above the noise floor %.3g", sqrtEps*e.res.Scale)
	if e.model != "" {
		b.WriteString("; check that Grad is the gradient of Loss; otherwise the loss is too flat" +
			" or badly scaled here: add or raise the model's L2 term (a strongly convex loss)," +
			" standardise the features, loosen the tolerance (ProblemOptions.Tol, RoundTol)," +
			" or implement model.Minimizer")
	}
	return b.String()
}

// sqrtEps is the square root of the float64 machine epsilon.
var sqrtEps = math.Sqrt(0x1p-52)

// LBFGS minimises a smooth function f with gradient grad from x0 by the
// limited-memory BFGS method (Nocedal and Wright, Numerical Optimization,
// 2nd ed., Algorithm 7.4 and 7.5: two-loop recursion with 10 pairs, initial
// scaling s.y / y.y) and a backtracking Armijo line search, which near the
// minimum, where f's rounding hides the decrease, lets the gradient decide
// (its norm, or the sign of the directional derivative, with a secant step);
// a pair with s.y <= 0 is skipped, which keeps the implicit Hessian positive
// definite. It is dpmf's one quasi-Newton implementation (internal/optim),
// which package factorize uses too.
//
// It writes into dst a point with gradient norm at most
// tol * max(1, ||grad f(x0)||), relative to the gradient's scale at the
// start. Near the minimum the gradient can have a noise floor (the rounding
// of a sum of many per-sample gradients) above that: a line search that
// fails there, with the gradient norm at most sqrt(eps) * max(1,
// ||grad f(x0)||) (eps the machine epsilon) or the decrease the quasi-Newton
// model predicts below the rounding of f (which accounts for the
// curvature), ends successfully, f being at its minimum to rounding. It
// returns an error if it stops above both, or reaches the iteration limit.
func LBFGS(ctx context.Context, dst, x0 []float64, f func(x []float64) float64, grad func(g, x []float64), tol float64) error {
	if f == nil || grad == nil {
		return &ParamError{Param: "f and grad", Want: "non-nil functions"}
	}
	if !(tol > 0) {
		return &ParamError{Param: "tol", Value: tol, Want: "> 0"}
	}
	copy(dst, x0)
	res, err := optim.LBFGS(ctx, dst[:len(x0)], f, grad, optim.Settings{
		GradTol: tol, RelGradTol: true, AcceptFloor: true,
		MaxIter: lbfgsMaxIter, Memory: lbfgsMemory, GradMerit: true,
	})
	switch {
	case errors.Is(err, optim.ErrMaxIter), errors.Is(err, optim.ErrLineSearch):
		return &LBFGSError{maxIter: errors.Is(err, optim.ErrMaxIter), res: res, tol: tol, lim: tol * res.Scale}
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("model: L-BFGS: %w", err)
	}
	return err
}
