package factorize

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
	"gonum.org/v1/gonum/mat"
)

// revsensPatterns returns the maximal patterns of p over n rounds from
// the shared brute-force reference (testutil.SensPatterns).
func revsensPatterns(p Participation, n int) [][]int {
	switch p.Kind {
	case KindEpochs:
		return testutil.SensPatterns("epochs", n, 0, p.K)
	case KindMinSep:
		return testutil.SensPatterns("minsep", n, p.B, p.K)
	}
	return testutil.SensPatterns("single", n, 0, 0)
}

// checkRevsens checks a reported sensitivity against the brute-force
// bracket [lo, hi] of the C it is for: never below lo (a privacy bug), and
// where it claims to be exact, not above hi.
func checkRevsens(t *testing.T, what string, got Sensitivity, c mat.Matrix, p Participation) {
	t.Helper()
	_, n := c.Dims()
	lo, hi := testutil.SensBracket(c, revsensPatterns(p, n))
	tol := 1e-12 * (1 + hi)
	if got.Value < lo-tol {
		t.Errorf("%s: PRIVACY: reported %v below the brute-force %.17g", what, got, lo)
	}
	if got.Exact && got.Value > hi+tol {
		t.Errorf("%s: reported %v claims exact, brute force is at most %.17g", what, got, hi)
	}
}

// TestRevsensEverySetting audits the reported sensitivity of every
// registered strategy with every value of its bands (1 to R + 1) or
// buffers (1 to 4) setting, factors and loss-only paths, under single
// participation, every number of epochs that divides R and min-separations
// (b = 1, 2, 3, R - 1, R + 1 with as many participations as fit, 2, and
// more than fit), against the shared brute force on the C that the
// operator streams. The existing audit (audit_sens_test.go) takes the
// bands 1, 2, the default and R + 3 and one buffer.
func TestRevsensEverySetting(t *testing.T) {
	rs := []int{6, 9}
	if testing.Short() {
		rs = []int{7}
	}
	ctx := t.Context()
	for _, r := range rs {
		w := prefix(t, r)
		parts := []Participation{SingleParticipation()}
		for k := 2; k <= r; k++ {
			if r%k == 0 {
				parts = append(parts, FixedEpochs(k))
			}
		}
		for _, b := range []int{1, 2, 3, r - 1, r + 1} {
			for _, k := range []int{0, 2, r + 5} {
				parts = append(parts, MinSeparation(b, k))
			}
		}
		for _, info := range Registry() {
			var specs []string
			for _, s := range info.Settings {
				switch s.Name {
				case "bands":
					for v := 1; v <= r+1; v++ {
						specs = append(specs, info.Name+":bands="+strconv.Itoa(v))
					}
				case "buffers":
					for v := 1; v <= 4; v++ {
						specs = append(specs, info.Name+":buffers="+strconv.Itoa(v))
					}
				}
			}
			if specs == nil {
				specs = []string{info.Name}
			}
			for _, spec := range specs {
				s, err := ParseStrategy(spec)
				if err != nil {
					t.Fatal(err)
				}
				for _, lossOnly := range []bool{false, true} {
					if lossOnly && !info.HasLossOnly() {
						continue
					}
					st, err := WithLossOnly(s, lossOnly)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range parts {
						if testing.Short() && info.Name == StrategyBLT && p.Kind == KindMinSep && p.K != 0 {
							continue // BLT refits for every pattern
						}
						f, err := st.Factorize(ctx, w, p)
						if err != nil {
							continue // refused (a loss-only path under epochs, a setting ignored under p)
						}
						c := operatorC(f.Operator)
						if c == nil {
							if _, c, err = f.Factors(); err != nil {
								continue // loss-only optimal: no operator, no C
							}
						}
						checkRevsens(t, fmt.Sprintf("R=%d %s (loss-only %v) under %v", r, spec, lossOnly, p), f.Metrics.UnitSensitivity, c, p)
					}
				}
			}
		}
	}
}

// TestRevsensToeplitzRuleRandomColumns checks the Toeplitz rule (Kalinin
// and Lampert 2024, Thm. 2: participations exactly b apart from round 0
// are the worst for a lower-triangular Toeplitz C with non-negative
// non-increasing coefficients) on random such columns, not only the square
// root's: uniform, integer steps with ties and runs of zeros, for every
// separation and count over n <= 10 rounds, by SensitivityOf on the dense
// C and by ToeplitzMinSepSensitivity, against the brute force (exact here:
// X >= 0).
func TestRevsensToeplitzRuleRandomColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	trials := 300
	if testing.Short() {
		trials = 60
	}
	for trial := range trials {
		n := 2 + rng.IntN(9)
		col := make([]float64, n)
		for i := range col {
			switch trial % 3 {
			case 0:
				col[i] = rng.Float64()
			case 1:
				col[i] = float64(rng.IntN(3))
			default:
				if rng.IntN(3) > 0 {
					col[i] = rng.ExpFloat64()
				}
			}
		}
		slices.Sort(col)
		slices.Reverse(col)
		if col[0] == 0 {
			col[0] = 1
		}
		c := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				c.Set(i, j, col[i-j])
			}
		}
		for b := 1; b <= n+1; b++ {
			for k := 0; k <= n/b+2; k++ {
				p := MinSeparation(b, k)
				s, err := SensitivityOf(c, p)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("col %v under %v", col, p)
				lo, hi := testutil.SensBracket(c, revsensPatterns(p, n))
				if math.Abs(lo-hi) > 1e-12*(1+hi) {
					t.Fatalf("%s: X >= 0 but the bracket is [%v, %v]", what, lo, hi)
				}
				checkRevsens(t, what, s, c, p)
				if !s.Exact || math.Abs(s.Value-lo) > 1e-12*(1+lo) {
					t.Errorf("%s: %v, brute force %.17g (exact)", what, s, lo)
				}
				if k >= 1 {
					v, err := ToeplitzMinSepSensitivity(col, b, k)
					if err != nil || math.Abs(v-lo) > 1e-12*(1+lo) {
						t.Errorf("%s: ToeplitzMinSepSensitivity %v (%v), brute force %.17g", what, v, err, lo)
					}
				}
			}
		}
	}
}

// TestRevsensSignedC checks SensitivityOf on random C with entries of both
// signs (where the sum of X over a pattern is not the sensitivity):
// lower-triangular with random supports (banded, Toeplitz with negative
// coefficients), tall, and arbitrary m x n (wide or tall, not triangular,
// with zeros and ties from entries in {-1, 0, 1}), under every pattern
// over n <= 8 rounds: never below the best sign vector on a pattern, and
// where exact, not above the sum of |X|.
func TestRevsensSignedC(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	trials := 400
	if testing.Short() {
		trials = 80
	}
	for trial := range trials {
		n := 1 + rng.IntN(8)
		m := n
		switch trial % 5 {
		case 3:
			m = n + rng.IntN(4) // tall
		case 4:
			m = 1 + rng.IntN(n+3) // any shape, any entries
		}
		bands := m
		if trial%5 == 1 {
			bands = 1 + rng.IntN(n)
		}
		c := mat.NewDense(m, n, nil)
		col := make([]float64, m)
		for i := range col {
			col[i] = rng.NormFloat64()
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				switch {
				case trial%5 == 4:
					if d := rng.IntN(4); d == 1 {
						c.Set(i, j, float64(rng.IntN(3)-1))
					} else if d > 1 {
						c.Set(i, j, rng.NormFloat64())
					}
				case j > i || i-j >= bands:
				case trial%5 == 2:
					c.Set(i, j, col[i-j]) // Toeplitz, signed
				default:
					c.Set(i, j, rng.NormFloat64())
				}
			}
		}
		ps := []Participation{SingleParticipation()}
		for k := 1; k <= n; k++ {
			if n%k == 0 {
				ps = append(ps, FixedEpochs(k))
			}
		}
		for b := 1; b <= n+1; b++ {
			for _, k := range []int{0, 1, 2, 3, n + 2} {
				ps = append(ps, MinSeparation(b, k))
			}
		}
		for _, p := range ps {
			s, err := SensitivityOf(c, p)
			if err != nil {
				t.Fatal(err)
			}
			checkRevsens(t, fmt.Sprintf("trial %d %dx%d %v", trial, m, n, p), s, c, p)
		}
	}
}

// TestRevsensNilWorkload pins that every strategy, with and without its
// loss-only path, refuses a nil workload with a *ParamError under every
// kind of participation. The loss-only banded strategy under
// min-separation read the nil workload's rounds and panicked.
func TestRevsensNilWorkload(t *testing.T) {
	for _, info := range Registry() {
		s, err := ParseStrategy(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, lossOnly := range []bool{false, true} {
			st, err := WithLossOnly(s, lossOnly)
			if err != nil {
				continue
			}
			for _, p := range []Participation{SingleParticipation(), FixedEpochs(2), MinSeparation(2, 0), MinSeparation(3, 2)} {
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s (loss-only %v) under %v with a nil workload: panic %v", info.Name, lossOnly, p, r)
						}
					}()
					_, err := st.Factorize(t.Context(), nil, p)
					var pe *ParamError
					if !errors.As(err, &pe) {
						t.Errorf("%s (loss-only %v) under %v with a nil workload: %v, want a *ParamError", info.Name, lossOnly, p, err)
					}
				}()
			}
		}
	}
}

// TestRevsensLargerRCheapPatterns is the brute force past the sizes where
// every pattern of every participation can be enumerated, for the
// participations whose patterns stay few: fixed epochs (the R/k residue
// classes, every sign vector of each), min-separation with 2
// participations (the pairs at least b apart) and with a separation of at
// least R/3 (at most 3 participations). Every registered strategy with its
// default settings, factors and loss-only paths, at R = 40 (and 100
// without -short, with 3 and 7 bands and 2 buffers too), on the C the
// operator streams, and after moving the result to single participation
// and back (WithParticipation).
func TestRevsensLargerRCheapPatterns(t *testing.T) {
	r, extra := 100, true
	if testing.Short() {
		r, extra = 40, false
	}
	ctx := t.Context()
	w := prefix(t, r)
	parts := []Participation{FixedEpochs(2), FixedEpochs(4), FixedEpochs(8)}
	for _, b := range []int{1, 5, 16, r/2 - 1} {
		parts = append(parts, MinSeparation(b, 2))
	}
	for _, b := range []int{r / 3, r/3 + 1, r - 1} {
		parts = append(parts, MinSeparation(b, 0))
	}
	for _, info := range Registry() {
		specs := []string{info.Name}
		for _, s := range info.Settings {
			switch {
			case !extra:
			case s.Name == "bands":
				specs = append(specs, info.Name+":bands=3", info.Name+":bands=7")
			case s.Name == "buffers":
				specs = append(specs, info.Name+":buffers=2")
			}
		}
		for _, spec := range specs {
			s, err := ParseStrategy(spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, lossOnly := range []bool{false, true} {
				if lossOnly && !info.HasLossOnly() {
					continue
				}
				st, err := WithLossOnly(s, lossOnly)
				if err != nil {
					t.Fatal(err)
				}
				for i, p := range parts {
					if !extra && info.Name == StrategyBLT && p.Kind == KindMinSep && i%2 == 0 {
						continue // BLT refits for every pattern: half of them
					}
					f, err := st.Factorize(ctx, w, p)
					if err != nil {
						continue
					}
					c := operatorC(f.Operator)
					if c == nil {
						if _, c, err = f.Factors(); err != nil {
							continue
						}
					}
					what := fmt.Sprintf("R=%d %s (loss-only %v) under %v", r, spec, lossOnly, p)
					checkRevsens(t, what, f.Metrics.UnitSensitivity, c, p)
					if g, err := f.WithParticipation(SingleParticipation()); err == nil {
						if h, err := g.WithParticipation(p); err == nil {
							checkRevsens(t, what+" (WithParticipation)", h.Metrics.UnitSensitivity, c, p)
						}
					}
				}
			}
		}
	}
}
