//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
)

// allocatedBytes returns the bytes of disk the file at path takes.
func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no block count for this file system")
	}
	return int64(st.Blocks) * 512
}

// B and C are written with every byte by default and with holes for
// their zero upper triangles with -sparse: the same bytes either way, all
// of them on disk without -sparse (at least the file's size in blocks),
// and, where the file system makes holes, fewer with it. -sparse without
// -o or -C is a usage error.
func TestSparseOutputs(t *testing.T) {
	dir := t.TempDir()
	// Rows of 16 KB: three quarters of them end in a run of 512 zeros or
	// more, whose whole 4 KiB blocks (about 9 of the file's 32 MB) are
	// holes with -sparse.
	const r = "2000"
	paths := map[bool][2]string{}
	for _, sparse := range []bool{false, true} {
		sub := filepath.Join(dir, map[bool]string{false: "dense", true: "sparse"}[sparse])
		require.NoError(t, os.Mkdir(sub, 0o755))
		p := [2]string{filepath.Join(sub, "B.npy"), filepath.Join(sub, "C.npy")}
		args := []string{"-no-cache", "-R", r, "-o", p[0], "-C", p[1]}
		if sparse {
			args = append(args, "-sparse")
		}
		res := runT(t, args...)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		paths[sparse] = p
	}
	for k := range 2 {
		dense, err := os.ReadFile(paths[false][k])
		require.NoError(t, err)
		sparse, err := os.ReadFile(paths[true][k])
		require.NoError(t, err)
		assert.True(t, bytes.Equal(dense, sparse), "%s: the same bytes with and without -sparse", paths[true][k])
		size := int64(len(dense))
		assert.GreaterOrEqual(t, allocatedBytes(t, paths[false][k]), size/4096*4096, "without -sparse every block is written")
		if got := allocatedBytes(t, paths[true][k]); got < size/4096*4096 {
			assert.Less(t, got, size-size/8, "-sparse: the zero upper triangle left as holes")
		} else {
			t.Logf("%s: this file system made no holes (%d bytes allocated for %d)", paths[true][k], got, size)
		}
	}
	res := runT(t, "-no-cache", "-R", "50", "-sparse")
	assert.Equal(t, cli.ExitUsage, res.code)
	requireOneErrorLine(t, res.stderr, "-sparse is how -o and -C are written: give -o or -C, or drop -sparse")
}
