package optim

import (
	"context"
	"errors"
	"math"
	"testing"
)

func rosenbrock(x []float64) float64 {
	return 100*math.Pow(x[1]-x[0]*x[0], 2) + math.Pow(1-x[0], 2)
}

func rosenbrockGrad(g, x []float64) {
	g[0] = -400*x[0]*(x[1]-x[0]*x[0]) - 2*(1-x[0])
	g[1] = 200 * (x[1] - x[0]*x[0])
}

// The minimum of Rosenbrock's function is at (1, 1), found from the
// classical start (-1.2, 1) with the gradient rule and with the stall rule
// on finite-difference-free gradients.
func TestLBFGSRosenbrock(t *testing.T) {
	for _, s := range []Settings{
		{GradTol: 1e-10, MaxIter: 1000, GradMerit: true},
		{StallTol: 1e-15, StallIters: 5, MaxIter: 1000},
	} {
		x := []float64{-1.2, 1}
		res, err := LBFGS(context.Background(), x, rosenbrock, rosenbrockGrad, s)
		if err != nil && !errors.Is(err, ErrLineSearch) {
			t.Fatalf("%+v: %v", s, err)
		}
		if math.Abs(x[0]-1) > 1e-6 || math.Abs(x[1]-1) > 1e-6 {
			t.Errorf("%+v: minimiser %v after %d iterations, want (1, 1)", s, x, res.Iter)
		}
	}
}

// A function that is +Inf outside its domain is minimised inside it: the
// line search rejects infinite values. f(x) = x - log(x) has its minimum
// at x = 1.
func TestLBFGSDomain(t *testing.T) {
	f := func(x []float64) float64 {
		if x[0] <= 0 {
			return math.Inf(1)
		}
		return x[0] - math.Log(x[0])
	}
	g := func(g, x []float64) { g[0] = 1 - 1/x[0] }
	x := []float64{0.01}
	if _, err := LBFGS(context.Background(), x, f, g, Settings{GradTol: 1e-12, MaxIter: 200, GradMerit: true}); err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-1) > 1e-10 {
		t.Errorf("minimiser %v, want 1", x[0])
	}
}

// The limits and the context end the search with the documented errors.
func TestLBFGSLimits(t *testing.T) {
	x := []float64{-1.2, 1}
	_, err := LBFGS(context.Background(), x, rosenbrock, rosenbrockGrad, Settings{GradTol: 1e-10, MaxIter: 3})
	if !errors.Is(err, ErrMaxIter) {
		t.Errorf("3 iterations: %v, want ErrMaxIter", err)
	}
	if rosenbrock(x) >= rosenbrock([]float64{-1.2, 1}) {
		t.Errorf("x = %v is not better than the start", x)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LBFGS(ctx, []float64{-1.2, 1}, rosenbrock, rosenbrockGrad, Settings{GradTol: 1e-10, MaxIter: 10}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := LBFGS(context.Background(), []float64{0}, rosenbrock, rosenbrockGrad, Settings{}); err == nil {
		t.Error("no stopping rule accepted")
	}
}

// quadratic is f(x) = sum_k c_k x_k^2 / 2 - x_k, minimised at x_k = 1/c_k,
// with its gradient plus noise of size noise per coordinate (a deterministic
// function of x, like the rounding of a sum of many per-sample gradients).
func quadratic(c []float64, noise float64) (func([]float64) float64, func(g, x []float64)) {
	f := func(x []float64) float64 {
		s := 0.0
		for k := range x {
			s += c[k]*x[k]*x[k]/2 - x[k]
		}
		return s
	}
	g := func(g, x []float64) {
		for k := range x {
			g[k] = c[k]*x[k] - 1 + noise*hashNoise(x[k])
		}
	}
	return f, g
}

// RelGradTol scales the tolerance by max(1, ||grad f(x0)||): from a start
// with gradient norm about 100, GradTol 1e-12 stops at or below 1e-10, and
// the minimiser is 1/c to within that over the smallest curvature.
func TestLBFGSRelGradTol(t *testing.T) {
	c := []float64{1, 10, 100, 0.1, 3}
	f, g := quadratic(c, 0)
	x := []float64{1, 1, 1, 1, 1}
	g0 := make([]float64, 5)
	g(g0, x)
	scale := math.Max(1, math.Sqrt(dot(g0, g0)))
	res, err := LBFGS(context.Background(), x, f, g, Settings{GradTol: 1e-12, RelGradTol: true, MaxIter: 1000, GradMerit: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scale != scale || scale < 50 {
		t.Errorf("scale %v, want ||g0|| = %v", res.Scale, scale)
	}
	if res.GradNorm > 1e-12*scale || res.Floor {
		t.Errorf("gradient norm %v > %v (floor %v)", res.GradNorm, 1e-12*scale, res.Floor)
	}
	for k := range x {
		if math.Abs(x[k]-1/c[k]) > 1e-12*scale/0.1 {
			t.Errorf("x = %v, want 1/c", x)
			break
		}
	}
}

// A gradient with a noise floor of 1e-11 cannot reach 1e-14: without
// AcceptFloor the search fails; with it, it ends at the floor with
// Result.Floor set, f equal to the true minimum to rounding, and x within
// the noise over the smallest curvature of 1/c.
func TestLBFGSAcceptFloor(t *testing.T) {
	c := []float64{1, 10, 100, 0.1, 3}
	f, g := quadratic(c, 1e-11)
	fmin := 0.0
	for _, ck := range c {
		fmin -= 1 / (2 * ck)
	}
	s := Settings{GradTol: 1e-14, MaxIter: 3000, GradMerit: true}
	x := make([]float64, 5)
	if _, err := LBFGS(context.Background(), x, f, g, s); err == nil {
		t.Fatal("gradient norm 1e-14 reached under noise 1e-11")
	}
	s.AcceptFloor = true
	x = make([]float64, 5)
	res, err := LBFGS(context.Background(), x, f, g, s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Floor || res.Iter >= s.MaxIter {
		t.Errorf("floor %v after %d iterations, want an early stop at the floor", res.Floor, res.Iter)
	}
	if d := res.F - fmin; math.Abs(d) > 1e-14*math.Abs(fmin) {
		t.Errorf("f = %v, true minimum %v (difference %.3g)", res.F, fmin, d)
	}
	for k := range x {
		if math.Abs(x[k]-1/c[k]) > 1e-9 {
			t.Errorf("x = %v, want 1/c to 1e-9", x)
			break
		}
	}
}

// hashNoise is a pseudo-random number in [-1, 1) determined by the bits of
// v: a different value for every representable v, like rounding error.
func hashNoise(v float64) float64 {
	h := math.Float64bits(v) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return float64(h>>11)/(1<<52) - 1
}

func dot(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}
