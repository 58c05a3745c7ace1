package model

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/dataset"
)

func TestSoftplusSigmoid(t *testing.T) {
	for _, c := range []struct{ z, sp, sig float64 }{
		{0, math.Ln2, 0.5},
		{1000, 1000, 1},
		{-1000, 0, 0},
		{1, 1.3132616875182228, 0.7310585786300049}, // log(1+e), e/(1+e)
		{-40, 4.248354255291589e-18, 4.248354255291589e-18},
	} {
		if got := softplus(c.z); math.Abs(got-c.sp) > 1e-15*math.Max(1, c.sp) && !(c.sp != 0 && math.Abs(got/c.sp-1) < 1e-14) {
			t.Errorf("softplus(%v) = %v, want %v", c.z, got, c.sp)
		}
		if got := sigmoid(c.z); math.Abs(got-c.sig) > 1e-15 && !(c.sig != 0 && math.Abs(got/c.sig-1) < 1e-14) {
			t.Errorf("sigmoid(%v) = %v, want %v", c.z, got, c.sig)
		}
	}
}

// The gradient agrees with central differences of the loss, and with the
// closed form at x = 0: -y a / 2.
func TestLogisticGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := Logistic{L2: 0.3}
	for range 20 {
		d := 1 + rng.IntN(6)
		x, a := make([]float64, d), make([]float64, d)
		for k := range x {
			x[k], a[k] = rng.NormFloat64(), 2*rng.NormFloat64()
		}
		y := float64(2*rng.IntN(2) - 1)
		g := make([]float64, d)
		m.Grad(g, x, a, y)
		const h = 1e-6
		for k := range x {
			xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
			xp[k] += h
			xm[k] -= h
			fd := (m.Loss(xp, a, y) - m.Loss(xm, a, y)) / (2 * h)
			if math.Abs(fd-g[k]) > 1e-7*math.Max(1, math.Abs(g[k])) {
				t.Errorf("d = %d, coordinate %d: gradient %v, central difference %v", d, k, g[k], fd)
			}
		}
	}
	g := make([]float64, 2)
	Logistic{}.Grad(g, []float64{0, 0}, []float64{3, -4}, -1)
	if g[0] != 1.5 || g[1] != -2 {
		t.Errorf("gradient at 0 = %v, want [1.5 -2]", g)
	}
	if l := (Logistic{}).Loss([]float64{0, 0}, []float64{3, -4}, 1); l != math.Ln2 {
		t.Errorf("loss at 0 = %v, want log 2", l)
	}
}

// One sample in one dimension: the minimiser of log(1 + exp(-x)) + l2 x^2/2
// solves l2 x = 1 / (1 + exp(x)); bisection gives it independently.
func TestLogisticMinimizeOneDimension(t *testing.T) {
	const l2 = 0.05
	lo, hi := 0.0, 100.0
	for range 200 {
		c := (lo + hi) / 2
		if l2*c < 1/(1+math.Exp(c)) {
			lo = c
		} else {
			hi = c
		}
	}
	s := dataset.Samples{X: []float64{1}, Y: []float64{1}, Dim: 1}
	x := []float64{0}
	if err := (Logistic{L2: l2}).Minimize(context.Background(), x, []float64{-3}, s, 1e-12); err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-lo) > 1e-10 {
		t.Errorf("minimiser %v, want %v", x[0], lo)
	}
}

// Newton's method and the L-BFGS fallback (a model without Minimize) find
// the same minimiser, with a gradient below tolerance by an independent
// gradient computation.
func TestMinimizeNewtonAgreesWithLBFGS(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.5, Beta: 0.5, Dim: 8}.Dataset(3, 20, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.All()
	const l2 = 1e-2
	xn, xl := make([]float64, 8), make([]float64, 8)
	if err := Minimize(t.Context(), Logistic{L2: l2}, xn, make([]float64, 8), s, 1e-10); err != nil {
		t.Fatal(err)
	}
	if err := Minimize(t.Context(), lossOnly{Logistic{L2: l2}}, xl, make([]float64, 8), s, 1e-9); err != nil {
		t.Fatal(err)
	}
	if d := floats.Distance(xn, xl, 2); d > 1e-7 {
		t.Errorf("Newton %v and L-BFGS %v differ by %g", xn, xl, d)
	}
	g := make([]float64, 8)
	for j := 0; j < s.Len(); j++ {
		gj := logisticGrad(xn, s.Row(j), s.Y[j], l2)
		for k := range g {
			g[k] += gj[k] / float64(s.Len())
		}
	}
	if n := floats.Norm(g, 2); n > 1e-9 {
		t.Errorf("gradient norm at Newton's minimiser %g", n)
	}
}

// Without an L2 term, separable samples have no minimiser: the gradient
// decays like exp(-|x|), so a tolerance far below rounding is an error.
func TestLogisticMinimizeSeparable(t *testing.T) {
	s := dataset.Samples{X: []float64{1, 0, 0, 1, -1, 0}, Y: []float64{1, 1, -1}, Dim: 2}
	x := make([]float64, 2)
	if err := (Logistic{}).Minimize(context.Background(), x, x, s, 1e-200); err == nil {
		t.Errorf("separable data without L2: no error, x = %v", x)
	}
}

// lossOnly hides a model's optional interfaces.
type lossOnly struct{ m Model }

func (l lossOnly) NumParams(d int) int                    { return l.m.NumParams(d) }
func (l lossOnly) Loss(x, a []float64, y float64) float64 { return l.m.Loss(x, a, y) }
func (l lossOnly) Grad(dst, x, a []float64, y float64)    { l.m.Grad(dst, x, a, y) }

// The batch evaluation agrees with the per-sample loss and accuracy.
func TestEvaluateBatch(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 7}.Dataset(3, 1000, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.All()
	rng := rand.New(rand.NewPCG(3, 3))
	xs := make([][]float64, 5)
	for k := range xs {
		xs[k] = make([]float64, 7)
		for j := range xs[k] {
			xs[k][j] = rng.NormFloat64()
		}
	}
	m := Logistic{L2: 0.1}
	loss, acc := make([]float64, 5), make([]float64, 5)
	m.EvaluateBatch(loss, acc, xs, s)
	for k, x := range xs {
		want, correct := 0.0, 0
		for j := 0; j < s.Len(); j++ {
			z := s.Y[j] * floats.Dot(x, s.Row(j))
			want += math.Log1p(math.Exp(-z)) // no overflow at these margins
			if z > 0 {
				correct++
			}
		}
		want = want/float64(s.Len()) + 0.05*floats.Dot(x, x)
		if math.Abs(loss[k]-want) > 1e-12*want {
			t.Errorf("model %d: loss %v, want %v", k, loss[k], want)
		}
		if a := float64(correct) / float64(s.Len()); acc[k] != a {
			t.Errorf("model %d: accuracy %v, want %v", k, acc[k], a)
		}
	}
}

// logisticGrad is the gradient of log(1 + exp(-y x.a)) + l2/2 ||x||^2
// written independently of the package: -y a / (1 + exp(y x.a)) + l2 x.
func logisticGrad(x, a []float64, y, l2 float64) []float64 {
	m := 0.0
	for k := range x {
		m += x[k] * a[k]
	}
	c := -y / (1 + math.Exp(y*m))
	g := make([]float64, len(x))
	for k := range g {
		g[k] = c*a[k] + l2*x[k]
	}
	return g
}

// TestLogisticExtremeInputs: at margins where exp over- or underflows the
// gradient is the closed-form limit, never NaN: -y sigmoid(-y x.a) a + L2 x
// with sigmoid(-inf) = 0 and sigmoid(+inf) = 1 when x.a overflows to
// +-Inf, -y a at y x.a = -1000, and -y sigmoid(-40) a with sigmoid(-40) =
// e^-40 / (1 + e^-40) = 4.248354255291589e-18 (to double precision); the
// loss is +Inf where its true value (1e400) overflows, 0 where it underflows.
func TestLogisticExtremeInputs(t *testing.T) {
	s40 := 4.248354255291589e-18
	for _, c := range []struct {
		l2         float64
		x, a       []float64
		y          float64
		grad       []float64
		loss       float64
		lossApprox bool
	}{
		{0.5, []float64{1e200}, []float64{1e200}, 1, []float64{5e199}, math.Inf(1), false},
		{0.5, []float64{1e200}, []float64{1e200}, -1, []float64{1e200 + 5e199}, math.Inf(1), false},
		{0, []float64{1}, []float64{-1000}, 1, []float64{1000}, 1000, false},
		{0, []float64{1}, []float64{1000}, -1, []float64{1000}, 1000, false},
		{0, []float64{1, 0}, []float64{40, 3}, 1, []float64{-40 * s40, -3 * s40}, s40, true},
		{0, []float64{-1e300, 1e300}, []float64{1e300, -1e300}, -1, []float64{0, 0}, 0, false},
	} {
		g := make([]float64, len(c.x))
		m := Logistic{L2: c.l2}
		m.Grad(g, c.x, c.a, c.y)
		for k := range g {
			if !(math.Abs(g[k]-c.grad[k]) <= 1e-15*math.Abs(c.grad[k])) {
				t.Errorf("Grad(x %v, a %v, y %v) = %v, want %v", c.x, c.a, c.y, g, c.grad)
				break
			}
		}
		if l := m.Loss(c.x, c.a, c.y); !(l == c.loss || c.lossApprox && math.Abs(l-c.loss) <= 1e-15*c.loss) {
			t.Errorf("Loss(x %v, a %v, y %v) = %v, want %v", c.x, c.a, c.y, l, c.loss)
		}
	}
}
