//go:build unix

package bench_test

import "syscall"

// cpuSeconds returns the user+sys CPU time the process has used so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 {
		return float64(t.Sec) + float64(t.Usec)*1e-6
	}
	return tv(ru.Utime) + tv(ru.Stime)
}
