package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// minsepPatterns returns every set of rounds of 0..r-1 with at most k
// rounds, any two at least b apart (b = 1: any set), nonempty.
func minsepPatterns(r, b, k int) [][]int {
	var out [][]int
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) > 0 {
			out = append(out, append([]int(nil), cur...))
		}
		if len(cur) == k {
			return
		}
		for i := start; i < r; i++ {
			rec(i+b, append(cur, i))
		}
	}
	rec(0, nil)
	return out
}

// sensBounds returns bounds on the sensitivity of C over the given
// participation patterns, computed from the dense C alone: lo, the largest
// norm of a signed sum of a pattern's columns (the sensitivity with
// one-dimensional rows, attained), and hi, the largest sqrt of the sum of
// the absolute entries of a pattern's Gram matrix (no choice of unit rows
// does better). The sensitivity with rows of any dimension lies in
// [lo, hi].
func sensBounds(c *mat.Dense, patterns [][]int) (lo, hi float64) {
	m, _ := c.Dims()
	col := func(j int) []float64 { return mat.Col(nil, j, c) }
	for _, p := range patterns {
		cols := make([][]float64, len(p))
		for i, j := range p {
			cols[i] = col(j)
		}
		h := 0.0
		for _, a := range cols {
			for _, b := range cols {
				d := 0.0
				for i := range m {
					d += a[i] * b[i]
				}
				h += math.Abs(d)
			}
		}
		hi = math.Max(hi, math.Sqrt(h))
		for signs := 0; signs < 1<<len(cols); signs++ {
			s := 0.0
			for i := range m {
				v := 0.0
				for q, a := range cols {
					if signs>>q&1 == 1 {
						v -= a[i]
					} else {
						v += a[i]
					}
				}
				s += v * v
			}
			lo = math.Max(lo, math.Sqrt(s))
		}
	}
	return lo, hi
}

// TestJSONMetricsFromFactors checks the metrics that -json reports against
// the B and C that the same run writes, recomputed densely and
// independently of the solvers: B C = A (prefix sums), gamma the largest
// column norm of C, frob_B_sq = ||B||_F^2, the unit sensitivity within
// brute-force bounds over every participation pattern of R = 12 rounds (and
// equal to gamma under single participation), loss = sens^2 ||B||_F^2,
// rmse = sqrt(loss / R) and max_se = sens^2 max_r ||B[r, :]||^2, as
// docs/cli.md defines them, for every strategy under each participation it
// takes.
func TestJSONMetricsFromFactors(t *testing.T) {
	const r = 12
	parts := map[string][][]int{"single": minsepPatterns(r, r, 1), "minsep:4": minsepPatterns(r, 4, r), "minsep:3,2": minsepPatterns(r, 3, 2)}
	var epochs [][]int
	for i := range 3 {
		epochs = append(epochs, []int{i, i + 3, i + 6, i + 9})
	}
	parts["epochs:4"] = epochs
	checked := map[string]int{}
	for _, info := range factorize.Registry() {
		for part, patterns := range parts {
			t.Run(info.Name+"/"+part, func(t *testing.T) {
				dir := t.TempDir()
				bPath, cPath := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
				res := runT(t, "-R", itoa(r), "-strategy", info.Name, "-participation", part, "-o", bPath, "-C", cPath, "-json", "-no-cache")
				if res.code == cli.ExitUsage || (res.code != cli.ExitOK && strings.Contains(res.stderr, "not support")) {
					t.Skipf("%s under %s: %s", info.Name, part, strings.TrimSpace(res.stderr))
				}
				require.Equal(t, cli.ExitOK, res.code, res.stderr)
				var got struct {
					Loss, Gamma, Rmse float64
					FrobBSq           float64 `json:"frob_B_sq"`
					MaxSE             float64 `json:"max_se"`
					Sens              float64 `json:"unit_sensitivity"`
					Exact             bool    `json:"unit_sensitivity_exact"`
				}
				require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
				b, c := loadDense(t, bPath), loadDense(t, cPath)
				var a mat.Dense
				a.Mul(b, c)
				for i := range r {
					for j := range r {
						want := 0.0
						if j <= i {
							want = 1
						}
						require.InDelta(t, want, a.At(i, j), 1e-9, "(B C)[%d][%d]", i, j)
					}
				}
				rel := func(want, got float64, name string) {
					t.Helper()
					require.InDelta(t, 0, (got-want)/want, 1e-11, "%s = %v, recomputed %v", name, got, want)
				}
				gamma := 0.0
				for j := range r {
					gamma = math.Max(gamma, mat.Norm(c.ColView(j), 2))
				}
				frob, maxRow := 0.0, 0.0
				for i := range r {
					n := mat.Norm(b.RowView(i), 2)
					frob += n * n
					maxRow = math.Max(maxRow, n*n)
				}
				rel(gamma, got.Gamma, "gamma")
				rel(frob, got.FrobBSq, "frob_B_sq")
				lo, hi := sensBounds(c, patterns)
				if part == "single" {
					rel(gamma, got.Sens, "unit_sensitivity")
					require.True(t, got.Exact)
				}
				require.GreaterOrEqual(t, got.Sens, lo*(1-1e-12), "unit_sensitivity below a sensitivity attained")
				if got.Exact {
					require.LessOrEqual(t, got.Sens, hi*(1+1e-12), "an exact unit_sensitivity above its upper bound")
				}
				s2 := got.Sens * got.Sens
				rel(s2*frob, got.Loss, "loss")
				rel(math.Sqrt(s2*frob/r), got.Rmse, "rmse")
				rel(s2*maxRow, got.MaxSE, "max_se")
				checked[part]++

				// The loss-only path, where the strategy has one under this
				// participation, reports the same metrics without forming
				// B and C (max_se 0 where docs/cli.md says it is not
				// computed; gamma 1, its bound, for optimal under epochs).
				lo1 := runT(t, "-R", itoa(r), "-strategy", info.Name, "-participation", part, "-loss-only", "-json", "-no-cache")
				if lo1.code == cli.ExitUsage {
					return
				}
				require.Equal(t, cli.ExitOK, lo1.code, lo1.stderr)
				var only struct {
					Loss, Gamma, Rmse float64
					MaxSE             float64 `json:"max_se"`
					Sens              float64 `json:"unit_sensitivity"`
				}
				require.NoError(t, json.Unmarshal([]byte(lo1.stdout), &only), lo1.stdout)
				tol := 1e-9
				if info.Name == factorize.StrategyOptimal || info.Name == factorize.StrategySemisep {
					tol = 1e-6 // another certified solve, to within its gap
				}
				near := func(want, got float64, name string) {
					t.Helper()
					require.InDelta(t, 0, (got-want)/want, tol, "-loss-only %s = %v, from the factors %v", name, got, want)
				}
				near(s2*frob, only.Loss, "loss")
				near(math.Sqrt(s2*frob/r), only.Rmse, "rmse")
				near(got.Sens, only.Sens, "unit_sensitivity")
				notComputed := (info.Name == factorize.StrategyOptimal && part == "epochs:4") ||
					(info.Name == factorize.StrategyBanded && strings.HasPrefix(part, "minsep"))
				if !notComputed || only.MaxSE != 0 {
					near(s2*maxRow, only.MaxSE, "max_se")
				}
				if !(info.Name == factorize.StrategyOptimal && part == "epochs:4") {
					near(gamma, only.Gamma, "gamma")
				}
				checked[part+" loss-only"]++
			})
		}
	}
	require.Equal(t, len(factorize.Registry()), checked["single"], "strategies checked under single participation")
	t.Logf("checked: %v", checked)
}

// TestCachedPathMetrics is the command-line case of the cache key's path
// (cache.TestCacheKeyBindsPath): a loss-only run of optimal:path=dense
// stores an entry whose max_se is 0 (not computed on the dense path); a
// later loss-only run of plain optimal on the same cache must not load it,
// and its max_se must be at least loss / R (the worst round is at least
// the mean). Before the fix it said cached=true and max_se=0.
func TestCachedPathMetrics(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	run := func(spec string) map[string]any {
		res := runIn(t.Context(), cacheDir, "-R", "40", "-loss-only", "-json", "-strategy", spec)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		return parseJSON(t, res.stdout)
	}
	dense := run("optimal:path=dense")
	require.Equal(t, false, dense["cached"])
	auto := run("optimal")
	require.Equal(t, false, auto["cached"], "plain optimal loaded the dense path's entry")
	require.GreaterOrEqual(t, auto["max_se"].(float64), auto["loss"].(float64)/40)
	require.Equal(t, true, run("optimal:path=dense")["cached"])
}
