package linalg

// Dot32 returns the inner product of the float32 vectors a and b over the
// len(a) entries of a, each product and the sum in float64; b must have at
// least as many (Dot32 panics otherwise). Assembly where the CPU has AVX2
// and FMA, and from [LongVector] entries on the sum of fixed chunks of
// [VectorChunk] entries, added in order, on as many cores as the length
// pays for, as for [Dot]: the same bits whatever GOMAXPROCS is.
func Dot32(a, b []float32) float64 {
	b = b[:len(a)]
	if len(a) < LongVector {
		return dot32Impl(a, b)
	}
	return chunkSum(len(a), 1, func(lo, hi int) float64 { return dot32Impl(a[lo:hi], b[lo:hi]) })
}

// AxpyDot32 sets y[i] to float32(y[i] + alpha x[i]) (the update in
// float64) for i < len(x) and returns the inner product of z and the
// updated y over those entries in float64, in one pass over memory: the
// step of the L-BFGS two-loop recursion over float32 pairs. y and z must
// have at least len(x) entries (AxpyDot32 panics otherwise). Assembly and
// chunks as for [Dot32].
func AxpyDot32(alpha float64, x, y, z []float32) float64 {
	n := len(x)
	y, z = y[:n], z[:n]
	if n < LongVector {
		return axpyDot32Impl(alpha, x, y, z)
	}
	return chunkSum(n, 1.5, func(lo, hi int) float64 { return axpyDot32Impl(alpha, x[lo:hi], y[lo:hi], z[lo:hi]) })
}

// dot32Impl and axpyDot32Impl are the Go loops or their assembly.
var (
	dot32Impl     = dot32Go
	axpyDot32Impl = axpyDot32Go
)

// axpyDot32Go is [AxpyDot32] in Go, with two accumulators.
func axpyDot32Go(alpha float64, x, y, z []float32) float64 {
	n := len(x)
	y, z = y[:n], z[:n]
	var s0, s1 float64
	i := 0
	for ; i+1 < n; i += 2 {
		y0, y1 := float32(float64(y[i])+alpha*float64(x[i])), float32(float64(y[i+1])+alpha*float64(x[i+1]))
		y[i], y[i+1] = y0, y1
		s0 += float64(z[i]) * float64(y0)
		s1 += float64(z[i+1]) * float64(y1)
	}
	if i < n {
		y[i] = float32(float64(y[i]) + alpha*float64(x[i]))
		s0 += float64(z[i]) * float64(y[i])
	}
	return s0 + s1
}
