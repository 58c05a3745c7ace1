package fednet

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/atomicfile/atomicfiletest"
	"github.com/dpmf/dpmf/secagg"
)

// A server whose lock file was removed, and which a second server has
// overtaken, never replaces a round file the second one released: were it
// to, a restart of the second server would resume from the first one's
// model of that round, never served, and serve a round it had already
// released with the same noise and other updates.
func TestStaleServerNeverReplacesARelease(t *testing.T) {
	dir := t.TempDir()
	first, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	defer first.lock.Close()
	require.NoError(t, first.release(Released{Round: 1, Updates: 2, X: testModel(1)}))
	require.NoError(t, os.Remove(filepath.Join(dir, lockFile)))
	second, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	require.NoError(t, second.release(Released{Round: 2, Updates: 2, X: testModel(2)})) // served
	// The first server, slower, closes round 2 from other updates.
	err = first.release(Released{Round: 2, Updates: 1, X: testModel(-2)})
	require.Error(t, err)
	require.NoError(t, second.lock.Close()) // the second server is killed
	third, err := openState(dir, testOptions(true))
	if err != nil {
		return // refusing is safe
	}
	defer third.lock.Close()
	require.Equal(t, 2, third.last.Round)
	require.Equal(t, testModel(2), third.last.X, "the restarted server resumed from a round-2 model that was never served, not the one it released")
}

// Between a server's check of its lock and its write, another server may
// have released the round: the file is never replaced, and the server
// stops without writing its mark.
func TestReleaseNeverReplacesARoundFile(t *testing.T) {
	dir := t.TempDir()
	first, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	defer first.lock.Close()
	require.NoError(t, first.release(Released{Round: 1, Updates: 2, X: testModel(1)}))
	// Keep the first server's lock file under another name, let a
	// second server take over, then put the first's file back: the
	// first server's check passes, as it would had the second server
	// released round 2 just after that check.
	lock, saved := filepath.Join(dir, lockFile), filepath.Join(dir, "lock.saved")
	require.NoError(t, os.Link(lock, saved))
	require.NoError(t, os.Remove(lock))
	second, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	defer second.lock.Close()
	require.NoError(t, second.release(Released{Round: 2, Updates: 2, X: testModel(2)}))
	require.NoError(t, os.Rename(saved, lock))
	require.NoError(t, first.lock.held())
	before := snapshot(t, dir)
	err = first.release(Released{Round: 2, Updates: 1, X: testModel(-2)})
	require.ErrorContains(t, err, roundName(2)+" already exists")
	require.Equal(t, before, snapshot(t, dir), "the state directory changed")
}

// As TestReleaseNeverReplacesARoundFile, on a file system without hard
// links and with two servers that the lock does not keep apart (a flock
// local to each machine): the other server's round file appears between
// the first one's check of the name and its rename. It is never replaced,
// and the first server stops. Before, the rename replaced it: round 2
// would have been released twice with the same noise row.
func TestReleaseWithoutHardLinksNeverReplacesARoundFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a rename that never replaces is renameat2's (Linux)")
	}
	dir := t.TempDir()
	first, err := openState(dir, testOptions(true))
	require.NoError(t, err)
	defer first.lock.Close()
	require.NoError(t, first.release(Released{Round: 1, Updates: 2, X: testModel(1)}))
	other, _ := encodeRound(first.run, first.head, Released{Round: 2, Updates: 2, X: testModel(2)})
	target := filepath.Join(dir, roundName(2))
	defer atomicfiletest.FailOps(func(op, path string) error {
		switch {
		case op == "link":
			return errors.New("operation not permitted") // no hard links here
		case op == "rename" && path == target:
			return os.WriteFile(target, other, 0o644) // the other server's release
		}
		return nil
	})()
	err = first.release(Released{Round: 2, Updates: 1, X: testModel(-2)})
	require.ErrorContains(t, err, roundName(2)+" already exists")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, other, got, "the other server's round file was replaced")
}

// A lock file that is a symbolic link is refused, named as one.
func TestLockFileSymlinkRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the lock file is flock(2)'s on Unix")
	}
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), filepath.Join(dir, lockFile)))
	_, err := openState(dir, testOptions(true))
	require.ErrorContains(t, err, lockFile+" is a symbolic link, want a regular file")
}

// A lock file that cannot be opened (here a directory in its place) is
// refused in one line that says what it must be. Before, the refusal was
// only the system's "open DIR/lock: is a directory".
func TestLockFileDirectoryRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the lock file is flock(2)'s on Unix")
	}
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, lockFile), 0o700))
	_, err := openState(dir, testOptions(true))
	require.ErrorContains(t, err, "must be a regular file this server can open for reading and writing")
	require.NotContains(t, err.Error(), "\n")
}

// A secure server whose lock file was removed, and which later servers
// overtook, never puts its snapshot of the open attempt in place of the
// newest server's: were it to, a restart would silently resume the stale
// server's attempt (here attempt 0, which a later server failed and
// replaced by attempt 1; learners that unmasked attempt 1 would then be
// asked for an attempt they moved past, and the attempt's number would be
// reused for new keys). With the lock file gone the stale server stops
// before it writes; with its lock file put back (its check passed just
// before the second server started) it writes only its own generation's
// file, which no restart reads.
func TestStaleSecureServerNeverReplacesASnapshot(t *testing.T) {
	for _, checked := range []bool{false, true} {
		name := "lock removed"
		if checked {
			name = "lock check passed"
		}
		t.Run(name, func(t *testing.T) {
			opt, stale, second, lock, saved := secureOvertaken(t)
			defer stale.Close()
			require.Equal(t, uint32(0), second.sec.ctx.Attempt)
			second.stMu.Lock()
			second.mu.Lock()
			err := second.failAttempt(second.sec, secagg.ErrTooFew)
			second.mu.Unlock()
			second.stMu.Unlock()
			require.ErrorIs(t, err, ErrTooFewLearners)
			require.NoError(t, second.Close())
			third, err := NewServer(opt)
			require.NoError(t, err)
			require.Equal(t, uint32(1), third.sec.ctx.Attempt, "the restart after a failed attempt")
			if checked {
				require.NoError(t, os.Rename(saved, lock))
				require.NoError(t, stale.st.lock.held())
			}
			// The stale server thaws and closes a phase of attempt 0.
			stale.stMu.Lock()
			stale.mu.Lock()
			err = stale.writeSecSnapshot(stale.sec)
			stale.mu.Unlock()
			stale.stMu.Unlock()
			if !checked {
				require.ErrorContains(t, err, "removed or replaced")
			}
			require.NoError(t, stale.Close())
			require.NoError(t, third.Close()) // killed
			again, err := NewServer(opt)
			require.NoError(t, err)
			defer again.Close()
			require.Equal(t, uint32(1), again.sec.ctx.Attempt, "the restarted server resumed the stale server's attempt, not the newest server's")
			require.Equal(t, secagg.PhaseAdvertise, again.sec.phase)
		})
	}
}

// Two servers that took the same generation (both listed the state
// directory before either claimed it: its lock file was removed while
// the first was starting) never both write its file: the second claim,
// here the stale server's, finds the file, fails, and changes nothing.
func TestSecureGenerationClaimedOnce(t *testing.T) {
	opt, stale, second, lock, saved := secureOvertaken(t)
	defer stale.Close()
	defer second.Close()
	dir := opt.Dir
	require.Equal(t, uint64(2), second.secGen)
	require.NoError(t, os.Rename(saved, lock))
	stale.secGen, stale.secClaimed = second.secGen, false
	before := snapshot(t, dir)
	stale.stMu.Lock()
	stale.mu.Lock()
	err := stale.writeSecSnapshot(stale.sec)
	stale.mu.Unlock()
	stale.stMu.Unlock()
	require.ErrorContains(t, err, secName(2)+" already exists")
	require.Equal(t, before, snapshot(t, dir), "the state directory changed")
}

// secureOvertaken starts a secure server on a fresh state directory (the
// stale one), saves its lock file under the name saved (a hard link) and
// removes it, and starts a second server that takes the directory over.
func secureOvertaken(t *testing.T) (opt ServerOptions, stale, second *Server, lock, saved string) {
	t.Helper()
	r := newRun(t, 3, 2, 1, 4)
	secureRun(t, r)
	dir := t.TempDir()
	opt = secureOptions(r, dir, 2)
	stale, err := NewServer(opt)
	require.NoError(t, err)
	lock, saved = filepath.Join(dir, lockFile), filepath.Join(dir, "lock.saved")
	require.NoError(t, os.Link(lock, saved))
	require.NoError(t, os.Remove(lock))
	second, err = NewServer(opt)
	require.NoError(t, err)
	return opt, stale, second, lock, saved
}
