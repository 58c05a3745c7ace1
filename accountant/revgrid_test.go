package accountant

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// This file checks the PLD accountant's two sides (Bounds) against truths
// computed here, independently of the package's code, each with an error
// bound: at q = 1 the closed form of mu-GDP from the normal tail's logs;
// for the Poisson-subsampled Gaussian, one step in closed form and two
// steps, one replace-one step and heterogeneous pairs by adaptive
// Gauss-Kronrod quadrature of E_P[H(eps - L)] (the models bruteRemove and
// bruteAdd of pld_test.go, written from the definitions); calibrations
// against the same closed forms; and, where no truth is at hand, two ways
// of composing the same mechanism, whose brackets must meet. The full
// grids (q in {1e-4, 1e-2, 0.3, 1}, sigma in {0.5, 1, 4, 20}, eps from 0.01
// to 20, delta from 1e-12 to 1e-3) run without -short (about 2 minutes).

// revTruth is a true delta(eps) with an absolute error bound.
type revTruth func(eps float64) (delta, err float64)

// revLogPhibar returns log Phi(-x): by math.Erfc below x = 30, and above
// by the asymptotic series of the Mills ratio, 1 - 1/x^2 + 3/x^4 - ...,
// whose first omitted term (135135/x^14 at seven terms) is below 1e-16
// there.
func revLogPhibar(x float64) float64 {
	if x < 30 {
		return math.Log(0.5 * math.Erfc(x/math.Sqrt2))
	}
	x2 := x * x
	sum, term := 1.0, 1.0
	for k := 1; k <= 6; k++ {
		term *= -float64(2*k-1) / x2
		sum += term
	}
	return -x2/2 - math.Log(x*math.Sqrt(2*math.Pi)) + math.Log(sum)
}

// revHS returns P(X > x) - e^e Q(X > x) with the tails given as logs
// (lp, lq), and an absolute error bound of a few ulps of the terms, each
// term's log having an error of (4 + x^2) ulps.
func revHS(lp, lq, e, x float64) (float64, float64) {
	t1, t2 := math.Exp(lp), math.Exp(e+lq)
	return math.Max(t1-t2, 0), (8 + 2*x*x) * 0x1p-52 * (t1 + t2)
}

// gaussTruth is mu-GDP's delta, Phi(-a) - e^eps Phi(-a - mu) with
// a = eps/mu - mu/2, in float64 from the normal tail's logs.
func gaussTruth(mu float64) revTruth {
	return func(eps float64) (float64, float64) {
		a := eps/mu - mu/2
		return revHS(revLogPhibar(a), revLogPhibar(a+mu), eps, math.Abs(a)+mu)
	}
}

// oneStepTruth is the one-step delta of the add/remove sampled Gaussian
// (P_1 = (1-q) N(0, s^2) + q N(1, s^2), Q_1 = N(0, s^2)): the larger of the
// two directions' closed forms. The loss log(1 - q + q e^((2x-1)/(2s^2)))
// of remove is increasing in x, so its delta is P_1(X > x) - e^eps Q_1(X > x)
// at the x where the loss is eps; add's loss is its negative, so its delta is
// Q_1(X < x) - e^eps P_1(X < x) where the remove loss is -eps.
func oneStepTruth(q, s float64) revTruth {
	// x where the remove loss is l: e^((2x-1)/(2s^2)) = (e^l - (1-q))/q,
	// or NaN if e^l <= 1-q.
	at := func(l float64) float64 {
		// log(e^l - (1-q)) = l + log(1 - (1-q) e^-l)
		return s*s*(l+math.Log1p(-(1-q)*math.Exp(-l))-math.Log(q)) + 0.5
	}
	logMix := func(lq0, lq1 float64) float64 { // log((1-q) e^lq0 + q e^lq1)
		a, b := math.Log1p(-q)+lq0, math.Log(q)+lq1
		m := math.Max(a, b)
		return m + math.Log(math.Exp(a-m)+math.Exp(b-m))
	}
	return func(eps float64) (float64, float64) {
		var rem, remErr, add, addErr float64
		x := at(eps)
		rem, remErr = revHS(logMix(revLogPhibar(x/s), revLogPhibar((x-1)/s)), revLogPhibar(x/s), eps, math.Abs(x/s)+1/s)
		if math.Exp(-eps) > 1-q {
			x = at(-eps)
			add, addErr = revHS(revLogPhibar(-x/s), logMix(revLogPhibar(-x/s), revLogPhibar((1-x)/s)), eps, math.Abs(x/s)+1/s)
		}
		if rem >= add {
			return rem, remErr + 1e-15*rem
		}
		return add, addErr + 1e-15*add
	}
}

// Gauss-Kronrod 7-15 nodes and weights on [-1, 1] (QUADPACK's qk15):
// xgk[1], xgk[3], xgk[5], xgk[7] are the 7-point Gauss nodes, with weights
// wg. TestRevTruthSelf checks the rules' degrees of exactness.
var (
	revXGK = [8]float64{0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
		0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
		0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
		0.207784955007898467600689403773245, 0}
	revWGK = [8]float64{0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
		0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
		0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
		0.204432940075298892414161999234649, 0.209482141084727828012999174891714}
	revWG = [4]float64{0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
		0.381830050505118944950369775488975, 0.417959183673469387755102040816327}
)

// revGK returns the 15-point Kronrod and 7-point Gauss estimates of the
// integral of f over [a, b].
func revGK(f func(float64) float64, a, b float64) (k, g float64) {
	c, h := (a+b)/2, (b-a)/2
	fc := f(c)
	k, g = revWGK[7]*fc, revWG[3]*fc
	for j := range 7 {
		s := f(c-h*revXGK[j]) + f(c+h*revXGK[j])
		k += revWGK[j] * s
		if j%2 == 1 {
			g += revWG[j/2] * s
		}
	}
	return k * h, g * h
}

// revIntegrate integrates f over [a, b] adaptively: the interval whose
// Kronrod and Gauss estimates differ most is halved until the differences
// sum to at most tol (or 4000 intervals); it returns the Kronrod sum and
// the sum of the differences, an error estimate (the Kronrod rule is far
// more accurate than the Gauss rule it is compared with, so the difference
// overestimates its error on smooth pieces).
func revIntegrate(f func(float64) float64, a, b, tol float64) (sum, err float64) {
	type piece struct{ lo, hi, k, d float64 }
	eval := func(lo, hi float64) piece {
		k, g := revGK(f, lo, hi)
		return piece{lo, hi, k, math.Abs(k - g)}
	}
	ps := []piece{eval(a, b)}
	for len(ps) < 4000 {
		worst, total := 0, 0.0
		for i, p := range ps {
			total += p.d
			if p.d > ps[worst].d {
				worst = i
			}
		}
		if total <= tol {
			break
		}
		p := ps[worst]
		m := (p.lo + p.hi) / 2
		ps[worst] = eval(p.lo, m)
		ps = append(ps, eval(m, p.hi))
	}
	for _, p := range ps {
		sum += p.k
		err += p.d
	}
	return sum, err
}

// revCompose returns E_{x ~ b1's P}[h(eps - b1.loss(x))], the delta at eps of
// b1's pair composed with a pair whose hockey-stick curve is h, kinked where
// its argument is kink: integrated on [-40 s - 1, 40 s + 2] (beyond it the
// density is below e^-800) split at the x where the argument hits the kink,
// with an error bound of the quadrature's estimate plus rounding (1e-14
// relative, the closed forms' and the sum's).
func revCompose(b1 brute, s float64, h func(float64) float64, kink, eps float64) (float64, float64) {
	f := func(x float64) float64 {
		p := b1.pdf(x)
		if p == 0 {
			return 0
		}
		return p * h(eps-b1.loss(x))
	}
	lo, hi := -40*s-1, 40*s+2
	pts := []float64{lo}
	if xk := b1.inv(eps - kink); xk > lo && xk < hi {
		pts = append(pts, xk)
	}
	pts = append(pts, hi)
	// A first pass for the scale of the result, then the tolerance 1e-15 of it.
	var guess float64
	for i := 1; i < len(pts); i++ {
		g, _ := revIntegrate(f, pts[i-1], pts[i], 1e-12)
		guess += g
	}
	var sum, err float64
	for i := 1; i < len(pts); i++ {
		v, e := revIntegrate(f, pts[i-1], pts[i], 1e-15*guess+1e-300)
		sum += v
		err += e
	}
	return math.Max(sum, 0), err + 1e-14*math.Abs(sum)
}

// twoStepTruth is the two-step delta of the add/remove sampled Gaussian:
// each direction's E_P[H(eps - L)] by revCompose, the larger of the two.
func twoStepTruth(q, s float64) revTruth {
	rem, add := bruteRemove(q, s), bruteAdd(q, s)
	return func(eps float64) (float64, float64) {
		a, ea := revCompose(rem, s, rem.hs, rem.kink, eps)
		b, eb := revCompose(add, s, add.hs, add.kink, eps)
		if a >= b {
			return a, ea
		}
		return b, eb
	}
}

// replaceTruth1 is the delta of the pair SampledGaussianPLD states for
// one replace-one step (q < 1): the remove pair composed with the add pair,
// both at noise multiplier sqrt2 sigma, E_{x ~ P_rem}[H_add(eps - L_rem(x))].
func replaceTruth1(q, sigma float64) revTruth {
	s := math.Sqrt2 * sigma
	rem, add := bruteRemove(q, s), bruteAdd(q, s)
	return func(eps float64) (float64, float64) {
		return revCompose(rem, s, add.hs, add.kink, eps)
	}
}

// checkAgainstTruth checks optimistic <= truth <= safe for delta(eps) and
// eps(delta) on the grids, eps(delta) through the truth's delta at the
// bounds (the true eps is below Safe iff truth(Safe) <= delta).
func checkAgainstTruth(t *testing.T, name string, p *PLD, truth revTruth, epss, deltas []float64) {
	t.Helper()
	for _, eps := range epss {
		b, err := p.DeltaBounds(eps)
		if err != nil {
			t.Errorf("%s: DeltaBounds(%v): %v", name, eps, err)
			continue
		}
		d, e := truth(eps)
		if b.Safe < d-e {
			t.Errorf("%s eps=%v: PRIVACY: safe delta %.15g below truth %.15g (err %.2g)", name, eps, b.Safe, d, e)
		}
		if b.Optimistic > d+e {
			t.Errorf("%s eps=%v: optimistic delta %.15g above truth %.15g (err %.2g)", name, eps, b.Optimistic, d, e)
		}
	}
	for _, delta := range deltas {
		b, err := p.EpsilonBounds(delta)
		if err != nil {
			t.Errorf("%s: EpsilonBounds(%v): %v", name, delta, err)
			continue
		}
		if b.Safe > 0 && !math.IsInf(b.Safe, 1) {
			if d, e := truth(b.Safe); d-e > delta {
				t.Errorf("%s delta=%v: PRIVACY: truth at safe eps %.15g is %.15g > delta", name, delta, b.Safe, d)
			}
		}
		if b.Optimistic > 0 {
			if d, e := truth(b.Optimistic); d+e < delta {
				t.Errorf("%s delta=%v: truth at optimistic eps %.15g is %.15g < delta (eps %+v)", name, delta, b.Optimistic, d, b)
			}
		}
	}
}

// revFull reports whether the review's grids run in full (DPMF_LONG=1,
// about 2.5 minutes); otherwise, in CI's go test ./... as under -short,
// each runs a subset that still meets every kind of truth (about 8 s).
func revFull() bool { return os.Getenv("DPMF_LONG") != "" }

var (
	revEps    = []float64{0.01, 0.1, 0.5, 1, 2, 5, 10, 20}
	revDeltas = []float64{1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-3}
)

// TestRevGridGaussian: at q = 1, T steps on SampledGaussian's own grid
// against mu-GDP with mu = sqrt(T)/sigma, under both relations (sigma is
// per the relation's sensitivity, so the curve is the same).
func TestRevGridGaussian(t *testing.T) {
	testutil.SkipOn386Short(t, "review grid at T <= 10 under -short: float64")
	sigmas, steps := []float64{0.5, 1, 4, 20}, []int{1, 2, 10, 1000}
	if !revFull() {
		sigmas, steps = []float64{0.5, 4}, []int{1, 10}
	}
	for _, rel := range []Relation{AddRemove, ReplaceOne} {
		for _, q := range []float64{1} {
			for _, sigma := range sigmas {
				for _, T := range steps {
					p, err := SampledGaussian(q, sigma, T, rel)
					if err != nil {
						t.Errorf("q=%v sigma=%v T=%d: %v", q, sigma, T, err)
						continue
					}
					mu := math.Sqrt(float64(T)) / sigma
					checkAgainstTruth(t, fmt.Sprintf("q=1 sigma=%v T=%d %v", sigma, T, rel), p, gaussTruth(mu), revEps, revDeltas)
				}
			}
		}
	}
}

// TestRevGridSampled: the Poisson-subsampled Gaussian, 1 and 2 steps
// add/remove and 1 step replace-one, on SampledGaussian's own grid.
func TestRevGridSampled(t *testing.T) {
	testutil.SkipOn386Short(t, "review grid at T <= 10 under -short: float64")
	qs, sigmas := []float64{1e-4, 1e-2, 0.3}, []float64{0.5, 1, 4, 20}
	if !revFull() {
		qs, sigmas = []float64{0.3}, []float64{0.5}
	}
	for _, q := range qs {
		for _, sigma := range sigmas {
			for _, T := range []int{1, 2} {
				p, err := SampledGaussian(q, sigma, T, AddRemove)
				if err != nil {
					t.Errorf("q=%v sigma=%v T=%d: %v", q, sigma, T, err)
					continue
				}
				tr := oneStepTruth(q, sigma)
				if T == 2 {
					tr = twoStepTruth(q, sigma)
				}
				checkAgainstTruth(t, fmt.Sprintf("q=%v sigma=%v T=%d", q, sigma, T), p, tr, revEps, revDeltas)
				if T == 1 {
					p, err := SampledGaussian(q, sigma, T, ReplaceOne)
					if err != nil {
						t.Errorf("q=%v sigma=%v T=%d replace-one: %v", q, sigma, T, err)
						continue
					}
					checkAgainstTruth(t, fmt.Sprintf("q=%v sigma=%v T=%d replace-one", q, sigma, T), p, replaceTruth1(q, sigma), revEps, revDeltas)
				}
			}
		}
	}
}

// TestRevCalibrationTruth: SampledGaussianSigma's sigma, at edge cases,
// gives a mechanism whose true delta (closed forms: q = 1 any T, and T = 1
// any q) at the target eps is at most the target delta.
func TestRevCalibrationTruth(t *testing.T) {
	testutil.SkipOn386Short(t, "calibrations at T = 1 under -short against the truth: float64")
	for _, c := range []struct {
		q          float64
		T          int
		eps, delta float64
	}{
		{1, 1, 1e-9, 1e-5}, {1, 1, 1e-4, 1e-5}, {1, 10, 1e-3, 1e-5}, {1, 1, 1000, 1e-5},
		{1, 1, 1, 1e-15}, {1, 1, 1, 0.999}, {1, 1, 0.01, 0.5}, {1, 1000, 1, 1e-12},
		{1, 1, 50, 1e-12}, {1, 4, 20, 1e-3},
		{0.3, 1, 1e-3, 1e-5}, {0.3, 1, 1000, 1e-5}, {0.3, 1, 1, 0.2}, {0.3, 1, 1, 1e-15},
		{1e-2, 1, 0.01, 1e-3}, {1e-2, 1, 5, 1e-12}, {1e-4, 1, 1, 1e-5}, {1e-4, 1, 1e-2, 5e-5},
		{0.3, 1, 0.1, 0.29},
	} {
		if !revFull() && !(c.T == 1 && (c.eps == 1e-9 || c.eps == 1000)) {
			continue
		}
		for _, rel := range []Relation{AddRemove, ReplaceOne} {
			if rel == ReplaceOne && c.q < 1 {
				continue
			}
			sigma, err := SampledGaussianSigma(t.Context(), c.q, c.T, c.eps, c.delta, rel)
			if err != nil {
				t.Errorf("%+v %v: %v", c, rel, err)
				continue
			}
			var tr revTruth
			if c.q == 1 {
				tr = gaussTruth(math.Sqrt(float64(c.T)) / sigma)
			} else {
				tr = oneStepTruth(c.q, sigma)
			}
			d, e := tr(c.eps)
			if d-e > c.delta {
				t.Errorf("%+v %v: PRIVACY: sigma %.15g has true delta %.15g > target", c, rel, sigma, d)
			}
			t.Logf("%+v %v: sigma %.10g true delta %.6g (target %g, ratio %.6g)", c, rel, sigma, d, c.delta, d/c.delta)
		}
	}
}

// TestRevTruthSelf checks the truths of this file against the published
// values of docs/notes, pld_test.go's brute force and values computed with
// mpmath 1.3 at 40 digits (adaptive tanh-sinh quadrature, both orders of
// the composition agreeing to 20 digits), and the Gauss-Kronrod rule's
// exactness on monomials (degree 22 for 15 points, 13 for 7).
func TestRevTruthSelf(t *testing.T) {
	for d := 0; d <= 23; d++ {
		k, g := revGK(func(x float64) float64 { return math.Pow(x, float64(d)) }, 0, 1)
		want := 1 / float64(d+1)
		if d <= 22 && math.Abs(k-want) > 1e-15 {
			t.Errorf("Kronrod: x^%d integrates to %.17g, want %.17g", d, k, want)
		}
		if d <= 13 && math.Abs(g-want) > 1e-15 {
			t.Errorf("Gauss: x^%d integrates to %.17g, want %.17g", d, g, want)
		}
	}
	for _, c := range []struct{ eps, want float64 }{
		{2, 0.010350727959190372324}, {1, 0.046385202826153540997}, {5, 0.000014986299466944253987},
	} {
		d, e := replaceTruth1(0.3, 0.5)(c.eps)
		if math.Abs(d-c.want) > e || e > 1e-12*c.want {
			t.Errorf("replace-one q=0.3 sigma=0.5 eps=%v: %.17g (err %.2g), mpmath %.17g", c.eps, d, e, c.want)
		}
	}
	if d, _ := gaussTruth(math.Sqrt(3) / math.Sqrt(3))(1); math.Abs(d-0.126936) > 1e-6 {
		t.Errorf("sigma sqrt3, 3 steps: delta(1) = %.9g, want 0.126936", d)
	}
	for _, c := range []struct{ q, s float64 }{{0.3, 0.5}, {1e-2, 1}, {1e-4, 4}} {
		rem, add := bruteRemove(c.q, c.s), bruteAdd(c.q, c.s)
		for _, eps := range []float64{0.001, 0.1, 1, 3} {
			d, e := oneStepTruth(c.q, c.s)(eps)
			w := math.Max(rem.hs(eps), add.hs(eps))
			if math.Abs(d-w) > e+1e-15 {
				t.Errorf("q=%v s=%v eps=%v: %.15g, brute %.15g", c.q, c.s, eps, d, w)
			}
		}
	}
}

// gaussHS is mu-GDP's hockey-stick curve at any real e' (the closed form
// holds for e' < 0 too).
func gaussHS(mu float64) func(float64) float64 {
	g := gaussTruth(mu)
	return func(e float64) float64 { d, _ := g(e); return d }
}

// TestRevComposeHeterogeneous: Compose of PLDs built separately, of
// different events and tilts, against independent truths: Gaussians of
// different sigmas (and their self-compositions) compose to mu-GDP with
// mu^2 = sum k_j / sigma_j^2; a sampled step (q, s) composed with k
// Gaussians of sigma g has, in each direction, delta(eps) = E_P[H_k(eps -
// L)] with H_k the closed form of mu = sqrt(k)/g (revCompose); two sampled
// steps of different (q, s) likewise with the second's closed form.
func TestRevComposeHeterogeneous(t *testing.T) {
	testutil.SkipOn386Short(t, "few heterogeneous steps against the truth: float64")
	o := PLDOptions{Interval: 1e-3}
	gauss := func(sigma float64, k int) *PLD {
		p, err := GaussianPLD(sigma, o)
		if err == nil && k > 1 {
			p, err = p.SelfCompose(k)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	step := func(q, s float64) *PLD {
		p, err := SampledGaussianPLD(q, s, AddRemove, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	compose := func(a, b *PLD) *PLD {
		p, err := a.Compose(b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	eps := []float64{0.01, 0.1, 0.5, 1, 2, 5}
	deltas := []float64{1e-12, 1e-8, 1e-5, 1e-3}
	// Gaussians: (sigma, k) pairs composed left to right.
	for _, c := range [][]struct {
		s float64
		k int
	}{
		{{1, 1}, {4, 1}},
		{{0.5, 1}, {20, 1}, {4, 1}},
		{{3, 8}, {7, 4}},
		{{20, 1}, {2, 16}},
		{{4, 10}, {4, 10}, {1, 1}},
	} {
		if !revFull() && c[0].s != 3 {
			continue
		}
		p := gauss(c[0].s, c[0].k)
		mu2 := float64(c[0].k) / (c[0].s * c[0].s)
		for _, e := range c[1:] {
			p = compose(p, gauss(e.s, e.k))
			mu2 += float64(e.k) / (e.s * e.s)
		}
		checkAgainstTruth(t, fmt.Sprintf("gaussians %v", c), p, gaussTruth(math.Sqrt(mu2)), eps, deltas)
		// The same the other way round.
		q := gauss(c[len(c)-1].s, c[len(c)-1].k)
		for i := len(c) - 2; i >= 0; i-- {
			q = compose(q, gauss(c[i].s, c[i].k))
		}
		checkAgainstTruth(t, fmt.Sprintf("gaussians reversed %v", c), q, gaussTruth(math.Sqrt(mu2)), eps, deltas)
	}
	// A sampled step with k Gaussians, both orders.
	for _, c := range []struct {
		q, s, g float64
		k       int
	}{{0.3, 0.5, 4, 1}, {1e-2, 1, 2, 10}, {0.3, 1, 20, 100}, {1e-2, 0.5, 1, 1}} {
		if !revFull() && c.k != 10 {
			continue
		}
		rem, add := bruteRemove(c.q, c.s), bruteAdd(c.q, c.s)
		h := gaussHS(math.Sqrt(float64(c.k)) / c.g)
		truth := func(e float64) (float64, float64) {
			a, ea := revCompose(rem, c.s, h, math.NaN(), e)
			b, eb := revCompose(add, c.s, h, math.NaN(), e)
			if a >= b {
				return a, ea
			}
			return b, eb
		}
		checkAgainstTruth(t, fmt.Sprintf("step %+v then gaussians", c), compose(step(c.q, c.s), gauss(c.g, c.k)), truth, eps, deltas)
		checkAgainstTruth(t, fmt.Sprintf("gaussians then step %+v", c), compose(gauss(c.g, c.k), step(c.q, c.s)), truth, eps, deltas)
	}
	// Two sampled steps of different (q, s).
	for _, c := range []struct{ q1, s1, q2, s2 float64 }{{0.3, 0.5, 1e-2, 1}, {1e-2, 0.5, 0.3, 4}} {
		if !revFull() && c.q1 != 0.3 {
			continue
		}
		rem1, add1 := bruteRemove(c.q1, c.s1), bruteAdd(c.q1, c.s1)
		rem2, add2 := bruteRemove(c.q2, c.s2), bruteAdd(c.q2, c.s2)
		truth := func(e float64) (float64, float64) {
			a, ea := revCompose(rem1, c.s1, rem2.hs, rem2.kink, e)
			b, eb := revCompose(add1, c.s1, add2.hs, add2.kink, e)
			if a >= b {
				return a, ea
			}
			return b, eb
		}
		checkAgainstTruth(t, fmt.Sprintf("steps %+v", c), compose(step(c.q1, c.s1), step(c.q2, c.s2)), truth, eps, deltas)
	}
}

// TestRevComposedSelfComposeCarry: (A.Compose(B)).SelfCompose(8) for two
// single sampled events of different (q, sigma): Compose runs them at a
// positive tilt and records the lowest index of its rounding error
// (errLo), which SelfCompose needs to carry that error to its lower tilts.
// Without that carry the bounds at (q, s) = (0.3, 0.5), (0.01, 1) were eps
// in [2.87, 36.14] at delta = 1e-10 and delta(5) in [0, 1] (measured with
// the carry removed); with it the width is about 1e-6. The same mechanism
// composed another way, A.SelfCompose(8).Compose(B.SelfCompose(8)), is a
// second computation of the same truth: both brackets hold it, so they
// must meet.
func TestRevComposedSelfComposeCarry(t *testing.T) {
	testutil.SkipOn386Short(t, "eight copies of compositions: float64")
	o := PLDOptions{Interval: 1e-3}
	for _, c := range []struct{ q1, s1, q2, s2 float64 }{{0.3, 0.5, 0.01, 1}, {0.01, 0.5, 0.3, 4}} {
		a, err := SampledGaussianPLD(c.q1, c.s1, AddRemove, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := SampledGaussianPLD(c.q2, c.s2, AddRemove, o)
		if err != nil {
			t.Fatal(err)
		}
		ab, err := a.Compose(b)
		if err != nil {
			t.Fatal(err)
		}
		x, err := ab.SelfCompose(8)
		if err != nil {
			t.Fatal(err)
		}
		a8, err := a.SelfCompose(8)
		if err != nil {
			t.Fatal(err)
		}
		b8, err := b.SelfCompose(8)
		if err != nil {
			t.Fatal(err)
		}
		y, err := a8.Compose(b8)
		if err != nil {
			t.Fatal(err)
		}
		for _, delta := range []float64{1e-12, 1e-10, 1e-6, 1e-3} {
			bx, err := x.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			by, err := y.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if !(bx.Optimistic <= by.Safe && by.Optimistic <= bx.Safe) {
				t.Errorf("%+v delta=%v: eps brackets %+v and %+v do not meet", c, delta, bx, by)
			}
			if w := bx.Width(); !(w <= 1e-4) {
				t.Errorf("%+v delta=%v: eps %+v, width %.3g > 1e-4", c, delta, bx, w)
			}
		}
		for _, eps := range []float64{0.01, 1, 5} {
			bx, err := x.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			by, err := y.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			if !(bx.Optimistic <= by.Safe && by.Optimistic <= bx.Safe) {
				t.Errorf("%+v eps=%v: delta brackets %+v and %+v do not meet", c, eps, bx, by)
			}
			if w := bx.Width(); !(w <= 1e-3) {
				t.Errorf("%+v eps=%v: delta %+v, width %.3g > 1e-3", c, eps, bx, w)
			}
		}
	}
}

// TestRevHugeSteps: 10^7 Gaussian steps (q = 1) are mu-GDP with mu =
// sqrt(10^7)/sigma.
func TestRevHugeSteps(t *testing.T) {
	if !revFull() {
		t.Skip("about 2 s")
	}
	for _, sigma := range []float64{1000, 4000} {
		p, err := SampledGaussian(1, sigma, 10_000_000, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstTruth(t, fmt.Sprintf("q=1 sigma=%v T=1e7", sigma), p, gaussTruth(math.Sqrt(1e7)/sigma), revEps, revDeltas)
	}
}

// TestRevBadInputs: NaN, infinite, negative and zero parameters are
// errors of one line, never a panic (sigma = +Inf, q = 0, eps = 0 for
// delta and a zero interval or tail mass are documented values, not
// errors).
func TestRevBadInputs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	p, err := SampledGaussianPLD(0.1, 1, AddRemove, PLDOptions{Interval: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error of more than one line: %q", name, err)
		}
	}
	for _, v := range []float64{nan, inf, -inf, -1, 0} {
		if v != 0 { // q = 0 is the PLD of no privacy loss
			check(fmt.Sprintf("SampledGaussianDeltaBounds q=%v", v), second(SampledGaussianDeltaBounds(v, 1, 1, 1, AddRemove)))
		}
		if v != inf { // sigma = +Inf is the PLD of no privacy loss
			check(fmt.Sprintf("SampledGaussianDeltaBounds sigma=%v", v), second(SampledGaussianDeltaBounds(0.1, v, 1, 1, AddRemove)))
			check(fmt.Sprintf("GaussianPLD sigma=%v", v), second(GaussianPLD(v, PLDOptions{})))
		}
		if v != 0 { // delta(0) is defined
			check(fmt.Sprintf("SampledGaussianDeltaBounds eps=%v", v), second(SampledGaussianDeltaBounds(0.1, 1, 1, v, AddRemove)))
			check(fmt.Sprintf("DeltaBounds eps=%v", v), second(p.DeltaBounds(v)))
		}
		check(fmt.Sprintf("SampledGaussianEpsilonBounds delta=%v", v), second(SampledGaussianEpsilonBounds(0.1, 1, 1, v, AddRemove)))
		check(fmt.Sprintf("EpsilonBounds delta=%v", v), second(p.EpsilonBounds(v)))
		check(fmt.Sprintf("SampledGaussianSigma q=%v", v), second(SampledGaussianSigma(t.Context(), v, 1, 1, 1e-5, AddRemove)))
		check(fmt.Sprintf("SampledGaussianSigma eps=%v", v), second(SampledGaussianSigma(t.Context(), 0.1, 1, v, 1e-5, AddRemove)))
		check(fmt.Sprintf("SampledGaussianSigma delta=%v", v), second(SampledGaussianSigma(t.Context(), 0.1, 1, 1, v, AddRemove)))
		if v != 0 { // 0 is DefaultInterval
			check(fmt.Sprintf("PLDOptions interval=%v", v), second(GaussianPLD(1, PLDOptions{Interval: v})))
			check(fmt.Sprintf("PLDOptions tail=%v", v), second(GaussianPLD(1, PLDOptions{TailMass: v})))
		}
	}
	for _, k := range []int{0, -1} {
		check(fmt.Sprintf("SelfCompose(%d)", k), second(p.SelfCompose(k)))
		check(fmt.Sprintf("SampledGaussian steps=%d", k), second(SampledGaussian(0.1, 1, k, AddRemove)))
		check(fmt.Sprintf("SampledGaussianSigma steps=%d", k), second(SampledGaussianSigma(t.Context(), 0.1, k, 1, 1e-5, AddRemove)))
	}
	check("EpsilonBounds delta=1", second(p.EpsilonBounds(1)))
	check("SampledGaussianDeltaBounds q=1.5", second(SampledGaussianDeltaBounds(1.5, 1, 1, 1, AddRemove)))
}

// TestRevReplaceOneOneStep: one replace-one step (q < 1) of SampledGaussian
// against the truth of its pair (replaceTruth1). It was accounted by
// SampledGaussianPLD, whose composition of the two directions at tilt 0
// bounded the FFT's rounding by a floor near 1e-11 under every delta: at
// q = 0.01, sigma = 1, eps(1e-12) was +Inf (two steps: 0.67; the truth is
// 0.633) and SampledGaussianSigma(q = 0.01, T = 1, eps = 5, delta = 1e-12)
// was 3.23, where sigma = 0.6 already has a true delta of 2.8e-17.
func TestRevReplaceOneOneStep(t *testing.T) {
	testutil.SkipOn386Short(t, "one and ten replace-one steps against the truth: float64")
	const q, sigma = 0.01, 1.0
	p := sharedSampled(t, q, sigma, 1, ReplaceOne)
	p2 := sharedSampled(t, q, sigma, 2, ReplaceOne)
	tr := replaceTruth1(q, sigma)
	checkAgainstTruth(t, "q=0.01 sigma=1 T=1 replace-one", p, tr, []float64{0.5, 1, 2}, []float64{1e-12, 1e-10, 1e-6})
	for _, delta := range []float64{1e-12, 1e-10} {
		b, err := p.EpsilonBounds(delta)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := p2.EpsilonBounds(delta)
		if err != nil {
			t.Fatal(err)
		}
		// One step is a post-processing of two: its eps is no larger.
		if !(b.Safe <= b2.Safe) || !(b.Width() <= 1e-4) {
			t.Errorf("delta=%v: one step eps %+v (width %.3g), two steps %+v", delta, b, b.Width(), b2)
		}
	}
	if !testing.Short() { // about 3 s
		s, err := SampledGaussianSigma(t.Context(), q, 1, 5, 1e-12, ReplaceOne)
		if err != nil {
			t.Fatal(err)
		}
		if d, e := replaceTruth1(q, 0.6)(5); !(d+e < 1e-12) || !(s <= 0.6) {
			t.Errorf("sigma for (5, 1e-12) is %v; at 0.6 the true delta is %.3g", s, d)
		}
		if d, e := replaceTruth1(q, s)(5); d-e > 1e-12 {
			t.Errorf("PRIVACY: sigma %v has true delta %.6g > 1e-12", s, d)
		}
	}
	// SelfCompose of the one step composes the step's pair (its base), as
	// before: the one step's own tilted result carried to SelfCompose's
	// lower tilts gave eps(1e-10) in [0, 9.31] at q = 0.3, 10 copies. Its
	// bracket must meet SampledGaussian's of 10 steps, and be narrow.
	one := sharedSampled(t, 0.3, 1, 1, ReplaceOne)
	ten, err := one.SelfCompose(10)
	if err != nil {
		t.Fatal(err)
	}
	direct := sharedSampled(t, 0.3, 1, 10, ReplaceOne)
	bx, err := ten.EpsilonBounds(1e-10)
	if err != nil {
		t.Fatal(err)
	}
	by, err := direct.EpsilonBounds(1e-10)
	if err != nil {
		t.Fatal(err)
	}
	if !(bx.Optimistic <= by.Safe && by.Optimistic <= bx.Safe) || !(bx.Width() <= 1e-3) {
		t.Errorf("q=0.3: one step self-composed 10 times: eps(1e-10) %+v (width %.3g), 10 steps %+v", bx, bx.Width(), by)
	}
}

// TestRevReplaceOneFloorPLD: SampledGaussianPLD's replace-one step
// (q < 1) against the truth of its pair (replaceTruth1), two-sided. It
// composed its two directions by an FFT at tilt 0, whose rounding bound
// put a floor of about 5.3e-12 under every safe delta at q = 0.01,
// sigma = 1 (Delta(5) = 5.3e-12 against a truth near 1e-43, Epsilon(1e-12)
// = +Inf against 0.6335). Its SelfCompose and Compose compose that tilt-0
// pair, as before: the ten copies' bracket must meet ten steps' and be
// narrow, and Compose with the add/remove PLD (whose composition with the
// tilted step gave Delta(0.5) in [1.4e-11, 1]) must be narrow.
func TestRevReplaceOneFloorPLD(t *testing.T) {
	testutil.SkipOn386Short(t, "one step and ten copies against the truth: float64")
	for _, c := range []struct{ q, sigma, h float64 }{{0.01, 1, 0}, {0.3, 1, 1e-3}} {
		name := fmt.Sprintf("SampledGaussianPLD(%v, %v, ReplaceOne, h=%v)", c.q, c.sigma, c.h)
		o := PLDOptions{Interval: c.h}
		p, err := SampledGaussianPLD(c.q, c.sigma, ReplaceOne, o)
		if err != nil {
			t.Fatal(err)
		}
		tr := replaceTruth1(c.q, c.sigma)
		checkAgainstTruth(t, name, p, tr, []float64{0.5, 1, 2, 5}, []float64{1e-12, 1e-10, 1e-6})
		for _, delta := range []float64{1e-12, 1e-10} {
			b, err := p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			if math.IsInf(b.Safe, 1) || !(b.Width() <= 1e-5*b.Safe) {
				t.Errorf("%s: eps(%v) %+v, relative width above 1e-5", name, delta, b)
			}
		}
		// Far out the truth is tiny (about 1e-43 at q = 0.01, eps = 5;
		// 2.5e-18 at q = 0.3): the safe delta must not stop at a floor.
		if d, e := tr(5); !(d+e < 1e-17) {
			t.Fatalf("%s: truth at eps 5 is %.3g", name, d)
		}
		if b, err := p.DeltaBounds(5); err != nil || !(b.Safe < 1e-16) {
			t.Errorf("%s: Delta(5) %+v (%v), the truth below 1e-17", name, b, err)
		}
		ten, err := p.SelfCompose(10)
		if err != nil {
			t.Fatal(err)
		}
		direct := sharedSampled(t, c.q, c.sigma, 10, ReplaceOne)
		bx, err := ten.EpsilonBounds(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		by, err := direct.EpsilonBounds(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if !(bx.Optimistic <= by.Safe && by.Optimistic <= bx.Safe) || !(bx.Width() <= 1e-4*bx.Safe) {
			t.Errorf("%s: SelfCompose(10) eps(1e-6) %+v, 10 steps %+v", name, bx, by)
		}
		ar, err := SampledGaussianPLD(c.q, c.sigma, AddRemove, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]*PLD{{p, ar}, {ar, p}} {
			x, err := pair[0].Compose(pair[1])
			if err != nil {
				t.Fatal(err)
			}
			b, err := x.DeltaBounds(0.5)
			if err != nil {
				t.Fatal(err)
			}
			if !(b.Safe-b.Optimistic <= 1e-3*b.Safe) {
				t.Errorf("%s: composed with add/remove: Delta(0.5) %+v", name, b)
			}
		}
	}
}

// TestReplaceOneStepComposedWithOthers: one replace-one step of
// SampledGaussian composed with a PLD of another base (the add/remove PLD
// of the same q, sigma and interval; a Gaussian) is composed from the
// step's pair joined below the tilted step (see splice): composed as the
// tilted step alone, Delta(0.5) with the add/remove PLD was in
// [1.4e-11, 1]. The
// bracket must be narrow, both orders, and hold the order-free truth's
// bounds: each side's Safe at least the other's Optimistic.
func TestReplaceOneStepComposedWithOthers(t *testing.T) {
	testutil.SkipOn386Short(t, "one step composed with another PLD: float64")
	for _, q := range []float64{0.01, 0.3} {
		one := sharedSampled(t, q, 1, 1, ReplaceOne)
		ar, err := SampledGaussianPLD(q, 1, AddRemove, PLDOptions{Interval: one.h})
		if err != nil {
			t.Fatal(err)
		}
		g, err := GaussianPLD(5, PLDOptions{Interval: one.h})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []struct {
			name string
			p    *PLD
		}{{"add/remove step", ar}, {"Gaussian sigma 5", g}} {
			ab, err := one.Compose(o.p)
			if err != nil {
				t.Fatal(err)
			}
			ba, err := o.p.Compose(one)
			if err != nil {
				t.Fatal(err)
			}
			x, errx := ab.DeltaBounds(0.5)
			y, erry := ba.DeltaBounds(0.5)
			if errx != nil || erry != nil {
				t.Fatalf("q=%v with %s: %v, %v", q, o.name, errx, erry)
			}
			for _, b := range []Bounds{x, y} {
				if !(b.Safe-b.Optimistic <= 1e-3*b.Safe) {
					t.Errorf("q=%v with %s: Delta(0.5) in [%v, %v], want a relative width at most 1e-3", q, o.name, b.Optimistic, b.Safe)
				}
			}
			if x.Safe < y.Optimistic || y.Safe < x.Optimistic {
				t.Errorf("q=%v with %s: Delta(0.5) in [%v, %v] one way, [%v, %v] the other: disjoint", q, o.name, x.Optimistic, x.Safe, y.Optimistic, y.Safe)
			}
		}
	}
}
