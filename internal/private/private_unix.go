//go:build unix

package private

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// euid is the effective user id; tests replace it.
var euid = os.Geteuid

// reason says why fi is not private to this user, or "".
func reason(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uid := int(st.Uid); uid != euid() && uid != 0 {
		return fmt.Sprintf("is owned by another user (uid %d, this process runs as uid %d): another user could have written it", uid, euid())
	}
	perm := fi.Mode().Perm()
	who := ""
	switch {
	case perm&0o022 == 0o022:
		who = "its group and by others"
	case perm&0o020 != 0:
		who = "its group"
	case perm&0o002 != 0:
		who = "others"
	default:
		return ""
	}
	return fmt.Sprintf("is writable by %s (mode %04o): another user could have written it (chmod go-w it)", who, perm)
}
