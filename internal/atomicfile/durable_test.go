package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/atomicfile/internal/fault"
	"github.com/dpmf/dpmf/internal/testutil"
)

// errFault is the failure the hook injects.
var errFault = errors.New("injected failure")

// recordOps runs f with a hook that logs every operation as "op base"
// (the temporary file as "tmp") and fails the k-th (from 0; none for k <
// 0), and returns the log.
func recordOps(t *testing.T, k int, f func()) []string {
	t.Helper()
	var log []string
	fault.Set(func(op, path string) error {
		name := filepath.Base(path)
		if IsTemp(name) {
			name = "tmp"
		}
		if op == "syncdir" {
			name = "dir"
		}
		log = append(log, op+" "+name)
		if len(log)-1 == k {
			return fmt.Errorf("%w: %s", errFault, op)
		}
		return nil
	})
	defer fault.Set(nil)
	f()
	return log
}

// TestDurableOperations: the file operations of each way of writing, in
// order, as the documentation of the options (and atomicfiletest.FailOps)
// gives them, written out here by hand; and every one of them failed in
// turn: the write returns a one-line error that wraps the failure and
// leaves the destination as it was (after the rename, a durable write's
// failed directory sync: the new content) and no temporary file, except
// the failures the write tolerates (a link falls back to a rename, the
// removal of a linked temporary file is made again, a Write's directory
// sync is best-effort), after which the new content is in place.
func TestDurableOperations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exists   bool
		write    func(path string) error
		want     []string
		tolerate []string
	}{
		{"WriteDurable, new", false, func(p string) error { return WriteDurable(p, 0o644, writeString("new")) },
			[]string{"create f", "write tmp", "fsync tmp", "close tmp", "rename f", "syncdir dir"}, nil},
		{"WriteDurable over a file", true, func(p string) error { return WriteDurable(p, 0o644, writeString("new")) },
			[]string{"create f", "chmod tmp", "write tmp", "fsync tmp", "close tmp", "rename f", "syncdir dir"}, nil},
		{"Write over a file", true, func(p string) error { return Write(p, 0o644, writeString("new")) },
			[]string{"create f", "chmod tmp", "write tmp", "fsync tmp", "close tmp", "rename f", "syncdir dir"}, []string{"syncdir dir"}},
		{"ExactPerm over a file", true, func(p string) error {
			return WriteDurableWith(p, 0o644, DurableOptions{ExactPerm: true}, writeString("new"))
		}, []string{"create f", "write tmp", "chmod tmp", "fsync tmp", "close tmp", "rename f", "syncdir dir"}, nil},
		{"ExactPerm, Once", false, func(p string) error {
			return WriteDurableWith(p, 0o644, DurableOptions{ExactPerm: true, Once: true}, writeString("new"))
		}, []string{"create f", "write tmp", "chmod tmp", "fsync tmp", "close tmp", "link f", "remove tmp", "syncdir dir"}, []string{"link f", "remove tmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			setup := func() {
				os.Remove(path)
				if tc.exists {
					require.NoError(t, os.WriteFile(path, []byte("old"), 0o640))
				}
			}
			setup()
			log := recordOps(t, -1, func() { require.NoError(t, tc.write(path)) })
			require.Equal(t, tc.want, log)
			for k, op := range tc.want {
				setup()
				var err error
				recordOps(t, k, func() { err = tc.write(path) })
				got, _ := os.ReadFile(path)
				tolerated := slices.Contains(tc.tolerate, op)
				want := "new" // in place: tolerated, or after the rename
				switch {
				case tolerated:
					assert.NoError(t, err, op)
				default:
					assert.ErrorIs(t, err, errFault, op)
					assert.NotContains(t, err.Error(), "\n", op)
					if op != "syncdir dir" && tc.exists {
						want = "old"
					} else if op != "syncdir dir" {
						want = "" // no file
					}
				}
				assert.Equal(t, want, string(got), op)
				names := []string{"f"}
				if want == "" {
					names = nil
				}
				assert.Equal(t, names, testutil.DirNames(t, dir), op)
			}
		})
	}
}

// TestDurableOnce: a Once write never replaces a name that exists, a
// regular file or a symbolic link (even a dangling one), and says so
// (ErrExists), leaving it and no temporary file; where the link fails and
// the name does not exist (no hard links), the file is renamed into place;
// a temporary file gone before that rename is ErrTempGone.
func TestDurableOnce(t *testing.T) {
	dir := t.TempDir()
	once := DurableOptions{ExactPerm: true, Once: true}
	path := filepath.Join(dir, "f")
	require.NoError(t, WriteDurableWith(path, 0o644, once, writeString("one")))
	err := WriteDurableWith(path, 0o644, once, writeString("two"))
	require.ErrorIs(t, err, ErrExists)
	assert.Contains(t, err.Error(), path)
	got, _ := os.ReadFile(path)
	assert.Equal(t, "one", string(got))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(filepath.Join(dir, "missing"), link))
	require.ErrorIs(t, WriteDurableWith(link, 0o644, once, writeString("x")), ErrExists)
	assert.Equal(t, []string{"f", "link"}, testutil.DirNames(t, dir))

	// No hard links: the link fails with the name absent.
	fresh := filepath.Join(dir, "g")
	recordOps(t, -1, func() {
		fault.Set(func(op, path string) error {
			if op == "link" {
				return errors.New("operation not permitted")
			}
			return nil
		})
		require.NoError(t, WriteDurableWith(fresh, 0o644, once, writeString("g")))
	})
	got, _ = os.ReadFile(fresh)
	assert.Equal(t, "g", string(got))
	// The temporary file removed (by another process) before the rename.
	gone := filepath.Join(dir, "h")
	recordOps(t, -1, func() {
		fault.Set(func(op, path string) error {
			if op == "link" {
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if IsTemp(e.Name()) {
						os.Remove(filepath.Join(dir, e.Name()))
					}
				}
				return errors.New("operation not permitted")
			}
			return nil
		})
		err = WriteDurableWith(gone, 0o644, once, writeString("h"))
	})
	require.ErrorIs(t, err, ErrTempGone)
	assert.True(t, strings.Contains(err.Error(), gone), err.Error())
	assert.Equal(t, []string{"f", "g", "link"}, testutil.DirNames(t, dir))
}

// TestDurableOnceFallbackNeverReplaces: where the link fails (a file
// system without hard links), the fallback rename never replaces a file
// that another process put in place between the name's check and the
// rename (two servers on one directory whose lock does not hold across
// machines): the write fails with ErrExists and the other file stays. The
// hook creates the destination just before the rename is made. Before the
// fix the rename replaced it.
func TestDurableOnceFallbackNeverReplaces(t *testing.T) {
	if !renameNoReplaceWorks(t) {
		t.Skip("no rename without replace on this platform or file system")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var err error
	recordOps(t, -1, func() {
		fault.Set(func(op, p string) error {
			switch op {
			case "link":
				return errors.New("operation not permitted")
			case "rename":
				return os.WriteFile(path, []byte("other"), 0o644)
			}
			return nil
		})
		err = WriteDurableWith(path, 0o644, DurableOptions{ExactPerm: true, Once: true}, writeString("mine"))
	})
	require.ErrorIs(t, err, ErrExists)
	assert.NotContains(t, err.Error(), "\n")
	got, _ := os.ReadFile(path)
	assert.Equal(t, "other", string(got))
	assert.Equal(t, []string{"f"}, testutil.DirNames(t, dir))
}

// renameNoReplaceWorks reports whether renameNoReplace refuses an
// existing destination in a temporary directory.
func renameNoReplaceWorks(t *testing.T) bool {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, nil, 0o600))
	require.NoError(t, os.WriteFile(b, nil, 0o600))
	return errors.Is(renameNoReplace(a, b), fs.ErrExist)
}
