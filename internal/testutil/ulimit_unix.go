//go:build unix

package testutil

import (
	"os/exec"
	"strconv"
)

// FileSizeLimited returns a command that runs the program name with args
// under a file size limit of blocks blocks (the shell's ulimit -f, whose
// blocks are 512 or 1024 bytes, as the shell counts): every write past the
// limit fails with EFBIG, as on a disk that fills up half way through a
// file. The command is /bin/sh, which sets the limit and then execs the
// program, so that the program itself is what the caller waits for.
func FileSizeLimited(blocks int, name string, args ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", `ulimit -f "$1" && shift && exec "$@"`, "sh", strconv.Itoa(blocks), name}, args...)...)
}
