//go:build !unix

package main

import (
	"fmt"
	"runtime"
)

// haveFIFO says whether mkfifo can make named pipes on this platform.
const haveFIFO = false

// mkfifo fails: this platform has no named pipes in the file system.
func mkfifo(path string, perm uint32) error {
	return fmt.Errorf("mkfifo %s: no named pipes on %s", path, runtime.GOOS)
}
