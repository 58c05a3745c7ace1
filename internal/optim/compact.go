package optim

import (
	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// compactBlock is the number of entries that the kernels of the compact
// direction ([Memory32.Direction]) take at a time within a chunk, so that
// the block of the vector they multiply stays in the first-level cache
// while each pair streams through once.
const compactBlock = 1024

// dot4x64Impl, dot4x32Impl and axpy4Impl are [dot4] and [axpy4] as
// dispatched: the Go loops, or assembly where the CPU has AVX2 and FMA
// (compact_amd64.go).
var (
	dot4x64Impl = dot4[float64]
	dot4x32Impl = dot4[float32]
	axpy4Impl   = axpy4
)

// multiDot adds to acc[t], for t < len(vs), the inner product of vs[t]
// and g over the len(g) entries of g (float64 products and sums): the
// pairs by groups of four, each group one pass over g by d4 ([dot4] as
// dispatched), the rest by [dot1]. Every vs[t] must
// have at least len(g) entries.
func multiDot[T float32 | float64](acc []float64, g []T, vs [][]float32, d4 func(g []T, a, b, c, d []float32) (float64, float64, float64, float64)) {
	acc = acc[:len(vs)]
	t := 0
	for ; t+4 <= len(vs); t += 4 {
		s0, s1, s2, s3 := d4(g, vs[t], vs[t+1], vs[t+2], vs[t+3])
		acc[t] += s0
		acc[t+1] += s1
		acc[t+2] += s2
		acc[t+3] += s3
	}
	for ; t < len(vs); t++ {
		acc[t] += dot1(g, vs[t])
	}
}

// dot4 returns the inner products of a, b, c and d with g over the
// len(g) entries of g, in float64, two entries per step with one
// accumulator per vector and parity.
func dot4[T float32 | float64](g []T, a, b, c, d []float32) (float64, float64, float64, float64) {
	n := len(g)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	var a0, a1, b0, b1, c0, c1, d0, d1 float64
	i := 0
	for ; i+1 < n; i += 2 {
		x0, x1 := float64(g[i]), float64(g[i+1])
		a0 += float64(a[i]) * x0
		a1 += float64(a[i+1]) * x1
		b0 += float64(b[i]) * x0
		b1 += float64(b[i+1]) * x1
		c0 += float64(c[i]) * x0
		c1 += float64(c[i+1]) * x1
		d0 += float64(d[i]) * x0
		d1 += float64(d[i+1]) * x1
	}
	if i < n {
		x := float64(g[i])
		a0 += float64(a[i]) * x
		b0 += float64(b[i]) * x
		c0 += float64(c[i]) * x
		d0 += float64(d[i]) * x
	}
	return a0 + a1, b0 + b1, c0 + c1, d0 + d1
}

// dot1 is [dot4] for one vector.
func dot1[T float32 | float64](g []T, a []float32) float64 {
	n := len(g)
	a = a[:n]
	var s0, s1 float64
	i := 0
	for ; i+1 < n; i += 2 {
		s0 += float64(a[i]) * float64(g[i])
		s1 += float64(a[i+1]) * float64(g[i+1])
	}
	if i < n {
		s0 += float64(a[i]) * float64(g[i])
	}
	return s0 + s1
}

// multiAxpy sets dst[i] = src[i] + sum_t c[t] vs[t][i] for i < len(dst),
// in float64, the terms added in order of t: the pairs by groups of four,
// the first group reading src and each later one dst, each group by
// [axpy4] as dispatched and the rest by [axpy1]. src may be dst;
// src and every vs[t] must have at least len(dst) entries.
func multiAxpy(dst, src []float64, c []float64, vs [][]float32) {
	c = c[:len(vs)]
	t := 0
	for ; t+4 <= len(vs); t += 4 {
		axpy4Impl(dst, src, c[t], c[t+1], c[t+2], c[t+3], vs[t], vs[t+1], vs[t+2], vs[t+3])
		src = dst
	}
	for ; t < len(vs); t++ {
		axpy1(dst, src, c[t], vs[t])
		src = dst
	}
	if len(vs) == 0 {
		copy(dst, src)
	}
}

// axpy4 sets dst[i] = (((src[i] + ca a[i]) + cb b[i]) + cc c[i]) + cd d[i].
func axpy4(dst, src []float64, ca, cb, cc, cd float64, a, b, c, d []float32) {
	n := len(dst)
	src, a, b, c, d = src[:n], a[:n], b[:n], c[:n], d[:n]
	for i := range dst {
		dst[i] = src[i] + ca*float64(a[i]) + cb*float64(b[i]) + cc*float64(c[i]) + cd*float64(d[i])
	}
}

// axpy1 sets dst[i] = src[i] + ca a[i].
func axpy1(dst, src []float64, ca float64, a []float32) {
	n := len(dst)
	src, a = src[:n], a[:n]
	for i := range dst {
		dst[i] = src[i] + ca*float64(a[i])
	}
}

// chunkDots sets out[t] (t < len(vs)) to the inner product of vs[t] and
// g and, when y is not nil, out[len(vs)+t] (t < ny) to that of vs[t] and
// y, over the len(g) entries of g (d4 is [dot4] as dispatched for T): the sums of fixed chunks of
// [linalg.VectorChunk] entries, added in chunk order, so the same bits on
// any number of cores. Each chunk reads g, y and every vs[t] once, by
// blocks of [compactBlock] entries. part is scratch, grown as needed.
func chunkDots[T float32 | float64](out []float64, g []T, d4 func(g []T, a, b, c, d []float32) (float64, float64, float64, float64), y []float32, ny int, vs [][]float32, part *[]float64) {
	n := len(g)
	k := len(vs)
	w := k
	if y != nil {
		w += ny
	}
	out = out[:w]
	chunks := (n + linalg.VectorChunk - 1) / linalg.VectorChunk
	if cap(*part) < w*chunks {
		*part = make([]float64, w*chunks)
	}
	p := (*part)[:w*chunks]
	clear(p)
	par.For(chunks, float64(n)*float64(w+2)/2, func(c int) {
		lo, hi := c*linalg.VectorChunk, min(n, (c+1)*linalg.VectorChunk)
		acc := p[c*w : c*w+w]
		sub := pairBlocks(k)
		for b := lo; b < hi; b += compactBlock {
			e := min(hi, b+compactBlock)
			for t, v := range vs {
				sub[t] = v[b:e]
			}
			multiDot(acc[:k], g[b:e], sub, d4)
			if y != nil {
				multiDot(acc[k:w], y[b:e], sub[:ny], dot4x32Impl)
			}
		}
	})
	clear(out)
	for c := 0; c < chunks; c++ {
		for t, v := range p[c*w : c*w+w] {
			out[t] += v
		}
	}
}

// chunkAxpy is [multiAxpy] over the whole of dst by fixed chunks of
// [linalg.VectorChunk] entries and, within them, blocks of [compactBlock]
// entries, on as many cores as the length pays for (every entry is
// computed by the same operations whatever the chunking).
func chunkAxpy(dst, src []float64, c []float64, vs [][]float32) {
	n := len(dst)
	k := len(vs)
	par.Range(n, linalg.VectorChunk, float64(k+4)/2, func(lo, hi int) {
		sub := pairBlocks(k)
		for b := lo; b < hi; b += compactBlock {
			e := min(hi, b+compactBlock)
			for t, v := range vs {
				sub[t] = v[b:e]
			}
			multiAxpy(dst[b:e], src[b:e], c, sub)
		}
	})
}

// pairBlocks returns a slice of k vectors for the blocks of the pairs,
// on the stack for the usual memories.
func pairBlocks(k int) [][]float32 {
	if k <= 16 {
		var blk [16][]float32
		return blk[:k]
	}
	return make([][]float32, k)
}
