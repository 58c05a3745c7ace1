//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// usageKnown says whether this platform reports CPU time and peak RSS
// (getrusage); here it does not, and the report prints them as unknown.
const usageKnown = false

// childUsage reports the CPU time and peak RSS of a process as unknown (0).
func childUsage(*os.ProcessState) (cpu float64, maxRSS int64) { return 0, 0 }

// selfRSS reports this process's peak RSS as unknown (0).
func selfRSS() int64 { return 0 }

// cpuSeconds reports this process's CPU time as unknown (0).
func cpuSeconds() float64 { return 0 }

// ownProcessGroup leaves cmd as it is: without process groups a cancelled
// context kills the launcher, and the command that it runs may outlive it.
func ownProcessGroup(*exec.Cmd) {}
