// Package npy reads and writes NumPy .npy files of float64 arrays: [Write]
// and [Read] work on an io.Writer and an io.Reader, [Save], [SaveDense] and
// [Load] are thin wrappers for files (Save and SaveDense replace the file
// atomically). [Array] is the array read, in C order.
//
// Anything that comes from outside the program is an error, never a panic:
// a nil reader, writer or matrix is a *[ParamError], and a .npy stream that
// cannot be opened or parsed a *[FileError] whose Err says why without a
// package prefix. Read never allocates more than the data it actually
// receives, whatever the header claims.
package npy
