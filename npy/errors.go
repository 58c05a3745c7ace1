package npy

import "github.com/dpmf/dpmf/internal/param"

// ParamError reports an argument that the package cannot accept: a nil
// reader, writer or matrix, or a shape that does not fit the data. It is
// dpmf's one argument error (the same type as factorize.ParamError and the
// others), so that a command can name the flag or file with errors.As
// instead of parsing the message.
type ParamError = param.Error

// FileError reports a .npy input that cannot be read (a file that cannot
// be opened, a malformed, truncated or unsupported .npy stream) or an
// output that cannot be written. Err says what is wrong without a package
// prefix.
type FileError struct {
	// Op is "load" (Load, Path set), "read" (Read) or "write"
	// (Write).
	Op string
	// Path is the file, or "" for a reader.
	Path string
	// Err is the cause.
	Err error
}

// Error returns "npy: load PATH: cause", "npy: read .npy: cause" or
// "npy: write .npy: cause".
func (e *FileError) Error() string {
	if e.Path == "" {
		return "npy: " + e.Op + " .npy: " + e.Err.Error()
	}
	return "npy: " + e.Op + " " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }
