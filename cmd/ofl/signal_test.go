package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"

	"github.com/dpmf/dpmf/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if oflBin != "" {
		os.RemoveAll(filepath.Dir(oflBin)) // built by buildOfl
	}
	os.Exit(code)
}

// TestSignalDuringWrite sends SIGTERM or SIGINT to a real ofl process when
// rounds.csv is complete in its temporary file but not yet renamed: the
// existing rounds.csv stays untouched and no temporary file remains.
func TestSignalDuringWrite(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir := t.TempDir()
		rounds := filepath.Join(dir, "rounds.csv")
		require.NoError(t, os.WriteFile(rounds, []byte("old"), 0o644))
		cmd := exec.Command(buildOfl(t), append([]string{"-out", dir, "-json"}, small...)...)
		cmd.Env = append(os.Environ(), cli.PauseEnv+"=commit")
		pipe, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		stderr := bufio.NewReader(pipe)
		line, err := stderr.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "pause: commit\n", line)
		assert.Len(t, testutil.DirNames(t, dir), 2, "rounds.csv and its temporary file")

		require.NoError(t, cmd.Process.Signal(sig))
		rest, _ := io.ReadAll(stderr)
		err = cmd.Wait()
		kill.Stop()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v", err)
		assert.Equal(t, cli.ExitFailure, ee.ExitCode(), sig)
		assert.Equal(t, "ofl: interrupted; nothing written\n", string(rest))
		got, err := os.ReadFile(rounds)
		require.NoError(t, err)
		assert.Equal(t, "old", string(got))
		assert.Equal(t, []string{"rounds.csv"}, testutil.DirNames(t, dir))
	}
}
