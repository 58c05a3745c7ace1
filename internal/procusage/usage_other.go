//go:build !unix

package procusage

import "os"

// Known says whether this platform reports CPU time and peak RSS; here it
// does not.
const Known = false

// Child reports the CPU time and peak RSS of a process as unknown (0).
func Child(*os.ProcessState) (cpuSeconds float64, maxRSS int64) { return 0, 0 }

// SelfRSS reports this process's peak RSS as unknown (0).
func SelfRSS() int64 { return 0 }

// SelfCPU reports this process's CPU time as unknown (0).
func SelfCPU() float64 { return 0 }
