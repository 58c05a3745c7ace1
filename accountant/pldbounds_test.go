package accountant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"gonum.org/v1/gonum/dsp/fourier"
)

// TestPLDBoundsIssueExample: q = 0.01, sigma = 4, 1000 steps at
// delta = 1e-10, where the true eps lies in [0.4685, 0.4696] (issue 20;
// the previous accountant, with a fixed allowance of 7e-11, said 0.4863).
func TestPLDBoundsIssueExample(t *testing.T) {
	t.Parallel()
	b, err := SampledGaussianEpsilonBounds(0.01, 4, 1000, 1e-10, AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	if !(b.Safe >= 0.4685 && b.Safe <= 0.4696*(1+1e-3)) || !(b.Optimistic <= 0.4696) || !(b.Optimistic <= b.Safe) {
		t.Errorf("eps bounds %+v, want safe in [0.4685, 0.4696 (1 + 1e-3)] and the interval to meet [0.4685, 0.4696]", b)
	}
	if w := b.Width(); !(w <= 1e-3) {
		t.Errorf("relative width %.3g > 1e-3 (%+v)", w, b)
	}
}

// TestPLDBoundsGaussianExact: at q = 1 the steps are Gaussian mechanisms,
// whose composition is exactly mu-GDP (Balle & Wang's closed form, [Delta]):
// the exact delta and eps must lie between the optimistic and safe values.
func TestPLDBoundsGaussianExact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sigma float64
		k     int
	}{{1, 1}, {3, 10}, {20, 1000}, {0.5 * math.Sqrt(1e4), 10000}} {
		p, err := SampledGaussian(1, c.sigma, c.k, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		mu := math.Sqrt(float64(c.k)) / c.sigma
		for _, eps := range []float64{0.1, 0.5, 1, 2, 5} {
			b, err := p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := Delta(eps, mu)
			if !(b.Optimistic <= exact && exact <= b.Safe) {
				t.Errorf("sigma=%v k=%d eps=%v: exact delta %.12g outside [%.12g, %.12g]", c.sigma, c.k, eps, exact, b.Optimistic, b.Safe)
			}
		}
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			b, err := p.EpsilonBounds(delta)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := Epsilon(c.sigma, delta, c.k, Exact)
			if !(b.Optimistic <= exact && exact <= b.Safe) {
				t.Errorf("sigma=%v k=%d delta=%v: exact eps %.12g outside [%.12g, %.12g]", c.sigma, c.k, delta, exact, b.Optimistic, b.Safe)
			}
			if delta == 1e-10 && !(b.Width() <= 1e-3) {
				t.Errorf("sigma=%v k=%d: width %.3g at delta 1e-10", c.sigma, c.k, b.Width())
			}
		}
	}
}

// TestPLDBoundsPublished: the published values of docs/notes (Gaussian
// sigma = sqrt 3, 3 compositions, delta(1) = 0.126936; Poisson q = 0.2,
// sigma = 0.5, 3 compositions, delta(1) = 0.15594) within the bounds, to
// the published digits.
func TestPLDBoundsPublished(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		q, sigma, want, digits float64
	}{{1, math.Sqrt(3), 0.126936, 1e-6}, {0.2, 0.5, 0.15594, 1e-5}} {
		b, err := SampledGaussianDeltaBounds(c.q, c.sigma, 3, 1, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		if !(b.Optimistic <= c.want+c.digits && b.Safe >= c.want-c.digits) {
			t.Errorf("q=%v sigma=%v: delta(1) in [%.8g, %.8g], published %v", c.q, c.sigma, b.Optimistic, b.Safe, c.want)
		}
	}
}

// shortSampled returns SampledGaussian(q, sigma, steps, AddRemove), on a
// grid of 2^14 points instead of 2^17 under -short: the properties the
// tests check with it (both sides bound the truth, ordered, monotone)
// hold on every grid. The PLD is shared with the tests that ask for the
// same one (sharedSampledBudget).
func shortSampled(t *testing.T, q, sigma float64, steps int) *PLD {
	return shortSampledRel(t, q, sigma, steps, AddRemove)
}

// shortSampledRel is shortSampled under the relation rel.
func shortSampledRel(t *testing.T, q, sigma float64, steps int, rel Relation) *PLD {
	t.Helper()
	budget := gridBudget
	if testing.Short() {
		budget = coarseBudget
	}
	return sharedSampledBudget(t, q, sigma, steps, rel, budget)
}

// TestPLDBoundsRandom: for random (q, sigma, steps), the bounds are ordered,
// monotone in sigma, and the safe eps is at most the RDP upper bound of
// the same mechanism at q = 1 (the unsampled Gaussian, which dominates the
// sampled one) computed independently by the closed form.
func TestPLDBoundsRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(20, 5))
	draws := 4
	if testing.Short() {
		draws = 2 // the first two of the same draws
	}
	for range draws {
		q := math.Pow(10, -3*r.Float64())
		sigma := 0.5 + 5*r.Float64()
		k := 1 + r.IntN(300)
		b1, err := shortSampled(t, q, sigma, k).EpsilonBounds(1e-8)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := shortSampled(t, q, sigma*1.1, k).EpsilonBounds(1e-8)
		if err != nil {
			t.Fatal(err)
		}
		if !(b1.Optimistic <= b1.Safe && b2.Optimistic <= b2.Safe && b2.Safe <= b1.Safe && b2.Optimistic <= b1.Optimistic) {
			t.Errorf("q=%v sigma=%v k=%d: bounds %+v, at 1.1 sigma %+v: not ordered or not monotone", q, sigma, k, b1, b2)
		}
		exact, _ := Epsilon(sigma, 1e-8, k, Exact)
		if b1.Safe > exact*(1+1e-9) {
			t.Errorf("q=%v sigma=%v k=%d: safe eps %.12g above the unsampled Gaussian's %.12g", q, sigma, k, b1.Safe, exact)
		}
	}
}

// TestPLDBoundsMonteCarlo checks both sides against a second method: a
// Monte Carlo estimate of delta(eps) = E_P[(1 - e^(eps - L))_+] for T steps
// of the Poisson-subsampled Gaussian in each direction, with the per-step
// losses written out here from the pairs' densities. The integrand lies in
// [0, 1], so by Hoeffding's inequality the estimate from N samples is within
// t = sqrt(log(2/p) / (2 N)) of the truth except with probability p; with
// p = 1e-9 per comparison (4 comparisons per case) the test fails falsely
// with probability below 1e-8 (it is seeded, so it is deterministic).
func TestPLDBoundsMonteCarlo(t *testing.T) {
	t.Parallel()
	n := 100000
	if testing.Short() {
		n = 25000 // a tolerance twice as wide, the same false-failure rate
	}
	tol := math.Sqrt(math.Log(2/1e-9) / (2 * float64(n)))
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range []struct {
		q, sigma float64
		steps    int
		eps      float64
	}{{0.2, 1, 10, 0.5}, {0.05, 0.7, 30, 0.3}, {0.5, 2, 5, 0.2}} {
		s2 := c.sigma * c.sigma
		// remove: x ~ (1-q) N(0, s^2) + q N(1, s^2), L = log(1 - q + q e^((2x-1)/(2 s^2)));
		// add: y ~ N(0, s^2), L = -log(1 - q + q e^((-2y-1)/(2 s^2))).
		mc := func(remove bool) float64 {
			sum := 0.0
			for range n {
				l := 0.0
				for range c.steps {
					x := c.sigma * r.NormFloat64()
					if remove {
						if r.Float64() < c.q {
							x++
						}
						l += math.Log(1 - c.q + c.q*math.Exp((2*x-1)/(2*s2)))
					} else {
						l -= math.Log(1 - c.q + c.q*math.Exp((-2*x-1)/(2*s2)))
					}
				}
				if l > c.eps {
					sum += -math.Expm1(c.eps - l)
				}
			}
			return sum / float64(n)
		}
		truth := math.Max(mc(true), mc(false))
		b, err := shortSampled(t, c.q, c.sigma, c.steps).DeltaBounds(c.eps)
		if err != nil {
			t.Fatal(err)
		}
		if !(b.Optimistic <= truth+tol && b.Safe >= truth-tol) {
			t.Errorf("q=%v sigma=%v T=%d eps=%v: bounds [%.6g, %.6g], Monte Carlo %.6g +- %.3g", c.q, c.sigma, c.steps, c.eps, b.Optimistic, b.Safe, truth, tol)
		}
	}
}

// TestPLDBoundsOneStepKL checks one step's discretisations against the
// true KL divergence E_P[L] of the Poisson-subsampled Gaussian, computed
// here by Simpson's rule from the pair's densities (a second method): the
// pessimistic pair dominates the true one and the optimistic pair is
// dominated by it, so their KL divergences bracket the truth, and both
// errors are second order in h. The cases are those where most of a step's
// mass lies within a few intervals of log(1-q) (on the grids the automatic
// choice starts from at 10^6 steps), where the optimistic side used to
// round that mass down by up to h (a first-order error: at q = 1e-3,
// sigma = 1 its KL was 7% low, 70 h^2) and the pessimistic side rounded
// the add direction's up. (On coarser grids, with log(1-q) within about
// 3 intervals of 0, the optimistic error is still first order; the
// automatic grid refines them, see refineInterval.)
func TestPLDBoundsOneStepKL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ q, sigma, h float64 }{
		{1e-3, 1, 8.192703090200539e-05}, {1e-2, 0.5, 0.0045756723393067565}, {1e-3, 0.5, 0.0004575672339306757 / 2},
		{1e-2, 0.5, 0.00114}, {0.1, 2, 1e-3},
	} {
		q, s := c.q, c.sigma
		s2 := s * s
		phi := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
		// remove: x ~ (1-q) N(0, s^2) + q N(1, s^2), L = log(1 - q + q e^((2x-1)/(2 s^2)));
		// add: y ~ N(0, s^2), L = -log(1 - q + q e^((-2y-1)/(2 s^2))).
		kl := func(remove bool) float64 {
			f := func(x float64) float64 {
				if remove {
					return ((1-q)*phi(x/s) + q*phi((x-1)/s)) / s * math.Log1p(q*math.Expm1((2*x-1)/(2*s2)))
				}
				return phi(x/s) / s * -math.Log1p(q*math.Expm1((-2*x-1)/(2*s2)))
			}
			a, b, n := -14*s, 1+14*s, 100000
			w := (b - a) / float64(n)
			sum := f(a) + f(b)
			for i := 1; i < n; i++ {
				sum += float64(2+2*(i%2)) * f(a+float64(i)*w)
			}
			return sum * w / 3
		}
		p, err := SampledGaussianPLD(q, s, AddRemove, PLDOptions{Interval: c.h, TailMass: 1e-26})
		if err != nil {
			t.Fatal(err)
		}
		h := p.h
		mean := func(d *lossDist) (m, scale float64) {
			for i, v := range d.mass {
				l := float64(d.lo+i) * h
				m += v * l
				scale += math.Abs(v * l)
			}
			return m, scale
		}
		for i, dir := range []string{"remove", "add"} {
			truth := kl(i == 0)
			pes, sp := mean([]*lossDist{p.remove, p.add}[i])
			opt, so := mean([]*lossDist{p.removeOpt, p.addOpt}[i])
			tol := 1e-9*(sp+so) + 1e-9*truth
			if !(opt <= truth+tol && truth <= pes+tol) {
				t.Errorf("q=%v sigma=%v h=%.3g %s: KL of the sides [%.10g, %.10g], true %.10g", q, s, h, dir, opt, pes, truth)
			}
			if !(pes-opt <= h*h) {
				t.Errorf("q=%v sigma=%v h=%.3g %s: KL of the sides %.10g apart (%.3g h^2), want at most h^2 (second order)", q, s, h, dir, pes-opt, (pes-opt)/(h*h))
			}
		}
	}
}

// TestPLDBoundsWidth: points of the target box where the width used to
// exceed 1e-3 at delta = 1e-10 (1.3e-2 at q = 1e-3, sigma = 1, 10^6 steps;
// 0.39 at q = 0.01, sigma = 0.5), now within it; and the bounds of two
// different grids (the automatic one and the calibration's coarse one)
// overlap: each side bounds the same truth whatever the grid, so neither
// grid's safe eps may lie below the other's optimistic one.
func TestPLDBoundsWidth(t *testing.T) {
	t.Parallel()
	cases := []struct {
		q, sigma float64
		steps    int
	}{{0.01, 0.5, 10000}, {0.01, 1, 100000}, {0.001, 1, 100000}, {0.001, 0.5, 100000}}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, c := range cases {
		b, err := SampledGaussianEpsilonBounds(c.q, c.sigma, c.steps, 1e-10, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		if w := b.Width(); !(w <= 1e-3) {
			t.Errorf("q=%v sigma=%v T=%d: relative width %.3g > 1e-3 (%+v)", c.q, c.sigma, c.steps, w, b)
		}
		p, err := sampledGaussian(c.q, c.sigma, c.steps, AddRemove, sampledOpts{budget: coarseBudget})
		if err != nil {
			t.Fatal(err)
		}
		bc, err := p.EpsilonBounds(1e-10)
		if err != nil {
			t.Fatal(err)
		}
		if !(bc.Optimistic <= b.Safe && b.Optimistic <= bc.Safe) {
			t.Errorf("q=%v sigma=%v T=%d: bounds %+v and, on the coarse grid, %+v do not overlap", c.q, c.sigma, c.steps, b, bc)
		}
	}
}

// ddConvolve returns the linear convolution of a and b in double-words
// (direct sums of non-negative products: each entry within a relative
// few 1e-30 of the exact one), as hi and lo parts.
func ddConvolve(ah, al, bh, bl []float64) (ch, cl []float64) {
	ch = make([]float64, len(ah)+len(bh)-1)
	cl = make([]float64, len(ch))
	for i := range ah {
		for j := range bh {
			ph, pl := ddfloat.Mul(ah[i], al[i], bh[j], bl[j])
			ch[i+j], cl[i+j] = ddfloat.Add(ch[i+j], cl[i+j], ph, pl)
		}
	}
	return ch, cl
}

// TestKthPowerBound: kthPower's per-entry error bound, with and without
// the double-word refinement, holds against the k-fold convolution
// computed by direct sums in double-words (a second algorithm), for a step
// with a bulk and a thin tail spanning 12 orders of magnitude (the shape
// of a sampled Gaussian's loss at small q); and the refinement lowers the
// bound by more than tenfold.
func TestKthPowerBound(t *testing.T) {
	t.Parallel()
	const k, L = 64, 24
	seq0 := make([]float64, L)
	for i := range 8 { // bulk: binomial(7, 1/2) masses
		c := 1.0
		for j := range i {
			c = c * float64(7-j) / float64(j+1)
		}
		seq0[i] = c / 128 * (1 - 1e-6)
	}
	for i := 8; i < L; i++ { // tail: 1e-6 in all, decaying geometrically
		seq0[i] = 1e-6 * math.Pow(0.2, float64(i-8)) * 0.8
	}
	full := k*(L-1) + 1
	n := fastLen(full)
	seq := make([]float64, n)
	copy(seq, seq0)
	// Reference: repeated squaring by direct double-word convolution.
	rh, rl := []float64{1}, []float64{0}
	ph, pl := slices.Clone(seq0), make([]float64, L)
	for e := k; e > 0; e >>= 1 {
		if e&1 == 1 {
			rh, rl = ddConvolve(rh, rl, ph, pl)
		}
		if e > 1 {
			ph, pl = ddConvolve(ph, pl, ph, pl)
		}
	}
	tr := fourier.NewFFT(n)
	spec := tr.Coefficients(nil, seq)
	var bounds [2]float64
	for i, refine := range []bool{false, true} {
		w, per := kthPower(nil, tr, seq, spec, k, refine)
		worst := 0.0
		for s := range n {
			ref := 0.0
			if s < len(rh) {
				ref = rh[s] + rl[s]
			}
			worst = math.Max(worst, math.Abs(w[s]-ref))
		}
		t.Logf("refine=%v: worst error %.3g, bound %.3g", refine, worst, per)
		if !(worst <= per) {
			t.Errorf("refine=%v: error %.3g above the bound %.3g", refine, worst, per)
		}
		bounds[i] = per
	}
	if !(bounds[1] < bounds[0]/10) {
		t.Errorf("refined bound %.3g not below a tenth of the float64 one %.3g", bounds[1], bounds[0])
	}
}

// sampledRDPEpsilon returns an upper bound on the eps at delta of steps
// compositions of the Poisson-subsampled Gaussian (add/remove): the RDP of
// integer orders alpha in closed form (Mironov, Talwar & Zhang 2019,
// section 3.3: A_alpha = sum_j C(alpha, j) (1-q)^(alpha-j) q^j
// e^((j^2 - j) / (2 sigma^2))) converted by eps = steps RDP + log(1/delta)
// / (alpha - 1), minimised over alpha: a loose bound independent of the
// PLD.
func sampledRDPEpsilon(q, sigma float64, steps int, delta float64) float64 {
	best := math.Inf(1)
	for alpha := 2; alpha <= 256; alpha++ {
		logA := math.Inf(-1)
		for j := 0; j <= alpha; j++ {
			lc, _ := math.Lgamma(float64(alpha + 1))
			l1, _ := math.Lgamma(float64(j + 1))
			l2, _ := math.Lgamma(float64(alpha - j + 1))
			term := lc - l1 - l2 + float64(alpha-j)*math.Log1p(-q) + float64(j)*math.Log(q) +
				float64(j*j-j)/(2*sigma*sigma)
			logA = logAdd(logA, term)
		}
		a := float64(alpha)
		best = math.Min(best, float64(steps)*logA/(a-1)+math.Log(1/delta)/(a-1))
	}
	return best
}

// TestPLDBoundsRareLosses: q = 1e-4, sigma = 1, 1000 steps, where most of
// delta(1e-10) comes from rare steps of large loss and the float64 FFT's
// rounding bound was about half of delta (width 0.17): the width is at
// most 1e-3, the sides are ordered, and the safe eps is at most the RDP
// bound (with about 1% slack for RDP's own rounding).
func TestPLDBoundsRareLosses(t *testing.T) {
	if testing.Short() {
		t.Skip("about 2.5 s of CPU")
	}
	t.Parallel()
	b, err := SampledGaussianEpsilonBounds(1e-4, 1, 1000, 1e-10, AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	rdp := sampledRDPEpsilon(1e-4, 1, 1000, 1e-10)
	t.Logf("bounds %+v, width %.3g, RDP %.6g", b, b.Width(), rdp)
	if !(b.Optimistic <= b.Safe) || !(b.Safe <= rdp*1.01) {
		t.Errorf("bounds %+v not ordered or above the RDP bound %.6g", b, rdp)
	}
	if w := b.Width(); !(w <= 1e-3) {
		t.Errorf("width %.3g > 1e-3 (%+v)", w, b)
	}
}

// TestPLDBoundsLargeTiltFinite: at a large sigma one step's optimistic
// distribution sits on two grid points next to zero loss, the composition's
// Chernoff tilt is in the thousands per grid step, and the zero masses the
// step keeps above its support got the weight e^(t (i - last)) = +Inf:
// 0 * Inf made the optimistic delta NaN (dpacct delta -sigma 4e6 -eps 1e-6
// -sampling 0.01 -steps 100 printed delta_optimistic=NaN, and with -json
// failed). Both sides must be numbers, ordered, and the optimistic one at
// most the delta of the unsampled Gaussian with mu = sqrt(k)/sigma (the
// closed form), which dominates the sampled one.
func TestPLDBoundsLargeTiltFinite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		q, sigma float64
		k        int
	}{{0.01, 4e6, 100}, {0.01, 4e6, 2}, {0.5, 1e9, 10}, {1e-3, 1e6, 2}} {
		p, err := SampledGaussian(c.q, c.sigma, c.k, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		mu := math.Sqrt(float64(c.k)) / c.sigma
		for _, eps := range []float64{0, 1e-10, 1e-6, 1} {
			b, err := p.DeltaBounds(eps)
			if err != nil {
				t.Fatal(err)
			}
			gauss := 1.0 // Delta needs eps > 0; at 0 only the ordering is checked
			if eps > 0 {
				if gauss, err = Delta(eps, mu); err != nil {
					t.Fatal(err)
				}
			}
			if !(0 <= b.Optimistic && b.Optimistic <= b.Safe && b.Safe <= 1 && b.Optimistic <= gauss*(1+1e-12)) {
				t.Errorf("q=%v sigma=%v k=%d eps=%v: delta bounds %+v, want 0 <= optimistic <= safe <= 1 and optimistic <= %v (unsampled Gaussian)",
					c.q, c.sigma, c.k, eps, b, gauss)
			}
		}
		b, err := p.EpsilonBounds(1e-10)
		if err != nil {
			t.Fatal(err)
		}
		if !(0 <= b.Optimistic && b.Optimistic <= b.Safe && !math.IsInf(b.Safe, 1)) {
			t.Errorf("q=%v sigma=%v k=%d: eps bounds at 1e-10 %+v, want 0 <= optimistic <= safe < Inf", c.q, c.sigma, c.k, b)
		}
	}
}
