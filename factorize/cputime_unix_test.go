//go:build unix

package factorize

import (
	"syscall"
	"testing"
)

// cpuTime returns the user and system CPU seconds of this process, and
// true: getrusage measures them here.
func cpuTime(b *testing.B) (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6, true
}
