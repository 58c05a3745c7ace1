package fednet

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// rss returns the process's resident set size in bytes from
// /proc/self/statm, or 0 where there is none.
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// liveHeap forces a collection and returns the heap it marked live
// (runtime/metrics' /gc/heap/live:bytes): unlike HeapAlloc read after it,
// this does not count what other goroutines allocate, garbage included,
// between the collection and the read, which a loaded machine stretches.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeapPeak forces a collection every 50 ms until stop is called, and
// returns the largest heap one marked live (liveHeap). What the uploads,
// streams and headers in progress hold is live, and shows; unlike the
// peak of the heap in use (heapPeak), it does not depend on how late the
// collector runs on a loaded machine, so a bound on it is a bound on what
// the process holds, not on its garbage.
func liveHeapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if l := liveHeap(); l > peak.Load() {
				peak.Store(l)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// liveHeapPeak counts what is held, not the garbage allocated around the
// collections: while a goroutine allocates 8 MiB buffers as fast as it can
// and holds one at a time (two while the next is allocated), the peak live
// heap stays far below what it allocates. It is not exactly two buffers:
// a buffer allocated while a collection marks is counted live by that
// cycle (the collector allocates black), and on a loaded machine a mark
// phase can span several allocations. The pacer's assists hold those to
// about the heap goal (GOGC 10 here), a few buffers; the bound allows
// eight (64 MiB, plus 4 MiB of slack) against at least 512 MiB allocated,
// which a measure that counted garbage would approach. The test failed
// once at a bound of two buffers plus 4 MiB (23 MiB seen) in a tree-wide
// run at a load of 20.
func TestLiveHeapPeakLeavesOutGarbage(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	before := liveHeap()
	var stopped atomic.Bool
	var wg sync.WaitGroup
	var allocated atomic.Int64
	const minBuffers = 64 // 512 MiB of garbage at least
	wg.Go(func() {
		var buf []byte
		for !stopped.Load() || allocated.Load() < minBuffers {
			buf = make([]byte, 8<<20)
			buf[len(buf)-1] = 1
			allocated.Add(1)
		}
		runtime.KeepAlive(buf)
	})
	live := liveHeapPeak()
	time.Sleep(500 * time.Millisecond)
	stopped.Store(true)
	wg.Wait()
	l := live()
	growth := int64(l) - int64(before)
	t.Logf("%d buffers of 8 MiB allocated; live heap +%d MiB at most", allocated.Load(), growth>>20)
	if growth > 8*8<<20+4<<20 {
		t.Errorf("the live heap grew by %d MiB while at most two 8 MiB buffers were held (%d allocated), want at most 68 MiB", growth>>20, allocated.Load())
	}
}

// heapPeak samples the heap in use and the resident set size every few
// milliseconds until stop is called, and returns the largest values seen.
func heapPeak() (stop func() (heap, resident uint64)) {
	var peak, peakRSS atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			if r := rss(); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() (uint64, uint64) { close(done); wg.Wait(); return peak.Load(), peakRSS.Load() }
}

// One authenticated learner floods a real gRPC server (mutual TLS on
// 127.0.0.1) with stalled uploads and model streams that it never reads,
// on many connections, while two honest learners run. The server refuses
// the calls over the learner's limits with ResourceExhausted, cuts the
// stalled ones off, and the honest run releases the models of an
// un-flooded run bit for bit (the flooding learner's updates are missing:
// the rounds close after RoundTimeout with MinLearners = 2). The live heap
// of the whole test process (server, honest learners, flood clients),
// measured after a collection every 50 ms (liveHeapPeak), stays within
// floodHeapBound of what it was before: an unbounded server, which
// allocated a whole update (8 d = 4 MiB) for each stalled upload of a
// single value and held it until the upload was cut off, peaked near 500
// MiB above. The bound was set for the peak of the heap in use, which the
// honest run alone took 75 MiB of; that peak is logged, not judged, as it
// depends on how late the collector runs on a loaded machine. The log
// lines about refused calls stay within the rate limit.
func TestFloodKeepsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of calls with 4 MiB models for some seconds: skipped with -short")
	}
	const (
		n, R, d        = 3, 2, 1 << 19
		flooder        = 2
		floodUploads   = 64
		floodStreams   = 64
		floodConns     = 16
		floodHeapBound = 128 << 20
	)
	r := &run{n: n, R: R, tau: 1, d: d, cfg: fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}}
	ds, err := dataset.NewDataset("dense", n, R, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	for j := range ds.Features {
		ds.Features[j] = float64(j%7) - 3
	}
	for j := range ds.Labels {
		ds.Labels[j] = float64(2*(j%2) - 1)
	}
	r.data = ds
	want := r.simulate(t, func(i, k int) bool { return i == flooder })

	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	srvCert, srvKey := ca.Issue(t, "server", true)
	creds, err := ServerTLS(srvCert, srvKey, ca.File)
	if err != nil {
		t.Fatal(err)
	}
	learnerCreds := make([]credentials.TransportCredentials, n)
	for i := range learnerCreds {
		cert, key := ca.Issue(t, LearnerName(i), false)
		if learnerCreds[i], err = ClientTLS(ca.File, "", cert, key); err != nil {
			t.Fatal(err)
		}
	}
	var log testutil.SyncBuffer
	opt := r.options(t.TempDir(), &log)
	opt.Noise = nil
	opt.Identify = IdentifyByCertificate
	opt.MinLearners = 2
	// Every round waits RoundTimeout for the flooder's update; the honest
	// ones must arrive within it on a loaded machine.
	opt.RoundTimeout, opt.CallTimeout, opt.MaxWait, opt.Linger = 3*time.Second, 2*time.Second, 5*time.Second, 100*time.Millisecond
	if raceEnabled {
		opt.RoundTimeout, opt.CallTimeout = 10*time.Second, 5*time.Second
	}

	defer debug.SetGCPercent(debug.SetGCPercent(10)) // the heap in use then follows what is live
	liveBefore := liveHeap()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rssBefore := rss()
	peak := heapPeak()
	live := liveHeapPeak()

	s := serve(t, opt, creds)
	ctx, stopFlood := context.WithCancel(context.Background())
	var flood sync.WaitGroup
	var refused, cut atomic.Int64
	conns := make([]*grpc.ClientConn, floodConns)
	for k := range conns {
		// Small windows: the flooder's own buffers stay small, the
		// server's sends block as soon as they are not read.
		conns[k], err = grpc.NewClient(s.addr, grpc.WithTransportCredentials(learnerCreds[flooder]),
			grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
		if err != nil {
			t.Fatal(err)
		}
		defer conns[k].Close()
	}
	count := func(err error) {
		switch status.Code(err) {
		case codes.ResourceExhausted:
			refused.Add(1)
		case codes.DeadlineExceeded:
			cut.Add(1)
		}
	}
	values := []float64{0} // an unbounded server allocated all d values for it
	for k := range floodUploads {
		cl := flv1.NewFederationClient(conns[k%floodConns])
		flood.Go(func() {
			for ctx.Err() == nil {
				// One value of an update of dimension d for the open
				// round, then nothing: the upload stalls until the
				// server cuts it off.
				round, _ := s.srv.Round()
				c := &flv1.UpdateChunk{Learner: flooder, Round: int32(round), Dim: d, Values: values}
				st, err := cl.SubmitUpdate(ctx)
				if err == nil {
					if err = st.Send(c); err == nil {
						err = st.RecvMsg(new(flv1.SubmitResponse))
					}
				}
				count(err)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	for k := range floodStreams {
		cl := flv1.NewFederationClient(conns[k%floodConns])
		flood.Go(func() {
			for ctx.Err() == nil {
				// Ask for the model and never read it.
				cctx, cancel := context.WithCancel(ctx)
				st, err := cl.GetModel(cctx, &flv1.GetModelRequest{Learner: flooder})
				if err == nil {
					select {
					case <-st.Context().Done():
					case <-ctx.Done():
					case <-time.After(2 * opt.CallTimeout):
					}
				}
				cancel()
				count(err)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}

	start := time.Now()
	finals, errs := runLearners(t, r, s.addr, []int{0, 1}, func(i int) credentials.TransportCredentials { return learnerCreds[i] })
	elapsed := time.Since(start)
	stopFlood()
	flood.Wait()
	for i, err := range errs {
		if err != nil {
			l := log.String()
			t.Fatalf("honest learner %d: %v; log ends %s", i, err, l[max(0, len(l)-3000):])
		}
		if !testutil.SameBits(finals[i], want[R]) {
			t.Fatalf("honest learner %d: final model differs from the un-flooded run", i)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	s.stop()
	l := live()
	p, pRSS := peak()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	for k, x := range readRounds(t, opt.Dir, R) {
		if !testutil.SameBits(x, want[k]) {
			t.Fatalf("x^%d differs from the un-flooded run", k)
		}
	}
	growth := int64(l) - int64(liveBefore)
	t.Logf("run %v; flood calls refused %d, cut off %d; live heap %d MiB before, at most %d MiB (+%d MiB, bound %d MiB); heap in use %d MiB before, peak %d MiB (+%d MiB), %d MiB after; heap from the OS +%d MiB",
		elapsed.Round(time.Millisecond), refused.Load(), cut.Load(), liveBefore>>20, l>>20, growth>>20, floodHeapBound>>20,
		before.HeapInuse>>20, p>>20, (int64(p)-int64(before.HeapInuse))>>20, after.HeapInuse>>20, (int64(after.HeapSys)-int64(before.HeapSys))>>20)
	if growth > floodHeapBound {
		t.Errorf("the live heap grew by %d MiB under the flood, want at most %d MiB", growth>>20, floodHeapBound>>20)
	}
	// The resident set adds the runtime's own overhead and freed memory
	// not yet returned to the OS: twice the heap bound.
	if rssBefore > 0 {
		g := int64(pRSS) - int64(rssBefore)
		t.Logf("resident set %d MiB before, peak %d MiB (+%d MiB, bound %d MiB)", rssBefore>>20, pRSS>>20, g>>20, 2*floodHeapBound>>20)
		if g > 2*floodHeapBound {
			t.Errorf("peak resident set grew by %d MiB under the flood, want at most %d MiB", g>>20, 2*floodHeapBound>>20)
		}
	}
	if refused.Load() == 0 {
		t.Error("no flood call was refused with ResourceExhausted")
	}
	lines := strings.Count(log.String(), "msg=rejected")
	if max := logBurst + int(elapsed.Seconds()+2)*10; lines > max {
		t.Errorf("%d log lines about refused calls in %v, want at most %d", lines, elapsed, max)
	}
	if !strings.Contains(log.String(), "suppressed=") {
		t.Error("the log does not say how many lines were suppressed")
	}
}
