package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
)

// runOflMem runs ofl in-process pretending the machine has mem bytes
// available.
func runOflMem(t *testing.T, mem uint64, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{
		stdout: &out, stderr: &errb,
		randomSeed:   func() (uint64, error) { return 99, nil },
		memAvailable: func() (uint64, error) { return mem, nil },
	})
	return result{code, out.String(), errb.String()}
}

// A diverged run is an error that says what diverged, with or without
// -json, and writes nothing: no rounds.csv, not even the -out directory.
func TestDivergedRunWritesNothing(t *testing.T) {
	for _, extra := range [][]string{nil, {"-json"}, {"-l2", "0"}} {
		for _, eta := range []string{"1e100", "1e300"} {
			if len(extra) > 0 && extra[0] == "-l2" && eta == "1e100" {
				continue // finite (1e100), not diverged
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "run")
			args := append([]string{"-eta", eta, "-out", out}, small...)
			r := runOfl(t, append(args, extra...)...)
			assert.Equal(t, cli.ExitFailure, r.code, "%v %s: %s", extra, eta, r.stderr)
			assert.Empty(t, r.stdout)
			requireOneErrorLine(t, r.stderr, "the optimiser diverged: ")
			assert.Contains(t, r.stderr, "use a smaller -eta or -eta-g")
			assert.Empty(t, testutil.DirNames(t, dir), "nothing written")
		}
	}
}

func TestOutPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	linkDir := filepath.Join(dir, "linked")
	require.NoError(t, os.Mkdir(linkDir, 0o755))
	require.NoError(t, os.Symlink(file, filepath.Join(linkDir, "rounds.csv")))
	dataDir := filepath.Join(dir, "data")
	require.NoError(t, os.Mkdir(dataDir, 0o755))
	csv := filepath.Join(dataDir, "rounds.csv")
	require.NoError(t, os.WriteFile(csv, []byte("label,a\n1,2\n"), 0o644))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-out", ""}, cli.ExitUsage, "-out is empty"},
		{[]string{"-out", filepath.Join(file, "sub")}, cli.ExitFailure, "-out " + filepath.Join(file, "sub") + ": " + file + " is not a directory"},
		{[]string{"-out", linkDir}, cli.ExitFailure, "rounds.csv is a symbolic link"},
		{[]string{"-out", dataDir, "-data", csv}, cli.ExitUsage, "is the -data input file"},
	} {
		before := testutil.DirNames(t, dir)
		args := c.args
		if !strings.Contains(strings.Join(args, " "), "-data") {
			args = append(args, small...)
		} else {
			args = append(args, "-learners", "1", "-tau", "1", "-rounds", "1", "-reps", "1")
		}
		r := runOfl(t, args...)
		assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		requireOneErrorLine(t, r.stderr, c.want)
		assert.Equal(t, before, testutil.DirNames(t, dir))
	}
}

func TestOutUnwritableFailsAtOnce(t *testing.T) {
	// /proc/self is a directory no one (not even root) can create files
	// in. The check comes before the run: with the default configuration
	// (20 x 800 rounds, seconds of work) the error is immediate.
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc/self")
	}
	start := time.Now()
	r := runOfl(t, "-out", "/proc/self", "-seed", "1")
	assert.Equal(t, cli.ExitFailure, r.code)
	requireOneErrorLine(t, r.stderr, "-out /proc/self: cannot create files in directory /proc/self")
	assert.Less(t, time.Since(start), time.Second)
}

func TestHugeRepsRefused(t *testing.T) {
	// 10^12 repetitions need terabytes for their traces alone: refused
	// before any work, not a runtime crash.
	// (2 10^9 where int has 32 bits, which the flag package refuses
	// 10^12 in: still 10^5 times the memory.)
	reps := "1000000000000"
	if strconv.IntSize == 32 {
		reps = "2000000000"
	}
	r := runOflMem(t, 16e9, smallWith("-reps", reps)...)
	assert.Equal(t, cli.ExitFailure, r.code)
	requireOneErrorLine(t, r.stderr, "-reps "+reps+", -rounds 30, -learners 3, -tau 2, -dim 5 need about ")
	assert.True(t, strings.HasSuffix(r.stderr, "this machine has 16.0 GB available; use smaller values\n"), r.stderr)

	r = runOflMem(t, 16e9, "-rounds", "100000000", "-reps", "1")
	assert.Equal(t, cli.ExitFailure, r.code)
	requireOneErrorLine(t, r.stderr, "need about ")

	// The default configuration fits.
	assert.Less(t, memoryNeed(config{rounds: 800, learners: 10, tau: 10, reps: 20, evalEvery: 20, data: dataSpec{dim: 60}}, 2), 1e9)

	// The factorization's share follows the strategy: dense B and C and
	// 4 R^2 of solver work (48 R^2 bytes) for both, then per worker, 8 d
	// bytes each: for optimal the state vectors of its quasiseparable
	// factor (the registry's bound 16 + 4 log2 R, 56 at R = 1000, where
	// the solve gives K = 38) and under 2 epochs its dense operator's R
	// past noise rows; K = 2 state vectors for blt:buffers=2.
	base := config{rounds: 1000, epochs: 1, learners: 2, tau: 1, reps: 1, evalEvery: 1000, data: dataSpec{dim: 60}, algo: fedopt.NonPrivate}
	share := func(strategy string, epochs int) float64 {
		c := base
		c.algo, c.strategy, c.epochs = fedopt.Correlated, strategy, epochs
		return memoryNeed(c, 3) - memoryNeed(base, 3)
	}
	assert.Equal(t, 48e6+3*56*60*8, share("optimal", 1))
	assert.Equal(t, 48e6+3*1000*60*8, share("optimal", 2))
	assert.Equal(t, 48e6+3*2*60*8, share("blt:buffers=2", 1))
}

func TestClipOverflow(t *testing.T) {
	r := runOfl(t, append([]string{"-clip", "1e308"}, small...)...)
	assert.Equal(t, cli.ExitUsage, r.code)
	requireOneErrorLine(t, r.stderr, "ofl: -clip 1e+308 with -learners 3: the release sensitivity +Inf must be finite")

	// A subnormal sensitivity keeps too few bits for the reported sigma;
	// the run writes nothing.
	out := filepath.Join(t.TempDir(), "out")
	r = runOfl(t, append([]string{"-clip", "1e-320", "-out", out}, small...)...)
	assert.Equal(t, cli.ExitUsage, r.code)
	requireOneErrorLine(t, r.stderr, "ofl: -clip 1e-320 with -learners 3: the release sensitivity 6.67e-321 must be finite and at least 2.2e-308")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "-out created: %v", err)

	// A normal release sensitivity whose noise std is subnormal (sigma
	// 0.024 at eps 1000), refused by accountant.Scale.
	r = runOfl(t, append([]string{"-clip", "1e-307", "-eps", "1000", "-out", out}, small...)...)
	assert.Equal(t, cli.ExitUsage, r.code)
	requireOneErrorLine(t, r.stderr, "ofl: -clip 1e-307 with -learners 3 and -eps 1000: the noise std sigma x release sensitivity is below 2.2e-308")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "-out created: %v", err)
}

func TestLearnerOutCheckedFirst(t *testing.T) {
	// The output is checked before connecting (which would retry an
	// absent server for -give-up), not after the whole run.
	start := time.Now()
	r := runOfl(t, "learner", "-id", "0", "-seed", "1", "-server", "127.0.0.1:1", "-insecure", "-out", "/dev/null")
	assert.Equal(t, cli.ExitFailure, r.code, r.stderr)
	assert.Equal(t, "ofl learner: -out /dev/null is a device, not a regular file\n", r.stderr)
	assert.Less(t, time.Since(start), 5*time.Second)

	r = runOfl(t, "learner", "-id", "0", "-seed", "1", "-insecure", "-out", "")
	assert.Equal(t, cli.ExitUsage, r.code, r.stderr)
	assert.Equal(t, "ofl learner: -out is empty: want a file name\n", r.stderr)
}
