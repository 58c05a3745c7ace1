package main

import (
	"os"

	"github.com/dpmf/dpmf/internal/procusage"
)

// usageKnown says whether this platform reports CPU time and peak RSS
// (getrusage); where it does not, the report prints them as unknown.
const usageKnown = procusage.Known

// childUsage returns the CPU time (user + system, seconds) and peak resident
// set size (bytes) of the process that ps describes, which has exited.
func childUsage(ps *os.ProcessState) (cpu float64, maxRSS int64) { return procusage.Child(ps) }

// selfRSS returns this process's peak RSS so far, in bytes.
func selfRSS() int64 { return procusage.SelfRSS() }

// cpuSeconds returns the CPU time (user + system) this process has used.
func cpuSeconds() float64 { return procusage.SelfCPU() }
