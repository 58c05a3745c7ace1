// Package atomicfile writes files so that readers see either the old content
// or the complete new content, never a partial file.
//
// The content is written to a temporary file in the destination's directory,
// flushed to stable storage and then renamed over the destination. A rename
// within one directory is atomic on POSIX file systems, so a crash or an error
// part-way through leaves any existing file untouched. [WriteDurable] also
// syncs the directory, so that the new file survives a crash once it
// returns; [WriteDurableWith] can in addition write a file once (linked into
// place, never over an existing file: [DurableOptions.Once]) or with exact
// permission bits.
//
// # Which destinations are replaced
//
// Only a regular file, or a name that does not exist yet, is ever replaced
// (see [CheckTarget]). A symbolic link, a directory, a device such as
// /dev/null, a FIFO or a socket is refused with a *[TargetError]: renaming a
// file over it would silently replace the link or the device node (as root,
// /dev/null would become a regular file). An existing file without any write
// permission bit is read-only and refused too, also for root.
//
// # Permissions
//
// A new file gets the permission bits perm minus the process umask, exactly
// as os.OpenFile would give it. A file that replaces an existing regular file
// keeps that file's permission bits (its owner and group are those of the
// writing process), except a secret: with perm private to the owner (no
// group or other bits, such as 0600), the existing file's group and other
// bits are dropped, so that a secret written over a 0644 file is 0600, never
// readable by others. The temporary file has its final permission bits from
// the moment it is created, before any data is written, so a secret written
// with perm 0600 is never readable by others, not even while being written.
// [DurableOptions.ExactPerm] instead gives the file exactly perm, set once
// the data is written, the temporary file being 0600 until then.
//
// # Temporary files
//
// Temporary files are named "."+base+".tmp-"+host+"."+pid+"."+random in
// the destination's directory (base cut short where the name would exceed
// 255 bytes; host is a tag of the writer's host, boot and pid namespace,
// pid its process id). They are removed on every error, on a panic of the
// write function and on cancellation; only a process killed outright
// (SIGKILL, a crash) can leave one behind. Such a stale file is never read
// by this package. Every write removes the temporary files of its
// destination whose writer is provably gone (on Linux: the same host tag
// and no process of that pid), never one a live process may be writing;
// [UnprovenTemps] names the others (an older dpmf's, another host's) for
// a warning ([PrepareNoting] names them from the same listing), and [RemoveStale] deletes the old ones of a directory.
//
// # Failures in tests
//
// Every file operation of a write (the temporary file's creation, chmod,
// write, fsync and close, the rename or link, the removal of a linked
// temporary file, the directory's sync) can be failed by a test, one at a
// time, through package atomicfiletest, which only tests may import.
package atomicfile

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/dpmf/dpmf/internal/atomicfile/internal/fault"
)

// TargetError reports a destination that Write refuses to replace.
type TargetError struct {
	// Path is the destination.
	Path string
	// Reason says what it is, for example "is a symbolic link".
	Reason string
}

// Error implements error.
func (e *TargetError) Error() string {
	return fmt.Sprintf("atomicfile: %s %s", e.Path, e.Reason)
}

// CheckTarget returns a *[TargetError] if path exists and is not a writable
// regular file: a symbolic link (even to a regular file), a directory, a
// device, a FIFO, a socket, a regular file without any write permission
// bit, or one that this process may not open for writing. It returns nil if path does not exist, and the error of Lstat if the
// name cannot be examined (for example a parent that is not a directory).
// It does not check that the directory accepts new files.
func CheckTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	reason := kindReason(fi.Mode())
	if reason == "" && fi.Mode().Perm()&0o222 == 0 {
		reason = "is read-only; remove it or make it writable"
	}
	if reason != "" {
		return &TargetError{Path: path, Reason: reason}
	}
	// The permission bits say writable to someone; ask whether to this
	// process. Opening for writing without O_TRUNC changes nothing, and
	// O_NONBLOCK keeps a FIFO swapped in meanwhile from blocking.
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrPermission) {
		return &TargetError{Path: path, Reason: "is not writable by this user"}
	}
	if err == nil {
		f.Close()
	}
	return nil
}

// kindReason says why a file of mode m is not a regular file, or "" if it
// is one.
func kindReason(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "is a symbolic link; give the path of its target"
	case m.IsDir():
		return "is a directory, want a file name"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "is a device, not a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "is a FIFO, not a regular file"
	case m&fs.ModeSocket != 0:
		return "is a socket, not a regular file"
	case !m.IsRegular():
		return "is not a regular file"
	}
	return ""
}

// OpenRegular opens the file at path for reading, following symbolic
// links, and returns it if it is a regular file. Anything else (a FIFO, a
// device such as /dev/zero, a directory, a socket) is refused with a
// *[TargetError] without blocking: the open is non-blocking, so a FIFO
// planted under the name cannot hang the caller. The error of the open (for
// example one that wraps [fs.ErrNotExist]) is returned as is.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if r := kindReason(fi.Mode()); r != "" {
		f.Close()
		return nil, &TargetError{Path: path, Reason: r}
	}
	return f, nil
}

// ReadRegular returns the content of the regular file at path, as
// [OpenRegular] opens it; a file longer than max bytes is an error (its
// content is not read).
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &TargetError{Path: path, Reason: fmt.Sprintf("has %d bytes, more than the %d expected", fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TargetError{Path: path, Reason: fmt.Sprintf("has more than the %d bytes expected", max)}
	}
	return data, nil
}

// Write atomically replaces the file at path with the bytes produced by
// write. It is [WriteContext] without cancellation.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) error {
	return WriteContext(context.Background(), path, perm, write)
}

// WriteContext atomically replaces the file at path with the bytes produced
// by write: [Prepare] followed by [Pending.Commit].
//
// If any step fails, including write returning an error or panicking, the
// temporary file is removed and an existing file at path is left as it was.
// Every returned error names path or its directory. Concurrent calls for the
// same path each use their own temporary file; the last rename wins, so the
// file always holds one writer's complete output.
func WriteContext(ctx context.Context, path string, perm os.FileMode, write func(w io.Writer) error) error {
	return writeFile(ctx, path, perm, write, false, DurableOptions{})
}

// WriteDurable is [Write] for state that must survive a crash once
// WriteDurable returns: the directory is synced after the rename and an
// error of that sync is returned (Write ignores it). When it returns nil
// the new content is on stable storage, as far as the platform's fsync
// promises.
func WriteDurable(path string, perm os.FileMode, write func(w io.Writer) error) error {
	return writeFile(context.Background(), path, perm, write, true, DurableOptions{})
}

// ErrExists is wrapped by the error of a [DurableOptions.Once] write whose
// destination exists.
var ErrExists = errors.New("already exists")

// errNoReplace is renameNoReplace's error where no rename refuses an
// existing destination in one step.
var errNoReplace = errors.New("no rename without replace")

// ErrTempGone is wrapped by the error of a [DurableOptions.Once] write
// whose temporary file was gone when it was to be renamed into place
// (another process removed it, or the directory was moved or replaced).
var ErrTempGone = errors.New("the temporary file is gone")

// DurableOptions change how [WriteDurableWith] writes; the zero value is
// [WriteDurable]'s way.
type DurableOptions struct {
	// ExactPerm gives the file exactly the permission bits perm (not
	// minus the umask, nor an existing file's), set once the data is
	// written; until then the temporary file is private to its owner
	// (0600).
	ExactPerm bool
	// Once never replaces the destination: the synced temporary file is
	// hard-linked to it, which fails if a file of that name exists,
	// whatever it is (the error wraps [ErrExists]), and is then removed,
	// before the directory's sync. Where the file system has no hard
	// links (the link fails and the name does not exist), the file is
	// renamed into place: on Linux, where the file system supports it,
	// with renameat2's RENAME_NOREPLACE, which fails if the name was made
	// meanwhile (ErrExists again); elsewhere by a plain rename, which
	// replaces a file made between the check and the rename (if the
	// temporary file is gone meanwhile, the error wraps [ErrTempGone]). The link is the destination's check: [CheckTarget]
	// is not asked.
	Once bool
}

// WriteDurableWith is [WriteDurable] with options.
func WriteDurableWith(path string, perm os.FileMode, opt DurableOptions, write func(w io.Writer) error) error {
	return writeFile(context.Background(), path, perm, write, true, opt)
}

// writeFile is prepare followed by commit, durable or not.
func writeFile(ctx context.Context, path string, perm os.FileMode, write func(w io.Writer) error, durable bool, opt DurableOptions) error {
	p, err := prepare(ctx, path, perm, write, opt, nil)
	if err != nil {
		return err
	}
	return p.commit(ctx, durable)
}

// Pending is a complete temporary file that waits to be renamed over its
// destination by Commit, or removed by Discard. Several Pending files let a
// program write all its outputs before it replaces any of them.
type Pending struct {
	path, tmp string
	once      bool // DurableOptions.Once
	done      bool
}

// Prepare writes the future content of path to a temporary file and
// returns it, pending.
//
// It refuses a destination that [CheckTarget] rejects. It creates the
// temporary file in the directory of path (see the package documentation for
// its name and permissions), calls write with a buffered writer on it (a
// [ZeroSkipper]), then
// flushes, fsyncs and closes the file. Every write to the buffered writer
// first checks ctx: once ctx is done, the writes fail with ctx's error and
// Prepare returns an error that wraps it (errors.Is(err, context.Canceled)
// holds). On any error, or a panic of write, the temporary file is removed.
func Prepare(ctx context.Context, path string, perm os.FileMode, write func(w io.Writer) error) (*Pending, error) {
	return prepare(ctx, path, perm, write, DurableOptions{}, nil)
}

// PrepareNoting is [Prepare] that also calls unproven with the temporary
// files of path that [UnprovenTemps] would return, taken from the listing
// of path's directory that every write makes to remove dead writers'
// files: one listing, where Prepare after UnprovenTemps makes two (beside
// 10^5 files, each costs as much as the rest of a small write). unproven
// is called once, after the listing and before the temporary file is
// created, even with no names; it is not called if PrepareNoting fails
// before the listing (a destination that [CheckTarget] refuses, ctx
// done), where a caller that warns asks [UnprovenTemps].
func PrepareNoting(ctx context.Context, path string, perm os.FileMode, write func(w io.Writer) error, unproven func(paths []string)) (*Pending, error) {
	return prepare(ctx, path, perm, write, DurableOptions{}, unproven)
}

// prepare is Prepare with options (ExactPerm, Once) and PrepareNoting's
// unproven (nil: not asked). Every file operation goes through fault.Do.
func prepare(ctx context.Context, path string, perm os.FileMode, write func(w io.Writer) error, opt DurableOptions, unproven func([]string)) (*Pending, error) {
	if !opt.Once {
		if err := CheckTarget(path); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	// Temporary files of this destination whose writer is provably gone
	// (killed outright) are removed; a live writer's never are.
	left := removeDeadTemps(path)
	if unproven != nil {
		unproven(left)
	}
	mode := perm.Perm()
	if opt.ExactPerm {
		mode = 0o600 // perm once the data is written
	}
	var f *os.File
	err := fault.Do("create", path, func() (err error) {
		f, err = createTemp(dir, filepath.Base(path), mode)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("atomicfile: create temp file in %s: %w", dir, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close() // after a failed Close, a second one only returns an error
			os.Remove(tmp)
		}
	}()
	chmod := func(mode os.FileMode) func() error {
		return func() error { return fault.Do("chmod", tmp, func() error { return f.Chmod(mode) }) }
	}
	var steps []func() error
	// An existing file keeps its permission bits, but a secret (perm
	// private to the owner) its owner's only: set them before any data is
	// written.
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && !opt.ExactPerm {
		mode := fi.Mode().Perm()
		if perm.Perm()&0o077 == 0 {
			mode &= 0o700
		}
		steps = append(steps, chmod(mode))
	}
	// The data, flushed to the file, (given its exact bits,) synced and
	// closed: a step that fails ends Prepare, but the file is closed
	// still.
	raw := &ctxWriter{ctx: ctx, f: f}
	fw := &fileWriter{Writer: bufio.NewWriter(raw), raw: raw}
	steps = append(steps, func() error {
		return fault.Do("write", tmp, func() error {
			if err := write(fw); err != nil {
				return err
			}
			return fw.finish()
		})
	})
	if opt.ExactPerm {
		steps = append(steps, chmod(perm.Perm()))
	}
	steps = append(steps, func() error { return fault.Do("fsync", tmp, f.Sync) })
	for _, step := range steps {
		if err = step(); err != nil {
			break
		}
	}
	if cerr := fault.Do("close", tmp, f.Close); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	ok = true
	return &Pending{path: path, tmp: tmp, once: opt.Once}, nil
}

// Commit renames the temporary file over the destination, unless ctx is
// done or the destination has meanwhile become something [CheckTarget]
// rejects; in those cases, and on any other error, the temporary file is
// removed and the destination left as it was. After the rename the
// directory is synced on a best-effort basis so the new name survives a
// crash; an error there is ignored because the file is already complete and
// in place. Commit after Commit or Discard does nothing.
func (p *Pending) Commit(ctx context.Context) error { return p.commit(ctx, false) }

// commit renames the file into place (or, once, links it) and syncs the
// directory; with durable, an error of that sync is returned. Every file
// operation goes through fault.Do.
func (p *Pending) commit(ctx context.Context, durable bool) error {
	if p.done {
		return nil
	}
	p.done = true
	err := ctx.Err()
	if err != nil {
		err = fmt.Errorf("atomicfile: write %s: %w", p.path, err)
	} else if p.once {
		err = p.link()
	} else {
		err = CheckTarget(p.path)
		if err == nil {
			if rerr := fault.Do("rename", p.path, func() error { return os.Rename(p.tmp, p.path) }); rerr != nil {
				err = fmt.Errorf("atomicfile: rename temp file to %s: %w", p.path, rerr)
			}
		}
	}
	if err != nil {
		os.Remove(p.tmp)
		return err
	}
	dir := filepath.Dir(p.path)
	err = fault.Do("syncdir", dir, func() error { return SyncDir(dir) })
	if p.once {
		// The removal is best-effort: one that failed is made again
		// (unsynced).
		os.Remove(p.tmp)
	}
	if err != nil && durable {
		return err
	}
	return nil
}

// link puts the temporary file in place as p.path, never over a file of
// that name (DurableOptions.Once), and removes its temporary name.
func (p *Pending) link() error {
	if err := fault.Do("link", p.path, func() error { return os.Link(p.tmp, p.path) }); err != nil {
		_, lerr := os.Lstat(p.path)
		switch {
		case lerr == nil:
			return fmt.Errorf("atomicfile: write %s: %w", p.path, ErrExists)
		case !errors.Is(lerr, fs.ErrNotExist):
			return fmt.Errorf("atomicfile: link temp file to %s: %w", p.path, err)
		}
		// No hard links on this file system: renamed into place without
		// replacing (where the kernel and file system can: the name may
		// have been made since the check, by a process the caller's lock
		// does not keep out), else renamed after the check just now.
		err := fault.Do("rename", p.path, func() error {
			err := renameNoReplace(p.tmp, p.path)
			if errors.Is(err, errNoReplace) {
				err = os.Rename(p.tmp, p.path)
			}
			return err
		})
		switch {
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("atomicfile: write %s: %w", p.path, ErrExists)
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("atomicfile: rename temp file to %s: %w (%w)", p.path, ErrTempGone, err)
		case err != nil:
			return fmt.Errorf("atomicfile: rename temp file to %s: %w", p.path, err)
		}
	}
	// Before the directory's sync, which makes the removal durable too.
	fault.Do("remove", p.tmp, func() error { return os.Remove(p.tmp) })
	return nil
}

// Discard removes the temporary file. Discard after Commit or Discard does
// nothing.
func (p *Pending) Discard() {
	if !p.done {
		p.done = true
		os.Remove(p.tmp)
	}
}

// tempInfix separates a destination's base name from the random suffix of
// its temporary files.
const tempInfix = ".tmp-"

// maxNameBytes is the longest file name (NAME_MAX) of common file
// systems: ext4, XFS, Btrfs, APFS, tmpfs.
const maxNameBytes = 255

// tempName returns "."+base+".tmp-"+host+"."+pid+"."+16 random hex
// digits (the writer: see owner.go), with base cut (at a rune boundary) so
// that the name takes at most maxNameBytes: a destination whose own name
// is valid must not fail for its temporary file's. The random part keeps
// cut names apart.
func tempName(base string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	suffix := tempInfix + ownerInfix() + hex.EncodeToString(b[:])
	if room := maxNameBytes - 1 - len(suffix); len(base) > room {
		for room > 0 && !utf8.RuneStart(base[room]) {
			room--
		}
		base = base[:room]
	}
	return "." + base + suffix, nil
}

// createTemp creates a new file [tempName](base) in dir with permission
// bits perm minus the umask (the kernel applies it).
func createTemp(dir, base string, perm os.FileMode) (*os.File, error) {
	for range 100 {
		tmp, err := tempName(base)
		if err != nil {
			return nil, err
		}
		name := filepath.Join(dir, tmp)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, errors.New("no unused temporary file name")
}

// IsTemp reports whether name (a base name) is one of this package's
// temporary files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempInfix)
}

// RemoveStale removes the temporary files of this package in dir that were
// last modified more than age ago, which only a killed process can leave
// behind (a live writer modifies its file as it writes; choose age well above
// the longest write). An age of 0 or less removes every temporary file,
// whatever its modification time (one later than the clock's included), for
// a directory where no writer can be live (one held under a lock). It returns the number of files removed and the first
// error other than a file that has disappeared meanwhile.
func RemoveStale(dir string, age time.Duration) (int, error) {
	return RemoveStaleOf(dir, age, nil)
}

// RemoveStaleOf is [RemoveStale] limited to the temporary files of the
// destinations whose base name ours accepts (all of them for a nil ours),
// for a directory that may hold other programs' files: a temporary file
// is named "."+base+".tmp-"+random, and base is what ours is given.
func RemoveStaleOf(dir string, age time.Duration, ours func(base string) bool) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var first error
	cutoff := time.Now().Add(-age)
	for _, e := range entries {
		if !IsTemp(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		// IsTemp: the name starts with "." and holds the infix, which may
		// come right after the dot (".tmp-x": base "").
		if base := e.Name()[1:max(1, strings.LastIndex(e.Name(), tempInfix))]; ours != nil && !ours(base) {
			continue
		}
		if age > 0 {
			fi, err := e.Info()
			if err != nil || !fi.ModTime().Before(cutoff) {
				continue
			}
		}
		// Unlinked, never removed as a directory (os.Remove falls back to
		// rmdir): an empty directory put in the file's place after the
		// listing stays.
		if err := syscall.Unlink(filepath.Join(dir, e.Name())); err == nil {
			n++
		} else if !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = err
		}
	}
	return n, first
}

// ZeroSkipper is implemented by the writer that the write functions of
// this package's writes receive: SkipZeros(n) advances the file by n zero
// bytes without writing them, leaving a hole where the file system has
// them (the file reads the same, with less disk and less copying). It
// fails, as writes do, once the write's context is done. A writer of
// large, mostly zero data (package npy) may ask for it.
type ZeroSkipper interface {
	SkipZeros(n int64) error
}

// fileWriter is the buffered writer on a temporary file that a write
// function receives; it is a [ZeroSkipper].
type fileWriter struct {
	*bufio.Writer
	raw  *ctxWriter
	hole bool // the file ends in a skipped run, not yet part of its size
}

// Write writes p through the buffer.
func (w *fileWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.hole = false
	}
	return w.Writer.Write(p)
}

// WriteString writes s through the buffer (io.WriteString's fast path).
func (w *fileWriter) WriteString(s string) (int, error) {
	if len(s) > 0 {
		w.hole = false
	}
	return w.Writer.WriteString(s)
}

// SkipZeros implements [ZeroSkipper]: the buffer is flushed and the
// file offset moved n bytes on.
func (w *fileWriter) SkipZeros(n int64) error {
	if n < 0 {
		return fmt.Errorf("skip of %d bytes", n)
	}
	if err := w.raw.ctx.Err(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if _, err := w.raw.f.Seek(n, io.SeekCurrent); err != nil {
		return err
	}
	w.raw.pos += n
	if n > 0 {
		w.hole = true
	}
	return nil
}

// finish flushes the buffer and, after a final skip, extends the file to
// its offset (a seek alone does not).
func (w *fileWriter) finish() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if !w.hole {
		return nil
	}
	return w.raw.f.Truncate(w.raw.pos)
}

// writebackChunk is how much data a write lets accumulate before it asks
// the kernel to start writing it to disk (startWriteback), so that the
// final fsync waits for the last chunk rather than for the whole file.
const writebackChunk = 8 << 20

// ctxWriter writes to f, failing every write once ctx is done, and keeps
// f's offset (pos) and the offset up to which writeback was started.
type ctxWriter struct {
	ctx      context.Context
	f        *os.File
	pos      int64
	writeOut int64
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	// Large writes are cut so that cancellation is noticed within about
	// one chunk.
	const chunk = 4 << 20
	n := 0
	for len(p) > 0 {
		k := min(len(p), chunk)
		m, err := c.f.Write(p[:k])
		n += m
		c.pos += int64(m)
		if err != nil {
			return n, err
		}
		if c.pos-c.writeOut >= writebackChunk {
			startWriteback(c.f, c.writeOut, c.pos-c.writeOut)
			c.writeOut = c.pos
		}
		p = p[k:]
		if len(p) > 0 {
			if err := c.ctx.Err(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// SyncDir fsyncs the directory dir, so that the renames and removals in it
// that came before are durable, and returns the error of opening or syncing
// it. Callers for which durability is a guarantee (a state file that must
// never be rewound) check it, or use [WriteDurable]; [Write] and
// [Pending.Commit] sync the directory on a best-effort basis.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: sync directory %s: %w", dir, err)
	}
	return nil
}
