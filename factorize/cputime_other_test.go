//go:build !unix

package factorize

import "testing"

// cpuTime reports this process's CPU time as unknown (0, false): there is
// no getrusage here, and the benchmarks leave out their cpu-ms/op.
func cpuTime(*testing.B) (float64, bool) { return 0, false }
