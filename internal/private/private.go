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
// Symbolic links are followed as the kernel follows them: the name is
// looked up one element at a time from the root, a link is replaced by its
// target (links within the target are followed in turn, and ".." after a
// link leads to the parent of its target), and every directory in which
// a name is looked up is checked as a directory above, so the directories
// that hold the links are checked as well as those they lead to (a
// directory left by "..", only for its owner: see below). A link
// on the way must itself be owned by this user or by root (in a sticky
// directory, a link's owner can replace it).
//
// # Checked, then used by its name
//
// Callers check a directory and then open what is in it by name, so each
// open looks the directory up again. That later lookup finds what the
// check examined, unless this user or root changes the path in between;
// no comparison of device and inode numbers at each use is needed. The
// argument: [CheckDir] examines each name on the way only after it has
// found the directory that holds it owned by this user or root and
// either writable by neither its group nor others, or sticky. In the
// first kind, only the directory's owner and root can create, rename,
// replace or remove entries; in the second, others can create entries,
// but an existing one can be renamed, replaced or removed only by its own
// owner, the directory's owner or root, and CheckDir has found each entry
// it passes through (each directory, each link, the directory at the end)
// owned by this user or root. A mode can be changed only by the file's
// owner and root, an owner only by root. So from the moment CheckDir
// examines a name, what the name stands for stays as seen; by induction
// from the root, so does the whole lookup, targets of links included.
// A ".." on the way is the one name whose meaning does not depend on what
// its directory holds, only on where that directory is: the directory it
// leaves need only be this user's or root's (in a directory checked as
// above, nobody else can then move it), and others may write into it. The
// directory at the end is writable by no one else, sticky or not, so
// the entries in it too are created and replaced only by this user or
// root (callers still check each file they read, as a file's own mode may
// let others write it).
//
// What this rests on: root, processes with capabilities that override
// file permissions or mount file systems, and this user's own processes
// are trusted; only root can give a file away (chown; true on Linux,
// macOS and the BSDs); permissions are the mode bits. On Linux a POSIX
// access control list that lets another user write a file shows as group
// write in its mode (the ACL's mask) and is refused; an access control
// list that the mode bits do not show (macOS's chmod +a, NFSv4 ACLs) is
// not read, and a file system that does not enforce owners (FAT, SMB
// mounted with one owner for every file) is taken at its word. A relative
// directory is checked as the working directory's path (os.Getwd)
// followed by it; a later relative lookup starts at the working directory
// itself, so the checks above it are then more than it needs.
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
// directory above at fault. An error of another type (a name on the way
// does not exist, is not a directory or cannot be examined, or there are
// too many links) is returned as it comes, once the directories above
// that name have passed, for the caller to treat as it treats a missing
// directory.
func CheckDir(dir string) error { return checkDir(dir) }
