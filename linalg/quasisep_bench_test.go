package linalg

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkQuasiSepRecursions times the O(n K^2) recursions at n = 10^4
// and K = 48 (the optimal factor's order at R = 10^4): the reverse
// Cholesky factor, C's column norms, and B's column and row norms for
// the prefix-sum workload (the exact metrics of the structured optimum;
// two recursions, on two goroutines where GOMAXPROCS allows).
func BenchmarkQuasiSepRecursions(b *testing.B) {
	const n, k = 10000, 48
	// X of the optimal factor's shape (shiftedInverseSum).
	x, _, _, _ := shiftedInverseSum(rand.New(rand.NewPCG(5, 6)), n, k)
	c, err := x.ReverseCholesky()
	if err != nil {
		b.Fatal(err)
	}
	ldiag, lsub := make([]float64, n), make([]float64, n)
	for i := range ldiag {
		ldiag[i], lsub[i] = 1, -1
	}
	colSq, rowSq := make([]float64, n), make([]float64, n)
	b.Run("ReverseCholesky", func(b *testing.B) {
		for b.Loop() {
			if _, err := x.ReverseCholesky(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ColNormsSq", func(b *testing.B) {
		for b.Loop() {
			c.ColNormsSq(colSq)
		}
	})
	b.Run("BidiagSolveNormsSq", func(b *testing.B) {
		for b.Loop() {
			c.BidiagSolveNormsSq(ldiag, lsub, colSq, rowSq)
		}
	})
}
