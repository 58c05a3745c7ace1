package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// benchQuasiSep returns the generators of X = sum_t w_t (T + s_t I)^{-1} + I
// of order k (as randomQuasiSepSPD, without the dense matrix), the shape
// of the optimal X at n = 10^4 (k = 48).
func benchQuasiSep(n, k int) QuasiSep {
	rng := rand.New(rand.NewPCG(5, 6))
	b := BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
	for i := range b.Diag {
		b.Diag[i] = 0.5 + rng.Float64()
		b.Sub[i] = -(0.5 + rng.Float64())
	}
	x := NewQuasiSep(n, k)
	diag, rho := make([]float64, n), make([]float64, n)
	for s := 0; s < k; s++ {
		sigma := math.Pow(10, 3*rng.Float64()-2)
		w := 0.1 + rng.Float64()
		b.ShiftedInverseGen(sigma, diag, rho)
		for i := 0; i < n; i++ {
			x.P[i*k+s] = rho[i]
			x.A[i*k+s] = rho[i]
			x.Q[i*k+s] = w * diag[i]
			x.Diag[i] += w * diag[i]
		}
	}
	for i := range x.Diag {
		x.Diag[i]++
	}
	return x
}

// BenchmarkQuasiSepRecursions times the O(n K^2) recursions at n = 10^4
// and K = 48 (the optimal factor's order at R = 10^4): the reverse
// Cholesky factor, C's column norms, and B's column and row norms for
// the prefix-sum workload (the exact metrics of the structured optimum;
// two recursions, on two goroutines where GOMAXPROCS allows).
func BenchmarkQuasiSepRecursions(b *testing.B) {
	const n, k = 10000, 48
	x := benchQuasiSep(n, k)
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
