//go:build !purego

package linalg

// subDot4AVX2 is the four-row accumulation of [QuasiSep.SolveStep] in
// AVX2 assembly; it reads len(x) entries of every h.
//
//go:noescape
func subDot4AVX2(x, h0, h1, h2, h3 []float64, p *[4]float64)

// updateAVX2 is the state update of [QuasiSep.SolveStep] in AVX2
// assembly; it reads len(h) entries of x.
//
//go:noescape
func updateAVX2(h, x []float64, a, q float64)

// accScale4AVX2 is the four-term step of [QuasiSep.Dense] in AVX2
// assembly; it reads and writes len(out) entries of every f.
//
//go:noescape
func accScale4AVX2(out, f0, f1, f2, f3 []float64, p, a *[4]float64)

// update4AVX2 is four state updates of [QuasiSep.SolveStep] in one pass
// over x, in AVX2 assembly; each entry is computed as updateAVX2 computes
// it. It reads len(x) entries of every h.
//
//go:noescape
func update4AVX2(h0, h1, h2, h3, x []float64, a, q *[4]float64)

func init() {
	if haveFMA {
		subDot4, update, update4, accScale4 = subDot4AVX2, updateAVX2, update4AVX2, accScale4AVX2
	}
}
