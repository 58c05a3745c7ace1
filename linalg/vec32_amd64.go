//go:build !purego

package linalg

// dot32AVX2 is the inner product of [dot32] over the first len(a) &^ 7
// entries, in AVX2 assembly; it reads that many entries of b.
//
//go:noescape
func dot32AVX2(a, b []float32) float64

// axpyDot32AVX2 is the update and inner product of [axpyDot32] over the
// first len(x) &^ 7 entries, in AVX2 assembly with fused multiply-adds;
// it reads and writes that many entries of y and reads as many of z.
//
//go:noescape
func axpyDot32AVX2(alpha float64, x, y, z []float32) float64

func init() {
	if haveFMA {
		dot32Impl = func(a, b []float32) float64 {
			n := len(a) &^ 7
			return dot32AVX2(a, b) + dot32Go(a[n:], b[n:len(a)])
		}
		axpyDot32Impl = func(alpha float64, x, y, z []float32) float64 {
			n := len(x) &^ 7
			return axpyDot32AVX2(alpha, x, y, z) + axpyDot32Go(alpha, x[n:], y[n:len(x)], z[n:len(x)])
		}
	}
}
