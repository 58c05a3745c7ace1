//go:build !unix

package testutil

import (
	"fmt"
	"runtime"
)

// HaveFIFO says whether [Mkfifo] can make named pipes on this platform.
const HaveFIFO = false

// Mkfifo fails: this platform has no named pipes in the file system.
func Mkfifo(path string, perm uint32) error {
	return fmt.Errorf("mkfifo %s: no named pipes on %s", path, runtime.GOOS)
}
