package linalg

import "github.com/dpmf/dpmf/internal/par"

// Dot returns the inner product of a and b over the len(a) entries of a;
// b must have at least as many (Dot panics otherwise). On amd64 CPUs with
// AVX2 and FMA it runs in assembly (four-lane fused multiply-adds), so the
// result can differ from a loop in Go by rounding. From [LongVector]
// entries on, the sum is that of fixed chunks of [VectorChunk] entries,
// added in order, and the chunks run on as many cores as the length pays
// for ([par.For]): the same bits whatever GOMAXPROCS is.
func Dot(a, b []float64) float64 {
	b = b[:len(a)]
	if len(a) < LongVector {
		return dot(a, b)
	}
	return chunkSum(len(a), 2, func(lo, hi int) float64 { return dot(a[lo:hi], b[lo:hi]) })
}

// LongVector is the length from which [Dot], [Dot32] and [AxpyDot32] sum by chunks
// of VectorChunk entries, on up to GOMAXPROCS cores ([par.For]).
const (
	LongVector  = 1 << 17
	VectorChunk = 1 << 14
)

// chunkSum returns the sum, in chunk order, of f over the chunks [lo, hi)
// of VectorChunk entries of [0, n), run through [par.For] with work
// estimated as perEntry units per entry (the entries each vector streams
// from memory).
func chunkSum(n int, perEntry float64, f func(lo, hi int) float64) float64 {
	chunks := (n + VectorChunk - 1) / VectorChunk
	var buf [64]float64
	part := buf[:0]
	if chunks <= len(buf) {
		part = buf[:chunks]
	} else {
		part = make([]float64, chunks)
	}
	par.For(chunks, perEntry*float64(n), func(c int) {
		part[c] = f(c*VectorChunk, min(n, (c+1)*VectorChunk))
	})
	s := 0.0
	for _, v := range part {
		s += v
	}
	return s
}

// dotGo and dot32Go are [Dot] and [Dot32] in Go.
var (
	dotGo   = dotLoop[float64]
	dot32Go = dotLoop[float32]
)

// dotLoop is the inner product of a and b over the len(a) entries of a
// with four accumulators, each product and the sum in float64 (for
// float64 entries the conversions are no-ops: the same operations as a
// loop on float64 alone).
func dotLoop[T float32 | float64](a, b []T) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+3 < len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dot and dualDotImpl are dotGo and dualDotGo or their assembly.
var (
	dot         = dotGo
	dualDotImpl = dualDotGo
)

// dualDot returns sum a_t b_t and sum (da_t b_t + a_t db_t) over the
// len(a) entries of a (the value and the derivative of an inner product):
// in assembly where the CPU has AVX2 and FMA, else in Go. The other slices
// must have at least as many entries (dualDot panics otherwise).
func dualDot(a, da, b, db []float64) (s, ds float64) {
	n := len(a)
	return dualDotImpl(a, da[:n], b[:n], db[:n])
}

// dualBlocksImpl is dualBlocksGo, or the assembly for whole blocks of
// four rows and dualDot for the rows after them.
var dualBlocksImpl = dualBlocksGo

// dualBlocks sets, for r in [0, len(out)), out[r] and dout[r] to the value
// and derivative ([dualDot]) of the inner product of a[r aStride + o:] and
// b[o:] over length - o entries (da and db alike), where o = (r/4) step:
// the rows go in blocks of four that share the same entries of b, so that
// the assembly loads them once for four rows. The band kernels pass
// constant lengths (step 0) or, in the LDL^T factorization, blocks whose
// rows start at the block's first column, with zeros stored before each
// row of a. It panics if an extent leaves a slice or a length is negative
// (the assembly does not check).
func dualBlocks(a, da, b, db []float64, aStride, step, length int, out, dout []float64) {
	rows := len(out)
	if rows == 0 {
		return
	}
	if length < 0 || step < 0 || aStride < 0 || length-(rows-1)/4*step < 0 || len(dout) < rows {
		panic("linalg: dualBlocks: bad shape")
	}
	// Row r ends at r aStride + length in a, every block at length in b.
	aEnd := (rows-1)*aStride + length
	if aEnd > len(a) || aEnd > len(da) || length > len(b) || length > len(db) {
		panic("linalg: dualBlocks: extent out of range")
	}
	dualBlocksImpl(a, da, b, db, aStride, step, length, out, dout[:rows])
}

// dualBlocksGo is [dualBlocks] in Go, without its checks.
func dualBlocksGo(a, da, b, db []float64, aStride, step, length int, out, dout []float64) {
	for r := range out {
		o := r / 4 * step
		n, ao := length-o, r*aStride+o
		out[r], dout[r] = dualDotGo(a[ao:ao+n], da[ao:ao+n], b[o:o+n], db[o:o+n])
	}
}

// dualRows4Impl is dualRows4Go or its assembly.
var dualRows4Impl = dualRows4Go

// dualRows4 sets, for r in [0, len(out)/4) and s in [0, 4),
// out[4r+s] and dout[4r+s] to the value and derivative ([dualDot]) of the
// inner product of a[r aStride:] and b[r bStep + s bStride:] over
// length + r dlen entries (da and db alike): four inner products for each
// row of a, which the assembly loads once for the four (the band kernels
// run four columns of their recurrences at a time this way). It panics if
// len(out) is not a multiple of four, an extent leaves a slice or a
// length is negative (the assembly does not check).
func dualRows4(a, da, b, db []float64, aStride, bStride, bStep, length, dlen int, out, dout []float64) {
	rows := len(out) / 4
	if len(out)%4 != 0 || len(dout) != len(out) {
		panic("linalg: dualRows4: out and dout must have the same length, a multiple of 4")
	}
	if rows == 0 {
		return
	}
	last := rows - 1
	lastLen := length + last*dlen
	if length < 0 || lastLen < 0 || aStride < 0 || bStride < 0 || bStep < 0 {
		panic("linalg: dualRows4: bad shape")
	}
	aEnd := max(length, last*aStride+lastLen)
	bEnd := 3*bStride + max(length, last*bStep+lastLen)
	if aEnd > len(a) || aEnd > len(da) || bEnd > len(b) || bEnd > len(db) {
		panic("linalg: dualRows4: extent out of range")
	}
	dualRows4Impl(a, da, b, db, aStride, bStride, bStep, length, dlen, out, dout)
}

// dualRows4Go is [dualRows4] in Go, without its checks.
func dualRows4Go(a, da, b, db []float64, aStride, bStride, bStep, length, dlen int, out, dout []float64) {
	for r := 0; r < len(out)/4; r++ {
		n, ao := length+r*dlen, r*aStride
		for s := 0; s < 4; s++ {
			bo := r*bStep + s*bStride
			out[4*r+s], dout[4*r+s] = dualDotGo(a[ao:ao+n], da[ao:ao+n], b[bo:bo+n], db[bo:bo+n])
		}
	}
}
