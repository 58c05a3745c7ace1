//go:build linux

package atomicfile

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// pidSpace identifies the space in which this process's pid names it:
// the host name, the boot (a pid of before a reboot names nobody now) and
// the pid namespace (containers on one host, even with one host name,
// each have their own pids). provable is false if the boot's id or the
// namespace cannot be read: then no writer is ever declared gone.
func pidSpace() (id string, provable bool) {
	host, _ := os.Hostname()
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, err2 := os.Readlink("/proc/self/ns/pid")
	return host + "\x00" + strings.TrimSpace(string(boot)) + "\x00" + ns, err1 == nil && err2 == nil && len(boot) > 0 && ns != ""
}

// processExists reports whether a process with pid exists in this pid
// namespace: kill(pid, 0) fails with ESRCH only where none does (EPERM:
// one of another user). Tests replace it.
var processExists = func(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
