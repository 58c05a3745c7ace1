package fednet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/atomicfile/atomicfiletest"
)

// TestStateResumeNeedsWritableDir: a server that resumes on a state
// directory it cannot write in is refused at start, in one line naming the
// directory, and changes nothing there. Before, a plain resume wrote
// nothing, so the server served the round and failed only at its first
// release, after the learners did the round's work. The directory is made
// unwritable by failing every file creation in it (atomicfiletest, as
// EACCES; root may write in a directory of mode 0555) and, where the test
// does not run as root, by its mode too. A resume that can write leaves
// every state file as it was, byte for byte (the mark it writes again is
// the mark it read).
func TestStateResumeNeedsWritableDir(t *testing.T) {
	dir := t.TempDir()
	newTestState(t, dir, false, 2)
	before := snapshot(t, dir)
	delete(before, lockFile) // names the process that held it last
	unwritable := func() (restore func()) {
		return atomicfiletest.FailOps(func(op, path string) error {
			if op == "create" && filepath.Dir(path) == dir {
				return &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}
			}
			return nil
		})
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "state directory "+dir+": the server could not write there at start") ||
			!strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming the directory %s as not writable", what, err, dir)
		}
		after := snapshot(t, dir)
		delete(after, lockFile)
		assert.Equal(t, before, after, "%s: the state directory changed", what)
	}

	restore := unwritable()
	check("resume", reopen(dir, false))
	restore()
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(dir, 0o555))
		check("resume in a directory of mode 0555", reopen(dir, false))
		require.NoError(t, os.Chmod(dir, 0o755))
	} else {
		t.Log("running as root: the directory's mode does not stop root's writes; checked with failed creations only")
	}
	require.NoError(t, reopen(dir, false))
	after := snapshot(t, dir)
	delete(after, lockFile)
	assert.Equal(t, before, after, "a resume changed the state files")

	// A plain server (without secure aggregation) on such a
	// directory: NewServer refuses it.
	r := newRun(t, 2, 3, 1, 3)
	sdir := t.TempDir()
	srv, err := NewServer(r.options(sdir, nil))
	require.NoError(t, err)
	srv.Close()
	defer atomicfiletest.FailOps(func(op, path string) error {
		if op == "create" && filepath.Dir(path) == sdir {
			return &fs.PathError{Op: "open", Path: path, Err: syscall.EACCES}
		}
		return nil
	})()
	srv, err = NewServer(r.options(sdir, nil))
	if err == nil {
		srv.Close()
	}
	if err == nil || !strings.HasPrefix(err.Error(), "fednet: state directory "+sdir+": the server could not write there at start") || strings.Contains(err.Error(), "\n") {
		t.Errorf("plain server resuming on an unwritable directory: %v, want a one-line refusal naming %s", err, sdir)
	}
}
