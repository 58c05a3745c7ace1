package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dot (assembly where the CPU has it) against sums formed in Go in
// another order, for every length up to 70 (all the loop tails) and long
// ones, below and above LongVector (summed by chunks on all cores); they
// differ by rounding only. A short second argument panics.
func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range append(seq(71), 1000, 4099, LongVector-1, LongVector+3*VectorChunk+17) {
		a, b := make([]float64, n), make([]float64, n+3)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		want, abs := 0.0, 0.0
		for i := n - 1; i >= 0; i-- {
			a[i] = rng.NormFloat64()
			want += a[i] * b[i]
			abs += math.Abs(a[i] * b[i])
		}
		assert.InDelta(t, want, Dot(a, b), 1e-14*(abs+1), "n = %d", n)
	}
	assert.Panics(t, func() { Dot([]float64{1, 2, 3}, []float64{1, 2}) })
}

// Dot32 and AxpyDot32 (assembly where the CPU has it) against float64
// sums of the same products formed in Go in another order, for every
// length up to 70 and long ones, below and above LongVector. The update of
// y is float32(y + alpha x) exactly or, with a fused multiply-add, one
// unit in the last place away. Short arguments panic.
func TestDot32AndAxpyDot32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range append(seq(71), 1000, LongVector-1, LongVector+3*VectorChunk+17) {
		a, b, y := make([]float32, n), make([]float32, n+3), make([]float32, n+2)
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		for i := range y {
			y[i] = float32(rng.NormFloat64())
		}
		want, abs := 0.0, 0.0
		for i := n - 1; i >= 0; i-- {
			a[i] = float32(rng.NormFloat64())
			want += float64(a[i]) * float64(b[i])
			abs += math.Abs(float64(a[i]) * float64(b[i]))
		}
		assert.InDelta(t, want, Dot32(a, b), 1e-14*(abs+1), "n = %d", n)
		const alpha = -0.37
		tail := append([]float32(nil), y[n:]...)
		wantY := make([]float32, n)
		want, abs = 0, 0
		for i := n - 1; i >= 0; i-- {
			wantY[i] = float32(float64(y[i]) + alpha*float64(a[i]))
			want += float64(b[i]) * float64(wantY[i])
			abs += math.Abs(float64(b[i]) * float64(wantY[i]))
		}
		got := AxpyDot32(alpha, a, y, b)
		for i := 0; i < n; i++ {
			require.InDelta(t, wantY[i], y[i], 1.2e-7*math.Abs(float64(wantY[i]))+1e-45, "n = %d, i = %d", n, i)
		}
		assert.InDelta(t, want, got, 1.2e-7*abs+1e-14, "n = %d", n)
		assert.Equal(t, tail, y[n:])
	}
	assert.Panics(t, func() { Dot32([]float32{1, 2, 3}, []float32{1, 2}) })
	assert.Panics(t, func() { AxpyDot32(1, []float32{1, 2, 3}, []float32{1, 2, 3}, []float32{1, 2}) })
	assert.Panics(t, func() { AxpyDot32(1, []float32{1, 2, 3}, []float32{1, 2}, []float32{1, 2, 3}) })
}

// From LongVector entries on, Dot, Dot32 and AxpyDot32 give the same bits
// on one core as on two.
func TestDotCores(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	n := LongVector + 5*VectorChunk + 3
	a, b := make([]float64, n), make([]float64, n)
	a32, b32, z32 := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = rng.NormFloat64(), rng.NormFloat64()
		a32[i], b32[i], z32[i] = float32(a[i]), float32(b[i]), float32(rng.NormFloat64())
	}
	type res struct {
		d, d32, ad32 float64
		y            []float32
	}
	run := func(procs int) res {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		y := append([]float32(nil), b32...)
		return res{Dot(a, b), Dot32(a32, b32), AxpyDot32(0.25, a32, y, z32), y}
	}
	assert.Equal(t, run(1), run(2))
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func ExampleAxpyDot32() {
	x := []float32{1, 2, 3}
	y := []float32{1, 1, 1}
	z := []float32{1, 0, 1}
	// y becomes y + 2 x = (3, 5, 7); z . y = 3 + 7.
	fmt.Println(AxpyDot32(2, x, y, z), y, Dot32(x, z))
	// Output: 10 [3 5 7] 4
}
