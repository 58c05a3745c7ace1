// Package atomicfile writes files so that readers see either the old content
// or the complete new content, never a partial file.
//
// The content is written to a temporary file in the destination's directory,
// flushed to stable storage and then renamed over the destination. A rename
// within one directory is atomic on POSIX file systems, so a crash or an error
// part-way through leaves any existing file untouched.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write atomically replaces the file at path with the bytes produced by write.
//
// Write creates a temporary file named "."+base(path)+".tmp-*" in the
// directory of path, calls write with a buffered writer on it, flushes,
// fsyncs and closes the file, sets its permission bits to perm and renames it
// over path. The permission bits are set with chmod, so the process umask does
// not apply. After the rename the directory is synced on a best-effort basis
// so the new name survives a crash; an error there is ignored because the
// file is already complete and in place.
//
// If any step fails, including write returning an error or panicking, the
// temporary file is removed and an existing file at path is left as it was.
// Every returned error names path or its directory. Concurrent calls for the
// same path each use their own temporary file; the last rename wins, so the
// file always holds one writer's complete output.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomicfile: create temp file in %s: %w", dir, err)
	}
	tmp := f.Name()
	closed, renamed := false, false
	defer func() {
		if !closed {
			f.Close()
		}
		if !renamed {
			os.Remove(tmp)
		}
	}()

	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: rename temp file to %s: %w", path, err)
	}
	renamed = true
	syncDir(dir)
	return nil
}

// syncDir fsyncs the directory dir so that a rename into it is durable. It
// is best effort: some platforms cannot open or sync a directory.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
