package par

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Workers is min(GOMAXPROCS, chunks, work / Grain), at least 1, for
// every GOMAXPROCS from 1 to 16 (worked by hand below).
func TestWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8, 16} {
		runtime.GOMAXPROCS(procs)
		cases := []struct {
			chunks int
			work   float64
			want   int
		}{
			{0, 0, 1},
			{40, 0, 1},
			{40, Grain - 1, 1},
			{40, 2*Grain - 1, 1},
			{40, 2 * Grain, min(procs, 2)},
			{40, 5.5 * Grain, min(procs, 5)},
			{40, 1e12, min(procs, 40)},
			{3, 1e12, min(procs, 3)},
			{40, -1, 1},
			{40, math.NaN(), 1},
			{40, math.Inf(1), min(procs, 40)},
		}
		for _, c := range cases {
			assert.Equal(t, c.want, Workers(c.chunks, c.work), "GOMAXPROCS %d, %d chunks, work %g", procs, c.chunks, c.work)
		}
	}
}

// For calls every chunk exactly once, for small and large work and any
// GOMAXPROCS; below the grain it runs them in order on the caller.
func TestForEveryChunkOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 16} {
		runtime.GOMAXPROCS(procs)
		for _, chunks := range []int{0, 1, 7, 100} {
			for _, work := range []float64{0, 1e9} {
				hits := make([]atomic.Int32, chunks)
				For(chunks, work, func(c int) { hits[c].Add(1) })
				for c := range hits {
					assert.EqualValues(t, 1, hits[c].Load(), "GOMAXPROCS %d, chunk %d of %d", procs, c, chunks)
				}
			}
		}
		var order []int
		For(5, Grain, func(c int) { order = append(order, c) })
		assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
		var spans [][2]int
		Range(10, 4, 1, func(lo, hi int) { spans = append(spans, [2]int{lo, hi}) })
		assert.Equal(t, [][2]int{{0, 4}, {4, 8}, {8, 10}}, spans)
		var f, g atomic.Int32
		Both(0, func() { f.Add(1) }, func() { g.Add(1) })
		Both(1e9, func() { f.Add(1) }, func() { g.Add(1) })
		assert.EqualValues(t, 2, f.Load())
		assert.EqualValues(t, 2, g.Load())
	}
}
