package experiment

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	dpmodel "github.com/dpmf/dpmf/model"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ridge is a model of a user's own, without Minimize: ridge regression,
// f(x; a, y) = (x.a - y)^2 / 2 + L2 ||x||^2 / 2. Its average loss over
// samples A, y is minimised by the closed form (A^T A / m + L2 I)^{-1}
// A^T y / m.
type ridge struct{ L2 float64 }

func (ridge) NumParams(d int) int { return d }

func (m ridge) Loss(x, a []float64, y float64) float64 {
	r := floats.Dot(x, a) - y
	return r*r/2 + m.L2/2*floats.Dot(x, x)
}

func (m ridge) Grad(dst, x, a []float64, y float64) {
	floats.ScaleTo(dst, floats.Dot(x, a)-y, a)
	floats.AddScaled(dst, m.L2, x)
}

// ridgeClosedForm solves the normal equations of ridge regression by
// Cholesky, and returns the solution and the smallest and largest
// eigenvalues of the Hessian A^T A / m + L2 I.
func ridgeClosedForm(t *testing.T, l2 float64, s dataset.Samples) (x []float64, lmin, lmax float64) {
	t.Helper()
	m, d := s.Len(), s.Dim
	A := mat.NewDense(m, d, s.X)
	var h mat.SymDense
	h.SymOuterK(1/float64(m), A.T())
	for k := 0; k < d; k++ {
		h.SetSym(k, k, h.At(k, k)+l2)
	}
	var rhs mat.VecDense
	rhs.MulVec(A.T(), mat.NewVecDense(m, s.Y))
	rhs.ScaleVec(1/float64(m), &rhs)
	var ch mat.Cholesky
	if !ch.Factorize(&h) {
		t.Fatal("ridge Hessian not positive definite")
	}
	var sol mat.VecDense
	if err := ch.SolveVecTo(&sol, &rhs); err != nil {
		t.Fatal(err)
	}
	var eig mat.EigenSym
	if !eig.Factorize(&h, false) {
		t.Fatal("eigenvalues")
	}
	ev := eig.Values(nil)
	return sol.RawVector().Data, floats.Min(ev), floats.Max(ev)
}

// conditioned returns m samples of dimension d whose ridge Hessian
// A^T A / m + L2 I has condition number kappa exactly: A = Q diag(sqrt(m
// (h_k - L2))) with Q orthonormal columns, h_k geometric from 1/kappa to 1,
// L2 = 1/(2 kappa); y = A w + noise.
func conditioned(kappa float64, m, d int, seed uint64) (dataset.Samples, float64) {
	rng := rand.New(rand.NewPCG(seed, 2))
	g := mat.NewDense(m, d, nil)
	for i := 0; i < m; i++ {
		for k := 0; k < d; k++ {
			g.Set(i, k, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	l2 := 1 / (2 * kappa)
	s := dataset.Samples{X: make([]float64, m*d), Y: make([]float64, m), Dim: d}
	for k := 0; k < d; k++ {
		h := math.Pow(kappa, -float64(k)/float64(d-1)) // 1 down to 1/kappa
		col := math.Sqrt(float64(m) * (h - l2))
		for i := 0; i < m; i++ {
			s.X[i*d+k] = q.At(i, k) * col
		}
	}
	for i := 0; i < m; i++ {
		y := 0.1 * rng.NormFloat64()
		for k := 0; k < d; k++ {
			y += s.X[i*d+k] * float64(k+1) / float64(d)
		}
		s.Y[i] = y
	}
	return s, l2
}

// L-BFGS on ridge regression with condition numbers 1, 200 and 1e4 agrees
// with the closed-form solution: from 0 to tol 1e-12 relative to the
// starting gradient, within the bound ||g|| / lambda_min, and with F equal
// to rounding; and from the closed form plus a perturbation of size 1e-6
// (like a round's minimisation started from x*) to the absolute tolerance
// 1e-9 of DefaultRoundTol.
func TestMinimizeRidgeConditioned(t *testing.T) {
	ctx := context.Background()
	for _, kappa := range []float64{1, 200, 1e4} {
		s, l2 := conditioned(kappa, 300, 8, 7)
		model := ridge{L2: l2}
		want, lmin, lmax := ridgeClosedForm(t, l2, s)
		if c := lmax / lmin; math.Abs(c-kappa) > 1e-6*kappa {
			t.Fatalf("condition number %v, want %v", c, kappa)
		}
		fwant := dpmodel.AverageLoss(model, want, s)
		d := s.Dim
		g := make([]float64, d)
		buf := make([]float64, d)
		dpmodel.AverageGrad(model, g, buf, make([]float64, d), s)
		scale := math.Max(1, floats.Norm(g, 2))
		x := make([]float64, d)
		if err := dpmodel.Minimize(ctx, model, x, make([]float64, d), s, 1e-12); err != nil {
			t.Fatalf("kappa %v: %v", kappa, err)
		}
		dpmodel.AverageGrad(model, g, buf, x, s)
		gn := floats.Norm(g, 2)
		if gn > 1e-12*scale {
			t.Errorf("kappa %v: gradient norm %.3g > 1e-12 * %.3g", kappa, gn, scale)
		}
		if e := floats.Distance(x, want, 2); e > 1.01*gn/lmin+1e-13*floats.Norm(want, 2) {
			t.Errorf("kappa %v: ||x - closed form|| = %.3g > ||g|| / lambda_min = %.3g", kappa, e, gn/lmin)
		}
		if f := dpmodel.AverageLoss(model, x, s); math.Abs(f-fwant) > 1e-14*math.Abs(fwant) {
			t.Errorf("kappa %v: F = %.17g, closed form %.17g", kappa, f, fwant)
		}

		x0 := make([]float64, d)
		for k := range x0 {
			x0[k] = want[k] + 1e-6*float64(k%3-1)
		}
		if err := dpmodel.Minimize(ctx, model, x, x0, s, DefaultRoundTol); err != nil {
			t.Fatalf("kappa %v, from near the minimum: %v", kappa, err)
		}
		if e := floats.Distance(x, want, 2); e > DefaultRoundTol/lmin*1.01+1e-13*floats.Norm(want, 2) {
			t.Errorf("kappa %v, from near the minimum: ||x - closed form|| = %.3g", kappa, e)
		}
	}
}

// The case: a ridge model on the synthetic data with a Hessian of
// condition number 200 over all data (and larger per round). NewProblem
// succeeds with the dynamic regret (each round minimised from x* to
// absolute 1e-9), x* and every round's minimum agree with the closed form,
// and a run reports a finite dynamic regret.
func TestNewProblemRidge(t *testing.T) {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 20}.Dataset(5, 30, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	// L2 such that (lmax + L2) / (lmin + L2) = 200 over all data.
	_, lmin, lmax := ridgeClosedForm(t, 0, data.All())
	l2 := (lmax - 200*lmin) / 199
	if !(l2 > 0) {
		t.Fatalf("data condition number %v is below 200", lmax/lmin)
	}
	model := ridge{L2: l2}
	xs, lmin, lmax := ridgeClosedForm(t, l2, data.All())
	if c := lmax / lmin; math.Abs(c-200) > 1e-6 {
		t.Fatalf("condition number %v, want 200", c)
	}
	p, err := NewProblem(ctx, data, model, ProblemOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := floats.Distance(p.XStar, xs, 2); e > 1e-8 {
		t.Errorf("||x* - closed form|| = %.3g", e)
	}
	if f := dpmodel.AverageLoss(model, xs, data.All()); math.Abs(p.FStar-f) > 1e-13*f {
		t.Errorf("F(x*) = %.17g, closed form %.17g", p.FStar, f)
	}
	for r := range data.Rounds {
		s := data.Round(r)
		xr, _, _ := ridgeClosedForm(t, l2, s)
		if f := dpmodel.AverageLoss(model, xr, s); math.Abs(p.RoundStar[r]-f) > 1e-12*f {
			t.Errorf("round %d: (f^r)* = %.17g, closed form %.17g", r, p.RoundStar[r], f)
		}
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.01, EtaG: 1, Clip: 5, EvalEvery: 10}
	tr, err := Run(ctx, p, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Regret[len(tr.Regret)-1]
	if math.IsNaN(last) || math.IsInf(last, 0) || last < 0 {
		t.Errorf("dynamic regret %v, want finite and >= 0", last)
	}
}

// lbfgsLogistic is the logistic loss without its Newton minimiser, so that
// Minimize uses L-BFGS.
type lbfgsLogistic struct{ l dpmodel.Logistic }

func (m lbfgsLogistic) NumParams(d int) int                    { return m.l.NumParams(d) }
func (m lbfgsLogistic) Loss(x, a []float64, y float64) float64 { return m.l.Loss(x, a, y) }
func (m lbfgsLogistic) Grad(dst, x, a []float64, y float64)    { m.l.Grad(dst, x, a, y) }

// L-BFGS on the logistic loss agrees with Newton's method
// (Logistic.Minimize: exact Hessian, Cholesky), over all data and for a
// round started from x*.
func TestLBFGSLogisticNewton(t *testing.T) {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 20}.Dataset(5, 20, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	l := dpmodel.Logistic{L2: 1e-3}
	d := 20
	for _, c := range []struct {
		s  dataset.Samples
		x0 []float64
	}{{data.All(), make([]float64, d)}, {data.Round(4), nil}} {
		newton := make([]float64, d)
		x0 := c.x0
		if x0 == nil {
			x0 = make([]float64, d)
			if err := l.Minimize(ctx, x0, make([]float64, d), data.All(), 1e-12); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Minimize(ctx, newton, x0, c.s, 1e-13); err != nil {
			t.Fatal(err)
		}
		x := make([]float64, d)
		if err := dpmodel.Minimize(ctx, lbfgsLogistic{l}, x, x0, c.s, 1e-12); err != nil {
			t.Fatal(err)
		}
		// The smallest curvature is at least L2: ||x - x*|| <= ||g|| / L2.
		if e := floats.Distance(x, newton, 2); e > 1e-12*10/l.L2 {
			t.Errorf("||L-BFGS - Newton|| = %.3g", e)
		}
		fn, fl := dpmodel.AverageLoss(l, newton, c.s), dpmodel.AverageLoss(l, x, c.s)
		if math.Abs(fn-fl) > 1e-14*fn {
			t.Errorf("F: L-BFGS %.17g, Newton %.17g", fl, fn)
		}
	}
}

// wrongGrad's gradient has the wrong sign: no step along -grad decreases
// its loss, so L-BFGS fails at once, and the error names the model and
// says what to change.
type wrongGrad struct{ ridge }

func (m wrongGrad) Grad(dst, x, a []float64, y float64) {
	m.ridge.Grad(dst, x, a, y)
	floats.Scale(-1, dst)
}

func TestLBFGSErrorNamesModel(t *testing.T) {
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 5}.Dataset(2, 5, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewProblem(context.Background(), data, wrongGrad{ridge{L2: 1e-3}}, ProblemOptions{})
	if err == nil {
		t.Fatal("a wrong gradient was minimised")
	}
	for _, want := range []string{"over all of", "model experiment.wrongGrad", "line search failed", "L2", "standardise the features", "Minimizer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "NoDynamic") {
		t.Errorf("error %q advises NoDynamic for x*", err)
	}
	// For a round's minimisation the advice adds NoDynamic.
	if h := noDynamicHint(&dpmodel.LBFGSError{}); !strings.Contains(h, "ProblemOptions.NoDynamic") {
		t.Errorf("round hint %q", h)
	}
}
