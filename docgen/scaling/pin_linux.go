package main

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// canPin says whether pinToCPUs works on this platform.
const canPin = true

// pinToCPUs restricts the calling thread of this process (the launcher,
// before it starts its command, which inherits the mask of the thread
// that forks it) to the first n CPUs of its affinity mask, and fails if
// it has fewer. sched_setaffinity sets one thread's mask, so the calling
// goroutine is locked to its thread for good: the command must be started
// from it.
func pinToCPUs(n int) error {
	runtime.LockOSThread()
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
