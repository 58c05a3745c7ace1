// Package private checks that a directory or file that a program trusts is
// under its user's control alone, as ssh checks the files of ~/.ssh: on
// Unix, it must be owned by the user the program runs as (or by root) and
// writable neither by its group nor by others. A cache entry or a state
// file that another local user could write, or could replace in its
// directory, is not evidence of what this user's program computed.
//
// On other platforms (Windows: access control lists, not mode bits) there
// is no check: [Check] returns nil.
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
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%s %s", e.Path, e.Reason) }

// Check returns a *[Error] if fi (of the file or directory at path, from
// os.Stat or os.Lstat) is owned by a user other than this process's
// effective user and root, or is writable by its group or by others. The
// Reason then ends with what to do.
func Check(path string, fi fs.FileInfo) error {
	if r := reason(fi); r != "" {
		return &Error{Path: path, Reason: r}
	}
	return nil
}
