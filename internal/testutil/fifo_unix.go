//go:build unix

package testutil

import "golang.org/x/sys/unix"

// HaveFIFO says whether [Mkfifo] can make named pipes on this platform.
const HaveFIFO = true

// Mkfifo makes a named pipe (FIFO) at path with permission bits perm.
func Mkfifo(path string, perm uint32) error { return unix.Mkfifo(path, perm) }
