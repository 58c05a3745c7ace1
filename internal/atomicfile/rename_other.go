//go:build !linux

package atomicfile

// renameNoReplace reports that this platform has no rename that refuses
// an existing destination in one step (see rename_linux.go).
func renameNoReplace(oldpath, newpath string) error { return errNoReplace }
