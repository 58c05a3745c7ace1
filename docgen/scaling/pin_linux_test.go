package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A pinned run's command is on one CPU, the first of the launcher's mask,
// and does not see the pinning variable; an unpinned one keeps the mask.
func TestCappedPinsTheCommand(t *testing.T) {
	var have unix.CPUSet
	if err := unix.SchedGetaffinity(0, &have); err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	e := &i20Env{ctx: context.Background(), tmp: t.TempDir()}
	script := []string{"sh", "-c", "grep '^Cpus_allowed_list' /proc/self/status; echo pin=${" + pinEnv + ":-unset}"}
	_, out, err := e.capped(0, 1, true, script)
	if err != nil {
		t.Fatal(err)
	}
	first := -1
	for cpu := 0; cpu < len(have)*64; cpu++ {
		if have.IsSet(cpu) {
			first = cpu
			break
		}
	}
	got := string(out)
	if want := "Cpus_allowed_list:\t" + strconv.Itoa(first) + "\n"; !strings.Contains(got, want) || !strings.Contains(got, "pin=unset") {
		t.Errorf("pinned: %q, want %q and pin=unset", got, want)
	}
	_, out, err = e.capped(0, 1, false, script)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(self), "\n") {
		if strings.HasPrefix(line, "Cpus_allowed_list") && !strings.Contains(string(out), line+"\n") {
			t.Errorf("unpinned: %q, want this process's %q", out, line)
		}
	}
}
