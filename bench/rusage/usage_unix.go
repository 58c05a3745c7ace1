//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// usage returns the child's CPU seconds (user + system) and its peak
// resident set in MB (getrusage's ru_maxrss: kilobytes on Linux, bytes on
// macOS).
func usage(ps *os.ProcessState) (cpu, rssMB float64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	rss := float64(ru.Maxrss)
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return cpu, rss / (1 << 20)
	}
	return cpu, rss / (1 << 10)
}
