//go:build unix

package fednet

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/dpmf/dpmf/internal/flock"
)

// On a file system without flock(2) (ENOLCK: NFS mounted without a lock
// service; EOPNOTSUPP: some FUSE and network file systems) the server and
// the learner refuse to start, in one line that names the lock file, what
// failed and what to do. Before, the line was "state directory lock
// DIR/lock: no locks available", with no way out.
func TestLockRefusalSaysWhatToDo(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOLCK, syscall.EOPNOTSUPP} {
		tryLock = func(*os.File) error { return errno }
		dir := t.TempDir()
		_, err := openState(dir, testOptions(false))
		tryLock = flock.TryExclusive
		if err == nil {
			t.Fatalf("%v: the server started without a lock", errno)
		}
		msg := err.Error()
		for _, want := range []string{dir, errno.Error(), "local file system that supports flock(2)"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%v: %q does not say %q", errno, msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("%v: more than one line: %q", errno, msg)
		}
	}
	t.Cleanup(func() { tryLock = flock.TryExclusive })
}
