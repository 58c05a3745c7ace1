package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/atomicfile"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/npy"

	"github.com/dpmf/dpmf/internal/testutil"
)

// startBinary starts mfsolve in dir with extra environment variables and
// returns the command and a reader of its stderr.
func startBinary(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(mfsolveBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "xdg")), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	t.Cleanup(func() { kill.Stop() })
	return cmd, bufio.NewReader(pipe), &out
}

// exitCode waits for cmd and returns its exit status (-1 if a signal
// ended it).
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// temps lists the temporary files of atomicfile in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range testutil.DirNames(t, dir) {
		if atomicfile.IsTemp(n) {
			out = append(out, n)
		}
	}
	return out
}

// TestSignalDuringWrite sends SIGINT or SIGTERM to a real mfsolve process
// when B, C and the noise samples are complete in their temporary files but
// not yet renamed (the pause point "commit"): the existing outputs must stay
// untouched, no new file may appear and no temporary file may remain.
func TestSignalDuringWrite(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range []string{"B.npy", "C.npy"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(oldContents), 0o644))
			}
			before := testutil.DirNames(t, dir)
			cmd, stderr, stdout := startBinary(t, dir, []string{cli.PauseEnv + "=commit"},
				"-R", "300", "-strategy", "sqrt", "-no-cache", "-o", "B.npy", "-C", "C.npy", "-noise", "Z.npy", "-std", "1", "-seed", "1")
			line, err := stderr.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "pause: commit\n", line)
			assert.Len(t, temps(t, dir), 3, "B, C and Z are complete in temporary files")

			require.NoError(t, cmd.Process.Signal(sig))
			rest, _ := io.ReadAll(stderr)
			assert.Equal(t, cli.ExitFailure, exitCode(t, cmd))
			assert.Equal(t, "mfsolve: interrupted; nothing written\n", string(rest))
			assert.Empty(t, stdout.String())
			for _, n := range []string{"B.npy", "C.npy"} {
				got, err := os.ReadFile(filepath.Join(dir, n))
				require.NoError(t, err)
				assert.Equal(t, oldContents, string(got), n)
			}
			assert.Equal(t, before, testutil.DirNames(t, dir), "no file appeared, no temporary file left")
		})
	}
}

// TestSignalDuringSolveSIGTERM: SIGTERM, like Ctrl-C, cancels a running
// solve (the loss-only solve of R = 1000000 takes about 10 s; R = 200000
// took 1.7 s, less than the longer waits below). On a very loaded
// machine the signal can arrive before main has installed its handler
// (the process then dies of the signal, status -1, and writes nothing);
// the test then tries again with a longer wait, as TestBinaryInterrupt
// does.
func TestSignalDuringSolveSIGTERM(t *testing.T) {
	for _, wait := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
		dir := t.TempDir()
		cmd, stderr, stdout := startBinary(t, dir, nil, "-R", "1000000", "-loss-only")
		time.Sleep(wait)
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		rest, _ := io.ReadAll(stderr)
		code := exitCode(t, cmd)
		assert.Empty(t, stdout.String())
		if cache := filepath.Join(dir, "xdg", "dpmf"); dirExists(cache) {
			assert.Empty(t, testutil.DirNames(t, cache), "no cache entry, no temporary file")
		}
		if code == -1 && len(rest) == 0 {
			continue // the signal came before the handler
		}
		assert.Equal(t, cli.ExitFailure, code)
		assert.Equal(t, "mfsolve: interrupted; nothing written\n", string(rest))
		return
	}
	t.Fatal("mfsolve died of SIGTERM before installing its handler three times")
}

// TestSignalAnyTime sends SIGTERM at several times during a run that
// solves, forms B and C, stores the cache entry and writes both files.
// Whatever the moment, the outcome is all or nothing: exit 0 with complete
// new files, or exit 1 with the old files untouched; never a temporary file
// in the output or the cache directory, never a damaged cache entry.
func TestSignalAnyTime(t *testing.T) {
	for _, delay := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond} {
		dir := t.TempDir()
		for _, n := range []string{"B.npy", "C.npy"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(oldContents), 0o644))
		}
		cmd, stderr, _ := startBinary(t, dir, nil, "-R", "1200", "-o", "B.npy", "-C", "C.npy")
		time.Sleep(delay)
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		rest, _ := io.ReadAll(stderr)
		code := exitCode(t, cmd)
		assert.Empty(t, temps(t, dir), "delay %v", delay)
		for _, n := range []string{"B.npy", "C.npy"} {
			got, err := os.ReadFile(filepath.Join(dir, n))
			require.NoError(t, err)
			switch code {
			case cli.ExitOK:
				a, err := npy.Load(filepath.Join(dir, n))
				require.NoError(t, err, "delay %v: %s", delay, n)
				assert.Equal(t, []int{1200, 1200}, a.Shape)
			case cli.ExitFailure, -1:
				// -1: the signal came before the handler was installed
				// (a very loaded machine); nothing was written then.
				if code == cli.ExitFailure {
					assert.Equal(t, "mfsolve: interrupted; nothing written\n", string(rest))
				}
				assert.Equal(t, oldContents, string(got), "delay %v: %s", delay, n)
			default:
				t.Fatalf("delay %v: exit status %d, stderr %q", delay, code, rest)
			}
		}
		if cache := filepath.Join(dir, "xdg", "dpmf"); dirExists(cache) {
			assert.Empty(t, temps(t, cache), "delay %v", delay)
			// An entry, if any, is complete: a second run loads it.
			for _, n := range testutil.DirNames(t, cache) {
				assert.True(t, strings.HasSuffix(n, ".dpmf"), n)
			}
			res := runBinary(t, dir, "-R", "1200", "-json")
			require.Equal(t, cli.ExitOK, res.code, res.stderr)
			assert.NotContains(t, res.stderr, "corrupt")
		}
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// TestSIGKILLTempsRemovedByNextRun: mfsolve killed outright (SIGKILL, no
// chance to clean up) with B and C complete in their temporary files
// leaves them behind; the next run writing the same outputs removes them,
// their owner being provably gone (its pid, on this host and boot, in
// this pid namespace, no longer runs), and writes B and C. A temporary
// file of an unknown owner (an older dpmf's name, without pid and host)
// is left, and named in a one-line warning. Before, both stayed forever.
func TestSIGKILLTempsRemovedByNextRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a writer's death is proven on Linux only")
	}
	dir := t.TempDir()
	args := []string{"-R", "50", "-strategy", "sqrt", "-no-cache", "-o", "B.npy", "-C", "C.npy"}
	cmd, stderr, _ := startBinary(t, dir, []string{cli.PauseEnv + "=commit"}, args...)
	line, err := stderr.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "pause: commit\n", line)
	left := temps(t, dir)
	require.Len(t, left, 2, "B and C complete in temporary files")
	require.NoError(t, cmd.Process.Kill())
	exitCode(t, cmd)
	require.Equal(t, left, temps(t, dir), "SIGKILL leaves the temporary files")
	old := ".B.npy.tmp-0123456789abcdef" // an older dpmf's temporary file
	require.NoError(t, os.WriteFile(filepath.Join(dir, old), nil, 0o644))

	res := runBinary(t, dir, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, []string{old}, temps(t, dir), "the killed run's temporary files are removed, the unknown one is left")
	assert.Equal(t, 1, strings.Count(res.stderr, "\n"), res.stderr)
	assert.True(t, strings.HasPrefix(res.stderr, "mfsolve: -o B.npy: "), res.stderr)
	assert.Contains(t, res.stderr, old)
	for _, n := range []string{"B.npy", "C.npy"} {
		_, err := os.Stat(filepath.Join(dir, n))
		assert.NoError(t, err, n)
	}
}

// TestConcurrentWritersKeepBAndCPaired: two mfsolve processes write the
// same -o/-C pair at once, the first paused between its two renames
// (B renamed, C not yet): the second waits for it (one line saying so)
// instead of renaming its B and C in between, so the pair on disk is one
// run's and B C = A (the prefix-sum workload). Before, the second's B and
// the first's C were left: B C != A.
func TestConcurrentWritersKeepBAndCPaired(t *testing.T) {
	dir := t.TempDir()
	first, stderr1, _ := startBinary(t, dir, []string{cli.PauseEnv + "=rename"}, "-R", "40", "-strategy", "sqrt", "-no-cache", "-o", "B.npy", "-C", "C.npy")
	line, err := stderr1.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "pause: rename\n", line)
	second, stderr2, _ := startBinary(t, dir, nil, "-R", "40", "-strategy", "identity", "-no-cache", "-o", "B.npy", "-C", "C.npy")
	lines := make(chan string, 1)
	go func() {
		l, _ := stderr2.ReadString('\n')
		lines <- l
	}()
	select {
	case l := <-lines:
		assert.Equal(t, "mfsolve: -o B.npy: waiting for another process that writes into its directory\n", l)
	case <-time.After(20 * time.Second):
		t.Error("the second writer said nothing within 20 s")
	}
	require.NoError(t, first.Process.Signal(syscall.SIGINT))
	exitCode(t, first)
	assert.Equal(t, cli.ExitOK, exitCode(t, second))
	b := loadDense(t, filepath.Join(dir, "B.npy"))
	c := loadDense(t, filepath.Join(dir, "C.npy"))
	var bc mat.Dense
	bc.Mul(b, c)
	for i := range 40 {
		for j := range 40 {
			want := 0.0
			if j <= i {
				want = 1
			}
			if math.Abs(bc.At(i, j)-want) > 1e-9 {
				t.Fatalf("(B C)[%d][%d] = %v, want %v: B and C of different runs", i, j, bc.At(i, j), want)
			}
		}
	}
}
