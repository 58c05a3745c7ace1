package accountant

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/dpmf/dpmf/internal/testutil"
)

// This file checks the PLD accountant against published values, the exact
// Gaussian curve, and an independent numerical integration of the
// subsampled Gaussian's hockey-stick divergence.

// mustPLD returns a function that fails t on an error and returns the PLD.
func mustPLD(t *testing.T) func(*PLD, error) *PLD {
	return func(p *PLD, err error) *PLD {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// coarse is the grid of the tests that are not about a published value.
var coarse = PLDOptions{Interval: 1e-3}

func mustDelta(t *testing.T, p *PLD, eps float64) float64 {
	t.Helper()
	d, err := p.Delta(eps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPLDPublishedGaussian: sigma = sqrt(3), 3 compositions, delta(1) =
// 0.126936 (notes.md section 7). The composition is mu-GDP with mu = 1, so
// the exact value is Delta(1, 1) = 0.12693673750...; the PLD must lie on
// or above it.
func TestPLDPublishedGaussian(t *testing.T) {
	g := mustPLD(t)(GaussianPLD(math.Sqrt(3), PLDOptions{}))
	g3 := mustPLD(t)(g.SelfCompose(3))
	got := mustDelta(t, g3, 1)
	exact, _ := Delta(1, 1)
	if math.Abs(got-0.126936) > 1e-6 {
		t.Errorf("delta(1) = %.9f, want 0.126936 (published, 6 decimals)", got)
	}
	if got < exact || got > exact*(1+1e-7) {
		t.Errorf("delta(1) = %.12g, want in [exact, exact (1 + 1e-7)], exact = %.12g", got, exact)
	}
}

// brute is an independent model of the subsampled Gaussian's two
// directions, written from the definitions (not from pldevent.go): the
// loss L(x) of the variable x ~ P, the density of P and the one-step
// hockey-stick divergence H(e') = P(L > e') - e^e' Q(L > e') in closed form,
// valid for every real e'.
type brute struct {
	loss, pdf, hs func(float64) float64
	inv           func(float64) float64 // x with loss(x) = l, NaN if none
	kink          float64               // hs has a kink at this e' (the end of the loss range)
	scale         float64               // min(s, s^2), the length on which pdf and L vary
	lo, hi        float64               // integration range
}

func bruteRemove(q, s float64) brute {
	Phibar := func(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }
	return brute{
		loss: func(x float64) float64 { return math.Log(1 - q + q*math.Exp((2*x-1)/(2*s*s))) },
		pdf: func(x float64) float64 {
			return ((1-q)*math.Exp(-x*x/(2*s*s)) + q*math.Exp(-(x-1)*(x-1)/(2*s*s))) / (s * math.Sqrt(2*math.Pi))
		},
		hs: func(e float64) float64 {
			if e <= math.Log(1-q) { // L > e everywhere
				return 1 - math.Exp(e)
			}
			x := s*s*math.Log((math.Exp(e)-(1-q))/q) + 0.5 // L(x) = e
			return (1-q)*Phibar(x/s) + q*Phibar((x-1)/s) - math.Exp(e)*Phibar(x/s)
		},
		inv:  func(l float64) float64 { return s*s*math.Log((math.Exp(l)-(1-q))/q) + 0.5 },
		kink: math.Log(1 - q), scale: math.Min(s, s*s),
		lo: -16 * s, hi: 1 + 16*s,
	}
}

// bruteAdd: P = N(0, s^2), Q = (1-q) N(0, s^2) + q N(1, s^2), in x itself:
// L(x) = -log(1 - q + q e^((2x-1)/(2 s^2))) decreases in x, so L > e iff
// x < x(e).
func bruteAdd(q, s float64) brute {
	Phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return brute{
		loss: func(x float64) float64 { return -math.Log(1 - q + q*math.Exp((2*x-1)/(2*s*s))) },
		pdf:  func(x float64) float64 { return math.Exp(-x*x/(2*s*s)) / (s * math.Sqrt(2*math.Pi)) },
		hs: func(e float64) float64 {
			if e >= -math.Log(1-q) { // L <= -log(1-q) < ... no x has L > e
				return 0
			}
			// -log(1 - q + q e^u) = e  =>  u = log((e^-e - (1-q))/q)
			x := s*s*math.Log((math.Exp(-e)-(1-q))/q) + 0.5
			return Phi(x/s) - math.Exp(e)*((1-q)*Phi(x/s)+q*Phi((x-1)/s))
		},
		inv:  func(l float64) float64 { return s*s*math.Log((math.Exp(-l)-(1-q))/q) + 0.5 },
		kink: -math.Log(1 - q), scale: math.Min(s, s*s),
		lo: -16 * s, hi: 16 * s,
	}
}

// integrate returns int_lo^hi pdf(x) f(x) dx by the 8-point Gauss-Legendre
// rule on equal panels of [lo, hi].
func (b brute) integrate(f func(float64) float64, lo, hi float64, panels int) float64 {
	x8, w8 := gaussLegendre(8)
	w := (hi - lo) / float64(panels)
	sum := 0.0
	for p := range panels {
		c := lo + (float64(p)+0.5)*w
		for j, t := range x8 {
			x := c + 0.5*w*t
			sum += w8[j] * b.pdf(x) * f(x)
		}
	}
	return 0.5 * w * sum
}

// two returns the 2-fold composition's delta(eps) = E_P[H(eps - L(x))],
// integrated separately on each side of the x_k where eps - L(x) hits the
// kink of H. Left of x_k, H(eps - L(x)) is smooth but not analytic at x_k
// (the inverse of L has a logarithmic singularity there), so the panels
// shrink geometrically toward x_k; elsewhere they are a fifth of the scale
// s^2 on which L varies, where 8-point Gauss-Legendre is exact to rounding.
func (b brute) two(eps float64) float64 {
	return b.graded(func(x float64) float64 { return b.hs(eps - b.loss(x)) }, b.inv(eps-b.kink))
}

// graded integrates pdf f over [lo, hi] with panels shrinking toward xk from
// the left (if xk is inside).
func (b brute) graded(f func(float64) float64, xk float64) float64 {
	n := func(lo, hi float64) int { return int((hi-lo)/(0.2*b.scale)) + 1 }
	if !(xk > b.lo && xk < b.hi) {
		return b.integrate(f, b.lo, b.hi, n(b.lo, b.hi))
	}
	// [lo, xk]: [lo, xk - w], then [xk - w, xk - w/2], ... down to 1e-14 w.
	w := math.Min(xk-b.lo, b.scale)
	sum := b.integrate(f, b.lo, xk-w, n(b.lo, xk-w)+1)
	for d := w; d > 1e-14*w; d /= 2 {
		sum += b.integrate(f, xk-d, xk-d/2, 1)
	}
	return sum + b.integrate(f, xk, b.hi, n(xk, b.hi))
}

// TestPLDPublishedPoisson: q = 0.2, sigma = 0.5, 3 compositions,
// delta(1) = 0.15594 (add/remove; notes.md section 7). The published value
// is itself a pessimistic PLD estimate; the true value, by the nested
// integration of TestPLDPoissonThreeStepsLong, is 0.1559327758. The PLD must
// lie between the two.
func TestPLDPublishedPoisson(t *testing.T) {
	p := mustPLD(t)(SampledGaussianPLD(0.2, 0.5, AddRemove, PLDOptions{}))
	p3 := mustPLD(t)(p.SelfCompose(3))
	got := mustDelta(t, p3, 1)
	const truth = 0.1559327758
	if math.Abs(got-0.15594) > 1e-5 {
		t.Errorf("delta(1) = %.9f, want 0.15594 (published, 5 digits)", got)
	}
	if got < truth-2e-10 || got > truth*(1+1e-7) {
		t.Errorf("delta(1) = %.12g, want in [%.10g, %.10g (1 + 1e-7)]", got, truth, truth)
	}
}

// TestPLDPoissonThreeStepsLong computes the 3-step truth above by nesting
// the 2-step integral (about a minute).
func TestPLDPoissonThreeStepsLong(t *testing.T) {
	if os.Getenv("DPMF_LONG") == "" {
		t.Skip("set DPMF_LONG=1")
	}
	b := bruteRemove(0.2, 0.5)
	// The 2-step curve has the same kind of point at twice the kink.
	got := b.graded(func(x float64) float64 { return b.two(1 - b.loss(x)) }, b.inv(1-2*b.kink))
	if math.Abs(got-0.1559327758) > 2e-10 {
		t.Errorf("3-step delta(1) = %.12g, want 0.1559327758", got)
	}
}

// TestPLDPoissonBruteForce compares one and two steps of the subsampled
// Gaussian, in each direction, with the closed form and the integral.
func TestPLDPoissonBruteForce(t *testing.T) {
	testutil.SkipOn386Short(t, "two steps against a brute-force sum: float64")
	t.Parallel()
	cases := []struct{ q, sigma float64 }{{0.2, 0.5}, {0.01, 0.8}, {0.5, 0.1}, {0.05, 1}, {0.5, 2}}
	if testing.Short() {
		cases = cases[:3] // q from 0.01 to 0.5, sigma from 0.1 to 0.8
	}
	for _, c := range cases {
		p := mustPLD(t)(SampledGaussianPLD(c.q, c.sigma, AddRemove, coarse))
		p2 := mustPLD(t)(p.SelfCompose(2))
		for _, dir := range []struct {
			name string
			b    brute
			one  *lossDist
			two  *lossDist
		}{
			{"remove", bruteRemove(c.q, c.sigma), p.remove, p2.remove},
			{"add", bruteAdd(c.q, c.sigma), p.add, p2.add},
		} {
			for _, eps := range []float64{0.01, 0.3, 1, 2} {
				one, two := dir.b.hs(eps), dir.b.two(eps)
				g1, g2 := newCurve(dir.one, p.h, true).value(eps), newCurve(dir.two, p.h, true).value(eps)
				// Safe side, allowing for the integral's own error (1e-12).
				if g1 < one-1e-12 || g2 < two-1e-12 {
					t.Errorf("q=%v sigma=%v %s eps=%v: PLD (%.12g, %.12g) below truth (%.12g, %.12g)",
						c.q, c.sigma, dir.name, eps, g1, g2, one, two)
				}
				// Tight: each step's discrete curve is a chord between grid
				// points, so it is below the truth at eps - h per step, up
				// to the floating-point bound the PLD adds.
				// The PLD multiplies by 1 + rel and adds abs and inf.
				// The masses may also have been raised by their error
				// bounds, a factor up to 1 + infl.
				bound := func(truth float64, d *lossDist) float64 {
					return (1+d.rel)*(1+d.infl)*(truth+d.errFrom(0)+d.inf) + 1e-12
				}
				if g1 > bound(dir.b.hs(eps-p.h), dir.one) || g2 > bound(dir.b.two(eps-2*p.h), dir.two) {
					t.Errorf("q=%v sigma=%v %s eps=%v: PLD (%.12g, %.12g) above truth at eps - h, eps - 2h (%.12g, %.12g)",
						c.q, c.sigma, dir.name, eps, g1, g2, dir.b.hs(eps-p.h), dir.b.two(eps-2*p.h))
				}
			}
		}
	}
}

// TestPLDGaussianExact: k compositions of the Gaussian are exactly mu-GDP
// with mu = sqrt(k)/sigma; the PLD must be on the safe side of [Delta] and
// [Epsilon] and close to them.
func TestPLDGaussianExact(t *testing.T) {
	t.Parallel()
	for _, sigma := range []float64{0.7, 2, 5} {
		g := mustPLD(t)(GaussianPLD(sigma, coarse))
		for _, k := range []int{1, 3, 100} {
			gk := mustPLD(t)(g.SelfCompose(k))
			mu := math.Sqrt(float64(k)) / sigma
			for _, eps := range []float64{0.1, 1, 3} {
				got := mustDelta(t, gk, eps)
				exact, _ := Delta(eps, mu)
				// The PLD adds its floating-point bound abs and the
				// truncated mass inf; the discretisation itself costs a
				// relative 1e-4 at most at interval 1e-3.
				slack := (gk.remove.errFrom(math.Trunc(eps/gk.h)) + gk.remove.inf) * (1 + 1e-6)
				if got < exact || got > exact*(1+1e-4)+slack {
					t.Errorf("sigma=%v k=%d eps=%v: PLD delta %.12g, exact %.12g (slack %.3g)", sigma, k, eps, got, exact, slack)
				}
			}
			for _, delta := range []float64{1e-3, 1e-6, 1e-9} {
				got, err := gk.Epsilon(delta)
				if err != nil {
					t.Fatal(err)
				}
				exact, _ := Epsilon(sigma, delta, k, Exact)
				// The discretisation at interval 1e-3 costs a relative 1e-4
				// at most; the rounding bound is tilted to be small here.
				loose := exact * (1 + 1e-4)
				if got < exact*(1-1e-12) || got > loose {
					t.Errorf("sigma=%v k=%d delta=%v: PLD eps %.12g, exact %.12g, at delta - slack %.12g", sigma, k, delta, got, exact, loose)
				}
			}
		}
	}
}

// TestPLDComposeHeterogeneous: Gaussians with different sigmas compose to
// mu = sqrt(sum 1/sigma_j^2), and a Poisson event with q = 1 is a Gaussian.
func TestPLDComposeHeterogeneous(t *testing.T) {
	a := mustPLD(t)(GaussianPLD(1.5, coarse))
	b := mustPLD(t)(SampledGaussianPLD(1, 3, AddRemove, coarse))
	c := mustPLD(t)(a.Compose(b))
	c = mustPLD(t)(c.Compose(a))
	mu := math.Sqrt(2/(1.5*1.5) + 1/9.0)
	for _, eps := range []float64{0.2, 1, 4} {
		got := mustDelta(t, c, eps)
		exact, _ := Delta(eps, mu)
		if got < exact || got > exact*(1+1e-5)+1e-13 {
			t.Errorf("eps=%v: PLD delta %.12g, exact %.12g", eps, got, exact)
		}
	}
	// A sampled event composed with a Gaussian: each direction separately.
	s := mustPLD(t)(SampledGaussianPLD(0.3, 1, AddRemove, coarse))
	sg := mustPLD(t)(s.Compose(a))
	if sg.symmetric() {
		t.Fatal("composition of an asymmetric PLD is symmetric")
	}
	if d1, d2 := mustDelta(t, s, 1), mustDelta(t, sg, 1); !(d2 > d1) {
		t.Errorf("composing more noise-limited events lowered delta: %v -> %v", d1, d2)
	}
}

// TestPLDEpsilonInverse: Epsilon is the least eps at which Delta <= delta.
func TestPLDEpsilonInverse(t *testing.T) {
	p := mustPLD(t)(SampledGaussianPLD(0.05, 1, AddRemove, coarse))
	p = mustPLD(t)(p.SelfCompose(200))
	for _, delta := range []float64{1e-2, 1e-5, 1e-8} {
		eps, err := p.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		if d := mustDelta(t, p, eps); d > delta {
			t.Errorf("delta = %v: Delta(Epsilon) = %v", delta, d)
		}
		if d := mustDelta(t, p, eps*(1-1e-9)); d <= delta {
			t.Errorf("delta = %v: eps = %v is not the least (Delta(eps (1 - 1e-9)) = %v)", delta, eps, d)
		}
	}
}

// TestPLDSpecialCases covers q = 0, q = 1, sigma = +Inf and the errors.
func TestPLDSpecialCases(t *testing.T) {
	for _, p := range []*PLD{
		mustPLD(t)(SampledGaussianPLD(0, 1, AddRemove, PLDOptions{})),
		mustPLD(t)(SampledGaussianPLD(0.5, math.Inf(1), AddRemove, PLDOptions{})),
		mustPLD(t)(GaussianPLD(math.Inf(1), PLDOptions{})),
	} {
		p = mustPLD(t)(p.SelfCompose(1000))
		if d := mustDelta(t, p, 0); d != 0 {
			t.Errorf("no-loss PLD: Delta(0) = %v", d)
		}
		if e, _ := p.Epsilon(1e-10); e != 0 {
			t.Errorf("no-loss PLD: Epsilon = %v", e)
		}
	}
	g := mustPLD(t)(GaussianPLD(2, PLDOptions{}))
	s := mustPLD(t)(SampledGaussianPLD(1, 2, AddRemove, PLDOptions{}))
	if a, b := mustDelta(t, g, 0.5), mustDelta(t, s, 0.5); a != b {
		t.Errorf("q = 1: %v, Gaussian: %v", b, a)
	}
	var pe *ParamError
	for name, err := range map[string]error{
		"q<0":          second(SampledGaussianPLD(-0.1, 1, AddRemove, PLDOptions{})),
		"q>1":          second(SampledGaussianPLD(1.5, 1, AddRemove, PLDOptions{})),
		"q NaN":        second(SampledGaussianPLD(math.NaN(), 1, AddRemove, PLDOptions{})),
		"sigma 0":      second(SampledGaussianPLD(0.1, 0, AddRemove, PLDOptions{})),
		"sigma<0":      second(GaussianPLD(-1, PLDOptions{})),
		"relation":     second(SampledGaussianPLD(0.1, 1, Relation(7), PLDOptions{})),
		"interval":     second(GaussianPLD(1, PLDOptions{Interval: -1})),
		"tail":         second(GaussianPLD(1, PLDOptions{TailMass: 0.5})),
		"compositions": second(g.SelfCompose(0)),
		"eps<0":        second(g.Delta(-1)),
		"eps inf":      second(g.Delta(math.Inf(1))),
		"delta 0":      second(g.Epsilon(0)),
		"delta 1":      second(g.Epsilon(1)),
		"nil compose":  second(g.Compose(nil)),
		"nil delta":    second((*PLD)(nil).Delta(1)),
		"zero epsilon": second((&PLD{}).Epsilon(1e-5)),
		"zero self":    second((&PLD{}).SelfCompose(2)),
	} {
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a *ParamError", name, err)
		}
	}
	// Replace-one without sampling is the Gaussian of the given multiplier.
	if r := mustPLD(t)(SampledGaussianPLD(1, 2, ReplaceOne, PLDOptions{})); mustDelta(t, r, 0.5) != mustDelta(t, g, 0.5) {
		t.Errorf("q = 1, replace-one: differs from the Gaussian")
	}
	if f, d := g.Floor(), mustDelta(t, g, 1e3); f != d || !(f > 0) {
		t.Errorf("Floor %v, Delta(1000) %v", f, d)
	}
	coarse := mustPLD(t)(GaussianPLD(2, PLDOptions{Interval: 1e-3}))
	if _, err := g.Compose(coarse); !errors.Is(err, ErrPLDInterval) || !strings.Contains(err.Error(), "0.001") || !strings.Contains(err.Error(), "same PLDOptions.Interval") {
		t.Errorf("composing different intervals: %v, want ErrPLDInterval naming 0.001 and the remedy", err)
	}
	if _, err := ParseRelation("substitute"); err == nil {
		t.Error("ParseRelation accepted an unknown name")
	}
	if r, err := ParseRelation("replace-one"); err != nil || r != ReplaceOne || r.String() != "replace-one" {
		t.Errorf("ParseRelation(replace-one) = %v, %v", r, err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestFastLen: every length fastLen returns is at least n, a 2-3-5 number,
// and within the 12 factors gonum's FFTPACK port has room for (it panics
// beyond); spot-check that NewFFT accepts a few.
func TestFastLen(t *testing.T) {
	factors := func(p int) (count int, ok bool) {
		for p%4 == 0 {
			p /= 4
			count++
		}
		for _, f := range []int{2, 3, 5} {
			for p%f == 0 {
				p /= f
				count++
			}
		}
		return count, p == 1
	}
	for n := 1; n <= maxGrid; n = n*3/2 + 1 {
		for _, m := range []int{n, n + 1, 3 * n / 2} {
			p := fastLen(m)
			c, ok := factors(p)
			if p < m || !ok || c > 12 || p > 2*m {
				t.Errorf("fastLen(%d) = %d (%d factors, 2-3-5: %v)", m, p, c, ok)
			}
		}
	}
	fourier.NewFFT(fastLen(1594323)) // 3^13 has 13 factors

}

// TestPLDTinySigmaError: a sigma so small that 1/sigma^2 overflows is a
// grid error that says so (it read "losses from NaN to NaN").
func TestPLDTinySigmaError(t *testing.T) {
	for _, sigma := range []float64{1e-160, 1e-300, 5e-324} {
		for name, err := range map[string]error{
			"GaussianPLD":        second(GaussianPLD(sigma, PLDOptions{})),
			"SampledGaussianPLD": second(SampledGaussianPLD(0.5, sigma, AddRemove, PLDOptions{})),
		} {
			if !errors.Is(err, ErrPLDGrid) || strings.Contains(err.Error(), "NaN") || strings.Contains(err.Error(), "Inf") {
				t.Errorf("%s(%g): err = %v, want ErrPLDGrid without NaN or Inf", name, sigma, err)
			}
		}
	}
}
