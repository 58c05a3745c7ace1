package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/npy"
)

// testMemory is the available memory the tests pretend to have.
const testMemory = 16e9

// runResult is the outcome of one run.
type runResult struct {
	code           int
	stdout, stderr string
}

// runIn runs mfsolve in-process with the given default cache directory.
func runIn(ctx context.Context, cacheDir string, args ...string) runResult {
	var out, errb bytes.Buffer
	code := run(ctx, args, env{
		stdout:          &out,
		stderr:          &errb,
		memAvailable:    func() (uint64, error) { return testMemory, nil },
		defaultCacheDir: func() (string, error) { return cacheDir, nil },
	})
	return runResult{code, out.String(), errb.String()}
}

// runT runs mfsolve with a fresh default cache directory.
func runT(t *testing.T, args ...string) runResult {
	t.Helper()
	return runIn(context.Background(), filepath.Join(t.TempDir(), "cache"), args...)
}

// requireOneErrorLine checks that stderr is exactly one "mfsolve: " line
// containing want.
func requireOneErrorLine(t *testing.T, stderr, want string) {
	t.Helper()
	require.True(t, strings.HasPrefix(stderr, "mfsolve: "), "stderr %q", stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "stderr %q", stderr)
	require.True(t, strings.HasSuffix(stderr, "\n"), "stderr %q", stderr)
	require.Contains(t, stderr, want)
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-R", "0"}, "-R 0: the number of rounds must be at least 1"},
		{[]string{"-R", "-5"}, "-R -5: the number of rounds must be at least 1"},
		// Before, a runtime error without the flag's name ("dpmf: R =
		// 9223372036854775807, want ...", exit status 1) for -strategy tree,
		// whose memory estimate overflowed.
		{[]string{"-R", strconv.Itoa(math.MaxInt), "-strategy", "tree"}, fmt.Sprintf("-R %d: the number of rounds must be at most %d", math.MaxInt, factorize.MaxRounds)},
		{[]string{"-R", strconv.Itoa(factorize.MaxRounds + 1)}, fmt.Sprintf("-R %d: the number of rounds must be at most %d", factorize.MaxRounds+1, factorize.MaxRounds)},
		{[]string{"-R", "abc"}, `invalid value "abc" for flag -R: want a decimal integer`},
		{[]string{"-R", "1.5"}, `invalid value "1.5" for flag -R: want a decimal integer`},
		// The accountant's error had its package prefix ("accountant:
		// neighbouring relation ...").
		{[]string{"-eps", "1", "-delta", "1e-5", "-relation", "add-remov"}, `invalid value "add-remov" for flag -relation: want replace-one or add-remove (mfsolve -h for help)`},
		// Go's integer literals: -R 0x10 was 16 rounds and -R 1_000 1000
		// (and -R 010 octal 8: TestDecimalRounds).
		{[]string{"-R", "0x10"}, `invalid value "0x10" for flag -R: want a decimal integer`},
		{[]string{"-R", "1_000"}, `invalid value "1_000" for flag -R: want a decimal integer`},
		{[]string{"-R", "0b101"}, `invalid value "0b101" for flag -R: want a decimal integer`},
		{[]string{"-R"}, "flag needs an argument: -R"},
		{[]string{"-strategy", "fast"}, `-strategy fast: want one of identity, tree`},
		{[]string{"-strategy", "optimal:tol=0"}, `-strategy optimal:tol=0: want tol = a finite number > 0, not "0"`},
		{[]string{"-strategy", "optimal:tol=NaN"}, `want tol = a finite number > 0, not "NaN"`},
		{[]string{"-strategy", "optimal:tol=Inf"}, `want tol = a finite number > 0, not "Inf"`},
		{[]string{"-strategy", "optimal:max-iter=0"}, `want max-iter = an integer >= 1, not "0"`},
		{[]string{"-strategy", "banded:bands=-2"}, `want bands = an integer >= 1, not "-2"`},
		{[]string{"-strategy", "banded:bands=2,bands=3"}, "want each setting at most once, not bands twice"},
		{[]string{"-strategy", "optimal:bands=3"}, "want a setting that optimal takes (tol, max-iter, path), not bands"},
		{[]string{"-strategy", "banded:buffers=3"}, "want a setting that banded takes (bands, tol, max-iter), not buffers"},
		{[]string{"-strategy", "optimal:path=fast"}, `want path = one of auto, structured, dense, not "fast"`},
		{[]string{"-strategy", "blt-4"}, "-strategy blt-4: want one of identity"},
		{[]string{"-R", "12", "-strategy", "optimal:path=dense", "-participation", "epochs:4"}, "-strategy optimal:path=dense: want path only under single participation or minsep:B, not epochs:4"},
		{[]string{"-tol", "1e-8"}, "-tol was removed: write -strategy optimal:tol=1e-08"},
		{[]string{"-strategy", "banded:bands=4", "-tol", "1e-6"}, "-tol was removed: write -strategy banded:bands=4,tol=1e-06"},
		{[]string{"-max-iter", "9"}, "-max-iter was removed: write -strategy optimal:max-iter=9"},
		{[]string{"-strategy", "banded", "-bands", "64"}, "-bands was removed: write -strategy banded:bands=64"},
		{[]string{"-bands", "3"}, "-bands was removed: give bands=3 in the -strategy spec, but -strategy optimal: want a setting that optimal takes (tol, max-iter, path), not bands"},
		{[]string{"-strategy", "blt", "-buffers", "3"}, "-buffers was removed: write -strategy blt:buffers=3"},
		{[]string{"-method", "dense"}, "-method was removed: write -strategy optimal:path=dense"},
		{[]string{"-method", "fast"}, `-method was removed: give path=fast in the -strategy spec, but -strategy optimal: want path = one of auto, structured, dense, not "fast"`},
		{[]string{"-loss-only", "-strategy", "identity"}, "-loss-only applies only to -strategy tree, sqrt, sqrt-normalized, banded, bsr, banded-toeplitz, bisr, bandinv, blt, semiseparable, optimal, not identity"},
		{[]string{"-loss-only", "-o", "B.npy"}, "-loss-only computes no B or C to write"},
		{[]string{"-loss-only", "-C", "C.npy"}, "-loss-only computes no B or C to write"},
		{[]string{"-o", "x.npy", "-C", "./x.npy"}, "-o and -C are the same file"},
		{[]string{"-cache", "d", "-no-cache"}, "-cache and -no-cache contradict each other"},
		{[]string{"-R", "800", "B.npy"}, `unexpected argument "B.npy": output files are given with -o and -C`},
		// A misspelt command was told about output files only.
		{[]string{"cach", "list"}, `unexpected argument "cach": want flags (output files are given with -o and -C), or the command cache list or cache clear`},
		{[]string{"-frobnicate"}, "flag provided but not defined: -frobnicate"},
		{[]string{"-workload", ""}, "-workload is empty"},
		{[]string{"-o", ""}, "-o is empty: want a file name"},
		{[]string{"-o", "B.npy", "-C", ""}, "-C is empty: want a file name"},
		{[]string{"-noise", "", "-std", "1"}, "-noise is empty: want a file name"},
		{[]string{"-cache", ""}, "-cache is empty: want a directory"},
		{[]string{"-R", "8", "-o", "-json"}, "-o -json: want a file name, not a flag (write ./-json for one of that name)"},
		{[]string{"-R", "8", "-C", "-"}, "-C -: want a file name, not a flag"},
		{[]string{"-R", "8", "-cache", "-json"}, "-cache -json: want a directory, not a flag (write ./-json for one of that name)"},
		{[]string{"cache", "clear", "-cache", "-json"}, "-cache -json: want a directory, not a flag"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := runT(t, tc.args...)
			assert.Equal(t, cli.ExitUsage, res.code)
			assert.Empty(t, res.stdout)
			requireOneErrorLine(t, res.stderr, tc.want)
		})
	}
}

func TestHelp(t *testing.T) {
	res := runT(t, "-h")
	assert.Equal(t, cli.ExitOK, res.code)
	assert.Empty(t, res.stderr)
	assert.Contains(t, res.stdout, "mfsolve -R 800 -o B.npy")
	for _, s := range factorize.Strategies() {
		assert.Contains(t, res.stdout, s)
	}
	for _, f := range []string{"-R", "-o", "-C", "-strategy", "-workload", "-cache", "-no-cache", "-cache-budget", "-json", "-quiet", "-loss-only"} {
		assert.Regexp(t, "\n  "+f+"[ \n]", res.stdout, "usage lists %s", f)
	}
	// The removed flags are not listed; every strategy's settings are,
	// from the registry.
	for _, f := range []string{"-tol", "-max-iter", "-bands", "-buffers", "-method"} {
		assert.NotRegexp(t, "\n  "+f+"[ \n]", res.stdout, "usage lists the removed %s", f)
	}
	for _, info := range factorize.Registry() {
		assert.Regexp(t, "\n  "+info.Name+"\n", res.stdout)
		for _, st := range info.Settings {
			assert.Contains(t, res.stdout, st.Name+"=", "%s: setting %s", info.Name, st.Name)
		}
	}
}

// writeNPY writes a .npy file by hand: magic, version 1.0, header and
// data, so the tests do not depend on the writer under test.
func writeNPY(t *testing.T, path, descr string, shape string, data []byte) {
	t.Helper()
	header := "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }"
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	var b []byte
	b = append(b, "\x93NUMPY\x01\x00"...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	b = append(b, header...)
	b = append(b, data...)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func f8(v ...float64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// oldContents is what B.npy holds before a failing run.
const oldContents = "old B.npy, must survive a failed run"

func TestRuntimeErrorsLeaveNoFiles(t *testing.T) {
	tests := []struct {
		name string
		// setup writes inputs into dir and returns the arguments; B.npy in
		// dir already exists.
		setup func(t *testing.T, dir string) []string
		code  int
		want  string
	}{
		{"output directory missing", func(t *testing.T, dir string) []string {
			return []string{"-strategy", "identity", "-R", "5", "-o", filepath.Join(dir, "missing", "B.npy")}
		}, cli.ExitFailure, "directory " + "DIR/missing does not exist"},
		{"output directory is a file", func(t *testing.T, dir string) []string {
			return []string{"-strategy", "identity", "-R", "5", "-o", filepath.Join(dir, "B.npy", "B.npy")}
		}, cli.ExitFailure, "DIR/B.npy is not a directory"},
		{"output is a directory", func(t *testing.T, dir string) []string {
			return []string{"-strategy", "identity", "-R", "5", "-o", dir}
		}, cli.ExitFailure, "is a directory, want a file name"},
		{"C directory missing", func(t *testing.T, dir string) []string {
			return []string{"-strategy", "identity", "-R", "5", "-o", filepath.Join(dir, "B.npy"), "-C", filepath.Join(dir, "no", "C.npy")}
		}, cli.ExitFailure, "-C DIR/no/C.npy: directory DIR/no does not exist"},
		{"too much memory", func(t *testing.T, dir string) []string {
			return []string{"-R", "200000", "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "R = 200000 needs about 1.9 TB for dense output, this machine has 16.0 GB available; use -loss-only without -o and -C"},
		{"too much memory under epochs", func(t *testing.T, dir string) []string {
			// The multi-epoch optimum's loss-only path fits.
			return []string{"-R", "200000", "-participation", "epochs:4"}
		}, cli.ExitFailure, "R = 200000 needs about 1.9 TB for dense output, this machine has 16.0 GB available; use -loss-only"},
		{"too much memory under epochs, loss only", func(t *testing.T, dir string) []string {
			// 8 (24 (9 k + 1) R + 2 (k (k - 1) / 2)^2 R / k) + 2^21 bytes = 7.248e11.
			return []string{"-R", "100000000", "-participation", "epochs:4", "-loss-only"}
		}, cli.ExitFailure, "R = 100000000 needs about 724.8 GB for the structured loss-only solver, this machine has 16.0 GB available; use a smaller -R"},
		{"too much memory for the loss-only solver", func(t *testing.T, dir string) []string {
			// 320 bytes a round, as for R = 10^12 (320 TB).
			return []string{"-R", "10000000000", "-loss-only"}
		}, cli.ExitFailure, "R = 10000000000 needs about 3.2 TB for the structured loss-only solver, this machine has 16.0 GB available; use a smaller -R"},
		{"largest R for the loss-only solver", func(t *testing.T, dir string) []string {
			return []string{"-R", strconv.Itoa(factorize.MaxRounds), "-loss-only"}
		}, cli.ExitFailure, "needs about"},
		{"R above every workload's limit", func(t *testing.T, dir string) []string {
			return []string{"-R", "9223372036854775807", "-loss-only"}
		}, cli.ExitUsage, "-R 9223372036854775807: the number of rounds must be at most"},
		{"too much memory for the tree", func(t *testing.T, dir string) []string {
			return []string{"-R", "100000", "-strategy", "tree", "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "R = 100000 needs about 320.0 GB for dense output, this machine has 16.0 GB available; use -loss-only without -o and -C"},
		{"workload missing", func(t *testing.T, dir string) []string {
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "-workload DIR/A.npy: no such file or directory (want prefix, momentum:BETA or a .npy file)"},
		{"workload misspelt", func(t *testing.T, dir string) []string {
			return []string{"-workload", "prefx", "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "-workload prefx: no such file or directory (want prefix, momentum:BETA or a .npy file)"},
		{"workload not npy", func(t *testing.T, dir string) []string {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "A.npy"), []byte("1,0\n1,1\n"), 0o644))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "not a .npy file"},
		{"workload not square", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 3)", f8(1, 0, 0, 1, 1, 0))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "workload = 2 x 3, want a square matrix"},
		{"workload not 2-D", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(4,)", f8(1, 0, 1, 1))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "is 1-D, want 2-D"},
		{"workload not lower-triangular", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 2)", f8(1, 0.5, 1, 1))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "want 0 above the diagonal (a lower-triangular matrix)"},
		{"workload singular", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 2)", f8(1, 0, 1, 0))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "(a nonsingular matrix)"},
		{"workload float32", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f4", "(2, 2)", make([]byte, 16))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, `unsupported dtype "<f4"`},
		{"workload big-endian", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), ">f8", "(1, 1)", make([]byte, 8))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, `unsupported dtype ">f8"`},
		{"workload and R disagree", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 2)", f8(1, 0, 1, 1))
			return []string{"-R", "3", "-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitUsage, "-R 3, but the workload in DIR/A.npy is 2 x 2"},
		{"strategy needs the prefix workload", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 2)", f8(2, 0, 1, 1))
			return []string{"-strategy", "sqrt", "-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitUsage, "-workload DIR/A.npy with -strategy sqrt: sqrt factorizes the prefix-sum workload only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bPath := filepath.Join(dir, "B.npy")
			require.NoError(t, os.WriteFile(bPath, []byte(oldContents), 0o644))
			args := tc.setup(t, dir)
			before := testutil.DirNames(t, dir)
			code, want := tc.code, tc.want
			if r, ok := testutil.IntFlagRefusal(args); ok {
				// -R 10^10 and 2^63 - 1 are no ints on a 32-bit
				// platform: the flag package refuses them.
				code, want = cli.ExitUsage, r
			}

			res := runT(t, args...)
			assert.Equal(t, code, res.code)
			assert.Empty(t, res.stdout)
			requireOneErrorLine(t, res.stderr, strings.ReplaceAll(want, "DIR", dir))

			got, err := os.ReadFile(bPath)
			require.NoError(t, err)
			assert.Equal(t, oldContents, string(got), "B.npy changed")
			assert.Equal(t, before, testutil.DirNames(t, dir), "files appeared or vanished")
		})
	}
}

func TestWriteOutputsAllOrNothing(t *testing.T) {
	// The second output fails after the first is staged: neither
	// destination may change and no staging file may remain.
	dir := t.TempDir()
	bPath := filepath.Join(dir, "B.npy")
	require.NoError(t, os.WriteFile(bPath, []byte(oldContents), 0o644))
	m := mat.NewDense(2, 2, []float64{1, 0, 1, 1})
	err := writeOutputs(context.Background(), []output{
		{"-o", bPath, formed(m), 0o644, false},
		{"-C", filepath.Join(dir, "gone", "C.npy"), formed(m), 0o644, false},
	}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-C "+filepath.Join(dir, "gone", "C.npy"))
	got, rerr := os.ReadFile(bPath)
	require.NoError(t, rerr)
	assert.Equal(t, oldContents, string(got))
	assert.Equal(t, []string{"B.npy"}, testutil.DirNames(t, dir))
}

// jsonFields are the fields -json prints, no more and no fewer.
var jsonFields = []string{"R", "strategy", "loss", "frob_B_sq", "gamma", "participation", "unit_sensitivity", "unit_sensitivity_exact", "unit_sensitivity_rule", "rmse", "max_se", "iterations", "gap", "seconds", "cached", "wrote", "plan"}

// parseJSON checks that out is one JSON object with exactly jsonFields.
func parseJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	require.Equal(t, 1, strings.Count(out, "\n"), "one line: %q", out)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := slices.Clone(jsonFields)
	slices.Sort(want)
	require.Equal(t, want, keys)
	return m
}

func TestJSONIdentity(t *testing.T) {
	const r = 20
	res := runT(t, "-strategy", "identity", "-R", "20", "-json", "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Empty(t, res.stderr)
	m := parseJSON(t, res.stdout)
	// The identity on the prefix-sum workload: B = A, gamma = 1,
	// loss = ||A||_F^2 = R(R+1)/2, worst round R.
	assert.Equal(t, float64(r*(r+1)/2), m["loss"])
	assert.Equal(t, float64(r*(r+1)/2), m["frob_B_sq"])
	assert.Equal(t, 1.0, m["unit_sensitivity"])
	assert.Equal(t, 1.0, m["gamma"])
	assert.Equal(t, "single", m["participation"])
	assert.Equal(t, true, m["unit_sensitivity_exact"])
	assert.Equal(t, float64(r), m["max_se"])
	assert.InDelta(t, math.Sqrt(float64(r+1)/2), m["rmse"], 1e-15)
	assert.Equal(t, float64(r), m["R"])
	assert.Equal(t, "identity", m["strategy"])
	assert.Equal(t, 0.0, m["iterations"])
	assert.Equal(t, 0.0, m["gap"])
	assert.Equal(t, false, m["cached"])
}

func TestLossOnlyClosedForm(t *testing.T) {
	// -loss-only needs a loss-only path: other strategies refuse it
	// rather than ignore it.
	res := runT(t, "-strategy", "identity", "-R", "16", "-loss-only", "-json")
	require.Equal(t, cli.ExitUsage, res.code, res.stderr)
	assert.Contains(t, res.stderr, "-loss-only applies only to -strategy tree, sqrt, sqrt-normalized, banded, bsr, banded-toeplitz, bisr, bandinv, blt, semiseparable, optimal, not identity")
	// The structured strategies take it, also under min-separation, with
	// the metrics of their dense factors.
	for _, s := range []string{"bisr", "bandinv", "banded-toeplitz", "tree", "sqrt-normalized", "bsr", "banded"} {
		lean := runT(t, "-strategy", s, "-R", "64", "-participation", "minsep:8", "-loss-only", "-json", "-no-cache")
		full := runT(t, "-strategy", s, "-R", "64", "-participation", "minsep:8", "-json", "-no-cache")
		require.Equal(t, cli.ExitOK, lean.code, lean.stderr)
		require.Equal(t, cli.ExitOK, full.code, full.stderr)
		var ml, mf map[string]any
		require.NoError(t, json.Unmarshal([]byte(lean.stdout), &ml))
		require.NoError(t, json.Unmarshal([]byte(full.stdout), &mf))
		assert.InEpsilon(t, mf["loss"], ml["loss"], 1e-9, s)
		assert.Equal(t, mf["unit_sensitivity_exact"], ml["unit_sensitivity_exact"], s)
	}
	// The multi-epoch optimum takes it too: its certified loss from the
	// dual (no X formed) against the metrics of the dense factors formed
	// from X, within both gaps; the sensitivity is 1 on both paths.
	lean := runT(t, "-R", "64", "-participation", "epochs:4", "-loss-only", "-json", "-no-cache")
	full := runT(t, "-R", "64", "-participation", "epochs:4", "-json", "-no-cache")
	require.Equal(t, cli.ExitOK, lean.code, lean.stderr)
	require.Equal(t, cli.ExitOK, full.code, full.stderr)
	ml, mf := parseJSON(t, lean.stdout), parseJSON(t, full.stdout)
	gaps := ml["gap"].(float64) + mf["gap"].(float64)
	assert.InEpsilon(t, mf["loss"], ml["loss"], gaps+1e-12)
	assert.InDelta(t, 1, ml["unit_sensitivity"], 1e-12)
	assert.InDelta(t, 1, mf["unit_sensitivity"], 1e-12)
	assert.Equal(t, "epoch residue classes", ml["unit_sensitivity_rule"])
	// The tree's sensitivity^2 is its number of levels, floor(log2 R) + 1.
	res = runT(t, "-strategy", "tree", "-R", "16", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	m := parseJSON(t, res.stdout)
	assert.InDelta(t, math.Sqrt(5), m["unit_sensitivity"], 1e-15)
	assert.InDelta(t, 5*m["frob_B_sq"].(float64), m["loss"], 1e-9)
}

func TestWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	// A = [[2, 0], [1, 3]]: the identity strategy has B = A, gamma = 1,
	// loss = 4 + 1 + 9 = 14, worst row 1 + 9 = 10.
	a := filepath.Join(dir, "A.npy")
	writeNPY(t, a, "<f8", "(2, 2)", f8(2, 0, 1, 3))
	res := runT(t, "-strategy", "identity", "-workload", a, "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	m := parseJSON(t, res.stdout)
	assert.Equal(t, 14.0, m["loss"])
	assert.Equal(t, 10.0, m["max_se"])
	assert.Equal(t, 2.0, m["R"])

	// The prefix-sum matrix from a file is recognised as the prefix-sum
	// workload, so the tree accepts it: R = 3 has nodes [0], [1], [2],
	// [0, 1], and round 0 is in two of them.
	p := filepath.Join(dir, "P.npy")
	writeNPY(t, p, "<f8", "(3, 3)", f8(1, 0, 0, 1, 1, 0, 1, 1, 1))
	res = runT(t, "-strategy", "tree", "-workload", p, "-R", "3", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	m = parseJSON(t, res.stdout)
	assert.InDelta(t, math.Sqrt(2), m["unit_sensitivity"], 1e-15)
}

// loadDense reads a .npy file written by mfsolve.
func loadDense(t *testing.T, path string) *mat.Dense {
	t.Helper()
	a, err := npy.Load(path)
	require.NoError(t, err)
	m, err := a.Dense()
	require.NoError(t, err)
	return m
}

func TestWritesBAndC(t *testing.T) {
	tests := []struct {
		strategy string
		r, m     int
		tol      float64
	}{
		// Tree with R = 13: 13 + 6 + 3 + 1 = 23 dyadic nodes; its
		// factors are 0/1 matrices, so B C is exact.
		{"tree", 13, 23, 0},
		{"identity", 9, 9, 0},
		{"sqrt", 30, 30, 1e-12},
		{"sqrt-normalized", 30, 30, 1e-12},
	}
	for _, tc := range tests {
		t.Run(tc.strategy, func(t *testing.T) {
			dir := t.TempDir()
			bPath, cPath := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
			require.NoError(t, os.WriteFile(bPath, []byte(oldContents), 0o644))
			res := runT(t, "-strategy", tc.strategy, "-R", itoa(tc.r), "-o", bPath, "-C", cPath)
			require.Equal(t, cli.ExitOK, res.code, res.stderr)
			assert.Empty(t, res.stderr)
			assert.ElementsMatch(t, []string{"B.npy", "C.npy"}, testutil.DirNames(t, dir))

			b, c := loadDense(t, bPath), loadDense(t, cPath)
			br, bc := b.Dims()
			cr, cc := c.Dims()
			require.Equal(t, [4]int{tc.r, tc.m, tc.m, tc.r}, [4]int{br, bc, cr, cc})
			var bcm mat.Dense
			bcm.Mul(b, c)
			for i := 0; i < tc.r; i++ {
				for j := 0; j < tc.r; j++ {
					want := 0.0
					if j <= i {
						want = 1
					}
					require.InDelta(t, want, bcm.At(i, j), tc.tol, "(B C)[%d][%d]", i, j)
				}
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestSummaryLine(t *testing.T) {
	res := runT(t, "-strategy", "identity", "-R", "4", "-no-cache")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Empty(t, res.stderr)
	line, wrote, ok := strings.Cut(strings.TrimSuffix(res.stdout, "\n"), "; ")
	require.True(t, ok, res.stdout)
	require.NotContains(t, line, "\n")
	assert.Equal(t, "wrote no files (-o FILE writes B, -C FILE writes C)", wrote)
	var keys []string
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		require.True(t, ok, "field %q", f)
		require.NotEmpty(t, v)
		keys = append(keys, k)
	}
	assert.Equal(t, []string{"strategy", "R", "loss", "rmse", "max_se", "participation", "gamma", "unit_sensitivity", "unit_sensitivity_exact", "iterations", "gap", "seconds", "cached"}, keys)
	assert.Contains(t, line, "strategy=identity R=4 loss=10 ")
}

func TestQuiet(t *testing.T) {
	res := runT(t, "-strategy", "identity", "-R", "4", "-quiet")
	assert.Equal(t, cli.ExitOK, res.code)
	assert.Empty(t, res.stdout)
	assert.Empty(t, res.stderr)

	res = runT(t, "-strategy", "identity", "-R", "4", "-quiet", "-json")
	assert.Equal(t, cli.ExitOK, res.code)
	parseJSON(t, res.stdout)
}

func TestCacheReuse(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	b1, b2, b3 := filepath.Join(dir, "B1.npy"), filepath.Join(dir, "B2.npy"), filepath.Join(dir, "B3.npy")
	ctx := context.Background()
	args := []string{"-strategy", "sqrt-normalized", "-R", "50", "-json"}

	first := runIn(ctx, cache, append(args, "-o", b1)...)
	require.Equal(t, cli.ExitOK, first.code, first.stderr)
	assert.Equal(t, false, parseJSON(t, first.stdout)["cached"])
	require.Len(t, testutil.DirNames(t, cache), 1)

	second := runIn(ctx, cache, append(args, "-o", b2)...)
	require.Equal(t, cli.ExitOK, second.code, second.stderr)
	assert.Equal(t, true, parseJSON(t, second.stdout)["cached"])

	// -no-cache neither reads nor writes the cache.
	entry := filepath.Join(cache, testutil.DirNames(t, cache)[0])
	stamp := time.Unix(1_000_000_000, 0)
	require.NoError(t, os.Chtimes(entry, stamp, stamp))
	third := runIn(ctx, cache, append(args, "-o", b3, "-no-cache")...)
	require.Equal(t, cli.ExitOK, third.code, third.stderr)
	assert.Equal(t, false, parseJSON(t, third.stdout)["cached"])
	fi, err := os.Stat(entry)
	require.NoError(t, err)
	assert.True(t, fi.ModTime().Equal(stamp), "-no-cache rewrote the entry")
	assert.Len(t, testutil.DirNames(t, cache), 1)

	// The cached B is the computed B, bit for bit.
	want, err := os.ReadFile(b1)
	require.NoError(t, err)
	for _, p := range []string{b2, b3} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s differs", p)
	}

	// -cache DIR overrides the default directory.
	other := filepath.Join(dir, "other")
	res := runIn(ctx, cache, append(args, "-cache", other)...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, false, parseJSON(t, res.stdout)["cached"])
	assert.Len(t, testutil.DirNames(t, other), 1)
}

func TestCorruptCacheEntry(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	args := []string{"-strategy", "sqrt", "-R", "64", "-json"}
	res := runIn(ctx, cache, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)

	names := testutil.DirNames(t, cache)
	require.Len(t, names, 1)
	entry := filepath.Join(cache, names[0])
	data, err := os.ReadFile(entry)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(entry, data, 0o644))

	res = runIn(ctx, cache, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	requireOneErrorLine(t, res.stderr, "mfsolve: cache entry "+entry+" is corrupt (checksum mismatch); recomputing")
	assert.Equal(t, false, parseJSON(t, res.stdout)["cached"])

	res = runIn(ctx, cache, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Empty(t, res.stderr)
	assert.Equal(t, true, parseJSON(t, res.stdout)["cached"])
}

func TestUnusableCacheDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	res := runT(t, "-strategy", "identity", "-R", "3", "-json", "-cache", filepath.Join(file, "cache"))
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, 6.0, parseJSON(t, res.stdout)["loss"])
	assert.Contains(t, res.stderr, "mfsolve: cannot write the cache")
	for _, line := range strings.SplitAfter(res.stderr, "\n") {
		if line != "" {
			assert.True(t, strings.HasPrefix(line, "mfsolve: "), "line %q", line)
		}
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	res := runIn(ctx, filepath.Join(dir, "cache"), "-R", "50", "-o", filepath.Join(dir, "B.npy"))
	assert.Equal(t, cli.ExitFailure, res.code)
	requireOneErrorLine(t, res.stderr, "mfsolve: interrupted; nothing written")
	assert.Empty(t, testutil.DirNames(t, dir), "no B.npy, no cache entry")
}

func TestOptimalSmallExact(t *testing.T) {
	// Known optima of the prefix-sum workload (notes section 3, from an
	// independent computation): R = 2 is the golden ratio squared,
	// (3 + sqrt 5) / 2; R = 3 is 4.607861648.
	tests := []struct {
		r    string
		want float64
		tol  float64 // relative: 10 printed digits for R = 3
	}{
		{"2", (3 + math.Sqrt(5)) / 2, 1e-9},
		{"3", 4.607861648, 1e-9},
	}
	for _, tc := range tests {
		for _, lossOnly := range []bool{false, true} {
			args := []string{"-R", tc.r, "-json"}
			if lossOnly {
				args = append(args, "-loss-only")
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				res := runT(t, args...)
				require.Equal(t, cli.ExitOK, res.code, res.stderr)
				m := parseJSON(t, res.stdout)
				loss := m["loss"].(float64)
				assert.InDelta(t, tc.want, loss, tc.tol*tc.want)
				// Unit column norms: gamma = 1, so the loss is ||B||_F^2.
				assert.InDelta(t, loss, m["frob_B_sq"], 1e-12*loss)
				assert.InDelta(t, 1, m["unit_sensitivity"], 1e-12)
				assert.Greater(t, m["iterations"], 0.0)
				assert.LessOrEqual(t, m["gap"], factorize.DefaultTol)
			})
		}
	}
}

func TestOptimalWritesBAndC(t *testing.T) {
	const r = 40
	dir := t.TempDir()
	bPath, cPath := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy")
	res := runT(t, "-R", "40", "-o", bPath, "-C", cPath, "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	m := parseJSON(t, res.stdout)
	b, c := loadDense(t, bPath), loadDense(t, cPath)
	var bcm mat.Dense
	bcm.Mul(b, c)
	frob := 0.0
	for i := 0; i < r; i++ {
		col := 0.0
		for j := 0; j < r; j++ {
			want := 0.0
			if j <= i {
				want = 1
			}
			require.InDelta(t, want, bcm.At(i, j), 1e-9, "(B C)[%d][%d]", i, j)
			if j > i {
				// Causal: both factors lower-triangular.
				require.Zero(t, b.At(i, j), "B[%d][%d]", i, j)
				require.Zero(t, c.At(i, j), "C[%d][%d]", i, j)
			}
			col += c.At(j, i) * c.At(j, i)
			frob += b.At(i, j) * b.At(i, j)
		}
		require.InDelta(t, 1, col, 1e-9, "column %d of C", i)
	}
	assert.InDelta(t, m["frob_B_sq"], frob, 1e-9*frob)
}

func TestOptimalCacheByTolerance(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	for _, step := range []struct {
		tol    string
		cached bool
	}{{"1e-10", false}, {"1e-10", true}, {"1e-6", false}, {"1e-6", true}} {
		res := runIn(ctx, cache, "-R", "30", "-strategy", "optimal:tol="+step.tol, "-json")
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		m := parseJSON(t, res.stdout)
		assert.Equal(t, step.cached, m["cached"], "tol %s", step.tol)
		tol, _ := strconv.ParseFloat(step.tol, 64)
		assert.LessOrEqual(t, m["gap"], tol)
	}
	assert.Len(t, testutil.DirNames(t, cache), 2)
}

func TestProgressOnTerminal(t *testing.T) {
	var out, errb testutil.SyncBuffer
	code := run(context.Background(), []string{"-R", "300", "-no-cache"}, env{
		stdout: &out, stderr: &errb, progress: true, progressDelay: 0,
	})
	require.Equal(t, cli.ExitOK, code, errb.String())
	s := errb.String()
	assert.True(t, strings.HasPrefix(s, "\rmfsolve: optimal R=300  "), "%q", s)
	assert.True(t, strings.HasSuffix(s, "\r\x1b[K"), "line erased: %q", s)
	assert.True(t, strings.HasPrefix(out.String(), "strategy=optimal R=300 "), out.String())

	// -quiet suppresses it.
	var out2, errb2 testutil.SyncBuffer
	code = run(context.Background(), []string{"-R", "300", "-no-cache", "-quiet"}, env{
		stdout: &out2, stderr: &errb2, progress: true, progressDelay: 0,
	})
	require.Equal(t, cli.ExitOK, code, errb2.String())
	assert.Empty(t, errb2.String())
	assert.Empty(t, out2.String())
}

// optimal:path=dense solves the prefix-sum workload on the general path; its
// certified loss must agree with the structured path's within the two gaps.
func TestMethodDenseAgrees(t *testing.T) {
	var losses []float64
	for _, m := range []string{"auto", "dense"} {
		res := runT(t, "-R", "120", "-loss-only", "-no-cache", "-json", "-strategy", "optimal:path="+m)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		var out struct {
			Loss float64 `json:"loss"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		losses = append(losses, out.Loss)
	}
	assert.InEpsilon(t, losses[0], losses[1], 2.1e-10)
}

// -R 010 is 10 rounds, as written in decimal: the flag package read it as
// octal, 8 rounds, without a word.
func TestDecimalRounds(t *testing.T) {
	res := runT(t, "-R", "010", "-strategy", "sqrt", "-no-cache", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	var out struct{ R int }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	assert.Equal(t, 10, out.R)
}
