//go:build amd64 && !purego && !noasm

package mechanism

// asmKernels reports whether the guard's noise is computed with the
// arithmetic it was recorded with: amd64, with linalg's AVX2 kernels
// (not -tags purego), gonum's assembly kernels (not -tags noasm) and Go's
// amd64 math.Exp.
const asmKernels = true
