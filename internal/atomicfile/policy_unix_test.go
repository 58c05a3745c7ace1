//go:build unix

package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dpmf/dpmf/internal/testutil"
)

// withUmask runs f with the process umask set to mask. The tests of this
// package do not run in parallel, so no other goroutine creates files
// meanwhile.
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := unix.Umask(mask)
	defer unix.Umask(old)
	f()
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func TestWriteRespectsUmask(t *testing.T) {
	dir := t.TempDir()
	// perm minus the umask, as open(2) would create the file.
	for _, tc := range []struct {
		mask int
		perm os.FileMode
		want os.FileMode
	}{
		{0o077, 0o644, 0o600},
		{0o022, 0o666, 0o644},
		{0o027, 0o644, 0o640},
		{0o000, 0o600, 0o600},
		{0o077, 0o600, 0o600},
	} {
		path := filepath.Join(dir, "f")
		os.Remove(path)
		withUmask(t, tc.mask, func() {
			require.NoError(t, Write(path, tc.perm, writeString("x")))
		})
		assert.Equal(t, tc.want, perm(t, path), "umask %o perm %o", tc.mask, tc.perm)
	}
}

func TestWriteKeepsExistingMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(path, 0o600))
	withUmask(t, 0, func() {
		require.NoError(t, Write(path, 0o644, writeString("new")))
	})
	assert.Equal(t, os.FileMode(0o600), perm(t, path), "an existing 0600 file is not widened")

	require.NoError(t, os.Chmod(path, 0o664))
	withUmask(t, 0o077, func() {
		require.NoError(t, Write(path, 0o644, writeString("newer")))
	})
	assert.Equal(t, os.FileMode(0o664), perm(t, path), "an existing file keeps its mode")
}

// TestWriteSecretOverWideFile: a secret (perm private to its owner) written
// over an existing file keeps only that file's owner bits, whatever the
// umask: before, a 0600 write over a 0644 file kept 0644, readable by
// everyone.
func TestWriteSecretOverWideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	for _, tc := range []struct{ existing, perm, want os.FileMode }{
		{0o644, 0o600, 0o600},
		{0o666, 0o600, 0o600},
		{0o604, 0o600, 0o600},
		{0o755, 0o700, 0o700},
		{0o640, 0o400, 0o600}, // the owner's bits are kept
		{0o664, 0o644, 0o664}, // not a secret: the mode is kept
	} {
		require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
		require.NoError(t, os.Chmod(path, tc.existing))
		withUmask(t, 0, func() {
			require.NoError(t, Write(path, tc.perm, writeString("new")))
		})
		assert.Equal(t, tc.want, perm(t, path), "perm %#o over %#o", tc.perm, tc.existing)
	}
}

func TestWriteTempHasFinalModeWhileWriting(t *testing.T) {
	// The secret is never readable by others, not even half-written.
	dir := t.TempDir()
	path := filepath.Join(dir, "noise.npy")
	withUmask(t, 0, func() {
		require.NoError(t, Write(path, 0o600, func(w io.Writer) error {
			tmps := testutil.DirNames(t, dir)
			require.Len(t, tmps, 1)
			assert.True(t, IsTemp(tmps[0]), tmps[0])
			assert.Equal(t, os.FileMode(0o600), perm(t, filepath.Join(dir, tmps[0])))
			_, err := io.WriteString(w, "z")
			return err
		}))
	})
}

// TestWriteExactPerm: with ExactPerm the file has exactly perm, whatever
// the umask and an existing file's bits, and its temporary file is 0600
// while the data is written.
func TestWriteExactPerm(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, tc := range []struct {
		mask     int
		existing os.FileMode // 0: none
		perm     os.FileMode
	}{
		{0o077, 0, 0o644},
		{0o022, 0o600, 0o644},
		{0o022, 0o644, 0o600},
		{0o000, 0, 0o600},
	} {
		os.Remove(path)
		if tc.existing != 0 {
			require.NoError(t, os.WriteFile(path, []byte("old"), tc.existing))
			require.NoError(t, os.Chmod(path, tc.existing))
		}
		var during os.FileMode
		withUmask(t, tc.mask, func() {
			require.NoError(t, WriteDurableWith(path, tc.perm, DurableOptions{ExactPerm: true}, func(w io.Writer) error {
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				for _, e := range entries {
					if IsTemp(e.Name()) {
						during = perm(t, filepath.Join(dir, e.Name()))
					}
				}
				_, err = io.WriteString(w, "new")
				return err
			}))
		})
		assert.Equal(t, tc.perm, perm(t, path), "umask %o, existing %o, perm %o", tc.mask, tc.existing, tc.perm)
		assert.Equal(t, os.FileMode(0o600)&^os.FileMode(tc.mask), during, "the temporary file while written")
	}
}
