package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/testutil"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestWriteCreatesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	require.NoError(t, Write(path, 0o640, writeString("hello\n")))

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	assert.Equal(t, []string{"out.txt"}, testutil.DirNames(t, dir))
}

func TestWriteReplacesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	require.NoError(t, os.WriteFile(path, []byte("a much longer old content\n"), 0o600))
	require.NoError(t, Write(path, 0o644, writeString("new\n")))

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	// The existing file's mode is kept, not widened to perm.
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Equal(t, []string{"out.txt"}, testutil.DirNames(t, dir))
}

func TestWriteRelativePathInWorkingDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, Write("rel.txt", 0o600, writeString("x")))
	got, err := os.ReadFile(filepath.Join(dir, "rel.txt"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
	assert.Equal(t, []string{"rel.txt"}, testutil.DirNames(t, dir))
}

func TestWriteCallbackErrorKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	boom := errors.New("boom")

	err := Write(path, 0o644, func(w io.Writer) error {
		// Write more than the bufio buffer so part of it reaches the temp file.
		if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<16)); err != nil {
			return err
		}
		return boom
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), path)

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	assert.Equal(t, []string{"out.txt"}, testutil.DirNames(t, dir))
}

func TestWriteCallbackPanicRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	assert.PanicsWithValue(t, "oops", func() {
		_ = Write(path, 0o644, func(w io.Writer) error { panic("oops") })
	})
	assert.Empty(t, testutil.DirNames(t, dir))
}

func TestWriteMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	path := filepath.Join(dir, "out.txt")
	called := false
	err := Write(path, 0o644, func(io.Writer) error { called = true; return nil })
	require.Error(t, err)
	assert.False(t, called, "callback must not run when the temp file cannot be created")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "atomicfile: create temp file in "+dir)
	_, statErr := os.Stat(path)
	assert.ErrorIs(t, statErr, fs.ErrNotExist)
}

func TestWriteParentIsRegularFile(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(parent, []byte("p"), 0o600))
	err := Write(filepath.Join(parent, "out.txt"), 0o644, writeString("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), parent)
}

func TestWriteReadOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(dir, 0o500))
	t.Cleanup(func() { os.Chmod(dir, 0o700) })

	// Privileged users (root) can write into a mode-0500 directory anyway;
	// find out by trying rather than guessing from the uid.
	probe := filepath.Join(dir, "probe")
	if f, err := os.Create(probe); err == nil {
		f.Close()
		os.Remove(probe)
		t.Skip("directory is writable despite mode 0500 (running as root?)")
	}

	err := Write(path, 0o644, writeString("new"))
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrPermission)
	assert.Contains(t, err.Error(), dir)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	assert.Equal(t, []string{"out.txt"}, testutil.DirNames(t, dir))
}

func TestWriteOverDirectoryFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(path, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(path, "keep"), []byte("k"), 0o600))

	err := Write(path, 0o644, writeString("x"))
	var te *TargetError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "atomicfile: "+path+" is a directory, want a file name", err.Error())
	assert.Equal(t, []string{"sub"}, testutil.DirNames(t, dir))
	assert.Equal(t, []string{"keep"}, testutil.DirNames(t, path))
}

func TestWriteConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	// Contents larger than the bufio buffer, so each write takes several
	// system calls and interleaving would show up as mixed bytes.
	contents := [2][]byte{
		bytes.Repeat([]byte("A"), 1<<18),
		bytes.Repeat([]byte("B"), 1<<18+1),
	}
	for round := range 10 {
		var wg sync.WaitGroup
		var errs [2]error
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				errs[i] = Write(path, 0o644, func(w io.Writer) error {
					_, err := w.Write(contents[i])
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		require.NoError(t, errs[0], "round %d", round)
		require.NoError(t, errs[1], "round %d", round)

		got, err := os.ReadFile(path)
		require.NoError(t, err)
		ok := bytes.Equal(got, contents[0]) || bytes.Equal(got, contents[1])
		require.True(t, ok, "round %d: file is neither complete content (len %d)", round, len(got))
		require.Equal(t, []string{"out.bin"}, testutil.DirNames(t, dir))
	}
}

// WriteDurable writes like Write (content, mode, refused targets) and
// reports the directory sync's error where Write ignores it.
func TestWriteDurable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	require.NoError(t, WriteDurable(path, 0o600, writeString("one")))
	require.NoError(t, WriteDurable(path, 0o600, writeString("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(path, link))
	var te *TargetError
	assert.True(t, errors.As(WriteDurable(link, 0o600, writeString("x")), &te), "a symbolic link is refused")
	assert.NoError(t, SyncDir(dir))
	assert.Error(t, SyncDir(filepath.Join(dir, "missing")))
}

// TestWriteLongName: a destination whose name is valid but so long (here
// 250 bytes, NAME_MAX being 255) that "."+name+".tmp-"+16 hex digits is
// not, is still written. Before the fix the temporary file could not be
// created ("file name too long"), after mfsolve's whole solve, although
// the output policy had accepted the name. The name is cut at a rune
// boundary, so it stays valid UTF-8.
func TestWriteLongName(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{strings.Repeat("b", 246) + ".npy", strings.Repeat("é", 123) + ".np"} {
		path := filepath.Join(dir, base)
		require.NoError(t, Write(path, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, "content")
			return err
		}), "%d-byte name", len(base))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "content", string(got))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left")
	name, err := tempName(strings.Repeat("é", 200))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(name), maxNameBytes)
	assert.True(t, utf8.ValidString(name), name)
	assert.True(t, IsTemp(name), name)
}
