package audit

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpmf/dpmf/accountant"
)

// bigBinomPMF returns Pr[Bin(n, a/b) = k] for k = 0..n, computed in
// big.Float at 256 bits from (1 - q)^n by the ratio pmf(k+1) / pmf(k) =
// (n - k) q / ((k + 1) (1 - q)): no logarithm, no lgamma, no underflow.
func bigBinomPMF(n int, a, b int64) []*big.Float {
	const prec = 256
	q := new(big.Float).SetPrec(prec).Quo(big.NewFloat(float64(a)).SetPrec(prec), big.NewFloat(float64(b)).SetPrec(prec))
	q1 := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1).SetPrec(prec), q)
	ratio := new(big.Float).SetPrec(prec).Quo(q, q1)
	p0 := big.NewFloat(1).SetPrec(prec)
	for range n {
		p0.Mul(p0, q1)
	}
	pmf := make([]*big.Float, n+1)
	pmf[0] = p0
	for k := 0; k < n; k++ {
		x := new(big.Float).SetPrec(prec).Mul(pmf[k], ratio)
		x.Mul(x, big.NewFloat(float64(n-k)).SetPrec(prec))
		x.Quo(x, big.NewFloat(float64(k+1)).SetPrec(prec))
		pmf[k+1] = x
	}
	return pmf
}

// bigPValue is the one-run p-value of Steinke, Nasr and Jagielski
// (Theorem 3.1 with the delta term), Pr[Bin(r, q) >= v] + 2 m delta
// max_{1<=i<=v} Pr[v-i <= Bin(r, q) < v] / i with q = a/b, summed in
// big.Float.
func bigPValue(m, r, v int, a, b int64, delta float64) float64 {
	if v <= 0 {
		return 1
	}
	pmf := bigBinomPMF(r, a, b)
	tail := new(big.Float).SetPrec(256)
	for k := v; k <= r; k++ {
		tail.Add(tail, pmf[k])
	}
	alpha := new(big.Float).SetPrec(256)
	sum := new(big.Float).SetPrec(256)
	x := new(big.Float).SetPrec(256)
	den := new(big.Float).SetPrec(256)
	for i := 1; i <= v; i++ {
		if v-i <= r {
			sum.Add(sum, pmf[v-i])
		}
		x.Quo(sum, den.SetInt64(int64(i)))
		if x.Cmp(alpha) > 0 {
			alpha.Set(x)
		}
	}
	alpha.Mul(alpha, big.NewFloat(2*float64(m)*delta))
	tail.Add(tail, alpha)
	f, _ := tail.Float64()
	return math.Min(1, f)
}

// TestOneRunPValueBigFloat compares OneRunPValue with the binomial sums
// done exactly (big.Float, 256 bits) for q = a/b, eps = log(a / (b - a)):
// no correct guess, one guess, all guesses right, tiny and huge r, tails
// far out (1e-100 and below), eps = 0, and the delta term. One case is by
// hand: m = 5, r = v = 2, q = 3/4, delta = 0.01 gives 9/16 + 2 * 5 *
// 0.01 * max(6/16, 7/32) = 0.6.
func TestOneRunPValueBigFloat(t *testing.T) {
	if got := OneRunPValue(5, 2, 2, math.Log(3), 0.01); math.Abs(got-0.6) > 1e-14 {
		t.Errorf("m 5, r = v = 2, q = 3/4, delta 0.01: %v, by hand 0.6", got)
	}
	cases := []struct {
		m, r, v int
		a, b    int64
		delta   float64
	}{
		{10, 1, 0, 3, 4, 0.01},
		{10, 1, 1, 3, 4, 0},
		{10, 1, 1, 3, 4, 0.01},
		{5, 2, 2, 3, 4, 0.01},
		{50, 50, 50, 3, 4, 0},
		{50, 50, 50, 99, 100, 1e-3},
		{100, 100, 1, 1, 2, 1e-3},
		{1000, 1000, 800, 3, 4, 0},
		{1000, 1000, 800, 3, 4, 1e-4},
		{1000, 1000, 950, 1, 2, 0},
		{1000, 500, 480, 9, 10, 1e-5},
		{1595, 1594, 1233, 7, 10, 1e-3},
		{200000, 100000, 75500, 3, 4, 1e-6},
		{20000, 20000, 20000, 1023, 1024, 0},
	}
	for _, c := range cases {
		want := bigPValue(c.m, c.r, c.v, c.a, c.b, c.delta)
		eps := math.Log(float64(c.a) / float64(c.b-c.a))
		got := OneRunPValue(c.m, c.r, c.v, eps, c.delta)
		tol := 1e-11
		if c.r >= 10000 {
			tol = 1e-8 // lgamma of 1e5 is exact to about 1e-10 absolute
		}
		if !(math.Abs(got-want) <= tol*want) {
			t.Errorf("m %d r %d v %d q %d/%d delta %g: %v, exact %v (relative error %.2g)", c.m, c.r, c.v, c.a, c.b, c.delta, got, want, math.Abs(got-want)/want)
		}
	}
}

// binomCritical returns the least c with Pr[Bin(n, a/b) >= c] <= alpha,
// from the exact pmf: a count of misses at or above c fails a test whose
// false-failure probability is at most alpha.
func binomCritical(n int, a, b int64, alpha float64) int {
	pmf := bigBinomPMF(n, a, b)
	tail := new(big.Float).SetPrec(256)
	lim := big.NewFloat(alpha)
	for c := n; c >= 0; c-- {
		tail.Add(tail, pmf[c])
		if tail.Cmp(lim) > 0 {
			return c + 1
		}
	}
	return 0
}

// TestOneRunEpsilonCoverage: against eps-randomized response, whose
// guesses are each right with probability exactly q = e^eps / (1 + e^eps)
// (the mechanism that makes Theorem 3.1 tight), the lower bound at level p
// exceeds the true eps in at most a fraction p of the runs. The number of
// exceedances in N runs is tested against Bin(N, p): a false failure has
// probability at most 1e-6.
func TestOneRunEpsilonCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const eps, p = 1.0, 0.05
	q := math.Exp(eps) / (1 + math.Exp(eps))
	reps := 4000
	if testing.Short() {
		reps = 1000
	}
	limit := binomCritical(reps, 5, 100, 1e-6)
	for _, mr := range [][2]int{{100, 100}, {300, 60}} {
		m, r := mr[0], mr[1]
		over := 0
		for range reps {
			v := 0
			for range r {
				if rng.Float64() < q {
					v++
				}
			}
			if OneRunEpsilon(m, r, v, 0, p) > eps {
				over++
			}
		}
		t.Logf("m %d, r %d: %d of %d bounds above eps = %v (limit %d)", m, r, over, reps, eps, limit)
		if over >= limit {
			t.Errorf("m %d, r %d: %d of %d lower bounds above the true eps; at level %v at most %d expected (false failure 1e-6)", m, r, over, reps, p, limit)
		}
	}
}

// TestOneRunBoundGaussian: with the scores of the canary audit's Gaussian
// mechanism (canary j's score N(+-w_j mu / 2, 1), weights w_j <= 1, ranked
// by w_j T_j as Canary ranks them), the lower bound of oneRunBound (the
// grid with its Bonferroni correction) exceeds the true eps of mu-GDP at
// delta (from the accountant) in at most a fraction 1 - confidence of the
// runs: a binomial test with false-failure probability 1e-6.
func TestOneRunBoundGaussian(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	reps := 300
	if testing.Short() {
		reps = 100
	}
	limit := binomCritical(reps, 5, 100, 1e-6)
	for _, c := range []struct{ mu, delta float64 }{{1.45, 1e-3}, {4, 1e-5}, {8, 1e-6}} {
		trueEps, err := accountant.Epsilon(1/c.mu, c.delta, 1, accountant.Exact)
		if err != nil {
			t.Fatal(err)
		}
		const m = 400
		over, best := 0, 0.0
		for range reps {
			ranked := make([]float64, m)
			in := make([]bool, m)
			for j := range ranked {
				w := 1.0
				if j > 0 {
					w = 0.5 + 0.5*rng.Float64()
				}
				in[j] = rng.IntN(2) == 1
				mean := w * c.mu / 2
				if !in[j] {
					mean = -mean
				}
				ranked[j] = w * (mean + rng.NormFloat64())
			}
			b := oneRunBound(ranked, in, c.delta, 0.95)
			best = math.Max(best, b.Epsilon)
			if b.Epsilon > trueEps {
				over++
			}
		}
		t.Logf("mu %v, delta %v: true eps %.4f, largest bound %.4f, %d of %d above (limit %d)", c.mu, c.delta, trueEps, best, over, reps, limit)
		if over >= limit {
			t.Errorf("mu %v: %d of %d bounds above the true eps %v (limit %d, false failure 1e-6)", c.mu, over, reps, trueEps, limit)
		}
	}
}

// TestOneRunEpsilonFirstCrossing: the bound is the first eps that the
// observation does not reject, so that a bound above the true eps implies
// the true eps was rejected: every eps in [0, bound] has a p-value below
// the level (checked on a grid), and the bound plus 1e-9 does not.
func TestOneRunEpsilonFirstCrossing(t *testing.T) {
	for _, c := range []struct {
		m, r, v int
		delta   float64
	}{{100, 100, 90, 0}, {1000, 500, 420, 1e-4}, {1595, 1594, 1233, 1e-3}, {1000, 20, 20, 1e-3}, {50, 50, 50, 1e-5}} {
		const p = 0.05 / 6
		e := OneRunEpsilon(c.m, c.r, c.v, c.delta, p)
		for k := 0; k <= 200; k++ {
			x := e * float64(k) / 200
			if pv := OneRunPValue(c.m, c.r, c.v, x, c.delta); e > 0 && !(pv < p) {
				t.Errorf("%+v: bound %v, but eps %v has p-value %v >= %v", c, e, x, pv, p)
				break
			}
		}
		if pv := OneRunPValue(c.m, c.r, c.v, e+1e-9, c.delta); pv < p {
			t.Errorf("%+v: bound %v, but %v is rejected too (p-value %v)", c, e, e+1e-9, pv)
		}
		t.Logf("%+v: bound %.6f", c, e)
	}
}

// TestOneRunPValueLargeEps: as eps grows q = e^eps / (1 + e^eps) tends to
// 1, so for 1 <= v <= r the tail Pr[Bin(r, q) >= v] tends to 1 and the
// p-value is 1 (for eps = 800, 1 - q = e^-800 is below every float64 and
// q^r = 1 exactly): a number in [0, 1], never NaN, up to eps = +Inf.
func TestOneRunPValueLargeEps(t *testing.T) {
	for _, eps := range []float64{710, 800, 1e4, math.MaxFloat64, math.Inf(1)} {
		for _, rv := range [][2]int{{10, 10}, {10, 5}, {10, 1}} {
			if got := OneRunPValue(10, rv[0], rv[1], eps, 1e-3); got != 1 {
				t.Errorf("eps %v, r %d, v %d: p-value %v, want 1", eps, rv[0], rv[1], got)
			}
		}
	}
}

// TestEstimateMuLevelNearOne: the interval's half-width is z se with
// 2 (1 - Phi(z)) = 1 - level, checked against math.Erfc (Erfc(z / sqrt 2)
// = 1 - level) and the standard error of the docs' formula computed here,
// for levels up to 1 - 2^-53 (0.9999999999999999, which -level accepts):
// there (1 + level) / 2 rounded to 1 and the interval came out
// [-Inf, +Inf], which JSON cannot encode.
func TestEstimateMuLevelNearOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const m = 200
	scores, in, w := make([]float64, m), make([]bool, m), make([]float64, m)
	sxx := 0.0
	for j := range scores {
		in[j] = j%2 == 0
		w[j] = 1
		scores[j] = -0.7 + rng.NormFloat64()
		if in[j] {
			scores[j] += 1.4
		}
		sxx += 0.25
	}
	for _, level := range []float64{0.5, 0.99, 1 - 1e-9, 1 - 1e-12, 1 - 0x1p-52, 1 - 0x1p-53} {
		est, err := estimateMu(scores, in, w, level)
		if err != nil {
			t.Fatal(err)
		}
		se := math.Sqrt(1/sxx + est.Mu*est.Mu/(2*(m-1)))
		z := (est.Hi - est.Mu) / se
		if !(math.Abs(math.Erfc(z/math.Sqrt2)-(1-level)) <= 1e-9*(1-level)) || !(math.Abs(est.Mu-est.Lo-z*se) <= 1e-12*z*se) {
			t.Errorf("level %v: interval [%v, %v] around %v: z %v, Erfc(z / sqrt 2) %v, want 1 - level = %v", level, est.Lo, est.Hi, est.Mu, z, math.Erfc(z/math.Sqrt2), 1-level)
		}
	}
}

// TestCanaryBoundBelowTrueEps runs the whole canary audit (real roles,
// identity and optimal strategies, n = 10, R = 100, tau = 3) over several
// seeds and counts, for each observer, the runs whose one-run bound
// exceeds the run's true eps: that of mu-GDP with mu = sensitivity /
// noise std at the run's delta, from the accountant. At confidence 0.95 a
// count at or above the binomial test's limit (false failure 1e-6) fails.
// The test is weak (few runs); TestOneRunEpsilonCoverage and
// TestOneRunBoundGaussian test the bound with many.
func TestCanaryBoundBelowTrueEps(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 8 // the least count that can fail at 1e-6 is then 6 of 8
	}
	limit := binomCritical(seeds, 5, 100, 1e-6)
	for _, name := range []string{"identity", "optimal"} {
		overAll, overFinal := 0, 0
		for seed := range seeds {
			s := mustSetup(t, canaryPlan(name, 5, uint64(100+seed)))
			rep, err := Canary(context.Background(), s, CanaryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			trueEps, err := accountant.Epsilon(s.Privacy.NoiseStd/s.Privacy.Sensitivity, s.Privacy.Delta, 1, accountant.Exact)
			if err != nil {
				t.Fatal(err)
			}
			if rep.AllIterates.Bound.Epsilon > trueEps {
				overAll++
			}
			if rep.FinalModel.Bound.Epsilon > trueEps {
				overFinal++
			}
			if seed == 0 {
				t.Logf("%s: true eps %.4f, bounds %.4f (all iterates), %.4f (final model)", name, trueEps, rep.AllIterates.Bound.Epsilon, rep.FinalModel.Bound.Epsilon)
			}
		}
		if overAll >= limit || overFinal >= limit {
			t.Errorf("%s: bounds above the true eps in %d (all iterates) and %d (final model) of %d runs; limit %d", name, overAll, overFinal, seeds, limit)
		}
	}
}

// TestOneRunOutsideDomain: counts and parameters outside Theorem 3.1's
// domain give NaN, not a number. Before, 8 correct guesses out of 5 gave
// a p-value of 0 and a "lower bound" of 512, and p = 2 rejected every eps.
func TestOneRunOutsideDomain(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		m, r, v int
		eps, d  float64
	}{
		{10, 5, 8, 1, 0},     // v > r
		{3, 5, 5, 1, 0.1},    // r > m
		{10, 5, -1, 1, 0},    // v < 0
		{10, 10, 10, 1, 2},   // delta > 1
		{10, 10, 10, 1, -1},  // delta < 0
		{10, 10, 10, 1, nan}, // delta NaN
		{10, 10, 10, -1, 0},  // eps < 0
		{10, 10, 10, nan, 0}, // eps NaN
	} {
		if pv := OneRunPValue(c.m, c.r, c.v, c.eps, c.d); !math.IsNaN(pv) {
			t.Errorf("%+v: p-value %v, want NaN", c, pv)
		}
	}
	for _, c := range []struct {
		m, r, v int
		d, p    float64
	}{
		{10, 5, 8, 0, 0.05},     // v > r
		{3, 5, 5, 0.1, 0.05},    // r > m
		{10, 5, -1, 0, 0.05},    // v < 0
		{10, 10, 10, 2, 0.05},   // delta > 1
		{10, 10, 10, nan, 0.05}, // delta NaN
		{10, 10, 10, 0, 0},      // p = 0
		{10, 10, 10, 0, 2},      // p > 1
		{10, 10, 10, 0, nan},    // p NaN
	} {
		if e := OneRunEpsilon(c.m, c.r, c.v, c.d, c.p); !math.IsNaN(e) {
			t.Errorf("%+v: bound %v, want NaN", c, e)
		}
	}
	if pv := OneRunPValue(10, 10, 0, 1, 0.1); pv != 1 {
		t.Errorf("v = 0: p-value %v, want 1", pv)
	}
}
