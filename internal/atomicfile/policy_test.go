package atomicfile

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/testutil"
)

func TestCheckTargetRefusals(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	require.NoError(t, os.WriteFile(regular, []byte("r"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(regular, link))
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), dangling))
	readOnly := filepath.Join(dir, "readonly")
	require.NoError(t, os.WriteFile(readOnly, []byte("keep"), 0o444))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()

	refused := map[string]string{
		link:        "is a symbolic link",
		dangling:    "is a symbolic link",
		readOnly:    "is read-only",
		sock:        "is a socket",
		dir:         "is a directory",
		"/dev/null": "is a device",
	}
	if testutil.HaveFIFO {
		fifo := filepath.Join(dir, "fifo")
		require.NoError(t, testutil.Mkfifo(fifo, 0o644))
		refused[fifo] = "is a FIFO"
	}

	assert.NoError(t, CheckTarget(regular))
	assert.NoError(t, CheckTarget(filepath.Join(dir, "new")))
	for path, reason := range refused {
		err := CheckTarget(path)
		var te *TargetError
		require.ErrorAs(t, err, &te, path)
		assert.True(t, strings.HasPrefix(te.Reason, reason), "%s: %s", path, te.Reason)

		// Write refuses it before calling write, and changes nothing.
		called := false
		err = Write(path, 0o644, func(io.Writer) error { called = true; return nil })
		require.ErrorAs(t, err, &te, path)
		assert.False(t, called)
	}
	// /dev/null is still a device (as root, a rename would have replaced
	// it by a regular file), the link still a link, the file unchanged.
	fi, err := os.Lstat("/dev/null")
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeCharDevice)
	fi, err = os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink)
	got, err := os.ReadFile(readOnly)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(got))
	for _, n := range testutil.DirNames(t, dir) {
		assert.False(t, IsTemp(n), "temporary file %s left behind", n)
	}
}

func TestWriteContextCancelled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	big := make([]byte, 10<<20)
	err := WriteContext(ctx, path, 0o644, func(w io.Writer) error {
		if _, err := w.Write(big[:1<<20]); err != nil {
			return err
		}
		cancel()
		_, err := w.Write(big)
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	got, rerr := os.ReadFile(path)
	require.NoError(t, rerr)
	assert.Equal(t, "old", string(got))
	assert.Equal(t, []string{"out"}, testutil.DirNames(t, dir))

	// An already cancelled context writes nothing at all.
	err = WriteContext(ctx, filepath.Join(dir, "new"), 0o644, func(io.Writer) error {
		return errors.New("must not be called")
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"out"}, testutil.DirNames(t, dir))
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, ".entry.dpmf"+tempInfix+"0123")
	fresh := filepath.Join(dir, ".entry.dpmf"+tempInfix+"4567")
	keep := filepath.Join(dir, "entry.dpmf")
	other := filepath.Join(dir, ".hidden")
	for _, p := range []string{old, fresh, keep, other} {
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	}
	long := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{old, keep, other} {
		require.NoError(t, os.Chtimes(p, long, long))
	}
	n, err := RemoveStale(dir, 24*time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.ElementsMatch(t, []string{filepath.Base(fresh), "entry.dpmf", ".hidden"}, testutil.DirNames(t, dir))
}

// TestRemoveStaleAgeZero: with age 0 every temporary file goes, also one
// modified later than now (a clock set back since, or a file server's
// clock ahead of this machine's); before, such a file was kept.
func TestRemoveStaleAgeZero(t *testing.T) {
	dir := t.TempDir()
	later := time.Now().Add(time.Hour)
	for _, name := range []string{".a" + tempInfix + "01", ".b" + tempInfix + "02", "keep"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		require.NoError(t, os.Chtimes(p, later, later))
	}
	n, err := RemoveStale(dir, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"keep"}, testutil.DirNames(t, dir))
}

// RemoveStaleOf removes only the stale temporary files of the
// destinations it is given, and takes a name such as ".tmp-x" (an empty
// base) without a panic.
func TestRemoveStaleOf(t *testing.T) {
	dir := t.TempDir()
	long := time.Now().Add(-48 * time.Hour)
	for _, name := range []string{".a.dat.tmp-01", ".b.dat.tmp-02", ".tmp-03", ".c.tmp-04"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		require.NoError(t, os.Chtimes(p, long, long))
	}
	var bases []string
	n, err := RemoveStaleOf(dir, time.Hour, func(base string) bool {
		bases = append(bases, base)
		return base == "a.dat" || base == ""
	})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.ElementsMatch(t, []string{"a.dat", "b.dat", "", "c"}, bases)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".b.dat.tmp-02", ".c.tmp-04"}, names)
}
