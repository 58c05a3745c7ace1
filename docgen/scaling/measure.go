package main

import (
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/procusage"
)

// outcome is what a measured computation reports about its result.
type outcome struct {
	// Iters is the number of fixed-point iterations (square roots); 0 for
	// closed forms.
	Iters int
	// Roots is the number of matrix square roots (evaluations of the
	// fixed-point map) behind Iters: Factorization.Evaluations for dpmf,
	// one per iteration for the plain reference.
	Roots int
	// Gap is the certified relative duality gap; 0 for closed forms.
	Gap float64
	// Loss is the loss of the computed factorization (for the solvers, a
	// certified upper bound on the optimum).
	Loss float64
}

// measurement is the median over Runs runs of one computation.
type measurement struct {
	R    int
	Runs int
	// Tol is the certified gap asked for, set by the caller (0 for closed
	// forms).
	Tol float64
	// Seconds, CPU, Alloc and Peak are medians: wall time, this process's
	// CPU time (user + system, getrusage: on a shared machine it shows
	// what the computation costs, whatever else ran), bytes allocated
	// (runtime.MemStats.TotalAlloc) and the peak of the heap's live and
	// unswept objects above its level at the start, sampled every 5 ms.
	Seconds, CPU float64
	Alloc        uint64
	Peak         uint64
	// Out is the outcome of the last run.
	Out outcome
}

// Lower returns the certified lower bound on the optimum implied by the
// loss (an upper bound) and the relative gap (upper - lower) / lower.
func (m measurement) Lower() float64 { return m.Out.Loss / (1 + m.Out.Gap) }

// runsAfter returns how many runs to take in all when the first one took
// first seconds: reps for fast computations, at most 3 above 10 s and one
// above 60 s, so that the slow ones do not take hours.
func runsAfter(reps int, first float64) int {
	switch {
	case first > 60:
		return 1
	case first > 10:
		return min(reps, 3)
	}
	return reps
}

// repeat calls once, which returns the seconds a run took, up to reps
// times (see runsAfter), and returns the seconds of each run. It stops at
// the first error.
func repeat(reps int, once func() (float64, error)) ([]float64, error) {
	var secs []float64
	for runs := reps; len(secs) < runs; {
		s, err := once()
		if err != nil {
			return secs, err
		}
		if secs = append(secs, s); len(secs) == 1 {
			runs = runsAfter(reps, s)
		}
	}
	return secs, nil
}

// measure runs fn up to reps times (see runsAfter) and returns the medians.
// After an error it returns the error with the CPU time of the runs so far,
// the failed one included.
func measure(r, reps int, fn func() (outcome, error)) (measurement, error) {
	var cpus, allocs, peaks []float64
	var out outcome
	secs, err := repeat(reps, func() (float64, error) {
		s, c, a, p, o, err := timeOnce(fn)
		cpus, allocs, peaks, out = append(cpus, c), append(allocs, float64(a)), append(peaks, float64(p)), o
		return s, err
	})
	if err != nil {
		return measurement{CPU: docgen.Median(cpus)}, err
	}
	return measurement{
		R: r, Runs: len(secs), Out: out, Seconds: docgen.Median(secs), CPU: docgen.Median(cpus),
		Alloc: uint64(docgen.Median(allocs)), Peak: uint64(docgen.Median(peaks)),
	}, nil
}

// heapMetric is the runtime metric sampled for the peak heap.
const heapMetric = "/memory/classes/heap/objects:bytes"

// timeOnce runs fn once after a garbage collection and returns its wall
// time, this process's CPU time during it, the bytes it allocated and the
// sampled peak heap growth.
func timeOnce(fn func() (outcome, error)) (seconds, cpu float64, alloc, peak uint64, out outcome, err error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	base := heapBytes()

	// The sampler alone writes top until done is closed.
	top, stop, done := base, make(chan struct{}), make(chan struct{})
	record := func() { top = max(top, heapBytes()) }
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				record()
			}
		}
	}()
	start, c0 := time.Now(), procusage.SelfCPU()
	out, err = fn()
	seconds, cpu = time.Since(start).Seconds(), procusage.SelfCPU()-c0
	close(stop)
	<-done
	record()
	runtime.ReadMemStats(&ms)
	return seconds, cpu, ms.TotalAlloc - before, top - base, out, err
}

// heapBytes returns the bytes of heap objects, live or not yet swept.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
