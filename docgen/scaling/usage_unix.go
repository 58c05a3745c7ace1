//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts cmd in a process group of its own and makes a
// cancelled context kill the whole group, so that it stops both the
// launcher and the command that the launcher runs.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
