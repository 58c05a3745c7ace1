package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// eyeDense returns the n x n identity as a *mat.Dense.
func eyeDense(n int) *mat.Dense {
	d := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		d.Set(i, i, 1)
	}
	return d
}

// eyeSym returns the n x n identity as a *mat.SymDense.
func eyeSym(n int) *mat.SymDense {
	d := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		d.SetSym(i, i, 1)
	}
	return d
}

// noPanic runs f and fails the test if it panics.
func noPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", name, r)
		}
	}()
	f()
}

// A nil context is a *ParamError naming "ctx" from every function and
// method that takes one (the package policy: an error, never a panic).
// Before, the solvers dereferenced it and the closed-form strategies
// ignored it.
func TestNilContextIsAnError(t *testing.T) {
	var ctx context.Context // nil
	w := prefix(t, 8)
	calls := map[string]func() error{
		"BLT":           func() error { _, err := BLT(ctx, w, 2); return err },
		"Optimal":       func() error { _, err := Optimal(ctx, w, Options{}); return err },
		"OptimalBanded": func() error { _, err := OptimalBanded(ctx, w, 2, 0, Options{}); return err },
		"BLTMinSep":     func() error { _, err := BLTMinSep(ctx, w, 2, 2, 0); return err },
		"OptimalEpochs": func() error { _, err := OptimalEpochs(ctx, w, 2, Options{}); return err },
		"Semiseparable": func() error { _, err := semiseparable(ctx, w, 2, 0.01, true, Options{}); return err },
	}
	for _, name := range Strategies() {
		s, err := ParseStrategy(name)
		require.NoError(t, err)
		for _, p := range []Participation{SingleParticipation(), FixedEpochs(2), MinSeparation(2, 0)} {
			calls[fmt.Sprintf("%s.Factorize(%v)", name, p)] = func() error { _, err := s.Factorize(ctx, w, p); return err }
		}
	}
	for name, call := range calls {
		noPanic(t, name, func() {
			err := call()
			var pe *ParamError
			if assert.ErrorAs(t, err, &pe, name) {
				assert.Equal(t, "ctx", pe.Param, name)
			}
		})
	}
}

// Counts at the ends of int: separations and participations up to
// MaxInt are answered from what fits in the rounds (a separation of at
// least n leaves one participation; ceil(n / b) fit), checked against the
// values for the identity (sqrt of the number of participations) and a
// Toeplitz column (its norm for one participation); negative counts are
// errors, and invalid patterns count 0 participations. Before, ceil(n / b)
// overflowed to 0 (an "exact" sensitivity of 0 for b near MaxInt) and
// the min-separation rules indexed out of range or sized slices by k.
func TestExtremeCounts(t *testing.T) {
	const quarterInt = 1 << (strconv.IntSize - 2) // 2^62, or 2^30 on a 32-bit platform
	x := eyeSym(8)
	for _, c := range []struct{ b, k, fit int }{
		{math.MaxInt, 2, 1}, {math.MaxInt, math.MaxInt, 1}, {quarterInt, 0, 1}, {8, 5, 1}, {7, 3, 2},
		{2, math.MaxInt, 4}, {3, quarterInt, 3}, {1, math.MaxInt, 8},
	} {
		k := c.k
		if k == 0 {
			k = math.MaxInt
		}
		want := math.Sqrt(float64(c.fit))
		noPanic(t, fmt.Sprintf("b=%d k=%d", c.b, c.k), func() {
			assert.Equal(t, c.fit, MinSeparation(c.b, c.k).Participations(8), "Participations b=%d k=%d", c.b, c.k)
			s, err := MinSepSensitivity(x, c.b, k)
			require.NoError(t, err)
			assert.InDelta(t, want, s.Value, 1e-15)
			assert.True(t, s.Exact)
			v, err := MinSepBanded(x, c.b, k)
			require.NoError(t, err)
			assert.InDelta(t, want, v, 1e-15)
			v, err = MinSepBound(x, c.b, k)
			require.NoError(t, err)
			assert.InDelta(t, want, v, 1e-15)
			s, err = SensitivityOf(eyeDense(8), MinSeparation(c.b, c.k))
			require.NoError(t, err)
			assert.InDelta(t, want, s.Value, 1e-15)
			// The column (1, 1/2, 0, ...) b apart: for b >= 8 one
			// participation, ||col|| = sqrt(5)/2.
			if c.b >= 8 {
				v, err = ToeplitzMinSepSensitivity([]float64{1, 0.5, 0, 0, 0, 0, 0, 0}, c.b, k)
				require.NoError(t, err)
				assert.InDelta(t, math.Sqrt(5)/2, v, 1e-15)
			}
		})
	}
	// ceil(MaxInt / 2) participations fit in MaxInt rounds 2 apart.
	assert.Equal(t, math.MaxInt/2+1, MinSeparation(2, 0).Participations(math.MaxInt))
	assert.Equal(t, 1, MinSeparation(math.MaxInt, 0).Participations(math.MaxInt))
	for _, p := range []Participation{MinSeparation(0, 1), MinSeparation(-1, 0), MinSeparation(2, -1), FixedEpochs(0), FixedEpochs(-3), FixedEpochs(3), FixedEpochs(math.MaxInt)} {
		noPanic(t, p.String(), func() {
			assert.Zero(t, p.Participations(8), "%v", p)
			assert.Error(t, p.Validate(8), "%v", p)
			_, err := SensitivityOf(eyeDense(8), p)
			requireParamError(t, err, "participation")
		})
	}
	for _, c := range []struct {
		b, k  int
		param string
	}{{0, 1, "separation"}, {-1, 1, "separation"}, {math.MinInt, 1, "separation"}, {1, 0, "participations"}, {2, -5, "participations"}, {2, math.MinInt, "participations"}} {
		noPanic(t, fmt.Sprintf("b=%d k=%d", c.b, c.k), func() {
			_, err := MinSepSensitivity(x, c.b, c.k)
			requireParamError(t, err, c.param)
			_, err = MinSepBanded(x, c.b, c.k)
			requireParamError(t, err, c.param)
			_, err = MinSepBound(x, c.b, c.k)
			requireParamError(t, err, c.param)
			_, err = ToeplitzMinSepSensitivity([]float64{1}, c.b, c.k)
			requireParamError(t, err, c.param)
		})
	}
	// The optimal banded factor with a separation past the rounds has
	// one participation: sensitivity exactly 1 (unit columns), not 0.
	f, err := OptimalBanded(context.Background(), prefix(t, 8), math.MaxInt, 0, Options{})
	require.NoError(t, err)
	assert.InDelta(t, 1, f.Metrics.UnitSensitivity.Value, 1e-12)
	assert.Greater(t, f.Metrics.Loss, 0.0)
}

// NaN and infinite entries of C, B or X are a *ParamError naming the
// entry, under every participation, and no "exact" sensitivity comes back
// from a non-zero factor with a value of 0 or NaN. Before, a NaN in C under
// k = R epochs gave 0 (exact), elsewhere NaN or +Inf (exact), or a
// sensitivity that skipped the NaN's class; a negative diagonal of X gave 0.
func TestNonFiniteEntriesAreErrors(t *testing.T) {
	parts := []Participation{SingleParticipation(), FixedEpochs(2), FixedEpochs(8), MinSeparation(2, 0), MinSeparation(3, 2), MinSeparation(1, 0)}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, at := range [][2]int{{3, 2}, {0, 0}, {7, 7}, {5, 1}} {
			c := eyeDense(8)
			c.Set(at[0], at[1], v)
			entry := fmt.Sprintf("[%d][%d]", at[0], at[1])
			for _, p := range parts {
				noPanic(t, fmt.Sprintf("C%s = %v under %v", entry, v, p), func() {
					_, err := SensitivityOf(c, p)
					requireParamError(t, err, "C"+entry)
					_, err = ComputeMetrics(eyeDense(8), c, p)
					requireParamError(t, err, "C"+entry)
					_, err = ComputeMetrics(c, eyeDense(8), p)
					requireParamError(t, err, "B"+entry)
				})
			}
			x := eyeSym(8)
			x.SetSym(at[0], at[1], v)
			xe := fmt.Sprintf("X[%d][%d]", min(at[0], at[1]), max(at[0], at[1]))
			noPanic(t, "X"+entry, func() {
				for _, k := range []int{1, 2} {
					_, err := MinSepSensitivity(x, 2, k)
					requireParamError(t, err, xe)
					_, err = MinSepBanded(x, 2, k)
					requireParamError(t, err, xe)
					_, err = MinSepBound(x, 2, k)
					requireParamError(t, err, xe)
				}
				// The epoch rule reads the class blocks: (3, 2) and
				// (5, 1) are in no class of period 4; the diagonal is.
				_, err := EpochSensitivity(x, 2)
				if at[0] == at[1] || (at[0]-at[1])%4 == 0 {
					requireParamError(t, err, xe)
				}
				_, err = EpochSensitivity(x, 8)
				requireParamError(t, err, xe)
			})
		}
		_, err := ToeplitzMinSepSensitivity([]float64{v, 0.5}, 2, 2)
		requireParamError(t, err, "col[0]")
	}
	// A negative diagonal is no Gram matrix.
	x := eyeSym(4)
	x.SetSym(1, 1, -1)
	for _, k := range []int{1, 2} {
		_, err := MinSepSensitivity(x, 2, k)
		requireParamError(t, err, "X[1][1]")
	}
	_, err := EpochSensitivity(x, 2)
	requireParamError(t, err, "X[1][1]")

	// Non-zero factors never get a sensitivity of 0 (nor NaN): each has a
	// non-zero column.
	single, tiny := mat.NewDense(8, 8, nil), mat.NewDense(8, 8, nil)
	single.Set(0, 1, 1)
	tiny.Set(7, 7, 1e-300)
	for _, c := range []*mat.Dense{eyeDense(8), single, tiny} {
		for _, p := range append(parts, MinSeparation(math.MaxInt, 0), MinSeparation(2, math.MaxInt)) {
			s, err := SensitivityOf(c, p)
			require.NoError(t, err)
			assert.True(t, s.Value > 0, "under %v: %v", p, s)
		}
	}
	// The tiny factor's single column: gamma 1e-300, not 0 (its square
	// underflows).
	assert.InEpsilon(t, 1e-300, Gamma(tiny), 1e-15)
	s, err := SensitivityOf(tiny, FixedEpochs(8))
	require.NoError(t, err)
	assert.InEpsilon(t, 1e-300, s.Value, 1e-15)
	huge := mat.NewDense(8, 8, nil)
	huge.Set(2, 2, 1e300)
	huge.Set(3, 2, 1e300)
	assert.InEpsilon(t, math.Sqrt2*1e300, Gamma(huge), 1e-15)
}

// Every strategy under a separation near MaxInt over 8 rounds: one
// participation, so the sensitivity is gamma, C's largest column norm
// (computed here from C). Before, the BLT fit under min-separation added
// the separation to a round index (t + b), which overflowed and indexed
// out of range (found by FuzzFactorize).
func TestStrategiesHugeSeparation(t *testing.T) {
	const quarterInt = 1 << (strconv.IntSize - 2)
	w, err := Prefix(8)
	require.NoError(t, err)
	for _, info := range Registry() {
		for _, p := range []Participation{MinSeparation(math.MaxInt, 0), MinSeparation(math.MaxInt-1, 3), MinSeparation(quarterInt+1, 2)} {
			noPanic(t, info.Name+" "+p.String(), func() {
				s := info.proto
				if info.HasLossOnly() {
					s, err = WithLossOnly(s, false) // semiseparable needs its factors under min-separation
					require.NoError(t, err)
				}
				f, err := s.Factorize(context.Background(), w, p)
				if err != nil {
					requireParamError(t, err, "participation")
					return
				}
				_, c, err := f.Factors()
				require.NoError(t, err)
				gamma := 0.0
				for j := 0; j < 8; j++ {
					gamma = math.Max(gamma, mat.Norm(c.ColView(j), 2))
				}
				assert.InEpsilon(t, gamma, f.Metrics.UnitSensitivity.Value, 1e-12, "%s %v", info.Name, p)
			})
		}
	}
}

// A workload whose metrics overflow (entries 3e170, so ||B||_F^2 is
// about 1e341) is refused with a *ParamError naming the workload by every
// strategy that takes it, loss-only or not: metrics are never +Inf.
// Before, the loss-only paths (banded, bsr, banded-toeplitz, bisr,
// bandinv, blt) returned +Inf metrics without an error (found by
// FuzzFactorize).
//
// So is one whose metrics underflow (entries 1e-170: squares below 1e-308,
// where the loss was 0 or lost its precision; a relative error of 1e-6
// in the RMSE at entries 9e-160), and one whose B = A C^{-1} overflows
// (entries 4e307: bsr panicked, and optimal under min-separation named
// "B[0][0]" instead of the workload).
func TestLossOnlyOverflowRefused(t *testing.T) {
	for _, scale := range []float64{3e170, 1e-170, 9e-160, 4e307} {
		testMetricsRangeRefused(t, scale)
	}
	// At 1e-100 (squares 1e-200) the metrics are right: the identity's
	// loss is ||A||_F^2 = 1e-200 sum (1+i-j)^2 = 50e-200.
	w, err := NewWorkload(toeplitzTest(1e-100))
	require.NoError(t, err)
	f, err := IdentityStrategy{}.Factorize(context.Background(), w, SingleParticipation())
	require.NoError(t, err)
	assert.InEpsilon(t, 50e-200, f.Metrics.Loss, 1e-14)
}

// toeplitzTest returns scale times the 4 x 4 lower-triangular Toeplitz
// matrix with diagonals 1, 2, 3, 4.
func toeplitzTest(scale float64) *mat.Dense {
	a := mat.NewDense(4, 4, nil)
	for i := 0; i < 4; i++ {
		for j := 0; j <= i; j++ {
			a.Set(i, j, scale*float64(1+i-j)) // Toeplitz, not the prefix sums
		}
	}
	return a
}

// testMetricsRangeRefused checks that every strategy refuses the Toeplitz
// test workload at scale with an error naming the workload.
func testMetricsRangeRefused(t *testing.T, scale float64) {
	w, err := NewWorkload(toeplitzTest(scale))
	require.NoError(t, err)
	for _, info := range Registry() {
		for _, on := range []bool{false, true} {
			if on && !info.HasLossOnly() {
				continue
			}
			s, err := WithLossOnly(info.proto, on)
			require.NoError(t, err)
			for _, p := range []Participation{SingleParticipation(), MinSeparation(2, 0)} {
				noPanic(t, fmt.Sprintf("%s loss-only=%v %v", info.Name, on, p), func() {
					f, err := s.Factorize(context.Background(), w, p)
					if err == nil {
						t.Errorf("scale %g, %s loss-only=%v %v: metrics %+v, want an error", scale, info.Name, on, p, f.Metrics)
						return
					}
					var pe *ParamError
					if errors.As(err, &pe) && pe.Param != "workload" && pe.Param != "participation" {
						t.Errorf("scale %g, %s loss-only=%v %v: %v, want an error naming the workload", scale, info.Name, on, p, err)
					}
				})
			}
		}
	}
}

// Weighted prefix sums whose weights span 1e-181 to 2.25: the optimal
// solver's fixed-point map has eigenvalues outside the floating-point
// range, which Factorize reports as a *ParamError naming the workload (it
// was a plain error naming no input; found by FuzzFactorize).
func TestWorkloadSpreadNamed(t *testing.T) {
	w, err := WeightedPrefix([]float64{2.25, -2.1496629170488755e-181, 5.286885401058808e-11})
	require.NoError(t, err)
	for _, s := range []Strategy{OptimalStrategy{}, SemisepStrategy{}} {
		_, err = s.Factorize(context.Background(), w, SingleParticipation())
		requireParamError(t, err, "workload")
		assert.NotContains(t, err.Error(), "\n")
	}
}

// Weighted prefix sums with weights 5, 4.3e-131, 1.4375: the loss-only
// banded solver under min-separation reported a loss of 2.07 (the 75 of
// the first weight's rows lost in cancellation), below the 27.07 =
// sum_i A[i][i]^2 that every causal factorization's loss is at least
// (|B[i][i]| = |A[i][i] / C[i][i]| >= |A[i][i]| for unit columns). It is
// an error naming the workload now; with its factors formed the loss is
// at least that bound (found by FuzzFactorize).
func TestLossBelowDiagonalBoundRefused(t *testing.T) {
	w, err := WeightedPrefix([]float64{5, 4.3458927724618324e-131, 1.4375})
	require.NoError(t, err)
	bound := 25 + 1.4375*1.4375
	for _, lossOnly := range []bool{true, false} {
		f, err := BandedStrategy{Bands: 3, LossOnly: lossOnly}.Factorize(context.Background(), w, MinSeparation(4, 1))
		if err != nil {
			requireParamError(t, err, "workload")
			continue
		}
		assert.GreaterOrEqual(t, f.Metrics.Loss, bound, "loss-only %v", lossOnly)
	}
}

// TestOverflowingInverseNotBanded: the 4 x 4 lower-triangular matrix with
// diagonal d = 1e-290 and every entry below it o = 1e-276 (diagonal at 1e-14
// of the largest entry, so NewWorkload accepts it) has, in closed form,
// inverse entries (A^{-1})[i][j] = -(o/d^2) (1 - o/d)^(i-j-1) for i > j:
// -1e304 on the first subdiagonal and about 1e318, beyond float64, on the
// second. Before, the overflowed inverse made its largest entry +Inf, no
// entry counted against it, and the workload was given a diagonal
// inverse (0 subdiagonals) for a matrix whose inverse is dense. No band
// of finite numbers is that inverse: the workload must have none.
func TestOverflowingInverseNotBanded(t *testing.T) {
	const d, o = 1e-290, 1e-276
	a := mat.NewDense(4, 4, []float64{d, 0, 0, 0, o, d, 0, 0, o, o, d, 0, o, o, o, d})
	w, err := NewWorkload(a)
	require.NoError(t, err)
	if inv, ok := w.InverseBand(); ok {
		_, p, _ := inv.TriBand()
		t.Fatalf("inverse band with %d subdiagonals, (1,0) entry %v; want none (the true (1,0) entry is %v, the (2,0) entry overflows)", p, inv.At(1, 0), -o/d/d)
	}
}
