//go:build unix

package reproduce

import "golang.org/x/sys/unix"

// haveFIFO says whether mkfifo can make named pipes on this platform.
const haveFIFO = true

// mkfifo makes a named pipe (FIFO) at path with permission bits perm.
func mkfifo(path string, perm uint32) error { return unix.Mkfifo(path, perm) }
