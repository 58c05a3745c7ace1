package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
)

// peakHeap runs dpaudit with args and returns the largest heap it held
// above what was in use before, sampled every 100 microseconds with the
// collector at GOGC = 5 (so that the heap tracks the live bytes within a
// few percent; a sample can only miss a peak, never add one that was not
// allocated).
func peakHeap(t *testing.T, args []string) float64 {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	var out, errb bytes.Buffer
	code, err := run(context.Background(), args, &out, &errb)
	close(done)
	<-stopped
	if err != nil || code != 0 {
		t.Fatalf("%q: code %d, err %v", args, code, err)
	}
	return float64(peak.Load()) - float64(base)
}

// TestMemoryNeedMeasured checks memoryNeed against the memory small audits
// take, measured independently of the formula: the peak of the heap
// (runtime.MemStats.HeapAlloc, sampled while the audit runs) above the
// heap before it. The measured peak must be at most 1.1 times the
// estimate (at GOGC = 5 the heap holds up to 5% more than the live bytes
// of the last cycle, and the garbage allocated during a concurrent one:
// the replay's probes make a tap server per learner and round), plus
// 1 MiB for what any run allocates whatever its size (flags, the model,
// the gonum work of a 1 x 1 problem); to stay useful, the estimate must be
// at most 4 times the peak. Measured: 0.6 to 1.1 times the estimate. The
// cases make each term dominate in turn: R d (replay and canary at
// d = 20000), n d (n = 200), R^2 (the tree's tall C, whose whitener forms
// R x R matrices), and the edges R = 1, d = 1 and b = R (epochs:1,
// minsep:R); and with -network, the federation over gRPC. Before, the
// peak was 2.5 times the estimate for replay at R = 20, d = 20000 (it
// counted 4 R d of the audit's 8 R d: not the released models, the
// distance, or the noise concatenated and whitened), 3.6 times at R = 1,
// d = 10^5, 3.2 times for replay with n = 200 learners (2 n d of 6 n d:
// both runs' learners and their updates), 1.8 times for the tree's replay
// (R^2 of the whitener's R m + 3 R^2), 1.5 times for canary with n = 200,
// and 2.5 times for canary -network (not counted at all).
func TestMemoryNeedMeasured(t *testing.T) {
	// The estimate counts float64 payloads, 8 bytes on every platform; on
	// 386 the same run holds the same floats and smaller pointers and ints,
	// so the side that matters (the peak within the estimate) is amd64's
	// worst case. The test took 47 s on 386 (a shared 2-core machine).
	testutil.SkipOn386Short(t, "memoryNeed counts float64 payloads, the same on every platform; 386's peak is at most amd64's (smaller words)")
	const slack = 1 << 20
	cases := []struct {
		cmd, strategy, part string
		r, n, d, canaries   int
		network             bool
	}{
		{"replay", "optimal", "single", 20, 2, 20000, 0, false},
		{"replay", "optimal", "single", 10, 200, 1000, 0, false},
		{"replay", "tree", "single", 300, 2, 1, 0, false},
		{"replay", "optimal", "single", 1, 1, 1, 0, false},
		{"replay", "optimal", "single", 1, 3, 100000, 0, false},
		{"replay", "optimal", "epochs:1", 200, 2, 1, 0, false},
		{"replay", "banded-toeplitz", "minsep:20", 20, 2, 20000, 0, false},
		{"canary", "optimal", "single", 20, 2, 20000, 40, false},
		{"canary", "optimal", "single", 10, 200, 1000, 40, false},
		{"canary", "tree", "single", 300, 2, 1, 40, false},
		{"canary", "optimal", "single", 1, 40, 20000, 40, false},
		{"replay", "optimal", "single", 10, 50, 2000, 0, true},
		{"canary", "optimal", "single", 10, 50, 2000, 20, true},
		{"canary", "optimal", "single", 20, 2, 20000, 20, true},
	}
	for _, c := range cases {
		args := []string{c.cmd, "-strategy", c.strategy, "-participation", c.part, "-rounds", strconv.Itoa(c.r),
			"-learners", strconv.Itoa(c.n), "-tau", "1", "-dim", strconv.Itoa(c.d), "-json"}
		if c.cmd == "canary" {
			args = append(args, "-canaries", strconv.Itoa(c.canaries))
		}
		if c.network {
			args = append(args, "-network")
		}
		peak := peakHeap(t, args)
		o := &options{strategy: c.strategy, part: c.part, algo: "correlated", cal: "exact", canaries: c.canaries, level: 0.99, confidence: 0.95, network: c.network}
		o.plan.Rounds, o.plan.Learners, o.plan.Tau, o.plan.Dim = c.r, c.n, 1, c.d
		o.plan.Eta, o.plan.EtaG, o.plan.Clip, o.plan.Eps, o.plan.Delta = 0.003, 1, 5, 5, 1e-3
		if err := o.check(c.cmd, nil); err != nil {
			t.Fatal(err)
		}
		need := memoryNeed(c.cmd, o, false)
		t.Logf("%q: estimate %.3g, peak %.3g (%.2f)", args, need, peak, peak/need)
		if !(peak <= 1.1*need+slack && need <= 4*peak+slack) {
			t.Errorf("%q: estimate %.3g bytes, measured peak %.3g (%.2f times the estimate): want the peak at most 1.1 times the estimate and the estimate at most 4 times the peak, to 1 MiB",
				args, need, peak, peak/need)
		}
	}
}
