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

// NaN and infinities in any position (first, inside an 8-entry block of the
// assembly, in the Go tail) propagate through Dot32 and AxpyDot32 as IEEE
// arithmetic says, without a panic, and an update beyond float32's range
// gives an infinite entry of y; the result agrees with the Go loops.
func TestDot32NonFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, n := range []int{1, 7, 8, 9, 17, 23} {
		for _, pos := range []int{0, n / 2, n - 1} {
			ones := func() []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = 1
				}
				return v
			}
			a, b := ones(), ones()
			a[pos] = nan
			assert.True(t, math.IsNaN(Dot32(a, b)), "n = %d, NaN at %d", n, pos)
			a[pos] = inf
			assert.Equal(t, math.Inf(1), Dot32(a, b), "n = %d, +Inf at %d", n, pos)
			b[pos] = 0
			assert.True(t, math.IsNaN(Dot32(a, b)), "n = %d, Inf * 0 at %d", n, pos)

			x, y, z := ones(), ones(), ones()
			x[pos] = nan
			assert.True(t, math.IsNaN(AxpyDot32(1, x, y, z)), "n = %d, NaN at %d", n, pos)
			assert.True(t, math.IsNaN(float64(y[pos])), "n = %d, NaN at %d", n, pos)
			x, y = ones(), ones()
			x[pos] = inf
			assert.Equal(t, math.Inf(-1), AxpyDot32(-2, x, y, z), "n = %d, -Inf at %d", n, pos)
			assert.Equal(t, float32(math.Inf(-1)), y[pos])
			// 1 + 2^100 * 2^100 is beyond float32: y becomes +Inf.
			x, y = ones(), ones()
			x[pos] = 0x1p100
			assert.Equal(t, math.Inf(1), AxpyDot32(0x1p100, x, y, z), "n = %d, overflow at %d", n, pos)
			assert.Equal(t, inf, y[pos])
			y2 := ones()
			assert.Equal(t, axpyDot32Go(0x1p100, x, y2, z), math.Inf(1))
			assert.Equal(t, y, y2)
		}
	}
}

// dualBatch (assembly where the CPU has it) against dualDotGo row by row,
// for the shapes of the band kernels (constant length with a row stride,
// lengths falling by one with the second vector sliding) and others; bad
// shapes panic.
func TestDualBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	fill := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	for _, c := range []struct{ rows, aStride, bStride, length, dlen int }{
		{0, 3, 0, 5, 0}, {1, 0, 0, 0, 0}, {7, 10, 0, 9, 0}, {64, 128, 0, 64, 0},
		{63, 65, 1, 63, -1}, {12, 5, 2, 3, 1}, {5, 0, 0, 17, 0},
	} {
		na := c.length + c.rows*(c.aStride+max(c.dlen, 0)) + 1
		nb := c.length + c.rows*(c.bStride+max(c.dlen, 0)) + 1
		a, da, b, db := fill(na), fill(na), fill(nb), fill(nb)
		out, dout := make([]float64, c.rows), make([]float64, c.rows)
		dualBatch(a, da, b, db, c.aStride, c.bStride, c.length, c.dlen, out, dout)
		for r := 0; r < c.rows; r++ {
			n := c.length + r*c.dlen
			ao, bo := r*c.aStride, r*c.bStride
			s, ds := dualDotGo(a[ao:ao+n], da[ao:ao+n], b[bo:bo+n], db[bo:bo+n])
			assert.InDelta(t, s, out[r], 1e-13*(1+math.Abs(s)), "%+v row %d", c, r)
			assert.InDelta(t, ds, dout[r], 1e-13*(1+math.Abs(ds)), "%+v row %d", c, r)
		}
	}
	v := make([]float64, 10)
	o := make([]float64, 3)
	assert.Panics(t, func() { dualBatch(v, v, v, v, 4, 0, 3, 0, o, o) })  // a's last row ends at 11
	assert.Panics(t, func() { dualBatch(v, v, v, v, 0, 0, 1, -1, o, o) }) // last length -1
	assert.Panics(t, func() { dualBatch(v, v, v, v, 0, 0, 2, 0, o, o[:2]) })
}
