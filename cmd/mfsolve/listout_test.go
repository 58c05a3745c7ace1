package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dpmf/dpmf/internal/cli"
)

// TestCacheListToFullStdout: a listing that cannot be printed is a
// failure, with entries or without (mfsolve cache list > /dev/full exited
// 0 for an empty or missing cache directory: its one header line's error
// was dropped, and only the table's flush reported one).
func TestCacheListToFullStdout(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	list := func(t *testing.T) {
		t.Helper()
		for _, args := range [][]string{{"cache", "list"}, {"cache", "list", "-json"}} {
			var errb bytes.Buffer
			code := run(t.Context(), args, env{
				stdout: failWriter{}, stderr: &errb,
				defaultCacheDir: func() (string, error) { return cache, nil },
			})
			assert.Equal(t, cli.ExitFailure, code, "%q", args)
			assert.Equal(t, "mfsolve: no space left on device\n", errb.String(), "%q", args)
		}
	}
	t.Run("missing", list)
	res := runEnv(cache, nil, "-R", "3", "-strategy", "identity", "-quiet")
	assert.Equal(t, cli.ExitOK, res.code, res.stderr)
	t.Run("one entry", list)
}
