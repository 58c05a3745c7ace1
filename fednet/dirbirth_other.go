//go:build !linux

package fednet

// dirBirth reports that this platform's directory creation time is not
// read: only the inode number tells a copy from the directory a run
// started in (see the Linux version).
func dirBirth(dir string) (int64, bool) { return 0, false }
