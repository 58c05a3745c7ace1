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

// TestSignalLeavesNoNewOutDir: a run interrupted when rounds.csv is
// complete in its temporary file, with an -out directory that did not
// exist, says "nothing written" and leaves nothing: the directories it
// created for -out are removed again (they were left, empty, though
// docs/cli.md says a failed or interrupted run leaves -out as it was).
func TestSignalLeavesNoNewOutDir(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "new", "sub")
	cmd := exec.Command(buildOfl(t), append([]string{"-out", out, "-json"}, small...)...)
	cmd.Env = append(os.Environ(), cli.PauseEnv+"=commit")
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	stderr := bufio.NewReader(pipe)
	line, err := stderr.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "pause: commit\n", line)
	require.Len(t, testutil.DirNames(t, out), 1, "rounds.csv's temporary file")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, _ := io.ReadAll(stderr)
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, cli.ExitFailure, ee.ExitCode())
	assert.Equal(t, "ofl: interrupted; nothing written\n", string(rest))
	assert.Empty(t, testutil.DirNames(t, parent), "the -out directories the run created")
}
