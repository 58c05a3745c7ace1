package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the n bytes of f at
// off to disk without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE): the fsync at the end of a large write then
// waits for little more than the last chunk, the disk having worked while
// the rest was copied. It is advice: an error is ignored (the fsync is
// the guarantee).
func startWriteback(f *os.File, off, n int64) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
		})
	}
}
