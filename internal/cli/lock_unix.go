//go:build unix

package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/dpmf/dpmf/internal/flock"
)

// lockOutputDirs takes an exclusive flock(2) on the directory of every
// output, each directory once, in the order of their device and inode
// numbers (so that two processes never each hold one that the other
// waits for), waiting while another process holds one and saying so once
// on stderr. It returns the function that releases them. A directory that
// cannot be locked (a file system without flock(2)) is named in a warning
// line and left unlocked, and so is one that cannot be opened or
// examined. A cancelled wait returns ctx's error, with
// nothing held.
func lockOutputDirs(ctx context.Context, stderr io.Writer, prefix string, outs []Output) (unlock func(), err error) {
	type dir struct {
		f        *os.File
		dev, ino uint64
		out      Output
	}
	var dirs []dir
	unlock = func() {
		for _, d := range dirs {
			d.f.Close() // releases its lock
		}
	}
	cannot := func(o Output, err error) {
		fmt.Fprintf(stderr, "%s%s %s: cannot lock its directory (%v): a process writing the same files at once could leave outputs of two runs\n", prefix, o.Flag, o.Path, UnwrapPath(err))
	}
	for _, o := range outs {
		// A directory that cannot be opened (no read permission: mode
		// 0300 lets its owner create files in it) or examined is named,
		// as one without flock(2) is: the renames that follow succeed.
		f, err := openDir(filepath.Dir(o.Path))
		if err != nil {
			cannot(o, err)
			continue
		}
		fi, err := f.Stat()
		var st *syscall.Stat_t
		if err == nil {
			var ok bool
			if st, ok = fi.Sys().(*syscall.Stat_t); !ok {
				err = errors.New("no device and inode numbers")
			}
		}
		if err != nil {
			f.Close()
			cannot(o, err)
			continue
		}
		if slices.ContainsFunc(dirs, func(d dir) bool { return d.dev == uint64(st.Dev) && d.ino == uint64(st.Ino) }) {
			f.Close()
			continue
		}
		dirs = append(dirs, dir{f, uint64(st.Dev), uint64(st.Ino), o})
	}
	slices.SortFunc(dirs, func(a, b dir) int { return cmp.Or(cmp.Compare(a.dev, b.dev), cmp.Compare(a.ino, b.ino)) })
	for _, d := range dirs {
		err := flock.Exclusive(ctx, d.f, 0, func() {
			fmt.Fprintf(stderr, "%s%s %s: waiting for another process that writes into its directory\n", prefix, d.out.Flag, d.out.Path)
		})
		switch {
		case ctx.Err() != nil:
			unlock()
			return nil, ctx.Err()
		case err != nil:
			cannot(d.out, err)
		}
	}
	return unlock, nil
}

// openDir opens a directory to lock it; tests replace it.
var openDir = os.Open
