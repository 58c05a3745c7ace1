package factorize

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// chunkLen is the number of entries of one chunk of the O(n) loops of the
// structured fixed point. The chunks, not the goroutines, fix the order of
// every sum: a sum over n entries is the sum, in chunk order, of the sums
// over each chunk in entry order, so the result is the same bits whatever
// GOMAXPROCS is and however the chunks are scheduled.
const chunkLen = 1 << 14

// minParallel is the order below which the chunked loops run on the
// calling goroutine (the goroutines cost more than they save); the result
// does not depend on it.
const minParallel = 1 << 16

// forChunks calls f(c, lo, hi) for the chunks c = 0, 1, ... of [0, n),
// [lo, hi) = [c chunkLen, min(n, (c+1) chunkLen)), on up to GOMAXPROCS
// goroutines.
func forChunks(n int, f func(c, lo, hi int)) {
	chunks := (n + chunkLen - 1) / chunkLen
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if workers <= 1 || n < minParallel {
		for c := range chunks {
			f(c, c*chunkLen, min(n, (c+1)*chunkLen))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				f(c, c*chunkLen, min(n, (c+1)*chunkLen))
			}
		}()
	}
	wg.Wait()
}

// chunkParts returns, for each chunk c of [0, n) (see forChunks), the k
// values f writes for it, at [c k, (c+1) k).
func chunkParts(n, k int, f func(lo, hi int, out []float64)) []float64 {
	chunks := (n + chunkLen - 1) / chunkLen
	part := make([]float64, chunks*k)
	forChunks(n, func(c, lo, hi int) { f(lo, hi, part[c*k:(c+1)*k]) })
	return part
}

// sumChunks returns the sums over [0, n) of the k values f returns for
// each chunk (see forChunks), added in chunk order.
func sumChunks(n, k int, f func(lo, hi int, out []float64)) []float64 {
	part := chunkParts(n, k, f)
	sum := make([]float64, k)
	for c := 0; c < len(part); c += k {
		for j := range sum {
			sum[j] += part[c+j]
		}
	}
	return sum
}
