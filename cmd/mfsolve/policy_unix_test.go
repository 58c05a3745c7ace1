//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dpmf/dpmf/internal/cli"
)

// TestOutputModes checks the file modes under a restrictive umask: B and C
// are created 0644 minus the umask, the noise samples 0600 whatever the
// umask, and an existing file keeps its mode.
func TestOutputModes(t *testing.T) {
	dir := t.TempDir()
	b, c, z := filepath.Join(dir, "B.npy"), filepath.Join(dir, "C.npy"), filepath.Join(dir, "Z.npy")
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	args := []string{"-R", "4", "-strategy", "sqrt", "-no-cache", "-o", b, "-C", c, "-noise", z, "-std", "1", "-seed", "1"}

	old := unix.Umask(0o077)
	res := runT(t, args...)
	unix.Umask(old)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, os.FileMode(0o600), mode(b))
	assert.Equal(t, os.FileMode(0o600), mode(c))
	assert.Equal(t, os.FileMode(0o600), mode(z))

	old = unix.Umask(0)
	require.NoError(t, os.Remove(b))
	require.NoError(t, os.Remove(z))
	require.NoError(t, os.Chmod(c, 0o640))
	res = runT(t, args...)
	unix.Umask(old)
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Equal(t, os.FileMode(0o644), mode(b), "new B: 0644 minus the umask 0")
	assert.Equal(t, os.FileMode(0o640), mode(c), "existing C keeps its mode")
	assert.Equal(t, os.FileMode(0o600), mode(z), "noise samples are secret")

	// An existing file keeps its mode, except that the secret noise
	// samples never keep group or other bits: before, -noise over a 0644
	// (or 0666) file left the noise readable by everyone.
	for _, m := range []os.FileMode{0o644, 0o666, 0o640, 0o604} {
		require.NoError(t, os.Chmod(z, m))
		require.NoError(t, os.Chmod(c, m))
		res = runT(t, args...)
		require.Equal(t, cli.ExitOK, res.code, res.stderr)
		assert.Equal(t, os.FileMode(0o600), mode(z), "noise over an existing %#o file", m)
		assert.Equal(t, m, mode(c), "existing C keeps its mode %#o", m)
	}
}
