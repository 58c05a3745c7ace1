package accountant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refMills returns Q(x) = Phi(-x)/phi(x) in big arithmetic.
func refMills(x float64) float64 {
	prec := uint(256 + 1.5*x*x)
	pi := bigPi(prec)
	bx := newBig(prec).SetFloat64(x)
	p := bigPhiNeg(bx, prec, pi)
	x2 := newBig(prec).Mul(bx, bx)
	x2.Quo(x2, newBig(prec).SetInt64(2))
	// Q = Phi(-x) sqrt(2 pi) exp(x^2/2)
	p.Mul(p, bigExp(x2, prec))
	p.Mul(p, newBig(prec).Sqrt(newBig(prec).Mul(pi, newBig(prec).SetInt64(2))))
	f, _ := p.Float64()
	return f
}

func TestMillsAgainstBig(t *testing.T) {
	xs := []float64{0, 1e-8, 0.1, 0.5, 1, 1.5, 1.999, 2, 2.001, 2.5, 3, 4, 5.5, 7, 10, 14, 20, 27, 37, 50, 100, 1e3, 1e5, 1e8}
	worst := 0.0
	for _, x := range xs {
		var want float64
		if x <= 50 {
			want = refMills(x)
		} else {
			// Asymptotic series Q(x) = (1 - 1/x^2 + 3/x^4 - ... + 10395/x^12)/x,
			// whose truncation error is below 135135/x^14 < 1e-23 here.
			z := 1 / (x * x)
			want = (1 - z*(1-z*(3-z*(15-z*(105-z*(945-z*10395)))))) / x
		}
		got := mills(x)
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		// A few ulps: the erfc branch is within 8 ulps (x^2 <= 4 amplifies
		// erfc's 1-ulp error), the continued fraction within 4.
		if rel > 2e-15 {
			t.Errorf("mills(%v) = %.17g, want %.17g (rel err %.2g)", x, got, want, rel)
		}
	}
	t.Logf("worst relative error of mills: %.2g", worst)
	if got := mills(math.Inf(1)); got != 0 {
		t.Errorf("mills(+Inf) = %v, want 0", got)
	}
}

func TestGaussLegendre(t *testing.T) {
	// The 16-point rule integrates x^k exactly for k <= 31:
	// integral_{-1}^{1} x^k dx = 2/(k+1) for even k, 0 for odd k.
	for k := range 32 {
		got := 0.0
		for i, x := range glNodes {
			got += glWeights[i] * math.Pow(x, float64(k))
		}
		want := 0.0
		if k%2 == 0 {
			want = 2 / float64(k+1)
		}
		if math.Abs(got-want) > 1e-15 {
			t.Errorf("k = %d: got %.17g, want %.17g", k, got, want)
		}
	}
}

// gdpGrid spans the regimes of logDeltaGDP: both branches, a < 0 and a > 0,
// delta from about 1 down to far below 1e-300.
var gdpGrid = struct{ eps, mu []float64 }{
	eps: []float64{1e-9, 1e-6, 1e-3, 0.05, 0.5, 1, 2, 5, 20, 60, 100},
	mu:  []float64{1e-9, 1e-6, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.7, 1, 1.5, 3, 7, 15, 40},
}

// gdpPoint is a point (eps, mu) of the mu-GDP curve.
type gdpPoint struct{ eps, mu float64 }

// gdpPoints returns gdpGrid's points and 400 seeded random ones,
// log-uniform in eps in [1e-8, 100] and in mu in [10^muLo, 10^(muLo +
// muDecades)].
func gdpPoints(seed uint64, muLo, muDecades float64) []gdpPoint {
	var pts []gdpPoint
	for _, eps := range gdpGrid.eps {
		for _, mu := range gdpGrid.mu {
			pts = append(pts, gdpPoint{eps, mu})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 2018))
	for range 400 {
		pts = append(pts, gdpPoint{math.Pow(10, -8+10*rng.Float64()), math.Pow(10, muLo+muDecades*rng.Float64())})
	}
	return pts
}

func TestLogDeltaAgainstBig(t *testing.T) {
	pts := gdpPoints(4, -6, 7.7) // mu in [1e-6, 50]
	worst := 0.0
	for _, p := range pts {
		a := p.eps/p.mu - p.mu/2
		if a > 60 { // delta < 1e-780: far outside float64, nothing to check
			continue
		}
		got := logDeltaGDP(p.eps, p.mu)
		ref := refDelta(p.eps, p.mu)
		rel := math.Abs(bigRatio(got, ref) - 1)
		worst = max(worst, rel)
		// Allowed: 1e-14 relative plus the conditioning of delta in its
		// inputs, about (a^2 + 1) ulps (log delta ~ -a^2/2 and a itself
		// carries a rounding error). logDeltaMargin is 2.5 times this.
		if tol := 1e-14 + 4e-16*(a*a+1); rel > tol {
			refF, _ := ref.Float64()
			t.Errorf("delta(eps=%g, mu=%g): log = %.17g, ref delta = %.17g, rel err %.2g > %.2g", p.eps, p.mu, got, refF, rel, tol)
		}
	}
	t.Logf("worst relative error of delta: %.3g", worst)
}

// TestComplementAgainstBig checks complementGDP, 1 - delta(eps), against
// one minus the big-float curve wherever a = eps/mu - mu/2 <= 0 (delta
// >= 1/2), up to mu = 40 where 1 - delta is about 1e-90: the same tolerance
// as TestLogDeltaAgainstBig, which logDeltaMargin, the margin exactSafe
// applies to the complement too, exceeds 2.5 times.
func TestComplementAgainstBig(t *testing.T) {
	pts := gdpPoints(5, -1, 2.7) // mu in [0.1, 50]
	n, worst := 0, 0.0
	for _, p := range pts {
		got, ok := complementGDP(p.eps, p.mu)
		a := p.eps/p.mu - p.mu/2
		if ok != (a <= 0) {
			t.Fatalf("complementGDP(%g, %g): ok = %v at a = %g", p.eps, p.mu, ok, a)
		}
		if !ok {
			continue
		}
		n++
		ref := refDelta(p.eps, p.mu)
		one := newBig(ref.Prec()).SetInt64(1)
		ref.Sub(one, ref)
		g := newBig(ref.Prec()).SetFloat64(got)
		g.Quo(g, ref)
		r, _ := g.Float64()
		rel := math.Abs(r - 1)
		worst = max(worst, rel)
		if tol := 1e-14 + 4e-16*(a*a+1); rel > tol {
			t.Errorf("1 - delta(eps=%g, mu=%g) = %.17g, rel err %.2g > %.2g", p.eps, p.mu, got, rel, tol)
		}
	}
	if n < 200 {
		t.Errorf("only %d points with a <= 0", n)
	}
	t.Logf("%d points, worst relative error of 1 - delta: %.3g", n, worst)
}
