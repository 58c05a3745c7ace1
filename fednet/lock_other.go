//go:build !unix

package fednet

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// dirLock is an exclusive lock on a state directory. Without flock(2) it is
// the lock file itself, created exclusively and removed by Close: a server
// that was killed leaves it behind, and the next start names it so that an
// operator who knows the server is gone can remove it.
type dirLock struct {
	path string
	role string
	line []byte // what this process wrote into the lock file (lockLine)
}

// lockDir creates the lock file at path for a role ("server",
// "learner"), or returns an error naming the process that holds it.
func lockDir(path, role string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		holder := make([]byte, maxLockHolder)
		n := 0
		if h, err := os.Open(path); err == nil {
			n, _ = io.ReadFull(h, holder)
			h.Close()
		}
		return nil, fmt.Errorf("state directory %s is in use by another %s (%s): one %s per state directory; if that %s is gone, remove %s", strings.TrimSuffix(path, string(os.PathSeparator)+lockFile), role, lockHolder(holder[:n]), role, role, path)
	}
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	line := lockLine(time.Now())
	_, werr := f.Write(line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return nil, fmt.Errorf("state directory lock: writing %s: %w", path, werr)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return &dirLock{path: path, role: role, line: line}, nil
}

// held checks that the lock file is still the one this process made (its
// line, with a random part, is still what the file holds): one that was
// removed no longer keeps a second process out, and one replaced by a
// second process's lock file means that process is using the directory;
// either way the caller stops. Before, held checked only that a file of
// that name existed, which a second process's lock file is.
func (l *dirLock) held() error {
	if l == nil || l.path == "" {
		return errors.New("the state directory's lock is not held")
	}
	if !holdsLine(l.path, l.line) {
		return fmt.Errorf("the lock file %s was removed or replaced while this %s held it: another %s may be using the directory; stopping", l.path, l.role, l.role)
	}
	return nil
}

// Close releases the lock. Close of a nil or closed lock does nothing.
func (l *dirLock) Close() error {
	if l == nil || l.path == "" {
		return nil
	}
	// Another process's lock file (this one's was removed, and a second
	// process made its own) is left to that process.
	var err error
	if holdsLine(l.path, l.line) {
		err = os.Remove(l.path)
	}
	l.path = ""
	return err
}

// dirInode reports that this platform has no inode numbers to compare.
func dirInode(dir string) (uint64, bool) { return 0, false }
