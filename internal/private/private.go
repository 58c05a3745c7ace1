// Package private checks that a directory or file that a program trusts is
// under its user's control alone, as ssh checks the files of ~/.ssh: on
// Unix, it must be owned by the user the program runs as (or by root) and
// writable neither by its group nor by others. A cache entry or a state
// file that another local user could write, or could replace in its
// directory, is not evidence of what this user's program computed.
//
// # Directories above
//
// A private directory inside one that another user may write is not
// private: that user can rename it away and put a directory of their own
// in its place. [CheckDir] therefore checks, as OpenSSH's safe-path check
// does, every directory above the one it is given, up to the root: each
// must be owned by this user or by root and writable neither by its group
// nor by others, with one exception. A directory above that its group or
// others may write but that has the sticky bit and is owned by root or by
// this user (/tmp, mode 1777) is accepted: there, others may create
// entries but cannot rename or remove ours. The directory itself is held
// to the strict rule, sticky bit or not, since another user could still
// create an entry in it.
//
// Symbolic links are followed: the directories checked are those of the
// resolved path, and also those named on the way to it (the directories
// that hold each link), and a link on the way must itself be owned by this
// user or by root (in a sticky directory, a link's owner can replace it).
//
// On other platforms (Windows: access control lists, not mode bits) there
// is no check: [Check] and [CheckDir] return nil.
package private

import (
	"fmt"
	"io/fs"
)

// Error says why a path is not private to this user.
type Error struct {
	// Path is the file or directory.
	Path string
	// Reason says what is wrong, for example "is writable by others
	// (mode 0777)".
	Reason string
	// Above, when not "", is the directory above Path (or the symbolic
	// link on the way to it) that another user controls; Reason then
	// names it.
	Above string
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%s %s", e.Path, e.Reason) }

// Check returns a *[Error] if fi (of the file or directory at path, from
// os.Stat or os.Lstat) is owned by a user other than this process's
// effective user and root, or is writable by its group or by others. The
// Reason then ends with what to do. Only path itself is checked; see
// [CheckDir] for a directory and those above it.
func Check(path string, fi fs.FileInfo) error {
	if r := reason(fi); r != "" {
		return &Error{Path: path, Reason: r}
	}
	return nil
}

// CheckDir returns a *[Error] if the directory dir is not private by
// [Check], or if a directory above it, up to the root, is owned by a user
// other than this process's effective user and root, or is writable by its
// group or by others without the sticky bit (see the package doc,
// "Directories above"). The Error's Path is dir; its Reason names the
// directory above at fault. An error of another type (dir does not exist,
// cannot be resolved or examined) is returned as it comes, for the caller
// to treat as it treats a missing directory.
func CheckDir(dir string) error { return checkDir(dir) }
