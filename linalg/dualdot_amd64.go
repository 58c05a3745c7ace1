//go:build !purego

package linalg

import "golang.org/x/sys/cpu"

// haveFMA reports whether the CPU has AVX2 and FMA.
var haveFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 is [dotGo] in AVX2 assembly; it reads len(a) entries of b.
//
//go:noescape
func dotAVX2(a, b []float64) float64

// dualDotAVX2 is [dualDotGo] in AVX2 assembly; it reads len(a) entries
// of every slice.
//
//go:noescape
func dualDotAVX2(a, da, b, db []float64) (s, ds float64)

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

// dualRows4AVX2 is [dualRows4Go] in AVX2 assembly, without its checks.
//
//go:noescape
func dualRows4AVX2(a, da, b, db []float64, aStride, bStride, bStep, length, dlen int, out, dout []float64)

// The assembly where the CPU has AVX2 and FMA, else the Go loops.
func init() {
	if haveFMA {
		dot, dualDotImpl, dualBlocksImpl, dualRows4Impl = dotAVX2, dualDotAVX2, dualBlocksAsm, dualRows4AVX2
	}
}
