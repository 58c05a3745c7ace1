package accountant

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// ratText formats an exact rational to 20 significant digits.
func ratText(r *big.Rat) string { return new(big.Float).SetPrec(80).SetRat(r).Text('g', 20) }

// exactRat returns x as an exact rational.
func exactRat(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// checkSmallestAbove fails unless got is the smallest float64 >= want
// (exact): got >= want and the float64 below got is < want (5e-324 where
// want is below every positive float64).
func checkSmallestAbove(t *testing.T, what string, got float64, want *big.Rat) {
	t.Helper()
	if !(got > 0) || math.IsInf(got, 0) {
		t.Errorf("%s = %v, want the smallest float64 >= %s", what, got, ratText(want))
		return
	}
	if exactRat(got).Cmp(want) < 0 {
		t.Errorf("%s = %v is below the exact %v: rounded down", what, got, ratText(want))
	}
	if below := math.Nextafter(got, 0); below > 0 && exactRat(below).Cmp(want) >= 0 {
		t.Errorf("%s = %v, but %v is also >= the exact value: not the smallest", what, got, below)
	}
}

// products returns pairs whose product is normal, subnormal (where the
// fused multiply-add's residual underflows to 0) or below 5e-324 (where
// the rounded product is 0), with random mantissas.
func products() [][2]float64 {
	pairs := [][2]float64{
		{1.25, 5e-324}, {0.3, 5e-324}, {3.730631634816098, 5e-324}, {0.5, 5e-324},
		{1.0000000000000002, 1e-310}, {3, 1e-320}, {0x1p-600, 0x1p-500}, {0.1, 0x1p-1070},
		{3.7306316348160984, 1}, {0.1, 0.2}, {1e-200, 1e-120}, {1e-300, 1e-30},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 400; i++ {
		a := (1 + rng.Float64()) * math.Ldexp(1, -rng.IntN(700))
		b := (1 + rng.Float64()) * math.Ldexp(1, -rng.IntN(700))
		pairs = append(pairs, [2]float64{a, b})
	}
	return pairs
}

// maxSubnormal is the largest float64 below the normal range: an exact
// value at most this rounds up to a subnormal (or to 5e-324).
var maxSubnormal = exactRat(math.Nextafter(0x1p-1022, 0))

// The noise std sigma * sensitivity is the smallest float64 at least the
// exact product, against exact rational arithmetic, where that is a normal
// float64; a product that would round up to a subnormal (or to 5e-324) is
// refused with a *ParamError naming the sensitivity: there it keeps few
// significant bits (3.73 * 5e-324 gave 2e-323, 7% off).
func TestScaleRoundsUpOrRefusesSubnormal(t *testing.T) {
	refused := 0
	for _, p := range products() {
		got, err := Scale(p[0], p[1])
		exact := new(big.Rat).Mul(exactRat(p[0]), exactRat(p[1]))
		if exact.Cmp(maxSubnormal) <= 0 {
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != "sensitivity" {
				t.Errorf("Scale(%v, %v) = %v, %v; want a *ParamError naming the sensitivity (exact product %s)", p[0], p[1], got, err, ratText(exact))
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("Scale(%v, %v): %v", p[0], p[1], err)
		}
		checkSmallestAbove(t, "Scale("+ftoa(p[0])+", "+ftoa(p[1])+")", got, exact)
	}
	if refused == 0 {
		t.Fatal("no subnormal product tried")
	}
	// NoiseStd is Scale of the calibrated sigma.
	s, err := Sigma(1, 1e-5, Exact)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NoiseStd(1, 1e-5, 1e-300, Exact)
	if err != nil {
		t.Fatal(err)
	}
	checkSmallestAbove(t, "NoiseStd(1, 1e-5, 1e-300)", got, new(big.Rat).Mul(exactRat(s), exactRat(1e-300)))
	var pe *ParamError
	if _, err := NoiseStd(1, 1e-5, 1e-320, Exact); !errors.As(err, &pe) || pe.Param != "sensitivity" || pe.Value != 1e-320 {
		t.Errorf("NoiseStd(1, 1e-5, 1e-320): %v, want a *ParamError naming sensitivity = 1e-320", err)
	}
}

// The release sensitivity factor clip / n unitSens, which scales the noise
// std, and the zCDP rho of a Gaussian are never below their exact values
// (rho never 0 for a positive sensitivity), against exact rationals.
func TestReleaseSensitivityAndRhoRoundUp(t *testing.T) {
	for _, p := range products() {
		for _, n := range fitInts(1, 3, 7, 1000003, 1<<53+1, math.MaxInt) {
			for _, rel := range []Relation{AddRemove, ReplaceOne} {
				got, err := ReleaseSensitivity(p[0], n, rel, p[1])
				f := int64(1)
				if rel == ReplaceOne {
					f = 2
				}
				want := new(big.Rat).Mul(exactRat(p[0]), exactRat(p[1]))
				want.Mul(want, big.NewRat(f, int64(n)))
				if want.Cmp(maxSubnormal) <= 0 {
					// Below the normal range: refused, naming the inputs.
					var pe *ParamError
					if !errors.As(err, &pe) || pe.Param != "release sensitivity" || !strings.Contains(pe.Want, "clip = "+ftoa(p[0])) {
						t.Errorf("ReleaseSensitivity(%v, %d, %v, %v) = %v, %v; want a *ParamError naming the release sensitivity and clip (exact %s)", p[0], n, rel, p[1], got, err, ratText(want))
					}
					continue
				}
				if err != nil {
					t.Fatalf("ReleaseSensitivity(%v, %d, %v, %v): %v", p[0], n, rel, p[1], err)
				}
				if exactRat(got).Cmp(want) < 0 {
					t.Errorf("ReleaseSensitivity(%v, %d, %v, %v) = %v, below the exact %s", p[0], n, rel, p[1], got, ratText(want))
				}
			}
		}
		rho, err := GaussianRho(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		// rho = s^2 / (2 v^2).
		want := new(big.Rat).Quo(exactRat(p[0]), exactRat(p[1]))
		want.Mul(want, want)
		want.Mul(want, big.NewRat(1, 2))
		if !(rho > 0) || (!math.IsInf(rho, 1) && exactRat(rho).Cmp(want) < 0) {
			t.Errorf("GaussianRho(%v, %v) = %v, below the exact %s", p[0], p[1], rho, ratText(want))
		}
	}
}

// A nil context is an error, not a panic; counts at the ends of int are
// counted right (ceil(n / bands) overflowed to 0 compositions for bands
// near MaxInt).
func TestAccountantNilContextAndExtremeCounts(t *testing.T) {
	var nilCtx context.Context
	for name, f := range map[string]func() (float64, error){
		"SampledGaussianSigma": func() (float64, error) {
			return SampledGaussianSigma(nilCtx, 0.5, 10, 1, 1e-5, AddRemove)
		},
		"AmplifiedBandedSigma": func() (float64, error) {
			return AmplifiedBandedSigma(nilCtx, 0.5, 100, 10, 1, 1e-5, AddRemove)
		},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s(nil ctx) panicked: %v", name, r)
				}
			}()
			_, err := f()
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != "ctx" {
				t.Errorf("%s(nil ctx) = %v, want a *ParamError for ctx", name, err)
			}
		}()
	}
	for _, c := range []struct{ n, bands, want int }{
		{1, 1, 1}, {10, 3, 4}, {9, 3, 3}, {5, math.MaxInt, 1}, {math.MaxInt, math.MaxInt, 1},
		{math.MaxInt, 1, math.MaxInt}, {math.MaxInt, 2, math.MaxInt/2 + 1}, {math.MaxInt - 1, math.MaxInt, 1},
	} {
		got, err := BandedCompositions(c.n, c.bands)
		if err != nil || got != c.want {
			t.Errorf("BandedCompositions(%d, %d) = %d, %v, want %d", c.n, c.bands, got, err, c.want)
		}
	}
}

// Counts out of range or beyond what can be computed are errors, never
// panics or wrong values: compositions, steps, rounds and learners at 0,
// negative or MaxInt, and nil or zero-value PLDs.
func TestAccountantExtremeCountsAreErrors(t *testing.T) {
	p, err := GaussianPLD(1, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nilPLD *PLD
	calls := map[string]func() error{}
	for _, k := range []int{0, -1, math.MinInt} {
		calls["Epsilon k="+itoa(k)] = func() error { _, err := Epsilon(1, 1e-5, k, Exact); return err }
		calls["Mu k="+itoa(k)] = func() error { _, err := Mu(1, k); return err }
		calls["SelfCompose k="+itoa(k)] = func() error { _, err := p.SelfCompose(k); return err }
		calls["SampledGaussian steps="+itoa(k)] = func() error { _, err := SampledGaussian(0.5, 1, k, AddRemove); return err }
		calls["SampledGaussianSigma steps="+itoa(k)] = func() error {
			_, err := SampledGaussianSigma(context.Background(), 0.5, k, 1, 1e-5, AddRemove)
			return err
		}
		calls["BandedCompositions n="+itoa(k)] = func() error { _, err := BandedCompositions(k, 1); return err }
		calls["BandedCompositions bands="+itoa(k)] = func() error { _, err := BandedCompositions(10, k); return err }
		calls["ReleaseSensitivity n="+itoa(k)] = func() error { _, err := ReleaseSensitivity(1, k, ReplaceOne, 1); return err }
		if k < 0 {
			calls["NewRecord round="+itoa(k)] = func() error { _, err := NewRecord(k, 1, 1e-5, 1, Exact, SingleParticipation); return err }
		}
	}
	// Too many compositions for the PLD grid: an error, not an allocation
	// of MaxInt entries. On a 32-bit platform MaxInt = 2^31 - 1 sampled
	// steps are not too many: amd64 accounts them too (q = 0.5, sigma = 1:
	// eps(1e-5) in [2.94e8, 3.03e8], 28 s), and 386, whose stored loss
	// indices must stay below 2^30 (windowLo), on a coarser grid (safe eps
	// 3.77e8, 10 s), so those two cases are 64-bit only.
	calls["SelfCompose MaxInt"] = func() error { _, err := p.SelfCompose(math.MaxInt); return err }
	if strconv.IntSize == 64 {
		calls["SampledGaussian MaxInt"] = func() error { _, err := SampledGaussian(0.5, 1, math.MaxInt, AddRemove); return err }
		calls["AmplifiedBanded MaxInt"] = func() error { _, err := AmplifiedBanded(0.5, 1, math.MaxInt, 1, AddRemove); return err }
	}
	calls["nil PLD Delta"] = func() error { _, err := nilPLD.Delta(1); return err }
	calls["nil PLD Epsilon"] = func() error { _, err := nilPLD.Epsilon(1e-5); return err }
	calls["nil PLD Compose"] = func() error { _, err := nilPLD.Compose(p); return err }
	calls["nil PLD SelfCompose"] = func() error { _, err := nilPLD.SelfCompose(2); return err }
	calls["zero PLD Delta"] = func() error { _, err := (&PLD{}).Delta(1); return err }
	calls["zero PLD Compose"] = func() error { _, err := (&PLD{}).Compose(&PLD{}); return err }
	for name, call := range calls {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panicked: %v", name, r)
				}
			}()
			if err := call(); err == nil {
				t.Errorf("%s: no error", name)
			}
		}()
	}
	// MaxInt compositions of a Gaussian are a finite, huge eps (mu =
	// sqrt(k) / sigma), never below the value for 2^62 compositions (2^30
	// on a 32-bit platform).
	a, err := Epsilon(1, 1e-5, 1<<(strconv.IntSize-2), Exact)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Epsilon(1, 1e-5, math.MaxInt, Exact)
	if err != nil || !(b >= a) || math.IsInf(b, 0) {
		t.Errorf("Epsilon(1, 1e-5, MaxInt) = %v, %v; want finite and >= %v", b, err, a)
	}
}

// The outward slack moves subnormal values too: a relative 1e-12 alone is
// lost to rounding there.
func TestSlackOnSubnormals(t *testing.T) {
	for _, x := range []float64{5e-324, 1e-320, 1e-310, 0x1p-1023} {
		if u := up(x); !(u > x) {
			t.Errorf("up(%g) = %g, want above it", x, u)
		}
		if d := down(x); !(d < x) || d < 0 {
			t.Errorf("down(%g) = %g, want in [0, x)", x, d)
		}
	}
	for _, x := range []float64{1e-300, 1, 3.5, 1e300} {
		if u, want := up(x), x*(1+slack); u != want {
			t.Errorf("up(%g) = %g, want %g", x, u, want)
		}
	}
}
