package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	dpcache "github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// TestParticipationOfWorkloadFile: a workload file sets R, so a
// -participation is checked against the file's order, whatever the file's
// name. A file not named .npy (as `-workload <(cmd)` gives /dev/fd/63) was
// checked against the default -R 800 instead: epochs:3 on a 9 x 9 workload
// was refused as "800 rounds are not a whole number of 3 epochs". The
// 9 x 9 prefix-sum matrix under epochs:3 is the prefix workload under
// epochs:3, so both runs report the same loss; epochs:4 does not divide 9
// and is refused naming the file's 9 rounds.
func TestParticipationOfWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	var a []float64
	for i := range 9 {
		for j := range 9 {
			a = append(a, map[bool]float64{true: 1, false: 0}[j <= i])
		}
	}
	want := runT(t, "-R", "9", "-participation", "epochs:3", "-strategy", "sqrt", "-json", "-no-cache")
	require.Equal(t, cli.ExitOK, want.code, want.stderr)
	for _, name := range []string{"A.npy", "A.dat", "A"} {
		path := filepath.Join(dir, name)
		writeNPY(t, path, "<f8", "(9, 9)", f8(a...))
		res := runT(t, "-workload", path, "-participation", "epochs:3", "-strategy", "sqrt", "-json", "-no-cache")
		require.Equal(t, cli.ExitOK, res.code, "%s: %s", name, res.stderr)
		assert.Equal(t, parseJSON(t, want.stdout)["loss"], parseJSON(t, res.stdout)["loss"], name)

		res = runT(t, "-workload", path, "-participation", "epochs:4", "-no-cache")
		require.Equal(t, cli.ExitUsage, res.code, "%s: %s", name, res.stderr)
		requireOneErrorLine(t, res.stderr, "9 rounds")
	}
}

// TestSummaryLineOneLineWithControlCharacters: the summary is one line on
// stdout, even for an output file whose name holds a newline (a legal
// Unix name): -o $'a\nb.npy' split it into two lines, the second "b.npy"
// alone. A name with a character that does not print is written as a Go
// quoted string ("a\nb.npy"), which names the file unambiguously; an
// ordinary name is written as it is.
func TestSummaryLineOneLineWithControlCharacters(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "a\nb.npy")
	res := runT(t, "-R", "3", "-strategy", "identity", "-o", odd, "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, 1, strings.Count(res.stdout, "\n"), "%q", res.stdout)
	assert.True(t, strings.HasSuffix(res.stdout, "wrote B (3 x 3) to "+strconv.Quote(odd)+"\n"), "%q", res.stdout)
	plain := filepath.Join(dir, "B é.npy")
	res = runT(t, "-R", "3", "-strategy", "identity", "-o", plain, "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.True(t, strings.HasSuffix(res.stdout, "wrote B (3 x 3) to "+plain+"\n"), "%q", res.stdout)
}

// failWriter fails every write, as stdout redirected to /dev/full does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestReportFailureAfterWriting: when stdout cannot take the report after
// the outputs were renamed into place (mfsolve -o B.npy -json > /dev/full),
// the run fails with status 1, and its one-line error says which files it
// wrote, instead of a bare "write /dev/stdout: ..." that reads as if the
// run, like every other failed run, had written nothing; the file is
// there and complete.
func TestReportFailureAfterWriting(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "B.npy")
	var errb bytes.Buffer
	code := run(t.Context(), []string{"-R", "3", "-strategy", "identity", "-o", b, "-json", "-no-cache"}, env{
		stdout: failWriter{}, stderr: &errb,
		memAvailable:    func() (uint64, error) { return testMemory, nil },
		defaultCacheDir: func() (string, error) { return filepath.Join(dir, "cache"), nil },
	})
	require.Equal(t, cli.ExitFailure, code)
	requireOneErrorLine(t, errb.String(), "wrote B (3 x 3) to "+b+", but printing the report failed: no space left on device")
	r, c := loadDense(t, b).Dims()
	assert.Equal(t, [2]int{3, 3}, [2]int{r, c})

	// Without outputs, the error is the write's.
	errb.Reset()
	code = run(t.Context(), []string{"-R", "3", "-strategy", "identity", "-no-cache"}, env{
		stdout: failWriter{}, stderr: &errb,
		memAvailable:    func() (uint64, error) { return testMemory, nil },
		defaultCacheDir: func() (string, error) { return filepath.Join(dir, "cache"), nil },
	})
	require.Equal(t, cli.ExitFailure, code)
	assert.Equal(t, "mfsolve: no space left on device\n", errb.String())

	// cache clear removes the entries, then says so when the report
	// cannot be printed (it said only "write /dev/stdout: ...").
	cache := filepath.Join(dir, "cache")
	res := runEnv(cache, nil, "-R", "3", "-strategy", "identity", "-quiet")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	size, n := cacheBytes(t, cache)
	require.Equal(t, 1, n)
	errb.Reset()
	code = run(t.Context(), []string{"cache", "clear"}, env{
		stdout: failWriter{}, stderr: &errb,
		defaultCacheDir: func() (string, error) { return cache, nil },
	})
	require.Equal(t, cli.ExitFailure, code)
	requireOneErrorLine(t, errb.String(), fmt.Sprintf("removed 1 entry (%s) from %s, but printing the report failed: no space left on device", dpcache.FormatSize(size), cache))
	_, n = cacheBytes(t, cache)
	assert.Zero(t, n)

	// A help that cannot be written is a failure, as every command's is
	// (mfsolve -h > /dev/full exited 0).
	for _, args := range [][]string{{"-h"}, {"cache", "-h"}, {"cache", "list", "-h"}} {
		errb.Reset()
		code = run(t.Context(), args, env{stdout: failWriter{}, stderr: &errb})
		assert.Equal(t, cli.ExitFailure, code, "%q", args)
		assert.Equal(t, "mfsolve: no space left on device\n", errb.String(), "%q", args)
	}
}

// TestStrategyWorkloadIsUsageError: every registered strategy against each
// kind of workload. A strategy that does not serve the workload is a
// one-line usage error (exit status 2) naming -workload and -strategy and
// what the strategy accepts, before solving; one that serves it runs.
// Before, -workload momentum:0.9 -strategy tree (or sqrt, or semiseparable)
// exited with status 1 and factorize's runtime message. What each
// strategy serves is written here by hand from its documentation: the
// prefix-sum workload only (tree, sqrt, sqrt-normalized), lower-triangular
// Toeplitz workloads (the banded strategies, blt), a bidiagonal inverse
// (semiseparable), every workload (identity, optimal).
func TestStrategyWorkloadIsUsageError(t *testing.T) {
	dir := t.TempDir()
	const r = 10
	file := func(name string, at func(i, j int) float64) string {
		var a []float64
		for i := range r {
			for j := range r {
				v := 0.0
				if j <= i {
					v = at(i, j)
				}
				a = append(a, v)
			}
		}
		path := filepath.Join(dir, name)
		writeNPY(t, path, "<f8", "(10, 10)", f8(a...))
		return path
	}
	// Weighted prefix sums (A[i][j] = w_j: a bidiagonal inverse, not
	// Toeplitz), a Toeplitz matrix without a banded inverse (1/(k+1)^2
	// on the k-th subdiagonal), a matrix of neither structure.
	weighted := file("weighted.npy", func(_, j int) float64 { return float64(1 + j%3) })
	toeplitz := file("toeplitz.npy", func(i, j int) float64 { return 1 / float64((i-j+1)*(i-j+1)) })
	general := file("general.npy", func(i, j int) float64 { return 1 + float64((i+2*j)%5)/10 })
	all := []string{"prefix", "momentum:0.9", weighted, toeplitz, general}
	toeplitzOnly := []string{"prefix", "momentum:0.9", toeplitz}
	serves := map[string][]string{
		"identity": all, "optimal": all,
		"tree": {"prefix"}, "sqrt": {"prefix"}, "sqrt-normalized": {"prefix"},
		"banded": toeplitzOnly, "bsr": toeplitzOnly, "banded-toeplitz": toeplitzOnly, "bisr": toeplitzOnly, "bandinv": toeplitzOnly, "blt": toeplitzOnly,
		"semiseparable": {"prefix", weighted},
	}
	for _, name := range factorize.Strategies() {
		require.Contains(t, serves, name, "no expectation written for strategy %s", name)
		for _, w := range all {
			args := []string{"-workload", w, "-strategy", name, "-json", "-no-cache"}
			if !strings.HasSuffix(w, ".npy") {
				args = append(args, "-R", strconv.Itoa(r))
			}
			res := runT(t, args...)
			if slices.Contains(serves[name], w) {
				assert.Equal(t, cli.ExitOK, res.code, "%s on %s: %s", name, w, res.stderr)
				continue
			}
			if assert.Equal(t, cli.ExitUsage, res.code, "%s on %s: %s", name, w, res.stderr) {
				requireOneErrorLine(t, res.stderr, "-workload "+w+" with -strategy "+name+": "+name+" factorizes ")
				assert.Empty(t, res.stdout)
			}
		}
	}
	// Under minsep:B the banded strategy runs its certified solver, which
	// takes any workload with a banded inverse (weighted prefix sums too),
	// and refuses one without it.
	res := runT(t, "-workload", weighted, "-strategy", "banded", "-participation", "minsep:3", "-no-cache")
	assert.Equal(t, cli.ExitOK, res.code, res.stderr)
	res = runT(t, "-workload", toeplitz, "-strategy", "banded", "-participation", "minsep:3", "-no-cache")
	require.Equal(t, cli.ExitUsage, res.code, res.stderr)
	requireOneErrorLine(t, res.stderr, "with -strategy banded (-participation minsep:3): banded factorizes ")
}

// TestMomentumEpochsCountsTheFactors: under fixed epochs the optimal
// solver forms B and C unless -loss-only, so the memory check counts a
// dense solve, 2 R^2 float64 for the factors and 4 R^2 of work:
// 6 x 8 x 30000^2 = 43.2 GB at R = 30000, refused with 16 GB before any
// work, with the advice to use -loss-only. With -loss-only it forms no dense matrix on momentum either (since
// 2026-11-28: its certificate rests on the double-word band kernel, see
// factorize.OptimalEpochs; before, it formed the factors to check them,
// and this check counted them), so the estimate is the O(R k) band
// arrays', the prefix sums' alike.
func TestMomentumEpochsCountsTheFactors(t *testing.T) {
	var errb bytes.Buffer
	code := run(t.Context(), []string{"-R", "30000", "-workload", "momentum:0.9", "-participation", "epochs:4", "-no-cache"}, env{
		stdout: &bytes.Buffer{}, stderr: &errb,
		memAvailable: func() (uint64, error) { return testMemory, nil },
	})
	require.NotEqual(t, 0, code)
	requireOneErrorLine(t, errb.String(), "R = 30000 needs about 43.2 GB for dense output, this machine has 16.0 GB available; use -loss-only")

	lossOnly, err := factorize.WithLossOnly(factorize.OptimalStrategy{}, true)
	require.NoError(t, err)
	w, err := factorize.Momentum(30000, 0.9)
	require.NoError(t, err)
	_, banded := w.InverseBand()
	require.True(t, banded, "momentum's inverse is banded")
	need := factorize.SolveBytes(lossOnly, 30000, factorize.FixedEpochs(4), banded)
	assert.Less(t, need, 1e9, "the fixed-epoch loss-only path is O(R k) on momentum")
	assert.Less(t, need, float64(testMemory), "passes the memory check")
}

// TestCompareReportFailure: -compare's table is its whole output, so a
// stdout that cannot take it (mfsolve -compare > /dev/full) fails the run
// with status 1 and the write's error, in plain text and in JSON lines.
// Before, every row's write error was dropped and the run exited 0 having
// printed nothing.
func TestCompareReportFailure(t *testing.T) {
	for _, js := range []bool{false, true} {
		args := []string{"-R", "4", "-compare", "-no-cache"}
		if js {
			args = append(args, "-json")
		}
		var errb bytes.Buffer
		code := run(t.Context(), args, env{
			stdout: failWriter{}, stderr: &errb,
			memAvailable: func() (uint64, error) { return testMemory, nil },
		})
		assert.Equal(t, cli.ExitFailure, code, "json %v: %s", js, errb.String())
		assert.Equal(t, "mfsolve: no space left on device\n", errb.String(), "json %v", js)
	}
}

// A workload file whose values the factorization cannot represent (entries
// of 1e308: the optimal loss is +Inf; of 1e-320: the solver's eigenvalue
// bounds are NaN) is one error naming -workload and the file, exit status
// 1, and no -o file. Before, the line was "mfsolve: dpmf: workload =
// matrix (...)", naming neither the flag nor the file.
func TestWorkloadValuesNameTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		a    []float64
		want string
	}{
		{"big.npy", []float64{1e308, 0, 1e308, 1e308}, "the optimal factorization's loss is +Inf"},
		{"tiny.npy", []float64{1e-320, 0, 1e-320, 1e-320}, "eigenvalues of the optimal solver's fixed-point map"},
	} {
		path, out := filepath.Join(dir, c.name), filepath.Join(dir, "B-"+c.name)
		writeNPY(t, path, "<f8", "(2, 2)", f8(c.a...))
		res := runT(t, "-workload", path, "-o", out, "-no-cache")
		assert.Equal(t, cli.ExitFailure, res.code, c.name)
		requireOneErrorLine(t, res.stderr, "mfsolve: -workload "+path+": workload = matrix (")
		requireOneErrorLine(t, res.stderr, c.want)
		assert.NoFileExists(t, out)
	}
}
