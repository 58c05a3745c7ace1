package bench_test

import (
	"testing"

	"github.com/dpmf/dpmf/internal/ceiling"
)

// BenchmarkCeiling measures the machine's own limits on parallel speed-up,
// the reference against which the Par benchmarks' ratios are read: a fixed
// amount of perfectly parallel work (internal/ceiling), ceilingPieces
// pieces with no shared data dealt to GOMAXPROCS goroutines, so that the
// ratio of its times at
// two -cpu values is the most any path can gain between them on this
// machine.
//
//   - compute: each piece runs four independent register-resident
//     recurrences x = x*a + b (floating-point latency, no memory traffic);
//   - memory: each piece sums its own 32 MiB array (ceilingPasses passes;
//     4 GiB read in all), bound by the bandwidth that the cores share.
//
// Run it in the same run and with the same -cpu list as the benchmark it
// is the reference for, a list that starts and ends with the same value
// (see reportProcs; bench/manycores.sh; docs/scaling.md, "Sixteen cores"):
//
//	go test -run '^$' -bench 'Ceiling|ParStructured/R=1000000' -cpu 2,16,2,16,2 ./bench/
//
// A ratio well below the number of cores in compute means that the cores are
// not all the machine's own (hyperthreads or a shared host); in memory, that
// the bandwidth is shared, as it is on most machines.
func BenchmarkCeiling(b *testing.B) {
	b.Run("compute", func(b *testing.B) {
		loopCPU(b, func() {
			parts := ceiling.Split(ceilingPieces, func(i int) float64 { return ceiling.Compute(1<<25, float64(i)) })
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
			parts := ceiling.Split(ceilingPieces, func(i int) float64 { return ceiling.Stream(arrays[i], ceilingPasses) })
			ceilingSink = parts
		})
	})
}

// ceilingPieces is the number of pieces of the ceiling benchmarks, 16, so
// that every -cpu value that divides 16 shares the work evenly. ceilingPasses is the number of passes of the
// memory ceiling over each piece's array.
const (
	ceilingPieces = 16
	ceilingPasses = 8
)

// ceilingSink keeps the ceiling kernels' results alive.
var ceilingSink []float64
