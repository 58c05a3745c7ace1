//go:build !purego

package linalg

import "golang.org/x/sys/cpu"

// dualDot returns sum a_t b_t and sum (da_t b_t + a_t db_t) over slices of
// equal length (the value and the derivative of an inner product): one row
// of dualBatchAVX2 where the CPU has AVX2 and FMA, else in Go. The
// assembly reads len(a) entries of every slice, unchecked: the callers
// (the band kernels of this package) pass slices of equal length.
func dualDot(a, da, b, db []float64) (s, ds float64) {
	if !haveFMA {
		return dualDotGo(a, da, b, db)
	}
	var out, dout [1]float64
	dualBatchAVX2(a, da, b, db, 0, 0, len(a), 0, out[:], dout[:])
	return out[0], dout[0]
}

// haveFMA reports whether the CPU has AVX2 and FMA.
var haveFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 is [dotGo] in AVX2 assembly; it reads len(a) entries of b.
//
//go:noescape
func dotAVX2(a, b []float64) float64

// axpyDotAVX2 is [axpyDotGo] in AVX2 assembly; it reads and writes len(x)
// entries of y and reads len(x) of z.
//
//go:noescape
func axpyDotAVX2(alpha float64, x, y, z []float64) float64

var (
	dot     = dotGo
	axpyDot = axpyDotGo
)

func init() {
	if haveFMA {
		dot, axpyDot = dotAVX2, axpyDotAVX2
	}
}

// dualBatchAVX2 is [dualBatchGo] in AVX2 assembly, without its checks.
//
//go:noescape
func dualBatchAVX2(a, da, b, db []float64, aStride, bStride, length, dlen int, out, dout []float64)

func init() {
	if haveFMA {
		dualBatchImpl = dualBatchAVX2
	}
}

// dualBlocksAVX2 is [dualBlocksGo] in AVX2 assembly for the len(out)/4
// whole blocks of four rows, without its checks.
//
//go:noescape
func dualBlocksAVX2(a, da, b, db []float64, aStride, step, length int, out, dout []float64)

// dualBlocksAsm is [dualBlocks] without its checks: the assembly for the
// whole blocks, then [dualDot] row by row.
func dualBlocksAsm(a, da, b, db []float64, aStride, step, length int, out, dout []float64) {
	whole := len(out) &^ 3
	dualBlocksAVX2(a, da, b, db, aStride, step, length, out[:whole], dout[:whole])
	for r := whole; r < len(out); r++ {
		o := r / 4 * step
		n, ao := length-o, r*aStride+o
		out[r], dout[r] = dualDot(a[ao:ao+n], da[ao:ao+n], b[o:o+n], db[o:o+n])
	}
}

func init() {
	if haveFMA {
		dualBlocksImpl = dualBlocksAsm
	}
}

// dualRows4AVX2 is [dualRows4Go] in AVX2 assembly, without its checks.
//
//go:noescape
func dualRows4AVX2(a, da, b, db []float64, aStride, bStride, bStep, length, dlen int, out, dout []float64)

func init() {
	if haveFMA {
		dualRows4Impl = dualRows4AVX2
	}
}
