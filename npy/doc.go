// Package npy reads and writes NumPy .npy files of float64 arrays: [Write]
// and [Read] work on an io.Writer and an io.Reader, [Save], [SaveDense] and
// [Load] are thin wrappers for files (Save and SaveDense replace the file
// atomically), and [LoadChecked] lets the caller refuse the declared shape
// before the data is allocated. [Array] is the array read, in C order.
//
// Anything that comes from outside the program is an error, never a panic:
// a nil reader, writer or matrix is a *[ParamError], and a .npy stream that
// cannot be opened or parsed a *[FileError] whose Err says why without a
// package prefix. Whatever the header claims, Read's buffer for the data is
// at most about max(1 MiB, twice the bytes it actually receives), and the
// header it reads at most 1 MiB.
package npy
