package accountant

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// This file checks the sampled-Gaussian and amplified banded functions.

// TestSampledGaussianUnsampled: q = 1 is T Gaussian mechanisms, exactly
// mu-GDP with mu = sqrt(T)/sigma.
func TestSampledGaussianUnsampled(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		steps int
	}{{3, 50}, {20, 1000}} {
		got, err := SampledGaussianEpsilon(1, c.sigma, c.steps, 1e-6, AddRemove)
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := Epsilon(c.sigma, 1e-6, c.steps, Exact)
		if got < exact || got > exact*(1+1e-4) {
			t.Errorf("sigma=%v T=%d: eps %.10g, exact %.10g", c.sigma, c.steps, got, exact)
		}
	}
}

// TestSampledGaussianTinySigma: losses beyond the float64 range of e^l
// (sigma = 0.01: about 5000 per step) must count as large, not be cut at
// 709; q = 1 is then the exact Gaussian, and q = 1/2 below it.
func TestSampledGaussianTinySigma(t *testing.T) {
	testutil.SkipOn386Short(t, "losses beyond e^709 at 10 steps: float64 range, not int's")
	t.Parallel()
	o := PLDOptions{Interval: 0.05}
	one := mustPLD(t)(SampledGaussianPLD(1, 0.01, AddRemove, o))
	half := mustPLD(t)(SampledGaussianPLD(0.5, 0.01, AddRemove, o))
	one, half = mustPLD(t)(one.SelfCompose(10)), mustPLD(t)(half.SelfCompose(10))
	e1, _ := one.Epsilon(1e-5)
	exact, _ := Epsilon(0.01, 1e-5, 10, Exact)
	if e1 < exact || e1 > exact*(1+1e-4) {
		t.Errorf("q = 1: eps %v, exact %v", e1, exact)
	}
	eh, _ := half.Epsilon(1e-5)
	if !(eh <= e1) || eh < 0.9*exact {
		t.Errorf("q = 1/2: eps %v, q = 1: %v", eh, e1)
	}
	// delta(1) is at least the chance 1 - 2^-10 that the record is drawn.
	if d, _ := half.Delta(1); d < 1-math.Exp2(-10) {
		t.Errorf("q = 1/2: delta(1) = %v < 1 - 2^-10", d)
	}
}

// TestSampledGaussianBrute: two steps on the automatic grid against the
// independent integral of pld_test.go, both directions.
func TestSampledGaussianBrute(t *testing.T) {
	testutil.SkipOn386Short(t, "two steps against a quadrature: float64")
	t.Parallel()
	const q, sigma = 0.1, 0.8
	p, err := SampledGaussian(q, sigma, 2, AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	rm, ad := bruteRemove(q, sigma), bruteAdd(q, sigma)
	for _, eps := range []float64{0.1, 1, 3} {
		got, _ := p.Delta(eps)
		truth := math.Max(rm.two(eps), ad.two(eps))
		upper := math.Max(rm.two(eps-2*p.h), ad.two(eps-2*p.h)) + p.remove.errFrom(0) + p.remove.inf + 1e-12
		if got < truth-1e-12 || got > upper {
			t.Errorf("eps=%v: delta %.12g, truth %.12g, bound %.12g", eps, got, truth, upper)
		}
	}
}

// TestSampledGaussianMonotone: less sampling or fewer steps never cost
// more privacy.
func TestSampledGaussianMonotone(t *testing.T) {
	t.Parallel()
	// On the automatic grid (on its 2^14-point version under -short: the
	// gaps checked are far wider than either grid's excess).
	eps := func(q float64, steps int) float64 {
		e, err := shortSampled(t, q, 2, steps).Epsilon(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	sampled, full, fewer := eps(0.1, 80), eps(1, 80), eps(0.1, 20)
	if !(sampled <= full) {
		t.Errorf("80 steps: eps %v at q = 0.1 above %v at q = 1", sampled, full)
	}
	if !(sampled > fewer) {
		t.Errorf("q = 0.1: eps %v at 80 steps, %v at 20 steps", sampled, fewer)
	}
}

// TestSampledGaussianSigma: the calibrated sigma is safe under
// SampledGaussian's own accounting and, within the documented 1e-4 (plus
// 1e-5 for the search's cut tails and rounding bound), the least it
// certifies: an independent look at the accurate evaluation's root.
func TestSampledGaussianSigma(t *testing.T) {
	testutil.SkipOn386Short(t, "calibration at T = 80: float64 search, far from int's bounds")
	t.Parallel()
	checkSampledSigma(t, 0.1, 80, 2.0, 1e-5, AddRemove)
	if !testing.Short() { // dpacct's example (docs/privacy.md): about 1 s
		checkSampledSigma(t, 0.01, 1000, 1, 1e-5, AddRemove)
	}
}

// checkSampledSigma calibrates sigma and checks that it is safe under
// SampledGaussianDelta (the full accounting) and that sigma (1 - 1.1e-4)
// is not; it returns sigma.
func checkSampledSigma(t *testing.T, q float64, steps int, eps, delta float64, rel Relation) float64 {
	t.Helper()
	s, err := SampledGaussianSigma(context.Background(), q, steps, eps, delta, rel)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := SampledGaussianDelta(q, s, steps, eps, rel); d > delta {
		t.Errorf("%v: sigma %v: delta %v > %v", rel, s, d, delta)
	}
	if d, _ := SampledGaussianDelta(q, s*(1-1.1e-4), steps, eps, rel); d <= delta {
		t.Errorf("%v: sigma %v is not within 1.1e-4 of the least: delta at (1 - 1.1e-4) sigma = %v", rel, s, d)
	}
	return s
}

// TestAmplifiedBanded: ceil(n/b) compositions (Choquette-Choo et al. 2023,
// Theorem 4).
func TestAmplifiedBanded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ n, b, want int }{{100, 10, 10}, {100, 7, 15}, {5, 10, 1}, {1, 1, 1}} {
		if k, err := BandedCompositions(c.n, c.b); err != nil || k != c.want {
			t.Errorf("BandedCompositions(%d, %d) = %d, %v; want %d", c.n, c.b, k, err, c.want)
		}
	}
	// ceil(134/7) = 20 (few steps cost more: their grid is finer).
	a, err := AmplifiedBanded(0.1, 2, 134, 7, AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	s := sharedSampled(t, 0.1, 2, 20, AddRemove)
	da, _ := a.Delta(1)
	ds, _ := s.Delta(1)
	if da != ds {
		t.Errorf("AmplifiedBanded delta %v, 20 sampled steps %v", da, ds)
	}
}

// TestSampledErrors: every bad parameter is a *ParamError.
func TestSampledErrors(t *testing.T) {
	var pe *ParamError
	for name, err := range map[string]error{
		"q<0":          second(SampledGaussian(-0.1, 1, 10, AddRemove)),
		"q>1":          second(SampledGaussian(1.1, 1, 10, AddRemove)),
		"sigma 0":      second(SampledGaussian(0.1, 0, 10, AddRemove)),
		"sigma NaN":    second(SampledGaussian(0.1, math.NaN(), 10, AddRemove)),
		"steps 0":      second(SampledGaussian(0.1, 1, 0, AddRemove)),
		"delta eps<0":  second(SampledGaussianDelta(0.1, 1, 10, -1, AddRemove)),
		"epsilon d=0":  second(SampledGaussianEpsilon(0.1, 1, 10, 0, AddRemove)),
		"sigma q=0":    second(SampledGaussianSigma(context.Background(), 0, 10, 1, 1e-5, AddRemove)),
		"sigma eps=0":  second(SampledGaussianSigma(context.Background(), 0.1, 10, 0, 1e-5, AddRemove)),
		"sigma d=1":    second(SampledGaussianSigma(context.Background(), 0.1, 10, 1, 1, AddRemove)),
		"sigma steps":  second(SampledGaussianSigma(context.Background(), 0.1, 0, 1, 1e-5, AddRemove)),
		"banded n":     second(AmplifiedBanded(0.1, 1, 0, 4, AddRemove)),
		"banded bands": second(AmplifiedBanded(0.1, 1, 10, 0, AddRemove)),
		"banded sigma": second(AmplifiedBandedSigma(context.Background(), 0.1, 10, -1, 1, 1e-5, AddRemove)),
	} {
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want a *ParamError", name, err)
		}
	}
	// Special cases: no privacy loss.
	for _, p := range []*PLD{mustPLD(t)(SampledGaussian(0, 1, 10, AddRemove)), mustPLD(t)(SampledGaussian(0.3, math.Inf(1), 10, AddRemove))} {
		if d, _ := p.Delta(0); d != 0 {
			t.Errorf("no-loss: Delta(0) = %v", d)
		}
	}
}

// TestSampledSigmaTooManySteps: 10^10 steps need a loss grid of more than
// 2^24 points at every sigma (the grid's window grows like sqrt(steps));
// the calibration's error says so (ErrPLDGrid) instead of blaming delta or
// eps, which are ordinary.
func TestSampledSigmaTooManySteps(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("10^10 steps do not fit a 32-bit int")
	}
	var steps int64 = 10_000_000_000 // a variable: the constant overflows a 32-bit int
	_, err := SampledGaussianSigma(context.Background(), 0.1, int(steps), 1, 1e-10, AddRemove)
	if !errors.Is(err, ErrPLDGrid) || !strings.Contains(err.Error(), "steps") {
		t.Errorf("err = %v, want an ErrPLDGrid naming the steps", err)
	}
}
