//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
)

// TestRoundsFailHalfWay: rounds.csv (about 30 KB: 300 evaluated rounds)
// written under a file size limit of at most 4 KiB (ulimit -f 4: every
// write past it fails with EFBIG, as a disk that fills up half way does)
// fails the run with one line naming -out and the cause, leaves an
// existing rounds.csv as it was and no temporary file, and, where -out
// did not exist, leaves no directory behind.
func TestRoundsFailHalfWay(t *testing.T) {
	args := smallWith("-rounds", "300", "-eval-every", "1", "-reps", "1")
	for _, existing := range []bool{true, false} {
		parent := t.TempDir()
		out := filepath.Join(parent, "new", "sub")
		if existing {
			out = parent
			require.NoError(t, os.WriteFile(filepath.Join(out, "rounds.csv"), []byte("old"), 0o644))
		}
		cmd := testutil.FileSizeLimited(4, buildOfl(t), append([]string{"-out", out}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v; stderr %q", err, stderr.String())
		assert.Equal(t, cli.ExitFailure, ee.ExitCode())
		msg := stderr.String()
		assert.True(t, strings.HasPrefix(msg, "ofl: -out "+filepath.Join(out, "rounds.csv")+": ") && strings.Count(msg, "\n") == 1, "stderr %q", msg)
		assert.Contains(t, msg, "file too large")
		assert.Empty(t, stdout.String())
		if existing {
			got, err := os.ReadFile(filepath.Join(out, "rounds.csv"))
			require.NoError(t, err)
			assert.Equal(t, "old", string(got))
			assert.Equal(t, []string{"rounds.csv"}, testutil.DirNames(t, out))
		} else {
			assert.Empty(t, testutil.DirNames(t, parent), "the -out directories the run created")
		}
	}
}
