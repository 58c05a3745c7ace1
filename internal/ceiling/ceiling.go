// Package ceiling holds the kernels that measure a machine's own limit on
// parallel speed-up: work that is perfectly parallel by construction (no
// shared data, no synchronisation but the final join), compute-bound or
// memory-bound. The ratio of their times at two GOMAXPROCS values is the
// most any path can gain between them on that machine; bench's
// BenchmarkCeiling and docgen/scaling's reference rows run them.
package ceiling

import (
	"runtime"
	"sync"
)

// Split runs piece(i) for each i < pieces over GOMAXPROCS goroutines,
// goroutine g taking the i with i % GOMAXPROCS == g, and returns the
// results in the order of i (so the same bits at any GOMAXPROCS).
func Split(pieces int, piece func(i int) float64) []float64 {
	p := runtime.GOMAXPROCS(0)
	out := make([]float64, pieces)
	var wg sync.WaitGroup
	for g := range min(p, pieces) {
		wg.Go(func() {
			for i := g; i < pieces; i += p {
				out[i] = piece(i)
			}
		})
	}
	wg.Wait()
	return out
}

// Compute runs n steps of four independent recurrences x = x a + b
// (a = 0.999999, b = 1e-6) from seed, seed+1, seed+2 and seed+3: register-
// resident floating point with no memory traffic. It returns the sum of
// their ends, for the caller to use.
func Compute(n int, seed float64) float64 {
	const a, b = 0.999999, 1e-6
	x0, x1, x2, x3 := seed, seed+1, seed+2, seed+3
	for range n {
		x0 = x0*a + b
		x1 = x1*a + b
		x2 = x2*a + b
		x3 = x3*a + b
	}
	return x0 + x1 + x2 + x3
}

// Stream reads all of a passes times and returns the sum.
func Stream(a []float64, passes int) float64 {
	var s0, s1, s2, s3 float64
	for range passes {
		i := 0
		for ; i+3 < len(a); i += 4 {
			s0 += a[i]
			s1 += a[i+1]
			s2 += a[i+2]
			s3 += a[i+3]
		}
		for ; i < len(a); i++ {
			s0 += a[i]
		}
	}
	return s0 + s1 + s2 + s3
}
