package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/procusage"
)

// On Linux, selfRSS against the kernel's own peak of this address space
// (VmHWM in /proc/self/status, in kB) after touching 64 MB: getrusage's
// ru_maxrss is at least that (it also keeps the peak of the address space
// that exec replaced), so selfRSS, in bytes, is at least VmHWM * 1024 (less
// 1 MiB: the kernel's RSS counters are per-CPU and lag by a few pages), and
// both are over 64 MiB.
func TestSelfRSSLinux(t *testing.T) {
	ballast = make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	defer func() { ballast = nil }()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	got := procusage.SelfRSS()
	var hwm int64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm, err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if hwm == 0 {
		t.Skip("no VmHWM")
	}
	if hwm*1024 < 64<<20 || got < hwm*1024-1<<20 {
		t.Errorf("selfRSS %d bytes, VmHWM %d kB: want selfRSS >= VmHWM * 1024 - 1 MiB, VmHWM >= 64 MiB", got, hwm)
	}
	if c := procusage.SelfCPU(); c <= 0 {
		t.Errorf("cpuSeconds %v, want positive", c)
	}
}
