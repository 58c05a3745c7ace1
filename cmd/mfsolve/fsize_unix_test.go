//go:build unix

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

// runLimited runs the mfsolve binary in dir under a file size limit of
// blocks blocks (testutil.FileSizeLimited): every write past it fails with
// EFBIG, as a disk that fills up half way through an output does.
func runLimited(t *testing.T, dir string, blocks int, args ...string) runResult {
	t.Helper()
	cmd := testutil.FileSizeLimited(blocks, mfsolveBinary(t), args...)
	return runProgram(t, dir, cmd.Path, cmd.Args[1:]...)
}

// TestOutputsFailHalfWay: outputs (20 KB each) written under a file size
// limit of at most 4 KiB fail part way through B: the run exits 1 with
// one line naming -o and the cause, B and C keep their old content, no
// temporary file is left, and nothing is printed on stdout.
func TestOutputsFailHalfWay(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"B.npy", "C.npy"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(oldContents), 0o644))
	}
	before := testutil.DirNames(t, dir)
	res := runLimited(t, dir, 4, "-no-cache", "-R", "50", "-strategy", "sqrt", "-o", "B.npy", "-C", "C.npy")
	assert.Equal(t, cli.ExitFailure, res.code, res.stderr)
	requireOneErrorLine(t, res.stderr, "mfsolve: -o B.npy: ")
	assert.Contains(t, res.stderr, "file too large")
	assert.Empty(t, res.stdout)
	for _, n := range []string{"B.npy", "C.npy"} {
		got, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		assert.Equal(t, oldContents, string(got), n)
	}
	assert.Equal(t, before, testutil.DirNames(t, dir), "no new file, no temporary file")
}

// TestCacheStoreFailsHalfWay: a cache entry whose write fails part way
// (file size limit) costs only the entry: the run succeeds with one
// warning line, the cache directory holds neither an entry nor a
// temporary file, and a run without the limit computes again (cached is
// false) and stores the entry, which a third run loads.
func TestCacheStoreFailsHalfWay(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	args := []string{"-cache", cache, "-R", "50", "-strategy", "sqrt", "-json"}
	res := runLimited(t, dir, 4, args...)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	requireOneErrorLine(t, res.stderr, "mfsolve: cannot write the cache: ")
	assert.Contains(t, res.stderr, "file too large; the result is not cached")
	assert.Contains(t, res.stdout, `"cached":false`)
	assert.Empty(t, testutil.DirNames(t, cache), "no entry, no temporary file")

	for _, cached := range []string{`"cached":false`, `"cached":true`} {
		res = runBinary(t, dir, args...)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		assert.Empty(t, res.stderr)
		assert.Contains(t, res.stdout, cached)
	}
	names := testutil.DirNames(t, cache)
	require.Len(t, names, 1)
	assert.True(t, strings.HasSuffix(names[0], ".dpmf"), names[0])
}
