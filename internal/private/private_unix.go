//go:build unix

package private

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// os.Lstat of its resolved path) lets another user replace what it holds,
// or "": it is owned by another user, or its group or others may write it
// and it has no sticky bit.
func aboveReason(path string, fi fs.FileInfo) string {
	if r := foreignOwner(fi); r != "" {
		return r + ", who could rename what it holds and put their own in its place"
	}
	if who := writers(fi.Mode().Perm()); who != "" && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Sprintf("is writable by %s (mode %04o, no sticky bit): another user could rename what it holds and put their own in its place (chmod go-w %s)", who, fi.Mode().Perm(), path)
	}
	return ""
}

// maxLinks bounds the symbolic links followed in one path, as the
// kernel's ELOOP does.
const maxLinks = 255

// checkDir implements CheckDir. It looks dir up one name at a time from
// the root, as the kernel does: a symbolic link is replaced by its target
// (from the root, or from the directory that holds it), so that ".." after
// a link leads where the kernel's does, to the parent of the target, not
// lexically back. Each name is examined once, with os.Lstat, and only
// after the directory that holds it has been checked: every directory in
// which a name is looked up by aboveReason (one left by ".." by its owner
// alone), every link by its owner, the last directory by reason. The package doc ("Checked, then used by its
// name") says why what this saw is what a later use of dir finds.
func checkDir(dir string) error {
	sep := string(filepath.Separator)
	path := dir
	if !filepath.IsAbs(dir) {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		// Not filepath.Join, which would drop a ".." after a link
		// lexically; the walk resolves it.
		path = wd + sep + dir
	}
	notDir := &fs.PathError{Op: "lstat", Path: dir, Err: syscall.ENOTDIR}
	// checked holds the directories found safe to look names up in; cur
	// is where the walk stands (resolved: no links, no ".."), fi its
	// Lstat when at hand.
	checked := map[string]bool{}
	cur, fi := sep, fs.FileInfo(nil)
	names := strings.Split(path, sep)
	for links := 0; len(names) > 0; {
		name := names[0]
		names = names[1:]
		if fi != nil && !fi.IsDir() {
			return notDir // as the kernel's lookup of a name under a file
		}
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			// ".." is looked up in cur, so cur must stay where it is: its
			// directory (checked) lets only cur's owner, its own owner
			// and root move it. What others may write into cur does not
			// change where ".." leads.
			if !checked[cur] {
				if fi == nil {
					var err error
					if fi, err = os.Lstat(cur); err != nil {
						return err
					}
				}
				if r := foreignOwner(fi); r != "" {
					return &Error{Path: dir, Above: cur, Reason: fmt.Sprintf("is reached through .. out of %s, which %s, who could move it and so change where .. leads", cur, r)}
				}
			}
			cur, fi = filepath.Dir(cur), nil // checked: a name was looked up in it on the way down
			continue
		}
		if !checked[cur] {
			if fi == nil {
				var err error
				if fi, err = os.Lstat(cur); err != nil {
					return err
				}
			}
			if r := aboveReason(cur, fi); r != "" {
				return &Error{Path: dir, Above: cur, Reason: fmt.Sprintf("is under %s, which %s", cur, r)}
			}
			checked[cur] = true
		}
		next := filepath.Join(cur, name)
		lfi, err := os.Lstat(next)
		if err != nil {
			return err
		}
		if lfi.Mode()&fs.ModeSymlink == 0 {
			cur, fi = next, lfi
			continue
		}
		if r := foreignOwner(lfi); r != "" {
			return &Error{Path: dir, Above: next, Reason: fmt.Sprintf("is reached through the symbolic link %s, which %s, who could point it elsewhere", next, r)}
		}
		if links++; links > maxLinks {
			return &fs.PathError{Op: "lstat", Path: dir, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			cur = sep
		}
		fi = nil // cur is checked: the root, or the directory holding the link
		names = append(strings.Split(target, sep), names...)
	}
	if fi == nil { // the root, or a directory reached by ".." or a link
		var err error
		if fi, err = os.Lstat(cur); err != nil {
			return err
		}
	}
	if r := reason(fi); r != "" {
		return &Error{Path: dir, Reason: r}
	}
	return nil
}
