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

// dualBlocks (assembly for whole blocks of four rows where the CPU has
// it) against the two sums formed in Go for each row, for every length
// up to 13 (all the chunk tails), row counts that leave 0 to 3 rows after
// the blocks, and the steps of the band kernels; the entries past every
// extent are NaN, so a read beyond one shows. Bad shapes panic.
func TestDualBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, rows := range []int{0, 1, 3, 4, 5, 8, 11, 16} {
		for _, step := range []int{0, 1, 4} {
			for length := (rows - 1) / 4 * step; length <= 13+(rows-1)/4*step; length++ {
				if length < 0 {
					continue
				}
				aStride := length + 2
				na := max(0, (rows-1)*aStride+length)
				a, da := make([]float64, na+4), make([]float64, na+4)
				b, db := make([]float64, length+4), make([]float64, length+4)
				for _, v := range [][]float64{a, da, b, db} {
					for i := range v {
						v[i] = rng.NormFloat64()
					}
					for i := len(v) - 4; i < len(v); i++ {
						v[i] = math.NaN()
					}
				}
				a, da, b, db = a[:na], da[:na], b[:length], db[:length]
				out, dout := make([]float64, rows), make([]float64, rows)
				dualBlocks(a, da, b, db, aStride, step, length, out, dout)
				for r := 0; r < rows; r++ {
					o := r / 4 * step
					var s, ds, abs, dabs float64
					for t := o; t < length; t++ {
						x, dx := a[r*aStride+t], da[r*aStride+t]
						s += x * b[t]
						ds += dx*b[t] + x*db[t]
						abs += math.Abs(x * b[t])
						dabs += math.Abs(dx*b[t]) + math.Abs(x*db[t])
					}
					assert.InDelta(t, s, out[r], 1e-14*(1+abs), "rows %d step %d length %d row %d", rows, step, length, r)
					assert.InDelta(t, ds, dout[r], 1e-14*(1+dabs), "rows %d step %d length %d row %d", rows, step, length, r)
				}
			}
		}
	}
	v := make([]float64, 10)
	o := make([]float64, 5)
	assert.Panics(t, func() { dualBlocks(v, v, v, v, 4, 0, 3, o[:3], o) }) // a's last row ends at 11
	assert.Panics(t, func() { dualBlocks(v, v, v, v, 1, 2, 1, o, o) })     // the second block's length is -1
	assert.Panics(t, func() { dualBlocks(v, v, v, v, 0, 0, 2, o, o[:2]) })
	assert.Panics(t, func() { dualBlocks(v, v, v[:1], v, 0, 0, 2, o, o) })
}

// dualRows4 (assembly where the CPU has it) against the two sums formed
// in Go for each row and vector, for every length up to 13 (all the chunk
// tails), lengths falling and rising from row to row, the shapes of the
// band kernels (vectors fixed or sliding with the row); the entries past
// every extent are NaN, so a read beyond one shows. Bad shapes panic.
func TestDualRows4(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, rows := range []int{0, 1, 2, 5} {
		for _, c := range []struct{ bStep, dlen int }{{0, 0}, {1, -1}, {3, 1}} {
			for length := max(0, -(rows-1)*c.dlen); length <= 13+max(0, -(rows-1)*c.dlen); length++ {
				maxLen := max(length, length+(rows-1)*c.dlen)
				aStride, bStride := maxLen+1, maxLen+3
				na := max(0, (rows-1)*aStride+maxLen)
				nb := 3*bStride + max(0, (rows-1)*c.bStep) + maxLen
				a, da := make([]float64, na+4), make([]float64, na+4)
				b, db := make([]float64, nb+4), make([]float64, nb+4)
				for _, v := range [][]float64{a, da, b, db} {
					for i := range v {
						v[i] = rng.NormFloat64()
					}
					for i := len(v) - 4; i < len(v); i++ {
						v[i] = math.NaN()
					}
				}
				a, da, b, db = a[:na], da[:na], b[:nb], db[:nb]
				out, dout := make([]float64, 4*rows), make([]float64, 4*rows)
				dualRows4(a, da, b, db, aStride, bStride, c.bStep, length, c.dlen, out, dout)
				for r := 0; r < rows; r++ {
					for s := 0; s < 4; s++ {
						var v, dv, abs, dabs float64
						for t := 0; t < length+r*c.dlen; t++ {
							x, dx := a[r*aStride+t], da[r*aStride+t]
							y, dy := b[r*c.bStep+s*bStride+t], db[r*c.bStep+s*bStride+t]
							v += x * y
							dv += dx*y + x*dy
							abs += math.Abs(x * y)
							dabs += math.Abs(dx*y) + math.Abs(x*dy)
						}
						msg := fmt.Sprintf("rows %d %+v length %d row %d vector %d", rows, c, length, r, s)
						assert.InDelta(t, v, out[4*r+s], 1e-14*(1+abs), msg)
						assert.InDelta(t, dv, dout[4*r+s], 1e-14*(1+dabs), msg)
					}
				}
			}
		}
	}
	v := make([]float64, 10)
	o := make([]float64, 8)
	assert.Panics(t, func() { dualRows4(v, v, v, v, 8, 0, 0, 3, 0, o, o) })         // a's second row ends at 11
	assert.Panics(t, func() { dualRows4(v, v, v, v, 0, 0, 0, 0, -1, o, o) })        // the second row's length is -1
	assert.Panics(t, func() { dualRows4(v, v, v, v, 0, 0, 0, 2, 0, o[:6], o[:6]) }) // not a multiple of 4
	assert.Panics(t, func() { dualRows4(v, v, v, v, 0, 3, 0, 2, 0, o[:4], o[:4]) }) // b's fourth vector ends at 11
}
