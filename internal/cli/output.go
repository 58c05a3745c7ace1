package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// File is a file that a command reads or writes, with the flag that names
// it, for error messages.
type File struct {
	Flag, Path string
}

// Output is a file a command writes: its flag and path, the permission
// of a new file (minus the umask) and the function that writes its
// content. [WriteOutputs] calls the Write functions of several outputs
// concurrently.
type Output struct {
	File
	Perm  os.FileMode
	Write func(io.Writer) error
}

// WrittenError is an error after which some of a command's outputs are
// complete and in place: the command must not report it as "nothing
// written", not even when it was also interrupted.
type WrittenError struct {
	// Err is what failed.
	Err error
	// Written names the outputs in place, for example "-o B.npy".
	Written []string
}

// Error implements error.
func (e *WrittenError) Error() string {
	return fmt.Sprintf("%v (%s already written)", e.Err, strings.Join(e.Written, ", "))
}

// Unwrap returns Err.
func (e *WrittenError) Unwrap() error { return e.Err }

// WriteOutputs writes every output or none: each goes to a temporary file
// in its destination's directory (atomicfile.Prepare), all of them at
// once on their own goroutines (an error names the first output in the
// order given that failed; the outputs after it are stopped), and only when all
// of them are complete, ctx is not done and every destination is still
// one that may be replaced, are they renamed over their destinations. On
// an error or a cancellation before the renames the temporary files are
// removed and existing files are left as they were. Once the first rename
// is done the others follow whatever ctx says, so a cancellation never
// leaves some outputs replaced and others not; only a rename that fails
// can, and its error then names the outputs already written. An error
// names the output's flag and path; once ctx is done (before the
// renames), ctx's error is returned.
//
// Between the two steps it calls [PauseForTest] with the point "commit",
// and after the first of several renames with the point "rename", for the
// signal tests; stderr receives its line.
//
// The renames are made under an exclusive flock(2) on the directory of
// every output (Unix), taken once all temporary files are complete and
// held until the last rename: a second process writing the same outputs
// waits (saying so on stderr, once) and renames its set after, so that
// the outputs on disk are one run's. The wait ends when ctx is done (ctx's
// error, nothing written). A directory without flock(2) is named in a
// warning and not locked; on Windows nothing is locked.
//
// Temporary files of earlier writers of the same outputs that were killed
// outright are removed where their death is proven (atomicfile: same host,
// boot and pid namespace, and no process of their pid); the others, whose
// writer cannot be proven gone (an older dpmf's, another host's), are
// left, and named on stderr in one line per output, after prefix (the
// program's "mfsolve: ").
func WriteOutputs(ctx context.Context, stderr io.Writer, prefix string, outs ...Output) error {
	pending := make([]*atomicfile.Pending, 0, len(outs))
	defer func() {
		for _, p := range pending {
			p.Discard() // a no-op after Commit
		}
	}()
	name := func(o Output, err error) error {
		var te *atomicfile.TargetError
		if errors.As(err, &te) {
			return fmt.Errorf("%s %s %s", o.Flag, o.Path, te.Reason)
		}
		return fmt.Errorf("%s %s: %s", o.Flag, o.Path, strings.ReplaceAll(err.Error(), "atomicfile: ", ""))
	}
	fail := func(o Output, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return name(o, err)
	}
	// The temporary files are written at once, each on its own goroutine
	// (the kernel's copies into the page cache, most of the time of large
	// outputs, then run on as many cores), and their results are taken in
	// the outputs' order: the first output that fails is the one named,
	// and the outputs after it are stopped, as if they had not been
	// started. The outputs before it are not stopped, so what is reported
	// does not depend on which goroutine failed first.
	type prepared struct {
		p      *atomicfile.Pending
		err    error
		warned bool
		left   []string // temporary files not proven gone
		// panicked: Write panicked with panicVal (atomicfile removed its
		// temporary file); the panic goes on on the caller's goroutine once
		// the others are done, so that their files are removed too.
		panicked bool
		panicVal any
	}
	res := make([]prepared, len(outs))
	cancels := make([]context.CancelFunc, len(outs))
	ctxs := make([]context.Context, len(outs))
	for i := range outs {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	prepare := func(i int) {
		o, r := outs[i], &res[i]
		defer func() {
			if v := recover(); v != nil {
				r.panicked, r.panicVal = true, v
				for _, cancel := range cancels[i+1:] {
					cancel()
				}
			}
		}()
		// One listing of the directory both removes dead writers'
		// temporary files and names those it cannot prove gone.
		p, err := atomicfile.PrepareNoting(ctxs[i], o.Path, o.Perm, o.Write, func(left []string) {
			r.warned, r.left = true, left
		})
		if err != nil {
			if !r.warned {
				r.left = atomicfile.UnprovenTemps(o.Path) // refused before its listing
			}
			r.err = err
			for _, cancel := range cancels[i+1:] {
				cancel()
			}
			return
		}
		r.p = p
	}
	if len(outs) == 1 {
		prepare(0)
	} else {
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() { prepare(i) })
		}
		wg.Wait()
	}
	for _, r := range res {
		if r.p != nil {
			pending = append(pending, r.p)
		}
	}
	for i, o := range outs {
		if left := res[i].left; len(left) > 0 {
			fmt.Fprintf(stderr, "%s%s %s: left %s: temporary files of a writer that cannot be proven gone (an older dpmf, another host); remove them if no other run is writing %s\n",
				prefix, o.Flag, o.Path, OneLine(strings.Join(left, ", ")), o.Path)
		}
		if res[i].panicked {
			panic(res[i].panicVal)
		}
		if err := res[i].err; err != nil {
			return fail(o, err)
		}
	}
	PauseForTest(ctx, stderr, "commit")
	if err := ctx.Err(); err != nil {
		return err
	}
	// Another process writing the same outputs renames its set while no
	// rename of ours is under way: the outputs on disk are one run's
	// (mfsolve's B and C, with B C = A), never one's B and the other's C.
	unlock, err := lockOutputDirs(ctx, stderr, prefix, outs)
	if err != nil {
		return err
	}
	defer unlock()
	// Every destination is checked again before the first rename, so a
	// destination that has become something atomicfile refuses (a
	// directory, a symbolic link) leaves all of them as they were.
	for _, o := range outs {
		if err := atomicfile.CheckTarget(o.Path); err != nil {
			return fail(o, err)
		}
	}
	// The files replaced are freed together after the renames rather
	// than one by one inside them (see holdReplaced).
	defer releaseAll(holdReplaced(outs))
	// From the first rename on, the renames go on whatever ctx says: a
	// cancellation between two of them would leave some outputs replaced
	// and others not. The renames take no time to speak of.
	for i, p := range pending {
		if i == 1 {
			PauseForTest(ctx, stderr, "rename")
		}
		if err := p.Commit(context.Background()); err != nil {
			if i == 0 {
				return fail(outs[i], err)
			}
			var done []string
			for _, o := range outs[:i] {
				done = append(done, o.Flag+" "+o.Path)
			}
			return &WrittenError{Err: name(outs[i], err), Written: done}
		}
	}
	return nil
}

// CheckOutputs applies dpmf's output policy (docs/cli.md, "Output files")
// to the files a command will write, before it does any work, so that a
// long computation does not end in an output it may not write. It returns
// nil if every output may be written:
//
//   - its directory exists and accepts new files (checked by creating and
//     removing a temporary file);
//   - it does not exist, or it is a regular file with a write permission bit
//     that this process may open for writing: a symbolic link, a directory,
//     a device such as /dev/null, a FIFO or a socket is refused, because the
//     output would replace it (see [atomicfile.CheckTarget]);
//   - it is not one of the inputs (the same file, also through another name
//     or a hard link): a *[UsageError];
//   - no two outputs are the same file: a *[UsageError].
//
// An empty output path, or one that starts with "-" (a flag taken for the
// file name, as in -o -C), is a *[UsageError]. Inputs that do not exist are
// skipped; reading them fails later with its own error.
func CheckOutputs(outs, ins []File) error {
	type seen struct {
		File
		dir  os.FileInfo
		file os.FileInfo // nil if it does not exist
	}
	var checked []seen
	for _, o := range outs {
		if o.Path == "" {
			return Usagef("%s is empty: want a file name", o.Flag)
		}
		if err := NotFlag(o.Flag, o.Path, "a file name"); err != nil {
			return err
		}
		dir := filepath.Dir(o.Path)
		di, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s %s: directory %s does not exist", o.Flag, o.Path, dir)
		case err != nil:
			return fmt.Errorf("%s %s: %v", o.Flag, o.Path, UnwrapPath(err))
		case !di.IsDir():
			return fmt.Errorf("%s %s: %s is not a directory", o.Flag, o.Path, dir)
		}
		if err := atomicfile.CheckTarget(o.Path); err != nil {
			var te *atomicfile.TargetError
			if errors.As(err, &te) {
				return fmt.Errorf("%s %s %s", o.Flag, o.Path, te.Reason)
			}
			return fmt.Errorf("%s %s: %v", o.Flag, o.Path, UnwrapPath(err))
		}
		fi, _ := os.Stat(o.Path)
		for _, in := range ins {
			if in.Path == "" {
				continue
			}
			ii, err := os.Stat(in.Path)
			if err == nil && fi != nil && os.SameFile(ii, fi) {
				return Usagef("%s %s is the %s input file: refusing to overwrite an input", o.Flag, o.Path, in.Flag)
			}
		}
		for _, c := range checked {
			// The same name in the same directory, or the same file.
			if os.SameFile(c.dir, di) && filepath.Base(c.Path) == filepath.Base(o.Path) || c.file != nil && fi != nil && os.SameFile(c.file, fi) {
				return Usagef("%s %s and %s %s are the same file", c.Flag, c.Path, o.Flag, o.Path)
			}
		}
		if err := probeDir(dir); err != nil {
			return fmt.Errorf("%s %s: cannot create files in directory %s: %v", o.Flag, o.Path, dir, err)
		}
		checked = append(checked, seen{o, di, fi})
	}
	return nil
}

// CheckOutputDir checks, before any work, that the directory dir can be
// created if it does not exist (its nearest existing ancestor is a directory
// that accepts new files) and accepts new files if it does. It creates
// nothing. An empty dir, or one that starts with "-" (a flag taken for
// the directory), is a *[UsageError].
func CheckOutputDir(flag, dir string) error {
	if dir == "" {
		return Usagef("%s is empty: want a directory", flag)
	}
	if err := NotFlag(flag, dir, "a directory"); err != nil {
		return err
	}
	d := filepath.Clean(dir)
	for {
		fi, err := os.Stat(d)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			parent := filepath.Dir(d)
			if parent == d {
				return fmt.Errorf("%s %s: no existing ancestor directory", flag, dir)
			}
			d = parent
			continue
		}
		if err != nil {
			return fmt.Errorf("%s %s: %v", flag, dir, UnwrapPath(err))
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s %s: %s is not a directory", flag, dir, d)
		}
		break
	}
	if err := probeDir(d); err != nil {
		return fmt.Errorf("%s %s: cannot create files in directory %s: %v", flag, dir, d, err)
	}
	return nil
}

// CheckOutputsIn applies the output policy, before any work, to the files
// names that a command will write into the directory dir, which flag
// names (-out DIR): dir must pass [CheckOutputDir], and where it exists
// already each file in it must pass [CheckOutputs] against ins. Nothing
// is created.
func CheckOutputsIn(flag, dir string, names []string, ins []File) error {
	if err := CheckOutputDir(flag, dir); err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil // created after the work; CheckOutputDir vetted its ancestor
	}
	outs := make([]File, len(names))
	for i, name := range names {
		outs[i] = File{Flag: flag, Path: filepath.Join(dir, name)}
	}
	return CheckOutputs(outs, ins)
}

// MkdirAll creates dir and any parents that do not exist, with mode 0755
// minus the umask, as os.MkdirAll does, and returns undo, which removes
// the directories it created, innermost first, stopping at the first
// that cannot be removed (one that is no longer empty: someone else wrote
// there meanwhile). A command calls undo when its output fails, so that
// a failed or interrupted run leaves no directory it created. On error
// MkdirAll removes what it created itself.
func MkdirAll(dir string) (undo func(), err error) {
	var missing []string // innermost first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	undo = func() {
		for _, d := range missing {
			if os.Remove(d) != nil {
				return
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// probeDir reports whether dir accepts new files, by creating and removing
// one: permission bits alone do not say (root, read-only mounts, ACLs).
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".dpmf-probe-*")
	if err != nil {
		return UnwrapPath(err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// UnwrapPath strips the *fs.PathError wrapper from err, for a message that
// already names the path.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// NotFlag returns a *[UsageError] if the path that flag names starts with
// "-": the flag parser took the next flag for the path (mfsolve -o -json
// would write a file called -json instead of printing JSON). want says
// what the flag takes, "a file name" or "a directory".
func NotFlag(flag, path, want string) error {
	if !strings.HasPrefix(path, "-") {
		return nil
	}
	return Usagef("%s %s: want %s, not a flag (write ./%s for one of that name)", flag, path, want, path)
}

// StickyWriter writes to W until a write fails, and then keeps that first
// error in Err and writes nothing more: a report printed in several writes
// is checked once, at its end.
type StickyWriter struct {
	W   io.Writer
	Err error
}

// Write implements io.Writer.
func (s *StickyWriter) Write(p []byte) (int, error) {
	if s.Err != nil {
		return 0, s.Err
	}
	n, err := s.W.Write(p)
	s.Err = err
	return n, err
}

// releaseAll closes the files at once, each on its own goroutine, and
// returns when all are closed.
func releaseAll(files []*os.File) {
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Go(func() { f.Close() })
	}
	wg.Wait()
}
