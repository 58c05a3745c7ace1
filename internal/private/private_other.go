//go:build !unix

package private

import "io/fs"

// reason checks nothing where permissions are not Unix mode bits.
func reason(fs.FileInfo) string { return "" }

// checkDir checks nothing where permissions are not Unix mode bits.
func checkDir(string) error { return nil }
