package factorize

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/testutil"
)

// A dense factorization too large for the machine is a *ParamError
// naming R, never an allocation: before, IdentityStrategy at R = 2^20 (B
// and C of 8 TiB each) ended the process with the runtime's fatal
// out-of-memory error, which no recover catches. The first cases need more
// memory than any machine this runs on has; the second set lowers the
// machine's memory to 1 MiB, where R = 256 (two 512 KiB factors) still fits
// and R = 257 does not (2 x 8 x 257^2 bytes > 2^20).
func TestDenseFactorsBeyondMemoryAreRefused(t *testing.T) {
	ctx := context.Background()
	refused := func(t *testing.T, name string, err error) {
		t.Helper()
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "R" {
			t.Errorf("%s: %v, want a *ParamError about R", name, err)
		}
	}
	w, err := Prefix(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Strategies() {
		s, err := ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		switch name {
		case StrategySemisep:
			s = SemisepStrategy{Factors: true} // by default it forms no dense factors
		case StrategyOptimal:
			// Its structured path forms none on prefix sums
			// (TestOptimalStructuredFormsNoDenseFactors); the dense path does.
			s = OptimalStrategy{Options: Options{Method: Dense}}
		}
		_, err = s.Factorize(ctx, w, SingleParticipation())
		refused(t, name, err)
	}
	_, err = Optimal(ctx, w, Options{Method: Dense})
	refused(t, "Optimal", err)
	_, err = OptimalEpochs(ctx, w, 2, Options{})
	refused(t, "OptimalEpochs", err)
	_, err = BLT(ctx, w, 2)
	refused(t, "BLT", err)
	_, err = OptimalBanded(ctx, w, 4, 0, Options{})
	refused(t, "OptimalBanded", err)
	_, err = BandedSqrt(w, 4, 0)
	refused(t, "BandedSqrt", err)
	_, err = BLTMinSep(ctx, w, 2, 4, 0)
	refused(t, "BLTMinSep", err)

	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 1 << 20 }
	small, _ := Prefix(256)
	if _, err := (IdentityStrategy{}).Factorize(ctx, small, SingleParticipation()); err != nil {
		t.Errorf("R = 256 in 1 MiB: %v", err)
	}
	big, _ := Prefix(257)
	_, err = IdentityStrategy{}.Factorize(ctx, big, SingleParticipation())
	refused(t, "R = 257 in 1 MiB", err)
	// A loss-only solve forms no dense factors and is not refused.
	if f, err := Optimal(ctx, big, Options{LossOnly: true}); err != nil || !(f.Metrics.Loss > 0) {
		t.Errorf("loss-only R = 257 in 1 MiB: %v", err)
	}
	for _, s := range []Strategy{OptimalStrategy{Options: Options{LossOnly: true}}, SemisepStrategy{}} {
		if f, err := s.Factorize(ctx, big, SingleParticipation()); err != nil || !(f.Metrics.Loss > 0) {
			t.Errorf("%s without dense factors, R = 257 in 1 MiB: %v", s.Name(), err)
		}
	}
}

// A workload whose metrics overflow (entries near the top of the float64
// range: the identity's loss is ||A||_F^2 = 3 x 1e616 here) is a
// *ParamError naming the workload from every strategy that accepts the
// workload; before, identity, bsr, bisr, blt and optimal returned a
// factorization with loss +Inf and no error.
func TestOverflowingMetricsAreRefused(t *testing.T) {
	w, err := NewWorkload(mat.NewDense(2, 2, []float64{1e308, 0, 1e308, 1e308}))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Strategies() {
		s, err := ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(context.Background(), w, SingleParticipation())
		if err == nil {
			t.Errorf("%s: metrics %+v, want an error", name, f.Metrics)
			continue
		}
		var pe *ParamError
		if errors.As(err, &pe) && pe.Param != "workload" {
			t.Errorf("%s: %v, want an error about the workload", name, err)
		}
	}
}

// ToeplitzMinSepSensitivity of large coefficients: the columns 0 and 1 of
// the 2 x 2 Toeplitz C with first column (x, x) sum to (x, 2x), of norm
// sqrt(5) x under minsep:1 with 2 participations (closed form). At
// x = 1e200 that is finite although x^2 overflows (before, +Inf with no
// error); at x = 1e308 it overflows, an error naming col[0].
func TestToeplitzMinSepLargeCoefficients(t *testing.T) {
	got, err := ToeplitzMinSepSensitivity([]float64{1e200, 1e200}, 1, 2)
	if want := math.Sqrt(5) * 1e200; err != nil || math.Abs(got-want) > 1e-15*want {
		t.Errorf("x = 1e200: %v (%v), want %v", got, err, want)
	}
	_, err = ToeplitzMinSepSensitivity([]float64{1e308, 1e308}, 1, 2)
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "col[0]" {
		t.Errorf("x = 1e308: %v, want a *ParamError about col[0]", err)
	}
}

// ToeplitzMinSepSensitivity of small coefficients: as in
// [TestToeplitzMinSepLargeCoefficients], the 2 x 2 Toeplitz C with first
// column (x, x) has sensitivity sqrt(5) x under minsep:1 with 2
// participations (closed form), checked scaled back by 2^e (exact) for
// x = m 2^-e. Before, the squares of x below 2^-537 underflowed to 0 and
// the sensitivity reported was 0, below the truth (SensitivityOf and
// Gamma scale such entries first), and subnormal squares lost precision
// (x = 1.073 2^-530: 4.6e-6 below sqrt(5) x). A subnormal result is
// rounded up.
func TestToeplitzMinSepSmallCoefficients(t *testing.T) {
	for _, m := range []float64{1, 1.073} {
		want := math.Sqrt(5) * m
		for _, e := range []int{0, 400, 530, 540, 600, 1000, 1070} {
			x := math.Ldexp(m, -e)
			got, err := ToeplitzMinSepSensitivity([]float64{x, x}, 1, 2)
			if err != nil {
				t.Errorf("x = %g 2^-%d: %v", m, e, err)
				continue
			}
			// Back to the scale of x = m (exact): never below sqrt(5) m
			// by more than rounding, and above it by at most rounding
			// or, for a subnormal x or result, a few units of 2^-1074
			// (2^(e-1074) scaled).
			scaled := math.Ldexp(got, e)
			if scaled < want*(1-0x1p-51) || scaled > want*(1+0x1p-51)+4*math.Ldexp(1, e-1074) {
				t.Errorf("x = %g 2^-%d: %g = %g 2^-%d, want sqrt(5) x = %g 2^-%d", m, e, got, scaled, e, want, e)
			}
		}
	}
}

// TestMemoryEstimatesSaturate: the memory estimates of every registered
// strategy stay within their range for R at MaxRounds and near the int
// limits, instead of wrapping. Before, the tree's SolveBytes counted its
// 2 R - popcount(R) rows in int, which wraps for R above MaxInt / 2: at
// R = MaxInt it estimated 0 bytes; StreamBytes multiplied the vectors by
// 8 d in int64, which wraps for sqrt at R = MaxRounds and d = 2^28 (a
// negative estimate on 64-bit platforms). The values are checked against
// the closed forms in float64: the tree's 16 R (2 R - popcount(R)) bytes,
// and sqrt's 8 R d bytes, or MaxInt64 where that exceeds int64.
func TestMemoryEstimatesSaturate(t *testing.T) {
	rs := []int{MaxRounds, math.MaxInt/2 + 1, math.MaxInt - 1, math.MaxInt}
	ds := []int{1, 1 << 20, 1 << 28, math.MaxInt}
	ps := []Participation{SingleParticipation(), FixedEpochs(2), FixedEpochs(1 << 20), MinSeparation(4, 0)}
	for _, name := range Strategies() {
		for _, lossOnly := range []bool{false, true} {
			s, _ := ParseStrategy(name)
			s, err := WithLossOnly(s, lossOnly)
			if err != nil {
				continue
			}
			for _, r := range rs {
				prev := int64(-1)
				for _, d := range ds {
					got := StreamBytes(s, r, d)
					if got < 0 || got < prev {
						t.Errorf("%s loss-only=%v: StreamBytes(R = %d, d = %d) = %d, want >= 0 and >= %d (d smaller)", name, lossOnly, r, d, got, prev)
					}
					prev = got
				}
				for _, p := range ps {
					for _, banded := range []bool{false, true} {
						got := SolveBytes(s, r, p, banded)
						// Every estimate counts at least a vector of
						// length R.
						if !(got >= 8*float64(r)) || math.IsInf(got, 0) {
							t.Errorf("%s loss-only=%v: SolveBytes(R = %d, %v, banded %v) = %g, want a finite number >= 8 R", name, lossOnly, r, p, banded, got)
						}
					}
				}
			}
		}
	}
	for _, r := range rs {
		want := 16 * float64(r) * (2*float64(r) - float64(bits.OnesCount(uint(r))))
		if got := SolveBytes(TreeStrategy{}, r, SingleParticipation(), true); math.Abs(got-want) > 1e-12*want {
			t.Errorf("tree: SolveBytes(R = %d) = %g, want %g", r, got, want)
		}
		for _, d := range ds {
			want := 8 * float64(r) * float64(d)
			got := StreamBytes(SqrtStrategy{}, r, d)
			if want >= math.MaxInt64 {
				if got != math.MaxInt64 {
					t.Errorf("sqrt: StreamBytes(R = %d, d = %d) = %d, want MaxInt64 (8 R d = %g)", r, d, got, want)
				}
			} else if math.Abs(float64(got)-want) > 1e-12*want {
				t.Errorf("sqrt: StreamBytes(R = %d, d = %d) = %d, want %g", r, d, got, want)
			}
		}
	}
}

// TestEpochsLossOnlyMomentumFormsNoFactors: on momentum a fixed-epoch
// solve with factors forms them (2 R^2 float64s: 1.07 MB at R = 258, over
// a machine of 1 MiB), so it is refused, and before any iteration; a
// loss-only one forms none (since 2026-11-28 its certificate rests on the
// double-word kernel; before, it formed the factors to check them and was
// refused alike), so it runs, as on prefix sums.
func TestEpochsLossOnlyMomentumFormsNoFactors(t *testing.T) {
	testutil.SkipOn386Short(t, "the double-word momentum solves: math.FMA is exact everywhere (software on 386), so 386 computes the same bits as amd64, only far slower; linalg and ddfloat check the kernel on 386")
	ctx := context.Background()
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 1 << 20 }
	w, err := Momentum(258, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	iters := 0
	_, err = OptimalEpochs(ctx, w, 2, Options{Progress: func(Progress) { iters++ }})
	if pe := (*ParamError)(nil); !errors.As(err, &pe) || pe.Param != "R" {
		t.Errorf("momentum R = 258 in 1 MiB: %v, want a *ParamError about R", err)
	}
	if iters != 0 {
		t.Errorf("momentum R = 258 in 1 MiB: refused after %d iterations, want before the first", iters)
	}
	p, err := Prefix(258)
	if err != nil {
		t.Fatal(err)
	}
	for _, wl := range []*Workload{w, p} {
		if f, err := OptimalEpochs(ctx, wl, 2, Options{LossOnly: true}); err != nil || !(f.Metrics.Loss > 0) {
			t.Errorf("loss-only %s R = 258 in 1 MiB: %v", wl.Name(), err)
		}
	}
}

// TestOptimalStructuredFormsNoDenseFactors: the optimal strategy on a
// bidiagonal inverse (prefix sums, weighted or not) returns C in
// quasiseparable form and no dense B and C, so the dense-factor check must
// not refuse it: at R = 600 they would take 2 x 8 x 600^2 = 5.76 MB, over a
// machine of 1 MiB. Before, OptimalStrategy{}.Factorize was refused there
// (bench/optstream at R = 10^5 ended with "dense B and C (160 GB)"), so
// the quasiseparable operator could be had only from Optimal. The dense
// path (Method Dense) and momentum (two subdiagonals: dense factors) are
// still refused.
func TestOptimalStructuredFormsNoDenseFactors(t *testing.T) {
	ctx := context.Background()
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 1 << 20 }
	refused := func(t *testing.T, name string, err error) {
		t.Helper()
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "R" {
			t.Errorf("%s: %v, want a *ParamError about R", name, err)
		}
	}
	w, _ := Prefix(600)
	f, err := OptimalStrategy{}.Factorize(ctx, w, SingleParticipation())
	if err != nil {
		t.Fatalf("optimal on prefix sums, R = 600 in 1 MiB: %v", err)
	}
	if f.B != nil || f.C != nil || f.Operator == nil {
		t.Errorf("optimal on prefix sums: B %v, C %v, operator %v; want no dense factors and an operator", f.B != nil, f.C != nil, f.Operator != nil)
	}
	if _, structured := FormOf(f.Operator); !structured {
		t.Errorf("optimal on prefix sums: operator %T, want a structured form", f.Operator)
	}
	_, err = OptimalStrategy{Options: Options{Method: Dense}}.Factorize(ctx, w, SingleParticipation())
	refused(t, "optimal:path=dense R = 600 in 1 MiB", err)
	m, _ := Momentum(600, 0.9)
	_, err = OptimalStrategy{}.Factorize(ctx, m, SingleParticipation())
	refused(t, "optimal on momentum R = 600 in 1 MiB", err)
}

// TestDenseFitsInt: where the machine's memory is unknown (machineBytes 0,
// as without /proc/meminfo), an R x R matrix whose 8 R^2 bytes exceed
// math.MaxInt is still refused, from R = 16384 on a 32-bit platform
// (1073741824 on a 64-bit one): on 386 R^2 wrapped (65536^2 to 0) and the
// identity strategy's dense B, allocated empty, panicked with an index out
// of range. The bound is checked against 8 R^2 <= MaxInt in math/big.
func TestDenseFitsInt(t *testing.T) {
	defer func(f func() float64) { machineBytes = f }(machineBytes)
	machineBytes = func() float64 { return 0 }
	want := 16383
	if strconv.IntSize == 64 {
		want = 1073741823
	}
	// 8 want^2 <= MaxInt < 8 (want + 1)^2, in exact arithmetic.
	mx := new(big.Int).SetInt64(math.MaxInt)
	sq := func(r int) *big.Int { b := big.NewInt(int64(r)); return b.Mul(b, b).Mul(b, big.NewInt(8)) }
	if maxDenseRounds != want || sq(want).Cmp(mx) > 0 || sq(want+1).Cmp(mx) <= 0 {
		t.Fatalf("maxDenseRounds = %d, want %d", maxDenseRounds, want)
	}
	if err := checkDenseFits(want); err != nil {
		t.Errorf("checkDenseFits(%d) with the memory unknown: %v", want, err)
	}
	var pe *ParamError
	if err := checkDenseFits(want + 1); !errors.As(err, &pe) || pe.Param != "R" || strings.Contains(err.Error(), "\n") {
		t.Errorf("checkDenseFits(%d) with the memory unknown: %v, want a one-line *ParamError naming R", want+1, err)
	}
	if strconv.IntSize == 32 {
		// The strategy itself, at R = 65536 (R^2 = 2^32 wraps to 0):
		// an error, not a panic (a 64-bit platform would allocate 64 GB
		// here, so only 32-bit runs it).
		w, err := Prefix(65536)
		if err != nil {
			t.Fatal(err)
		}
		_, err = IdentityStrategy{}.Factorize(context.Background(), w, SingleParticipation())
		if !errors.As(err, &pe) || pe.Param != "R" {
			t.Errorf("identity at R = 65536 with the memory unknown: %v, want a *ParamError naming R", err)
		}
	}
}

// TestBandFitsInt: a loss-only banded solve (no dense factors, so no
// checkDenseFits) whose arrays of R (2 (b + p) + 1) float64s have more bytes
// than an int counts is a *ParamError naming the bands: on 386, R = 10^5
// with 5 10^4 bands (2 10^5 x 8 x 10^5 bytes = 1.6e11) panicked with
// "makeslice: len out of range". On a 64-bit platform the same bound lies
// beyond every R (at most 2^36) times bands it can be asked for at test
// sizes, so the call is checked only through checkBandFits there.
func TestBandFitsInt(t *testing.T) {
	var pe *ParamError
	huge := 1 << (strconv.IntSize/2 + 2) // R (2 R + 3) 8 > MaxInt at b = R, p = 1
	if err := checkBandFits(huge, huge, 1); !errors.As(err, &pe) || pe.Param != "bands" || strings.Contains(err.Error(), "\n") {
		t.Errorf("checkBandFits(%d, %d, 1): %v, want a one-line *ParamError naming bands", huge, huge, err)
	}
	if err := checkBandFits(1000, 16, 1); err != nil {
		t.Errorf("checkBandFits(1000, 16, 1): %v", err)
	}
	if strconv.IntSize == 32 {
		w, err := Prefix(100000)
		if err != nil {
			t.Fatal(err)
		}
		_, err = OptimalBanded(context.Background(), w, 50000, 0, Options{LossOnly: true})
		if !errors.As(err, &pe) || pe.Param != "bands" {
			t.Errorf("OptimalBanded(R = 10^5, 5 10^4 bands, loss only): %v, want a *ParamError naming bands", err)
		}
	}
}
