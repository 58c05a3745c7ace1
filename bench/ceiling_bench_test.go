package bench_test

import (
	"math"
	"runtime"
	"sync"
	"testing"
)

// BenchmarkCeiling measures the machine's own limits on parallel speed-up,
// the reference against which the Par benchmarks' ratios are read: a fixed
// amount of perfectly parallel work, ceilingPieces pieces with no shared
// data dealt to GOMAXPROCS goroutines, so that the ratio of its times at
// two -cpu values is the most any path can gain between them on this
// machine.
//
//   - compute: each piece runs four independent register-resident
//     recurrences x = x*a + b (floating-point latency, no memory traffic);
//   - memory: each piece sums its own 32 MiB array (ceilingPasses passes;
//     4 GiB read in all), bound by the bandwidth that the cores share.
//
// Run it with the same -cpu list as the benchmark it is the reference for,
// in the same run, with a -cpu list that starts and ends with the same
// value (see reportProcs; docs/scaling.md, "Sixteen cores"):
//
//	go test -run '^$' -bench 'Ceiling|ParStructured/R=1000000' -cpu 2,16,2,16,2 ./bench/
//
// A ratio well below the number of cores in compute means that the cores are
// not all the machine's own (hyperthreads or a shared host); in memory, that
// the bandwidth is shared, as it is on most machines.
func BenchmarkCeiling(b *testing.B) {
	b.Run("compute", func(b *testing.B) {
		loopCPU(b, func() {
			parts := ceilingSplit(func(i int) float64 { return ceilingCompute(1<<25, float64(i)) })
			ceilingSink = parts
		})
	})
	b.Run("memory", func(b *testing.B) {
		arrays := make([][]float64, ceilingPieces)
		for i := range arrays {
			arrays[i] = make([]float64, 4<<20) // 32 MiB
			for j := range arrays[i] {
				arrays[i][j] = float64(j & 7)
			}
		}
		b.ResetTimer()
		loopCPU(b, func() {
			parts := ceilingSplit(func(i int) float64 { return ceilingStream(arrays[i], ceilingPasses) })
			ceilingSink = parts
		})
	})
}

// ceilingPieces is the number of pieces of the ceiling benchmarks: a
// multiple of every -cpu value up to 16 that divides 16, so that those
// share the work evenly. ceilingPasses is the number of passes of the
// memory ceiling over each piece's array.
const (
	ceilingPieces = 16
	ceilingPasses = 8
)

// ceilingSink keeps the ceiling kernels' results alive.
var ceilingSink []float64

// ceilingSplit runs piece(i) for i < ceilingPieces on GOMAXPROCS goroutines,
// goroutine g taking the pieces i with i % GOMAXPROCS == g, and returns the
// results in the order of i.
func ceilingSplit(piece func(i int) float64) []float64 {
	p := runtime.GOMAXPROCS(0)
	out := make([]float64, ceilingPieces)
	var wg sync.WaitGroup
	for g := range min(p, ceilingPieces) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < ceilingPieces; i += p {
				out[i] = piece(i)
			}
		}()
	}
	wg.Wait()
	return out
}

// ceilingCompute runs n steps of four independent recurrences x = x*a + b
// from seed and returns the sum of their ends.
func ceilingCompute(n int, seed float64) float64 {
	const a, c = 0.999999, 1e-6
	x0, x1, x2, x3 := seed, seed+1, seed+2, seed+3
	for range n {
		x0 = x0*a + c
		x1 = x1*a + c
		x2 = x2*a + c
		x3 = x3*a + c
	}
	return x0 + x1 + x2 + x3
}

// ceilingStream returns the sum of passes passes over a.
func ceilingStream(a []float64, passes int) float64 {
	var s0, s1, s2, s3 float64
	for range passes {
		for i := 0; i+3 < len(a); i += 4 {
			s0 += a[i]
			s1 += a[i+1]
			s2 += a[i+2]
			s3 += a[i+3]
		}
	}
	return (s0 + s1) + (s2 + s3)
}

// The ceiling kernels compute what they claim: the recurrence's closed
// form x_n = a^n (x_0 - c/(1-a)) + c/(1-a), and the sum of a known array.
func TestCeilingKernels(t *testing.T) {
	const a, c = 0.999999, 1e-6
	fix := c / (1 - a)
	n := 1000
	want := 0.0
	for i := range 4 {
		x0 := 2.5 + float64(i)
		xn := fix + (x0-fix)*math.Pow(a, float64(n))
		want += xn
	}
	if got := ceilingCompute(n, 2.5); math.Abs(got-want) > 1e-12*want {
		t.Errorf("ceilingCompute = %v, want %v", got, want)
	}
	arr := make([]float64, 1000)
	for j := range arr {
		arr[j] = float64(j & 7) // 125 copies of 0..7, each summing to 28
	}
	if got := ceilingStream(arr, 3); got != 3*125*28 {
		t.Errorf("ceilingStream = %v, want %v", got, 3*125*28)
	}
}
