package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"

	"github.com/dpmf/dpmf/internal/testutil"
)

// The end-to-end tests run the mfsolve binary, built once per test binary.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// mfsolveBinary builds the command into a temporary directory on first use.
func mfsolveBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "mfsolve-e2e")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "mfsolve")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// runBinary runs mfsolve in dir with its user cache directory inside dir.
func runBinary(t *testing.T, dir string, args ...string) runResult {
	t.Helper()
	return runProgram(t, dir, mfsolveBinary(t), args...)
}

// runProgram runs the program name (mfsolve, or a shell that starts it) in dir
// with the user cache directory inside dir, and returns its exit code and
// output.
func runProgram(t *testing.T, dir, name string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "xdg"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return runResult{code, out.String(), errb.String()}
}

func TestBinaryWritesB(t *testing.T) {
	dir := t.TempDir()
	res := runBinary(t, dir, "-strategy", "sqrt-normalized", "-R", "100", "-o", "B.npy")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	// stderr is not a terminal: no progress line, no warnings.
	assert.Empty(t, res.stderr)
	assert.True(t, strings.HasPrefix(res.stdout, "strategy=sqrt-normalized R=100 "), res.stdout)
	assert.True(t, strings.HasSuffix(res.stdout, " cached=false; wrote B (100 x 100) to B.npy\n"), res.stdout)
	b := loadDense(t, filepath.Join(dir, "B.npy"))
	r, c := b.Dims()
	assert.Equal(t, [2]int{100, 100}, [2]int{r, c})
	// The default cache is the user cache directory + /dpmf.
	assert.Len(t, testutil.DirNames(t, filepath.Join(dir, "xdg", "dpmf")), 1)

	res = runBinary(t, dir, "-strategy", "sqrt-normalized", "-R", "100", "-o", "B.npy")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.True(t, strings.HasSuffix(res.stdout, " cached=true; wrote B (100 x 100) to B.npy\n"), res.stdout)
}

func TestBinaryExitCodes(t *testing.T) {
	dir := t.TempDir()
	res := runBinary(t, dir, "-R", "0")
	assert.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "-R 0")

	res = runBinary(t, dir, "-o", filepath.Join(dir, "missing", "B.npy"))
	assert.Equal(t, cli.ExitFailure, res.code)
	requireOneErrorLine(t, res.stderr, "does not exist")

	res = runBinary(t, dir, "-h")
	assert.Equal(t, cli.ExitOK, res.code)
	assert.Contains(t, res.stdout, "Examples:")
}

func TestBinaryMemoryCheck(t *testing.T) {
	// Uses this machine's /proc/meminfo: R = 200000 needs 1.92 TB.
	have, err := cli.MemAvailable()
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	if have > 1.92e12 {
		t.Skip("this machine has more than 1.92 TB available")
	}
	dir := t.TempDir()
	res := runBinary(t, dir, "-R", "200000", "-o", "B.npy")
	assert.Equal(t, cli.ExitFailure, res.code)
	requireOneErrorLine(t, res.stderr, "mfsolve: R = 200000 needs about 1.9 TB for dense output, this machine has ")
	assert.Regexp(t, `has [0-9.]+ [kMGT]B available; use -loss-only without -o and -C\n$`, res.stderr)
	assert.Empty(t, testutil.DirNames(t, dir), "nothing written")
}

func TestBinaryInterrupt(t *testing.T) {
	// A loss-only solve for R = 1000000 takes far longer than the waits
	// (about 10 s; R = 200000 took 1.7 s, less than the longer waits);
	// SIGINT then must stop it with status 1.
	// The timer kills the process if the signal is ignored. On a very
	// loaded machine the signal can arrive before main has installed its
	// handler (the process then dies of the signal, status -1, and writes
	// nothing); the test then tries again with a longer wait.
	for _, wait := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
		dir := t.TempDir()
		cmd := exec.Command(mfsolveBinary(t), "-R", "1000000", "-loss-only", "-no-cache")
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Start())
		time.Sleep(wait)
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		var killed atomic.Bool
		kill := time.AfterFunc(30*time.Second, func() { killed.Store(true); cmd.Process.Kill() })
		err := cmd.Wait()
		kill.Stop()
		require.False(t, killed.Load(), "mfsolve ignored SIGINT for 30 s")
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "stdout %q", out.String())
		assert.Empty(t, out.String())
		if ee.ExitCode() == -1 && errb.Len() == 0 {
			continue // the signal came before the handler
		}
		assert.Equal(t, cli.ExitFailure, ee.ExitCode())
		requireOneErrorLine(t, errb.String(), "mfsolve: interrupted; nothing written")
		return
	}
	t.Fatal("mfsolve died of SIGINT before installing its handler three times")
}
