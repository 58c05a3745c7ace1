package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// canPin says whether pinToCPUs works on this platform.
const canPin = true

// pinToCPUs restricts this process (the launcher, before it starts its
// command, which inherits the mask) to the first n CPUs of its affinity
// mask, and fails if it has fewer.
func pinToCPUs(n int) error {
	var have, want unix.CPUSet
	if err := unix.SchedGetaffinity(0, &have); err != nil {
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	want.Zero()
	got := 0
	for cpu := 0; got < n && cpu < len(have)*64; cpu++ {
		if have.IsSet(cpu) {
			want.Set(cpu)
			got++
		}
	}
	if got < n {
		return fmt.Errorf("pinning to %d CPUs: the affinity mask has %d", n, have.Count())
	}
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		return fmt.Errorf("sched_setaffinity: %w", err)
	}
	return nil
}
