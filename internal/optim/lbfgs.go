// Package optim holds the one quasi-Newton method dpmf's packages share:
// the limited-memory BFGS recursion ([Memory]) and a driver with a
// backtracking line search ([LBFGS]), used by package model for its models
// (analytic gradients, stopping on the gradient norm) and by factorize to
// fit banded and BLT coefficients (finite-difference gradients, stopping
// when the objective stops decreasing); factorize's certified banded solver
// drives the same recursion with its own line search.
package optim

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// Settings configure [LBFGS]. At least one of GradTol and StallTol must be
// positive.
type Settings struct {
	// GradTol stops the search successfully when the gradient norm is at
	// most GradTol (0: not used).
	GradTol float64
	// StallTol stops the search successfully when the relative decrease
	// of f is at most StallTol for StallIters iterations in a row (0: not
	// used).
	StallTol   float64
	StallIters int
	// MaxIter bounds the iterations; reaching it is ErrMaxIter.
	MaxIter int
	// Memory is the number of correction pairs kept (10 if 0).
	Memory int
	// GradMerit lets the line search, once the predicted decrease is below
	// the rounding of f, accept a step that lowers the gradient norm or
	// along which the directional derivative is still not positive
	// instead (for an accurate gradient; not for finite differences).
	GradMerit bool
	// RelGradTol makes GradTol relative to the gradient's scale at the
	// start: the search stops when the gradient norm is at most
	// GradTol * max(1, ||grad f(x0)||).
	RelGradTol bool
	// AcceptFloor ends a search whose line search fails at the noise
	// floor, or that makes no progress there for 50 iterations in the
	// rounding regime of GradMerit, successfully, with Result.Floor set:
	// where the gradient norm
	// is at most sqrt(eps) * max(1, ||grad f(x0)||) (eps the machine
	// epsilon), or where the decrease the quasi-Newton model predicts,
	// -g.d (about 2 (f(x) - min f) on a quadratic, so it carries the
	// curvature), is below FloorRelF * (1 + |f(x)|), the rounding of f.
	AcceptFloor bool
}

// FloorRelF is the relative rounding level of f below which a predicted
// decrease counts as the noise floor (see Settings.AcceptFloor): a few
// hundred units in the last place, for an f that averages many terms.
const FloorRelF = 256 * epsMachine

// floorPatience is the number of iterations in the rounding regime without
// a new low of the gradient norm after which a search at the noise floor
// stops (Settings.AcceptFloor).
const floorPatience = 50

// epsMachine is the float64 machine epsilon, 2^-52.
const epsMachine = 0x1p-52

// ErrLineSearch is returned when no step along the search direction
// decreases the merit function, and ErrMaxIter when Settings.MaxIter is
// reached first. In both cases x holds the best point found.
var (
	ErrLineSearch = errors.New("line search failed")
	ErrMaxIter    = errors.New("iteration limit reached")
)

// Result describes the end of a search.
type Result struct {
	// F is f at the returned point, GradNorm its gradient norm.
	F, GradNorm float64
	// Iter is the number of iterations done.
	Iter int
	// Scale is max(1, ||grad f(x0)||), the scale of the relative
	// tolerances.
	Scale float64
	// Floor reports a search ended by Settings.AcceptFloor: the line
	// search failed with the gradient at its noise floor.
	Floor bool
}

// LBFGS minimises the smooth function f with gradient grad from the point
// in x, which it overwrites with the best point found, by the
// limited-memory BFGS method (Nocedal and Wright, Numerical Optimization,
// 2nd ed., Algorithms 7.4 and 7.5: the two-loop recursion of [Memory],
// initial scaling s.y / y.y) with a backtracking Armijo line search (sufficient decrease
// 1e-4, halving, at most 60 halvings). A pair with s.y <= 1e-300 is skipped,
// which keeps the implicit inverse Hessian positive definite; a direction
// that is not a descent direction restarts from steepest descent. The
// first step has length at most 1. f may return +Inf outside its domain:
// such steps are rejected by the line search.
//
// It returns ctx's error if ctx is done (checked every iteration), and
// wraps ErrLineSearch or ErrMaxIter when it stops before a stopping rule of
// s holds.
func LBFGS(ctx context.Context, x []float64, f func(x []float64) float64, grad func(g, x []float64), s Settings) (Result, error) {
	if !(s.GradTol > 0) && !(s.StallTol > 0) {
		return Result{}, errors.New("optim: no stopping rule (GradTol and StallTol are 0)")
	}
	mem := s.Memory
	if mem <= 0 {
		mem = 10
	}
	n := len(x)
	g := make([]float64, n)
	d := make([]float64, n)
	xt := make([]float64, n)
	gt := make([]float64, n)
	pairs := NewMemory(mem)
	alpha := make([]float64, mem)
	fx := f(x)
	if math.IsNaN(fx) || math.IsInf(fx, 0) {
		return Result{F: fx}, fmt.Errorf("optim: the objective is %v at the starting point", fx)
	}
	grad(g, x)
	scale := math.Max(1, floats.Norm(g, 2))
	if math.IsNaN(scale) || math.IsInf(scale, 0) {
		scale = 1 // the first iteration reports the non-finite gradient
	}
	gtol := s.GradTol
	if s.RelGradTol {
		gtol *= scale
	}
	stalls := 0
	// With AcceptFloor: iterations in the rounding regime (see below)
	// since the gradient norm last reached a new low.
	best, noProgress := math.Inf(1), 0
	res := func(iter int) Result {
		return Result{F: fx, GradNorm: floats.Norm(g, 2), Iter: iter, Scale: scale}
	}
	for iter := 0; iter < s.MaxIter; iter++ {
		if err := ctx.Err(); err != nil {
			return res(iter), err
		}
		gn := floats.Norm(g, 2)
		if gn <= gtol || (s.StallTol > 0 && stalls >= max(s.StallIters, 1)) {
			return res(iter), nil
		}
		// Two-loop recursion: d = -H g.
		pairs.Direction(g, d, alpha, func(d []float64) {
			if k := pairs.Len() - 1; k >= 0 {
				floats.Scale(floats.Dot(pairs.S[k], pairs.Y[k])/floats.Dot(pairs.Y[k], pairs.Y[k]), d)
			} else {
				floats.Scale(1/math.Max(gn, 1), d) // first step: length at most 1
			}
		})
		floats.Scale(-1, d)
		slope := floats.Dot(g, d)
		if !(slope < 0) { // not a descent direction: restart from -g
			pairs.Reset()
			floats.ScaleTo(d, -1/math.Max(gn, 1), g)
			slope = floats.Dot(g, d)
			if !(slope < 0) {
				return res(iter), fmt.Errorf("optim: %w: zero or non-finite gradient", ErrLineSearch)
			}
		}
		// Backtrack on f; with GradMerit, once the predicted decrease is
		// below the rounding error of f, f cannot tell better from worse.
		// The gradient, which is accurate there, decides instead: a step
		// is accepted if it lowers the gradient norm, or if the
		// directional derivative g(x + t d).d is still <= 0 (then f
		// decreased along the segment wherever f is convex on it, as it
		// is near a minimum) and f has not risen above its rounding. When
		// the full step overshoots (g(x + d).d > 0), the next trial is the
		// secant step on the directional derivative, the exact line
		// minimum of a quadratic.
		fround := 1e-12 * (1 + math.Abs(fx))
		byGrad := s.GradMerit && -slope <= fround
		t := 1.0
		ok := false
		var ft float64
		for ls := 0; ls < 60; ls++ {
			floats.AddScaledTo(xt, x, t, d)
			ft = f(xt)
			if byGrad {
				grad(gt, xt)
				dphi := floats.Dot(gt, d)
				ok = floats.Norm(gt, 2) < gn || (dphi <= 0 && ft <= fx+fround)
				if !ok && ls == 0 && dphi > 0 {
					// 0 < secant < 1 since slope < 0 < dphi.
					if ts := slope / (slope - dphi); ts > 1e-3 {
						t = ts
						continue
					}
				}
			} else {
				ok = ft <= fx+1e-4*t*slope
			}
			if ok {
				break
			}
			t /= 2
		}
		atFloor := s.AcceptFloor && (gn <= math.Sqrt(epsMachine)*scale || -slope <= FloorRelF*(1+math.Abs(fx)))
		if gn < best {
			best, noProgress = gn, 0
		} else if byGrad {
			noProgress++
		}
		// A gradient at its noise floor can keep passing the derivative
		// test without getting smaller: stop after floorPatience such
		// steps instead of wandering to MaxIter.
		if atFloor && (!ok || noProgress >= floorPatience) {
			r := res(iter)
			r.Floor = true
			return r, nil
		}
		if !ok {
			return res(iter), fmt.Errorf("optim: %w at iteration %d with gradient norm %.3g", ErrLineSearch, iter, gn)
		}
		if !byGrad {
			grad(gt, xt)
		}
		sv, yv := pairs.Spare(n), pairs.Spare(n)
		floats.SubTo(sv, xt, x)
		floats.SubTo(yv, gt, g)
		pairs.Push(sv, yv)
		if fx-ft <= s.StallTol*math.Abs(fx) {
			stalls++
		} else {
			stalls = 0
		}
		copy(x, xt)
		copy(g, gt)
		fx = ft
	}
	return res(s.MaxIter), fmt.Errorf("optim: %w (%d iterations)", ErrMaxIter, s.MaxIter)
}
