package bench_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// The benchmarks of this file time the heavy paths of issue 20 item 1, one
// benchmark per path; run them with -cpu 1,2 for the GOMAXPROCS ratio in
// one run (the list starts and ends with the same value: see reportProcs):
//
//	go test -run '^$' -bench Par -cpu 1,2,1 -count 3 ./bench/
//
// Besides ns/op each reports cpu-s/op, the process's user+sys CPU seconds
// per operation (getrusage), and cores, CPU over wall time: on a shared
// machine other load stretches the wall time, most of all that of
// GOMAXPROCS=2 (a single thread still finds a free core under light load),
// and cores shows how much CPU the run actually got; compare runs whose
// cores are near 1 and 2, or the best of several.

// loopCPU runs body under b.Loop and reports the CPU seconds per operation
// (cpu-s/op) and the cores used on average (CPU over wall time, cores).
func loopCPU(b *testing.B, body func()) {
	b.Helper()
	n := 0
	cpu0, t0 := cpuSeconds(), time.Now()
	for b.Loop() {
		body()
		n++
	}
	cpu, wall := cpuSeconds()-cpu0, time.Since(t0).Seconds()
	b.ReportMetric(cpu/float64(n), "cpu-s/op")
	b.ReportMetric(cpu/wall, "cores")
	reportProcs(b)
}

// reportProcs reports the GOMAXPROCS that the benchmark actually ran at
// (procs). The testing package runs the first value of a -cpu list at the
// GOMAXPROCS left by the previous benchmark, the list's last value, not
// at its own (Go issue 49980; with b.Loop the whole measurement is that
// first run): a list that starts and ends with the same value, such as
// -cpu 1,2,1 or 2,16,2, measures every entry at its own value, and this
// metric shows which it was.
func reportProcs(b *testing.B) {
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
}

// BenchmarkParStructured times the structured fixed point (loss only, the
// O(R) bidiagonal path) at R = 10^6 certified to 1e-8, the case measured
// for issue 20 item 1, and at R = 2^18 (quicker, above the order 65,536
// from which its kernels run in parallel). The result is the same bits for
// every GOMAXPROCS (TestStructuredSameBitsAnyGOMAXPROCS).
func BenchmarkParStructured(b *testing.B) {
	ctx := context.Background()
	for _, r := range []int{1 << 18, 1000000} {
		b.Run("R="+strconv.Itoa(r), func(b *testing.B) {
			w, err := factorize.Prefix(r)
			if err != nil {
				b.Fatal(err)
			}
			opt := factorize.Options{LossOnly: true, Tol: 1e-8}
			var f *factorize.Factorization
			loopCPU(b, func() {
				if f, err = factorize.Optimal(ctx, w, opt); err != nil {
					b.Fatal(err)
				}
			})
			reportSolver(b, f.Iterations, f.Gap, opt.Tol)
		})
	}
}

// BenchmarkParDense times the dense path of the optimal solver as
// `mfsolve -strategy optimal:path=dense` runs it (B and C formed) on the
// prefix-sum workload at R = 800 and, with DPMF_LONG=1, at R = 2000 (the
// case of issue 20 item 1; about a minute on one core).
func BenchmarkParDense(b *testing.B) {
	ctx := context.Background()
	sizes := []int{800}
	if os.Getenv("DPMF_LONG") != "" {
		sizes = append(sizes, 2000)
	}
	for _, r := range sizes {
		b.Run("R="+strconv.Itoa(r), func(b *testing.B) {
			w, err := factorize.Prefix(r)
			if err != nil {
				b.Fatal(err)
			}
			s := factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Dense}}
			var f *factorize.Factorization
			loopCPU(b, func() {
				if f, err = s.Factorize(ctx, w, factorize.Participation{}); err != nil {
					b.Fatal(err)
				}
			})
			reportSolver(b, f.Iterations, f.Gap, factorize.DefaultTol)
		})
	}
}

// BenchmarkParFormBC times the optimal factorization with B and C formed
// (the default path, as `mfsolve -R 10000 -o B.npy -C C.npy` computes it,
// without the writing) at R = 10,000: the fixed point, the quasiseparable
// factor and its metrics, then B and C formed from it in O(R^2 K)
// (Factorization.Factors).
func BenchmarkParFormBC(b *testing.B) {
	ctx := context.Background()
	const r = 10000
	w, err := factorize.Prefix(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("R="+strconv.Itoa(r), func(b *testing.B) {
		var f *factorize.Factorization
		loopCPU(b, func() {
			if f, err = factorize.Optimal(ctx, w, factorize.Options{}); err != nil {
				b.Fatal(err)
			}
			if _, _, err = f.Factors(); err != nil {
				b.Fatal(err)
			}
		})
		reportSolver(b, f.Iterations, f.Gap, factorize.DefaultTol)
	})
}

// BenchmarkParMechanism times one round (ns/op) of the optimal
// factorization's mechanism (quasiseparable, K state vectors) at d = 10^6
// and R = 800 with the default number of workers (GOMAXPROCS), and the
// banded one (b = 64) beside it.
func BenchmarkParMechanism(b *testing.B) {
	for _, name := range []string{"optimal", "banded-b64"} {
		b.Run(name, func(b *testing.B) {
			f := mechFactorization(b, name)
			newMech := func() mechanism.Mechanism {
				m, err := mechanism.New(f, mechDim, 1, mechanism.WithSeed(2))
				if err != nil {
					b.Fatal(err)
				}
				return m
			}
			m := newMech()
			dst := make([]float64, mechDim)
			loopCPU(b, func() {
				if m.Round() == m.Rounds() {
					b.StopTimer()
					m = newMech()
					b.StartTimer()
				}
				if err := m.Next(dst); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
