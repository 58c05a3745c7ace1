package accountant

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// For q = 1 the sampled search calibrates the plain Gaussian mechanism,
// whose least sigma has a closed form: T compositions at sigma are one
// Gaussian at sigma / sqrt(T), so the answer is sqrt(T) times the exact
// analytic-Gaussian calibration (Sigma(eps, delta, Exact), Balle and Wang
// 2018). The PLD result is never below it (its delta is a safe bound) and,
// as documented, within a relative 1e-4 above the least sigma its
// accounting certifies (plus its discretisation, which is safe too): at
// most 1.2e-4 above the closed form here, from eps 0.5 to the largest eps
// the search takes.
func TestSampledSigmaQ1MatchesAnalyticGaussian(t *testing.T) {
	cases := [][2]float64{{0.5, 1}, {1, 1}, {1, 10}, {8, 1}, {100, 3}, {MaxSampledEps, 1}}
	if testing.Short() {
		cases = cases[1:5]
	}
	for _, c := range cases {
		eps, steps := c[0], int(c[1])
		want, err := Sigma(eps, 1e-5, Exact)
		if err != nil {
			t.Fatal(err)
		}
		want *= math.Sqrt(float64(steps))
		got, err := SampledGaussianSigma(context.Background(), 1, steps, eps, 1e-5, AddRemove)
		if err != nil {
			t.Fatalf("eps %v, %d steps: %v", eps, steps, err)
		}
		if r := got/want - 1; r < -1e-9 || r > 1.2e-4 {
			t.Errorf("eps %v, %d steps: PLD sigma %v, analytic Gaussian %v: relative %v, want in [0, 1.2e-4]", eps, steps, got, want, r)
		}
	}
}

// An eps beyond MaxSampledEps is refused at once with a *ParamError
// naming eps: dpacct sigma -eps 1e5 -sampling 0.5 took 16 s and -eps 1e6
// over a minute; -eps 1e300 did not stop.
func TestSampledSigmaRefusesHugeEps(t *testing.T) {
	for _, eps := range []float64{math.Nextafter(MaxSampledEps, math.Inf(1)), 1e5, 1e6, 1e300} {
		start := time.Now()
		_, err := SampledGaussianSigma(context.Background(), 0.5, 1, eps, 1e-5, AddRemove)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "eps" || pe.Value != eps {
			t.Errorf("eps %v: %v, want a *ParamError naming eps", eps, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("eps %v: refused after %v, want at once", eps, d)
		}
	}
}

// Cancellation stops the search within a fraction of a second, also in
// the middle of a PLD: one discretisation at sigma = 5e-4 (about 8e6 grid
// cells) takes seconds, and the search's PLDs near eps = MaxSampledEps
// most of a second each.
func TestSampledSigmaCancelledPromptly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := sampledGaussian(0.5, 5e-4, 1, AddRemove, sampledOpts{budget: gridBudget, safeOnly: true, ctx: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("discretisation with a cancelled context: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("discretisation with a cancelled context returned after %v", d)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = SampledGaussianSigma(ctx, 0.5, 1, MaxSampledEps, 1e-5, AddRemove)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("search past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("search with a 50ms deadline returned after %v, want within a fraction of a second", d)
	}
}

// TestSampledSigmaTinyEps: at a tiny eps delta is near the composition's
// total variation, where the search's cheaper fold (a tilted tail mass of
// 1e-9 cut from its windows) dominated its delta: at q = 1, T = 10 it
// returned sigma 5.4% above the closed form at eps = 1e-4 and failed at
// 1e-6, and at q = 0.01, T = 100, eps = 1e-10 it returned 5.1e6 where the
// least sigma is about 4000. Checked against independent values: for q = 1
// the closed form sqrt(T) Sigma(eps, delta, Exact) (never above the result,
// and within the grid's resolution of eps below it); for q = 0.01 the
// unsampled Gaussian's, which dominates the sampled mechanism, so its
// calibration is an upper bound on the least sigma (the PLD's result may
// exceed it by its discretisation only, far less than 1%); and the result
// within 1% of the least sigma the full accounting certifies.
func TestSampledSigmaTinyEps(t *testing.T) {
	for _, c := range []struct {
		eps, tol float64
	}{{1e-4, 1e-3}, {1e-6, 2e-2}} {
		want, err := Sigma(c.eps, 1e-5, Exact)
		if err != nil {
			t.Fatal(err)
		}
		want *= math.Sqrt(10)
		got, err := SampledGaussianSigma(context.Background(), 1, 10, c.eps, 1e-5, AddRemove)
		if err != nil {
			t.Fatalf("q = 1, eps %v: %v", c.eps, err)
		}
		if r := got/want - 1; r < -1e-9 || r > c.tol {
			t.Errorf("q = 1, eps %v: PLD sigma %v, analytic Gaussian %v: relative %v, want in [0, %v]", c.eps, got, want, r, c.tol)
		}
	}
	const q, steps, eps, delta = 0.01, 100, 1e-10, 1e-5
	got, err := SampledGaussianSigma(context.Background(), q, steps, eps, delta, AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	unsampled, err := Sigma(eps, delta, Exact)
	if err != nil {
		t.Fatal(err)
	}
	unsampled *= math.Sqrt(steps)
	if got > unsampled*1.01 {
		t.Errorf("q = %v: sigma %v, above the unsampled Gaussian's %v", q, got, unsampled)
	}
	if d, err := SampledGaussianDelta(q, got, steps, eps, AddRemove); err != nil || d > delta {
		t.Errorf("q = %v: delta at sigma %v is %v (%v), want at most %v", q, got, d, err, delta)
	}
	if d, err := SampledGaussianDelta(q, got*0.99, steps, eps, AddRemove); err != nil || d <= delta {
		t.Errorf("q = %v: delta at 0.99 sigma = %v is %v (%v), want above %v: sigma is not the least", q, got*0.99, d, err, delta)
	}
}

// A NaN from the target function is not a safe answer: with g NaN below
// x = 8 and g(x) = 8 - x above (a decreasing function whose least safe
// point is 8, by hand), the search from a guess of 1 must step past the
// NaNs and end at a safe hi >= 8 within its tolerance. Before, the first
// NaN ended the upward search and the guess 1 came back as safe.
func TestCalibrateRootNaNIsUnsafe(t *testing.T) {
	g := func(x float64) float64 {
		if x < 8 {
			return math.NaN()
		}
		return 8 - x
	}
	r, err := calibrateRoot(context.Background(), root{hi: 1, ghi: math.NaN()}, g, 0.5, 1e-6, func() string { return "the test target" })
	if err != nil {
		t.Fatal(err)
	}
	if !(r.hi >= 8 && r.hi <= 8*(1+1e-5)) || !(r.ghi <= 0) {
		t.Errorf("calibrateRoot returned hi %v with g %v, want the least safe point 8 (within 1e-5)", r.hi, r.ghi)
	}
}
