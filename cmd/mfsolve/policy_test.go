package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
)

// TestOutputPolicy checks docs/cli.md's output policy: only regular files
// (or new names) are replaced, never an input, never one file twice; each
// refusal comes before any work and changes nothing.
func TestOutputPolicy(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares dir and returns the arguments after -R 6.
		setup func(t *testing.T, dir string) []string
		code  int
		want  string
	}{
		{"device", func(t *testing.T, dir string) []string {
			return []string{"-o", "/dev/null"}
		}, cli.ExitFailure, "-o /dev/null is a device, not a regular file"},
		{"symlink", func(t *testing.T, dir string) []string {
			require.NoError(t, os.Symlink(filepath.Join(dir, "old"), filepath.Join(dir, "link.npy")))
			return []string{"-o", filepath.Join(dir, "link.npy")}
		}, cli.ExitFailure, "link.npy is a symbolic link"},
		{"FIFO", func(t *testing.T, dir string) []string {
			if !testutil.HaveFIFO {
				t.Skip("no named pipes on this platform")
			}
			require.NoError(t, testutil.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
			return []string{"-C", filepath.Join(dir, "fifo"), "-o", filepath.Join(dir, "B.npy")}
		}, cli.ExitFailure, "-C DIR/fifo is a FIFO"},
		{"read-only file", func(t *testing.T, dir string) []string {
			require.NoError(t, os.Chmod(filepath.Join(dir, "old"), 0o444))
			return []string{"-o", filepath.Join(dir, "old")}
		}, cli.ExitFailure, "-o DIR/old is read-only"},
		{"noise over the workload", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 2)", f8(1, 0, 1, 1))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-noise", filepath.Join(dir, "A.npy"), "-std", "1"}
		}, cli.ExitUsage, "-noise DIR/A.npy is the -workload input file"},
		{"B over the workload by another name", func(t *testing.T, dir string) []string {
			writeNPY(t, filepath.Join(dir, "A.npy"), "<f8", "(2, 2)", f8(1, 0, 1, 1))
			require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
			return []string{"-workload", filepath.Join(dir, "A.npy"), "-o", filepath.Join(dir, "sub", "..", "A.npy")}
		}, cli.ExitUsage, "is the -workload input file"},
		{"B and C hard links of one file", func(t *testing.T, dir string) []string {
			require.NoError(t, os.Link(filepath.Join(dir, "old"), filepath.Join(dir, "hard")))
			return []string{"-o", filepath.Join(dir, "old"), "-C", filepath.Join(dir, "hard")}
		}, cli.ExitUsage, "are the same file"},
		{"B and C through a symlinked directory", func(t *testing.T, dir string) []string {
			require.NoError(t, os.Symlink(dir, filepath.Join(dir, "alias")))
			return []string{"-o", filepath.Join(dir, "B.npy"), "-C", filepath.Join(dir, "alias", "B.npy")}
		}, cli.ExitUsage, "are the same file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			old := filepath.Join(dir, "old")
			require.NoError(t, os.WriteFile(old, []byte(oldContents), 0o644))
			args := tc.setup(t, dir)
			before := testutil.DirNames(t, dir)
			res := runT(t, append([]string{"-R", "2", "-strategy", "sqrt"}, args...)...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			assert.Empty(t, res.stdout)
			requireOneErrorLine(t, res.stderr, strings.ReplaceAll(tc.want, "DIR", dir))
			assert.Equal(t, before, testutil.DirNames(t, dir))
			got, err := os.ReadFile(old)
			require.NoError(t, err)
			assert.Equal(t, oldContents, string(got))
		})
	}
	fi, err := os.Lstat("/dev/null")
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeCharDevice, "/dev/null is still a device")
}

func TestHugeStdIsRefused(t *testing.T) {
	// Noise at std 1e308 overflows: refused, nothing written.
	dir := t.TempDir()
	z := filepath.Join(dir, "Z.npy")
	res := runT(t, "-R", "4", "-strategy", "sqrt", "-noise", z, "-dim", "50", "-std", "1e308", "-seed", "3")
	assert.Equal(t, cli.ExitFailure, res.code)
	requireOneErrorLine(t, res.stderr, "overflows; use a smaller -std")
	assert.Empty(t, testutil.DirNames(t, dir))
}

// A result that cannot be reported (an Inf loss from a workload scaled by
// 1e200) is an error that says what overflowed, and writes nothing.
func TestInfLossWritesNothing(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "A.npy")
	writeNPY(t, a, "<f8", "(2, 2)", f8(1e200, 0, 1e200, 1e200))
	for _, extra := range [][]string{{"-json"}, nil} {
		res := runT(t, append([]string{"-workload", a, "-strategy", "identity", "-o", filepath.Join(dir, "B.npy"), "-C", filepath.Join(dir, "C.npy")}, extra...)...)
		assert.Equal(t, cli.ExitFailure, res.code)
		assert.Empty(t, res.stdout)
		requireOneErrorLine(t, res.stderr, "the identity factorization's loss is +Inf")
		assert.Equal(t, []string{"A.npy"}, testutil.DirNames(t, dir))
	}
}

func TestSensitivityOverflow(t *testing.T) {
	res := runT(t, "-R", "4", "-clip", "1e308", "-eps", "1", "-delta", "1e-5", "-o", filepath.Join(t.TempDir(), "B.npy"))
	assert.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "-clip 1e+308 with -learners 1 and C's sensitivity 1: the release sensitivity +Inf must be finite")
}

// A workload scaled by 1e-300 has a loss (about 1e-600) below the float64
// range: it is an error, as the overflow is, never a reported loss of 0.
// A workload scaled by 1e-40 is reported, and -compare prints its RMSE with
// significant digits (four decimals gave 0.0000).
func TestTinyLossUnderflowIsAnError(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "A.npy")
	writeNPY(t, a, "<f8", "(2, 2)", f8(1e-300, 0, 1e-300, 1e-300))
	res := runT(t, "-workload", a, "-strategy", "optimal", "-no-cache", "-o", filepath.Join(dir, "B.npy"))
	assert.Equal(t, cli.ExitFailure, res.code)
	assert.Empty(t, res.stdout)
	requireOneErrorLine(t, res.stderr, "underflows to 0")
	assert.Equal(t, []string{"A.npy"}, testutil.DirNames(t, dir))

	writeNPY(t, a, "<f8", "(2, 2)", f8(1e-40, 0, 1e-40, 1e-40))
	res = runT(t, "-workload", a, "-compare", "-no-cache")
	assert.Equal(t, 0, res.code, res.stderr)
	// identity: B = A, C = I; RMSE^2 = ||A||_F^2 / R = 3e-80 / 2.
	assert.Contains(t, res.stdout, "| identity | 1.0000 | 1.0000 | 3e-80 | 1.2247e-40 |")
}

// TestGeneralLossOnlyIsNotUnderflow: the general path with -loss-only does
// not compute MaxSE (it reports 0, as factorize.Optimal documents); that is
// not an underflow. Its loss must match the full run's, whose metrics come
// from the factors themselves, within the certified gap.
func TestGeneralLossOnlyIsNotUnderflow(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "A.npy")
	const r = 12
	v := make([]float64, 0, r*r)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			x := 0.0
			if j <= i {
				x = 1 / float64(1+i-j) // inverse not banded: the general path
			}
			v = append(v, x)
		}
	}
	writeNPY(t, a, "<f8", "(12, 12)", f8(v...))
	lossOnly := runT(t, "-workload", a, "-loss-only", "-no-cache", "-json")
	require.Equal(t, 0, lossOnly.code, lossOnly.stderr)
	full := runT(t, "-workload", a, "-no-cache", "-json")
	require.Equal(t, 0, full.code, full.stderr)
	lo, fu := parseJSON(t, lossOnly.stdout), parseJSON(t, full.stdout)
	assert.Equal(t, 0.0, lo["max_se"])
	assert.Positive(t, fu["max_se"])
	assert.InEpsilon(t, fu["loss"], lo["loss"], 1e-9)
}
