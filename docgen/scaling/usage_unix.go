//go:build unix

package main

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// usageKnown says whether this platform reports CPU time and peak RSS
// (getrusage); where it does not, the report prints them as unknown.
const usageKnown = true

// childUsage returns the CPU time (user + system, seconds) and peak resident
// set size (bytes) of the process that ps describes, which has exited.
func childUsage(ps *os.ProcessState) (cpu float64, maxRSS int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	return rusageCPU(ru), maxrssBytes(int64(ru.Maxrss))
}

// selfRSS returns this process's peak RSS so far, in bytes.
func selfRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return maxrssBytes(int64(ru.Maxrss))
}

// cpuSeconds returns the CPU time (user + system) this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return rusageCPU(&ru)
}

// rusageCPU is the user + system time of ru in seconds.
func rusageCPU(ru *syscall.Rusage) float64 {
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

// ownProcessGroup puts cmd in a process group of its own and makes a
// cancelled context kill the whole group, so that it stops both the
// launcher and the command that the launcher runs.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
