// Package atomicfiletest lets tests fail the file operations of package
// atomicfile's writes one at a time, to check what a program does when a
// write fails at any step, or when it is killed there. It is for _test.go
// files only (TestOnlyTestsImport checks that no other file of the module
// imports it): a program that fails or skips its own writes would lose the
// durability atomicfile promises.
package atomicfiletest

import "github.com/dpmf/dpmf/internal/atomicfile/internal/fault"

// FailOps makes h see every file operation of atomicfile's writes, in
// the whole process, before it is made, and returns the function that
// removes h. The operations, with the path each acts on: "create" (the
// temporary file, with the destination's path), "chmod", "write",
// "fsync" and "close" (the temporary file's path), "rename" and "link"
// (the destination's), "remove" (the temporary file's, after a link) and
// "syncdir" (the directory's). An error h returns is that operation's:
// the operation is not made. One hook at a time: a second FailOps
// replaces the first.
func FailOps(h func(op, path string) error) (restore func()) {
	fault.Set(h)
	return func() { fault.Set(nil) }
}
