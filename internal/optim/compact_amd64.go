//go:build !purego

package optim

import "golang.org/x/sys/cpu"

// dot4x64AVX2 is [dot4] for a float64 g over the first len(g) &^ 7
// entries, in AVX2 assembly with fused multiply-adds; it reads that many
// entries of a, b, c and d.
//
//go:noescape
func dot4x64AVX2(g []float64, a, b, c, d []float32) (s0, s1, s2, s3 float64)

// dot4x32AVX2 is dot4x64AVX2 for a float32 g.
//
//go:noescape
func dot4x32AVX2(g []float32, a, b, c, d []float32) (s0, s1, s2, s3 float64)

// axpy4AVX2 is [axpy4] over the first len(dst) &^ 7 entries, in AVX2
// assembly, each term added by a fused multiply-add; it reads that many
// entries of src, a, b, c and d.
//
//go:noescape
func axpy4AVX2(dst, src []float64, ca, cb, cc, cd float64, a, b, c, d []float32)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		dot4x64Impl = dot4Asm(dot4x64AVX2)
		dot4x32Impl = dot4Asm(dot4x32AVX2)
		axpy4Impl = func(dst, src []float64, ca, cb, cc, cd float64, a, b, c, d []float32) {
			n := len(dst) &^ 7
			m := len(dst)
			src, a, b, c, d = src[:m], a[:m], b[:m], c[:m], d[:m]
			axpy4AVX2(dst[:n], src[:n], ca, cb, cc, cd, a[:n], b[:n], c[:n], d[:n])
			axpy4(dst[n:], src[n:], ca, cb, cc, cd, a[n:], b[n:], c[n:], d[n:])
		}
	}
}

// dot4Asm returns [dot4] by the assembly f for the whole blocks of eight
// entries and the Go loop for the rest, the two sums added.
func dot4Asm[T float32 | float64](f func(g []T, a, b, c, d []float32) (float64, float64, float64, float64)) func(g []T, a, b, c, d []float32) (float64, float64, float64, float64) {
	return func(g []T, a, b, c, d []float32) (float64, float64, float64, float64) {
		m := len(g)
		a, b, c, d = a[:m], b[:m], c[:m], d[:m]
		n := m &^ 7
		s0, s1, s2, s3 := f(g[:n], a[:n], b[:n], c[:n], d[:n])
		t0, t1, t2, t3 := dot4(g[n:], a[n:], b[n:], c[n:], d[n:])
		return s0 + t0, s1 + t1, s2 + t2, s3 + t3
	}
}
