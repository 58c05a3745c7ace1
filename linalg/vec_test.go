package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dot and AxpyDot (assembly where the CPU has it) against sums formed in
// Go in another order, for every length up to 70 (all the loop tails) and
// a long one; they differ by rounding only. Short second arguments panic.
func TestDotAndAxpyDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range append(seq(71), 1000, 4099) {
		a, b, z := make([]float64, n), make([]float64, n+3), make([]float64, n+1)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		want, abs := 0.0, 0.0
		for i := n - 1; i >= 0; i-- {
			a[i] = rng.NormFloat64()
			want += a[i] * b[i]
			abs += math.Abs(a[i] * b[i])
		}
		assert.InDelta(t, want, Dot(a, b), 1e-14*(abs+1), "n = %d", n)
		// y = b + 0.5 a, then z . y; entries of b and z past n untouched.
		y := append([]float64(nil), b...)
		wantY := make([]float64, n)
		want, abs = 0, 0
		for i := n - 1; i >= 0; i-- {
			wantY[i] = b[i] + 0.5*a[i]
			want += z[i] * wantY[i]
			abs += math.Abs(z[i] * wantY[i])
		}
		got := AxpyDot(0.5, a, y, z)
		assert.InDelta(t, want, got, 1e-14*(abs+1), "n = %d", n)
		for i := 0; i < n; i++ {
			require.InDelta(t, wantY[i], y[i], 1e-15*(math.Abs(wantY[i])+1))
		}
		assert.Equal(t, b[n:], y[n:])
	}
	assert.Panics(t, func() { Dot([]float64{1, 2, 3}, []float64{1, 2}) })
	assert.Panics(t, func() { AxpyDot(1, []float64{1, 2, 3}, []float64{1, 2, 3}, []float64{1, 2}) })
	assert.Panics(t, func() { AxpyDot(1, []float64{1, 2, 3}, []float64{1, 2}, []float64{1, 2, 3}) })
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func ExampleAxpyDot() {
	x := []float64{1, 2, 3}
	y := []float64{1, 1, 1}
	z := []float64{1, 0, 1}
	// y becomes y + 2 x = (3, 5, 7); z . y = 3 + 7.
	fmt.Println(AxpyDot(2, x, y, z), y, Dot(x, z))
	// Output: 10 [3 5 7] 4
}
