//go:build unix

package testutil

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// HaveFIFO says whether [Mkfifo] can make named pipes on this platform.
const HaveFIFO = true

// Mkfifo makes a named pipe (FIFO) at path with permission bits perm.
func Mkfifo(path string, perm uint32) error { return unix.Mkfifo(path, perm) }

// CPUSeconds returns the user and system CPU seconds this process has
// used so far, and true: getrusage(2) measures them here.
func CPUSeconds() (float64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)*1e-6 }
	return tv(ru.Utime) + tv(ru.Stime), true
}
