//go:build unix

package procusage

import (
	"os"
	"runtime"
	"syscall"
)

// Known says whether this platform reports CPU time and peak RSS.
const Known = true

// Child returns the CPU time (user + system, seconds) and peak resident
// set size (bytes) of the process that ps describes, which has exited.
func Child(ps *os.ProcessState) (cpuSeconds float64, maxRSS int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	return cpu(ru), maxrssBytes(int64(ru.Maxrss))
}

// SelfRSS returns this process's peak RSS so far, in bytes.
func SelfRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return maxrssBytes(int64(ru.Maxrss))
}

// SelfCPU returns the CPU time (user + system, seconds) this process has
// used.
func SelfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return cpu(&ru)
}

// cpu is the user + system time of ru in seconds.
func cpu(ru *syscall.Rusage) float64 {
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// maxrssBytes converts ru_maxrss to bytes: Darwin counts it in bytes, Linux
// and the BSDs in kilobytes.
func maxrssBytes(v int64) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return v
	}
	return v * 1024
}
