//go:build !unix

package bench_test

// cpuSeconds returns 0 where getrusage is missing: cpu-s/op and cores
// then read 0.
func cpuSeconds() float64 { return 0 }
