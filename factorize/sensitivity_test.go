package factorize

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// validPattern reports whether the rounds in the bit set s form a
// participation pattern of p over n rounds.
func validPattern(s uint32, p Participation, n int) bool {
	if s == 0 {
		return false
	}
	switch p.Kind {
	case KindSingle:
		return bits.OnesCount32(s) == 1
	case KindEpochs:
		b := n / p.K
		first := bits.TrailingZeros32(s)
		for i := 0; i < n; i++ {
			if s&(1<<i) != 0 && (i-first)%b != 0 {
				return false
			}
		}
		return true
	}
	if bits.OnesCount32(s) > p.Participations(n) {
		return false
	}
	last := -p.B
	for i := 0; i < n; i++ {
		if s&(1<<i) != 0 {
			if i-last < p.B {
				return false
			}
			last = i
		}
	}
	return true
}

// bruteForce enumerates every participation pattern of p over c's n
// rounds. scalar is the largest ||C g||^2 over patterns and over
// per-round contributions g_j = +-1 on the pattern (a lower bound on the
// squared sensitivity, which is reached when X >= 0); abs is the largest
// sum of |X_ij| over a pattern (an upper bound). With signs false only
// g = 1 is tried (enough when X >= 0).
func bruteForce(c *mat.Dense, p Participation, signs bool) (scalar, abs float64) {
	m, n := c.Dims()
	x := gram(c)
	for s := uint32(1); s < 1<<n; s++ {
		if !validPattern(s, p, n) {
			continue
		}
		var idx []int
		for i := 0; i < n; i++ {
			if s&(1<<i) != 0 {
				idx = append(idx, i)
			}
		}
		a := 0.0
		for _, i := range idx {
			for _, j := range idx {
				a += math.Abs(x.At(i, j))
			}
		}
		abs = math.Max(abs, a)
		nsign := uint32(1)
		if signs {
			nsign = 1 << (len(idx) - 1) // g and -g give the same norm
		}
		for sg := uint32(0); sg < nsign; sg++ {
			v := 0.0
			for r := 0; r < m; r++ {
				y := 0.0
				for t, j := range idx {
					if sg&(1<<t) != 0 {
						y -= c.At(r, j)
					} else {
						y += c.At(r, j)
					}
				}
				v += y * y
			}
			scalar = math.Max(scalar, v)
		}
	}
	return scalar, abs
}

// patterns lists the participations to check over n rounds.
func patterns(n int) []Participation {
	ps := []Participation{SingleParticipation()}
	for k := 1; k <= n; k++ {
		if n%k == 0 {
			ps = append(ps, FixedEpochs(k))
		}
	}
	for b := 1; b <= n; b++ {
		for _, k := range []int{0, 1, 2, 3, 5} {
			ps = append(ps, MinSeparation(b, k))
		}
	}
	return ps
}

// checkAgainstBrute checks SensitivityOf(c, p) against brute force: never
// below the scalar lower bound, never above the |X| upper bound of the
// patterns, and equal to the scalar value when it claims to be exact.
func checkAgainstBrute(t *testing.T, name string, c *mat.Dense, signs bool) {
	t.Helper()
	_, n := c.Dims()
	for _, p := range patterns(n) {
		got, err := SensitivityOf(c, p)
		require.NoError(t, err, "%s %v", name, p)
		scalar, abs := bruteForce(c, p, signs)
		lo, hi := math.Sqrt(scalar), math.Sqrt(abs)
		tol := 1e-12 * (1 + hi)
		assert.GreaterOrEqual(t, got.Value, lo-tol, "%s %v: %v below the brute-force value %v", name, p, got, lo)
		if got.Exact {
			assert.InDelta(t, lo, got.Value, tol, "%s %v: %v claims exact, brute force %v", name, p, got, lo)
		}
		if got.Rule != RuleMinSepBound {
			// Every rule but the DP bound is at most the |X| bound.
			assert.LessOrEqual(t, got.Value, hi+tol, "%s %v: %v above the |X| bound %v", name, p, got, hi)
		}
	}
}

func randomLower(rng *rand.Rand, n, bands int, nonneg bool) *mat.Dense {
	c := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := max(0, i-bands+1); j <= i; j++ {
			v := rng.NormFloat64()
			if nonneg {
				v = math.Abs(v)
			}
			c.Set(i, j, v)
		}
	}
	return c
}

func TestSensitivityBruteForceNonNegative(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 4, 7, 12, 16} {
		checkAgainstBrute(t, "nonneg", randomLower(rng, n, n, true), false)
		// X >= 0 here, so every exact rule must match and the bound hold.
	}
}

func TestSensitivityBruteForceSigned(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{3, 6, 9} {
		checkAgainstBrute(t, "signed", randomLower(rng, n, n, false), true)
	}
	// Banded C: X is banded within the bands, so min-sep with b >= bands
	// is exact whatever the signs.
	for _, bands := range []int{1, 2, 3} {
		c := randomLower(rng, 10, bands, false)
		checkAgainstBrute(t, "banded", c, true)
		for b := bands; b <= 10; b++ {
			for _, k := range []int{1, 2, 4} {
				s, err := SensitivityOf(c, MinSeparation(b, k))
				require.NoError(t, err)
				assert.True(t, s.Exact, "bands %d, b %d: %v", bands, b, s)
				// The DP bound is exact there too.
				bound, err := MinSepBound(gram(c), b, k)
				require.NoError(t, err)
				assert.InDelta(t, s.Value, bound, 1e-12)
			}
		}
	}
}

func TestSensitivityBruteForceTall(t *testing.T) {
	// The tree's C has more rows than rounds.
	tr, err := newTree(prefix(t, 13))
	require.NoError(t, err)
	checkAgainstBrute(t, "tree", tr.C, false)
}

func TestToeplitzMinSep(t *testing.T) {
	// Non-negative non-increasing Toeplitz C: the closed form is exact.
	for _, n := range []int{5, 11, 16} {
		sq, err := newSqrt(prefix(t, n))
		require.NoError(t, err)
		col, ok := monotoneToeplitz(sq.C)
		require.True(t, ok)
		for b := 1; b <= n; b++ {
			for _, k := range []int{1, 2, 3, 0} {
				p := MinSeparation(b, k)
				s, err := SensitivityOf(sq.C, p)
				require.NoError(t, err)
				if p.Participations(n) > 1 {
					assert.Equal(t, RuleMinSepToeplitz, s.Rule)
				}
				scalar, _ := bruteForce(sq.C, p, false)
				assert.InDelta(t, math.Sqrt(scalar), s.Value, 1e-12, "n %d %v", n, p)
				// The general bound is never below it.
				bound, err := MinSepBound(gram(sq.C), b, p.Participations(n))
				require.NoError(t, err)
				assert.GreaterOrEqual(t, bound, s.Value-1e-12)
			}
		}
		_ = col
	}
	_, err := ToeplitzMinSepSensitivity([]float64{1, 2}, 1, 1)
	assert.Error(t, err)
	_, err = ToeplitzMinSepSensitivity([]float64{1, -0.5}, 1, 1)
	assert.Error(t, err)
}

func TestSensitivityPublished(t *testing.T) {
	// The identity of size 16 with e epochs: sqrt(e).
	id := identityOf(t, prefix(t, 16)).C
	for _, e := range []int{1, 2, 4, 8, 16} {
		s, err := SensitivityOf(id, FixedEpochs(e))
		require.NoError(t, err)
		assert.InDelta(t, math.Sqrt(float64(e)), s.Value, 1e-15)
		assert.True(t, s.Exact)
	}
	c := mat.NewDense(4, 4, []float64{
		1, 0, 0, 0,
		2, 1, 0, 0,
		0, 1, 1, 0,
		0, 0, 1, -6,
	})
	s, err := SensitivityOf(c, SingleParticipation())
	require.NoError(t, err)
	assert.Equal(t, 6.0, s.Value)
	assert.True(t, s.Exact)
	// X = C^T C has X_00 = 5, X_01 = 2, X_11 = X_22 = 2, X_12 = 1,
	// X_23 = -6, X_33 = 36, zeros elsewhere. For b = 2 or 3 and k >= 2 the
	// patterns {0, 2}, {0, 3}, {1, 3} have X_ij = 0 across, so sens^2 =
	// max(5+2, 5+36, 2+36) = 41: the published "min-separation 2 or 3:
	// sqrt(41)". By hand for b = 1 (any pattern), with g = (1, 1, 1, -1):
	// ||C g||^2 = 1+9+4+49 = 63. Every sensitivity of this C lies in
	// [6, sqrt(63)] (single participation to the sum of all |X|).
	for _, tc := range []struct {
		b, k  int
		want  float64
		exact bool
	}{
		{2, 2, math.Sqrt(41), true}, {2, 0, math.Sqrt(41), true}, {3, 2, math.Sqrt(41), true},
		{4, 0, 6, true}, {1, 1, 6, true}, {2, 1, 6, true},
		{1, 2, math.Sqrt(50), false}, // {2, 3} with opposite signs: 2 + 36 + 12
	} {
		s, err := SensitivityOf(c, MinSeparation(tc.b, tc.k))
		require.NoError(t, err)
		assert.InDelta(t, tc.want, s.Value, 1e-12, "b %d k %d", tc.b, tc.k)
		assert.Equal(t, tc.exact, s.Exact, "b %d k %d", tc.b, tc.k)
	}
	scalar, _ := bruteForce(c, MinSeparation(1, 4), true)
	assert.InDelta(t, 63, scalar, 1e-12)
}

func TestSensitivityErrors(t *testing.T) {
	c := identityOf(t, prefix(t, 6)).C
	_, err := SensitivityOf(c, FixedEpochs(4))
	assert.ErrorContains(t, err, "not a whole number of 4 epochs")
	_, err = SensitivityOf(c, MinSeparation(0, 1))
	requireParamError(t, err, "participation")
	_, err = EpochSensitivity(gram(c), 0)
	assert.Error(t, err)
	_, err = MinSepBanded(gram(randomLower(rand.New(rand.NewPCG(1, 1)), 6, 6, true)), 2, 2)
	assert.ErrorContains(t, err, "not banded")
	var pe *ParamError
	for _, f := range []func() error{
		func() error { _, err := EpochSensitivity(nil, 1); return err },
		func() error { _, err := MinSepSensitivity(nil, 1, 1); return err },
		func() error { _, err := MinSepSensitivity(gram(c), 0, 1); return err },
		func() error { _, err := MinSepBound(gram(c), 1, 0); return err },
		func() error { _, err := MinSepBanded(gram(c), -1, 1); return err },
		func() error { _, err := SensitivityOf(nil, SingleParticipation()); return err },
	} {
		assert.ErrorAs(t, f(), &pe)
	}
}

func TestParseParticipation(t *testing.T) {
	for _, s := range []string{"single", "epochs:3", "minsep:4", "minsep:4,2"} {
		p, err := ParseParticipation(s)
		require.NoError(t, err, s)
		assert.Equal(t, s, p.String())
	}
	for _, s := range []string{"", "single:1", "epochs", "epochs:0", "epochs:x", "minsep", "minsep:0", "minsep:2,0", "minsep:2,", "every"} {
		_, err := ParseParticipation(s)
		assert.Error(t, err, s)
	}
	assert.Equal(t, 4, MinSeparation(3, 0).Participations(10))
	assert.Equal(t, 2, MinSeparation(3, 2).Participations(10))
}

// Every strategy reports loss, RMSE and MaxSE under the participation it
// is given: sens^2 ||B||_F^2 and so on, with sens from SensitivityOf.
func TestStrategiesUnderParticipation(t *testing.T) {
	ctx := t.Context()
	const r = 24
	w := prefix(t, r)
	strategies := []Strategy{IdentityStrategy{}, TreeStrategy{}, SqrtStrategy{}, SqrtStrategy{Normalized: true},
		BandedStrategy{Bands: 4}, BLTStrategy{Buffers: 2}, OptimalStrategy{}}
	operators := []string{"independent", "tree", "toeplitz", "toeplitz", "banded", "blt", ""}
	for i, s := range strategies {
		for _, p := range []Participation{SingleParticipation(), FixedEpochs(4), MinSeparation(4, 3), MinSeparation(6, 0)} {
			f, err := s.Factorize(ctx, w, p)
			require.NoError(t, err, "%s %v", s.Name(), p)
			if operators[i] != "" {
				assert.True(t, strings.HasPrefix(f.Operator.String(), operators[i]), "%s: operator %v", s.Name(), f.Operator)
			}
			assert.Equal(t, p, f.Metrics.Participation)
			fb, fc, err := f.Factors()
			require.NoError(t, err)
			sens, err := SensitivityOf(fc, p)
			require.NoError(t, err)
			frob, worst := 0.0, 0.0
			br, bm := fb.Dims()
			for a := 0; a < br; a++ {
				row := 0.0
				for b := 0; b < bm; b++ {
					row += fb.At(a, b) * fb.At(a, b)
				}
				frob += row
				worst = math.Max(worst, row)
			}
			s2 := sens.Value * sens.Value
			// (The optimal factorization's single-participation metrics
			// come from C's generators, not its dense entries: the same
			// to rounding.)
			got := f.Metrics.UnitSensitivity
			assert.Equal(t, sens.Exact, got.Exact, "%s %v", s.Name(), p)
			assert.Equal(t, sens.Rule, got.Rule, "%s %v", s.Name(), p)
			assert.InEpsilon(t, sens.Value, got.Value, 1e-14, "%s %v", s.Name(), p)
			assert.InEpsilon(t, s2*frob, f.Metrics.Loss, 1e-12, "%s %v", s.Name(), p)
			assert.InEpsilon(t, math.Sqrt(s2*frob/r), f.Metrics.RMSE, 1e-12)
			assert.InEpsilon(t, s2*worst, f.Metrics.MaxSE, 1e-12)
			assert.InEpsilon(t, Gamma(fc), f.Metrics.Gamma, 1e-14)
			if p.Kind == KindSingle {
				assert.Equal(t, f.Metrics.Gamma, got.Value)
			}
		}
	}
	// The identity under k epochs: sens = sqrt(k), loss k R (R+1) / 2.
	f, err := IdentityStrategy{}.Factorize(ctx, w, FixedEpochs(4))
	require.NoError(t, err)
	assert.InDelta(t, 4*r*(r+1)/2, f.Metrics.Loss, 1e-9)
	// A banded C with b bands under b-min-separation: sens^2 is a sum of
	// 3 squared column norms b apart, exactly.
	f, err = BandedStrategy{Bands: 4}.Factorize(ctx, w, MinSeparation(4, 3))
	require.NoError(t, err)
	g := Gamma(f.C)
	assert.True(t, f.Metrics.UnitSensitivity.Exact)
	assert.Equal(t, RuleMinSepBanded, f.Metrics.UnitSensitivity.Rule)
	assert.LessOrEqual(t, f.Metrics.UnitSensitivity.Value, math.Sqrt(3)*g*(1+1e-15))
	assert.Greater(t, f.Metrics.UnitSensitivity.Value, g)

	// Invalid participation is refused before the work; loss-only results
	// have no C for other patterns.
	_, err = OptimalStrategy{}.Factorize(ctx, w, FixedEpochs(5))
	assert.ErrorContains(t, err, "not a whole number of 5 epochs")
	lo, err := OptimalStrategy{Options: Options{LossOnly: true}}.Factorize(ctx, w, SingleParticipation())
	require.NoError(t, err)
	_, err = lo.WithParticipation(FixedEpochs(2))
	assert.ErrorContains(t, err, "loss-only")
	_, err = OptimalStrategy{Options: Options{LossOnly: true}}.Factorize(ctx, w, MinSeparation(2, 2))
	assert.ErrorContains(t, err, "loss-only")
	// For fixed epochs the optimal strategy is the multi-epoch optimum,
	// whose sensitivity is 1 by construction, also loss-only.
	ep, err := OptimalStrategy{Options: Options{LossOnly: true}}.Factorize(ctx, w, FixedEpochs(2))
	require.NoError(t, err)
	assert.Equal(t, Sensitivity{Value: 1, Exact: true, Rule: RuleEpochs}, ep.Metrics.UnitSensitivity)
}

func TestParseStrategy(t *testing.T) {
	for _, name := range Strategies() {
		s, err := ParseStrategy(name)
		require.NoError(t, err)
		assert.Equal(t, name, s.Name())
	}
	_, err := ParseStrategy("nope")
	requireParamError(t, err, "strategy")
}

// gram returns X = C^T C.
func gram(c mat.Matrix) *mat.SymDense {
	_, n := c.Dims()
	x := mat.NewSymDense(n, nil)
	x.SymOuterK(1, c.T())
	return x
}

// Under min-separation the banded, bsr and blt strategies are the
// participation-aware factorizations: the same as calling OptimalBanded,
// BandedSqrt and BLTMinSep directly, with exact sensitivity sqrt(k) for the
// banded ones (unit columns, bands within the separation).
func TestStrategiesForMinSep(t *testing.T) {
	ctx := t.Context()
	w := prefix(t, 48)
	p := MinSeparation(12, 3)
	f, err := BandedStrategy{}.Factorize(ctx, w, p)
	require.NoError(t, err)
	g, err := OptimalBanded(ctx, w, 12, 3, Options{})
	require.NoError(t, err)
	assert.Equal(t, g.Metrics, f.Metrics)
	assert.Equal(t, "banded(b=12)", f.Operator.String())
	assert.InDelta(t, math.Sqrt(3), f.Metrics.UnitSensitivity.Value, 1e-12)
	assert.True(t, f.Metrics.UnitSensitivity.Exact)

	f, err = BSRStrategy{}.Factorize(ctx, w, p)
	require.NoError(t, err)
	g, err = BandedSqrt(w, 12, 3)
	require.NoError(t, err)
	assert.Equal(t, g.Metrics, f.Metrics)
	assert.Equal(t, StrategyBSR, f.Strategy)
	assert.InDelta(t, math.Sqrt(3), f.Metrics.UnitSensitivity.Value, 1e-12)

	f, err = BLTStrategy{Buffers: 2}.Factorize(ctx, w, p)
	require.NoError(t, err)
	g, err = BLTMinSep(ctx, w, 2, 12, 3)
	require.NoError(t, err)
	assert.Equal(t, g.Metrics, f.Metrics)
	assert.IsType(t, &BLTParams{}, f.Operator)

	_, err = BandedStrategy{Bands: -1}.Factorize(ctx, w, p)
	requireParamError(t, err, "bands")
}

// Rounding-level negative entries in a class do not make the epoch rule a
// bound; real ones do.
func TestEpochRuleRounding(t *testing.T) {
	x := mat.NewSymDense(4, []float64{
		1, 0, 0, 0,
		0, 1, 0, 0,
		0, 0, 1, 0,
		0, 0, 0, 1,
	})
	x.SetSym(0, 2, -1e-18)
	s, err := EpochSensitivity(x, 2)
	require.NoError(t, err)
	assert.True(t, s.Exact)
	assert.InDelta(t, math.Sqrt(2), s.Value, 1e-15)
	x.SetSym(0, 2, -1e-3)
	s, err = EpochSensitivity(x, 2)
	require.NoError(t, err)
	assert.False(t, s.Exact)
	assert.InDelta(t, math.Sqrt(2.002), s.Value, 1e-15)
}
