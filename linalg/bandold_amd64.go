//go:build bandkold && !purego

// The assembly of the band kernel before the blocks of four (one row of
// inner products at a time), for BenchmarkBandKernelOldNew (-tags
// bandkold).

package linalg

// oldDualBatchAVX2 is the former dualBatchAVX2.
//
//go:noescape
func oldDualBatchAVX2(a, da, b, db []float64, aStride, bStride, length, dlen int, out, dout []float64)

// oldDualBatch is the former dualBatch (on a CPU with AVX2 and FMA).
func oldDualBatch(a, da, b, db []float64, aStride, bStride, length, dlen int, out, dout []float64) {
	oldDualBatchAVX2(a, da, b, db, aStride, bStride, length, dlen, out, dout)
}

// negateRows (former) negates the entries (i, j) of the full rows of z2r (order n,
// k off-diagonals) with i in [i0, i1), j in [j0, j1) and |i - j| <= k:
// M^{-2} = -dZ/dsigma.
func negateRows(z2r []float64, n, k, i0, i1, j0, j1 int) {
	wr := 2*k + 1
	for i := i0; i < i1; i++ {
		lo, hi := max(i-k, j0, 0), min(i+k, j1-1, n-1)
		row := z2r[i*wr+k+lo-i : i*wr+k+hi-i+1]
		for t := range row {
			row[t] = -row[t]
		}
	}
}
