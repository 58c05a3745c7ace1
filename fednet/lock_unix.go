//go:build unix

package fednet

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dpmf/dpmf/internal/flock"
)

// tryLock is flock.TryExclusive; tests replace it to simulate a file
// system without locks.
var tryLock = flock.TryExclusive

// dirLock is an exclusive lock on a state directory: an advisory flock(2)
// on its lock file, held while the file stays open and released by the
// kernel when the process exits, however it exits. The file names the
// holder, for the error a second server gets.
type dirLock struct {
	f    *os.File
	path string // absolute, for held: the working directory may change
	role string
}

// lockDir takes the lock file at path for a role ("server", "learner"),
// or returns an error naming the process that holds it.
func lockDir(path, role string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) { // O_NOFOLLOW on a link (EMLINK: FreeBSD)
		return nil, fmt.Errorf("state directory lock: %s is a symbolic link, want a regular file (remove it)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w (%s must be a regular file this %s can open for reading and writing)", err, filepath.Base(path), role)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("state directory lock: %s is not a regular file (remove it: the %s makes a regular one)", path, role)
	}
	if err := tryLock(f); err != nil {
		holder := make([]byte, maxLockHolder)
		n, _ := f.ReadAt(holder, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := cmp.Or(lockHolder(holder[:n]), "a "+role+" that is starting")
			return nil, fmt.Errorf("state directory %s is in use by another %s (%s): one %s per state directory", strings.TrimSuffix(path, "/"+lockFile), role, who, role)
		}
		// No lock (a file system without flock(2), ENOLCK, EOPNOTSUPP):
		// the process refuses to run unlocked, and says where to go.
		return nil, fmt.Errorf("state directory lock %s: %w: the %s cannot lock its state directory there, and never runs unlocked; put the directory on a local file system that supports flock(2)", path, err, role)
	}
	host, _ := os.Hostname()
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))), 0)
	abs, err := filepath.Abs(path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	return &dirLock{f: f, path: abs, role: role}, nil
}

// held checks that the lock file at its path is still the one locked. One
// that was removed or replaced (an operator's cleanup of a "stale" lock)
// no longer keeps a second process out: the caller stops before it acts
// on what it wrote. A process that starts after held passed reads what
// was written before it.
func (l *dirLock) held() error {
	if l == nil || l.f == nil {
		return errors.New("the state directory's lock is not held")
	}
	mine, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("state directory lock: %w", err)
	}
	if now, err := os.Lstat(l.path); err != nil || !os.SameFile(mine, now) {
		return fmt.Errorf("the lock file %s was removed or replaced while this %s held it: another %s may be using the directory; stopping", l.path, l.role, l.role)
	}
	return nil
}

// Close releases the lock. Close of a nil or closed lock does nothing.
func (l *dirLock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}

// dirInode returns the inode number of the directory dir.
func dirInode(dir string) (uint64, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Ino), true
}
