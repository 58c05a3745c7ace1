package accountant

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// This file attacks the accountant's numbers where the truth is known:
// q = 1 is T Gaussian mechanisms, exactly mu-GDP with mu = sqrt(T)/sigma
// (its eps from the closed form, itself certified against math/big in
// calibrate_test.go, and directly against the big-float curve where that is
// cheap), and the property tests hold every function to the monotonicity
// the privacy curve has.

// TestPLDBracketsExactGrid: over sigma from 0.3 to 100, T from 1 to 10^6
// (10^4 under -short) and delta from 1e-15 to 0.5, the PLD's safe eps is
// never below the exact one and its optimistic eps never above it, both
// relations alike at q = 1; likewise delta at eps in {0.1, 1, 10}; the
// width at delta = 1e-10 is at most the documented 1e-3.
func TestPLDBracketsExactGrid(t *testing.T) {
	t.Parallel()
	steps := []int{1, 10, 1000, 10000, 1000000}
	if testing.Short() {
		steps = []int{1, 10, 10000}
	}
	for _, sigma := range []float64{0.3, 1, 3, 10, 100} {
		for _, T := range steps {
			rel := AddRemove
			if T == 10 {
				rel = ReplaceOne // at q = 1 the same Gaussian
			}
			p, err := SampledGaussian(1, sigma, T, rel)
			if err != nil {
				t.Fatalf("sigma %v, T %d: %v", sigma, T, err)
			}
			mu := math.Sqrt(float64(T)) / sigma
			for _, delta := range []float64{1e-15, 1e-10, 1e-5, 1e-2, 0.5} {
				b, err := p.EpsilonBounds(delta)
				if err != nil {
					t.Fatal(err)
				}
				exact, err := Epsilon(sigma, delta, T, Exact)
				if err != nil {
					t.Fatal(err)
				}
				if !(b.Optimistic <= exact && exact <= b.Safe) {
					t.Errorf("sigma %v, T %d, delta %v: exact eps %.12g not in [%.12g, %.12g]", sigma, T, delta, exact, b.Optimistic, b.Safe)
				}
				// Directly against the big-float curve where it is cheap.
				if b.Safe/mu+mu/2 < 30 && !bigSafe(b.Safe, mu, delta) {
					t.Errorf("sigma %v, T %d, delta %v: safe eps %.17g has big-float delta above delta", sigma, T, delta, b.Safe)
				}
				if delta == 1e-10 && b.Width() > 1e-3 {
					t.Errorf("sigma %v, T %d: width %.3g at delta = 1e-10, documented at most 1e-3", sigma, T, b.Width())
				}
			}
			for _, eps := range []float64{0.1, 1, 10} {
				b, err := p.DeltaBounds(eps)
				if err != nil {
					t.Fatal(err)
				}
				exact, err := Delta(eps, mu)
				if err != nil {
					t.Fatal(err)
				}
				if !(b.Optimistic <= exact && exact <= b.Safe) {
					t.Errorf("sigma %v, T %d, eps %v: exact delta %.12g not in [%.12g, %.12g]", sigma, T, eps, exact, b.Optimistic, b.Safe)
				}
			}
		}
	}
}

// TestMonotoneRandom: for random (sigma, delta, k, eps) with a fixed seed,
// each perturbed by a relative 1e-12 to 1e-3 (far closer than
// TestMonotone's 2% steps), every method's eps does not increase in sigma
// or delta and does not decrease in k, its sigma does not increase in eps or
// delta, and sigma for eps then eps for that sigma is at most eps, all to
// within the documented outward rounding (1e-12 relative each way, so 3e-12
// in a comparison of two results).
func TestMonotoneRandom(t *testing.T) {
	t.Parallel()
	const tol = 3e-12
	r := rand.New(rand.NewSource(1))
	n := 1000
	if testing.Short() {
		n = 200
	}
	for _, m := range Methods() {
		for i := 0; i < n; i++ {
			sigma := 0.3 * math.Exp(r.Float64()*math.Log(1000/0.3))
			delta := math.Exp(-r.Float64() * 700)
			k := 1 + r.Intn(1000000)
			eps := 1e-3 * math.Exp(r.Float64()*math.Log(1e5))
			rel := []float64{1e-12, 1e-9, 1e-6, 1e-3}[r.Intn(4)]
			e0, err0 := Epsilon(sigma, delta, k, m)
			e1, err1 := Epsilon(sigma*(1+rel), delta, k, m)
			e2, err2 := Epsilon(sigma, delta*(1+rel), k, m)
			e3, err3 := Epsilon(sigma, delta, k+1, m)
			if err0 == nil && err1 == nil && err2 == nil && err3 == nil {
				if e1 > e0*(1+tol) || e2 > e0*(1+tol) || e3 < e0*(1-tol) {
					t.Errorf("%v: Epsilon(%v, %v, %d) = %.17g; sigma (1+%g): %.17g, delta (1+%g): %.17g, k+1: %.17g",
						m, sigma, delta, k, e0, rel, e1, rel, e2, e3)
				}
			}
			s0, err0 := Sigma(eps, delta, m)
			s1, err1 := Sigma(eps*(1+rel), delta, m)
			s2, err2 := Sigma(eps, delta*(1+rel), m)
			if err0 != nil || err1 != nil || err2 != nil {
				continue // refusals (Dwork-Roth, the RDP grid) are tested elsewhere
			}
			if s1 > s0*(1+tol) || s2 > s0*(1+tol) {
				t.Errorf("%v: Sigma(%v, %v) = %.17g; eps (1+%g): %.17g, delta (1+%g): %.17g", m, eps, delta, s0, rel, s1, rel, s2)
			}
			if back, err := Epsilon(s0, delta, 1, m); err != nil || back > eps*(1+tol) {
				t.Errorf("%v: Sigma(%v, %v) = %.17g, whose Epsilon is %.17g, %v", m, eps, delta, s0, back, err)
			}
		}
	}
}

// TestSampledMonotoneRandom: random (q, sigma, T, delta) with a fixed seed;
// the safe eps does not increase in sigma or delta and does not decrease
// in T or q (each perturbed by 1e-9 to 1e-3 relative, T by one step,
// which can change the grid), and the calibrated sigma's safe eps is at
// most the target. go test draws 4 settings (T up to 3000; two round
// trips), DPMF_LONG=1 8 (the same 4 first; about 2 s of CPU each),
// -short 3 with T up to 300.
func TestSampledMonotoneRandom(t *testing.T) {
	testutil.SkipOn386Short(t, "monotonicity at T <= 301 under -short: float64, far from int's bounds")
	t.Parallel()
	r := rand.New(rand.NewSource(2))
	n, maxT := 4, 3000
	if longTests() {
		n = 8
	}
	if testing.Short() {
		n, maxT = 3, 300
	}
	safe := func(q, sigma float64, T int, delta float64) float64 {
		b, err := SampledGaussianEpsilonBounds(q, sigma, T, delta, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		return b.Safe
	}
	for i := 0; i < n; i++ {
		q := math.Exp(-r.Float64() * math.Log(1e4))
		sigma := 0.5 + 5*r.Float64()
		T := 1 + r.Intn(maxT)
		delta := math.Exp(-r.Float64() * 30)
		rel := []float64{1e-9, 1e-6, 1e-3}[r.Intn(3)]
		e0 := safe(q, sigma, T, delta)
		if e := safe(q, sigma*(1+rel), T, delta); e > e0 {
			t.Errorf("q %v, T %d, delta %v: eps %.17g at sigma %v (1+%g), %.17g at sigma %v", q, T, delta, e, sigma, rel, e0, sigma)
		}
		if e := safe(q, sigma, T, delta*(1+rel)); e > e0 {
			t.Errorf("q %v, sigma %v, T %d: eps %.17g at delta %v (1+%g), %.17g at delta %v", q, sigma, T, e, delta, rel, e0, delta)
		}
		if e := safe(q, sigma, T+1, delta); e < e0 {
			t.Errorf("q %v, sigma %v, delta %v: eps %.17g at T %d, %.17g at T %d", q, sigma, delta, e, T+1, e0, T)
		}
		if e := safe(math.Min(1, q*(1+rel)), sigma, T, delta); e < e0 {
			t.Errorf("sigma %v, T %d, delta %v: eps %.17g at q %v (1+%g), %.17g at q %v", sigma, T, delta, e, q, rel, e0, q)
		}
		if i%2 == 0 { // the calibration round trip
			eps := 0.2 + 5*r.Float64()
			s, err := SampledGaussianSigma(context.Background(), q, T, eps, delta, AddRemove)
			if err != nil {
				t.Fatal(err)
			}
			if e := safe(q, s, T, delta); e > eps {
				t.Errorf("q %v, T %d, delta %v: SampledGaussianSigma(eps %v) = %v, whose eps is %.17g", q, T, delta, eps, s, e)
			}
		}
	}
}
