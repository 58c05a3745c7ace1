package fednet

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
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
