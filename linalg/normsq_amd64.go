//go:build !purego

package linalg

// decayRowAVX is decayRowGo in AVX assembly, with the same bits (every
// product and sum rounded on its own); it reads len(w) entries of g and a.
//
//go:noescape
func decayRowAVX(w, g, a []float64, gr, ar float64)

// transformRowAVX is transformRowGo in AVX assembly, with the same bits;
// it reads len(w) entries of every other slice.
//
//go:noescape
func transformRowAVX(w, delta, za, zb, wy1, wy2, x []float64, c *[8]float64)

func init() {
	if haveFMA {
		decayRow, transformRow = decayRowAVX, transformRowAVX
	}
}
