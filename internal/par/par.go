// Package par runs fixed chunks of a loop on a bounded number of
// goroutines. The chunks, not the goroutines, fix what is computed: a
// caller that computes each chunk by the same operations whatever
// goroutine runs it, and adds chunk results in chunk order, gets the same
// bits on any number of cores. Only how many goroutines run the chunks
// depends on the machine, and that number is capped by the work: a
// goroutine is started only for at least [Grain] units of work, so that
// small loops run on the caller alone and many cores are not woken for
// work too small to pay for waking them.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Grain is the least work, in units of about one multiply-add over data
// in cache (or one entry streamed from memory), that justifies one more
// goroutine. Measured on the 2-core development machine (CPU profiles of
// the banded solver at R = 10^4 with 64 bands), its row loops take 1 to
// 3 ns per unit and the assembly inner products of long vectors 0.3 to
// 0.8 ns (they are bound by memory), so a grain is 250 to 800 us of a
// row loop and 80 to 200 us of a vector loop; waking a parked thread
// costs 5 to 50 us.
const Grain = 1 << 18

// Workers returns the number of goroutines, the caller's included, that
// [For] uses for chunks tasks of work units in all: min(GOMAXPROCS,
// chunks, work / Grain), and at least 1 (1 for work that is NaN).
func Workers(chunks int, work float64) int {
	w := min(runtime.GOMAXPROCS(0), chunks)
	if !(work >= float64(w)*Grain) {
		// Less work than w grains (or NaN): one goroutine per grain.
		w = 0
		if work > 0 {
			w = int(work / Grain)
		}
	}
	return max(w, 1)
}

// For calls f(c) once for every c in [0, chunks), in increasing order on
// the calling goroutine when [Workers](chunks, work) is 1, and otherwise
// on that many goroutines (the caller's one of them) that take the
// chunks in increasing order as they become free. work is the estimated
// cost of all the chunks together, in the units of [Grain]; it decides
// only the number of goroutines. For returns when every call has
// returned.
func For(chunks int, work float64, f func(c int)) {
	Pool(chunks, Workers(chunks, work), func(_, c int) bool {
		f(c)
		return true
	})
}

// Pool calls f(w, i) for every i in [0, n), in increasing order on the
// calling goroutine when workers is at most 1, and otherwise on that many
// goroutines (the caller's one of them) that take the next i as they
// become free; w, in [0, workers), names the goroutine, for state that
// only one goroutine may use at a time. A goroutine whose call returns
// false takes no more i (an error that stops the loop). Pool returns when
// every call has returned.
func Pool(n, workers int, f func(w, i int) bool) {
	var next atomic.Int64
	run := func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n || !f(w, i) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { run(w) })
	}
	run(0)
	wg.Wait()
}

// Range calls f(lo, hi) for the chunks [c size, min(n, (c+1) size)) of
// [0, n) through [For], with work estimated as n times perItem units.
func Range(n, size int, perItem float64, f func(lo, hi int)) {
	chunks := (n + size - 1) / size
	For(chunks, float64(n)*perItem, func(c int) { f(c*size, min(n, (c+1)*size)) })
}

// Both runs f and g, on two goroutines when GOMAXPROCS is at least 2 and
// work (the units of [Grain] of both together) is at least 2 Grain, and
// one after the other on the caller otherwise.
func Both(work float64, f, g func()) {
	if Workers(2, work) < 2 {
		f()
		g()
		return
	}
	var wg sync.WaitGroup
	wg.Go(g)
	f()
	wg.Wait()
}
