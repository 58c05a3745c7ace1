//go:build unix

package private

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// euid is the effective user id; tests replace it.
var euid = os.Geteuid

// reason says why fi is not private to this user, or "".
func reason(fi fs.FileInfo) string {
	if r := foreignOwner(fi); r != "" {
		return r + ": another user could have written it"
	}
	if who := writers(fi.Mode().Perm()); who != "" {
		return fmt.Sprintf("is writable by %s (mode %04o): another user could have written it (chmod go-w it)", who, fi.Mode().Perm())
	}
	return ""
}

// foreignOwner says "is owned by another user (...)" if fi's owner is
// neither this process's effective user nor root, or "".
func foreignOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uid := int(st.Uid); uid != euid() && uid != 0 {
		return fmt.Sprintf("is owned by another user (uid %d, this process runs as uid %d)", uid, euid())
	}
	return ""
}

// writers says who besides the owner may write under perm: "its group",
// "others", "its group and by others" (after "writable by"), or "".
func writers(perm fs.FileMode) string {
	switch {
	case perm&0o022 == 0o022:
		return "its group and by others"
	case perm&0o020 != 0:
		return "its group"
	case perm&0o002 != 0:
		return "others"
	}
	return ""
}

// aboveReason says why a directory above the one checked (fi, from
// os.Stat) lets another user replace what it holds, or "": it is owned by
// another user, or its group or others may write it and it has no sticky
// bit.
func aboveReason(path string, fi fs.FileInfo) string {
	if r := foreignOwner(fi); r != "" {
		return r + ", who could rename what it holds and put their own in its place"
	}
	if who := writers(fi.Mode().Perm()); who != "" && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Sprintf("is writable by %s (mode %04o, no sticky bit): another user could rename what it holds and put their own in its place (chmod go-w %s)", who, fi.Mode().Perm(), path)
	}
	return ""
}

// checkDir implements CheckDir.
func checkDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return err
	}
	if r := reason(fi); r != "" {
		return &Error{Path: dir, Reason: r}
	}
	checked := map[string]bool{}
	above := func(a string) error {
		if checked[a] {
			return nil
		}
		checked[a] = true
		fi, err := os.Stat(a)
		if err != nil {
			return err
		}
		if r := aboveReason(a, fi); r != "" {
			return &Error{Path: dir, Above: a, Reason: fmt.Sprintf("is under %s, which %s", a, r)}
		}
		return nil
	}
	// The directories of the resolved path, nearest first.
	for a := resolved; filepath.Dir(a) != a; {
		a = filepath.Dir(a)
		if err := above(a); err != nil {
			return err
		}
	}
	// The names on the way to it: each symbolic link must be this
	// user's or root's, and each directory that holds a name is checked
	// as a directory above (os.Stat follows the links before it, so this
	// is where the name is looked up).
	for p := abs; filepath.Dir(p) != p; p = filepath.Dir(p) {
		lfi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if lfi.Mode()&fs.ModeSymlink != 0 {
			if r := foreignOwner(lfi); r != "" {
				return &Error{Path: dir, Above: p, Reason: fmt.Sprintf("is reached through the symbolic link %s, which %s, who could point it elsewhere", p, r)}
			}
		}
		if err := above(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}
