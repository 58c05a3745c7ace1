//go:build !amd64 || purego

package mechanism

// asmKernels reports whether linalg's AVX2 kernels are built in: the guard
// was recorded with them.
const asmKernels = false
