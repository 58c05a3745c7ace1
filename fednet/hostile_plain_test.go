package fednet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	dpmodel "github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// Hostile peers against a plain (non-secure) server without
// authentication, over loopback gRPC: what the flood, limit and
// rejection tests (flood_test.go, limits_test.go, TestRejectedUpdates)
// leave out. hostile_secure_test.go does the same for secure rounds.

// denseRun is newRun's run (correlated noise, seeded) with tau = 1 and
// dimension d, on a dense data set that is cheap to make at large d.
func denseRun(t *testing.T, n, R, d int) *run {
	t.Helper()
	r := newRun(t, n, R, 1, 3)
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
	r.d, r.data = d, ds
	return r
}

// maxChunkValues is the most values an UpdateChunk of dimension dim can
// carry within MaxMsgSize, with every header field at its widest: the
// largest message the server accepts, worked out from the wire encoding.
func maxChunkValues(dim int) int {
	size := func(k int) int {
		return proto.Size(&flv1.UpdateChunk{Learner: math.MaxInt32, Round: math.MinInt32, Dim: int32(dim), Offset: math.MaxInt32, Values: make([]float64, k)})
	}
	k := MaxMsgSize / 8
	for size(k) > MaxMsgSize {
		k--
	}
	return k
}

// splitChunks cuts x into chunks of at most k values with the given header.
func splitChunks(learner, round, dim, k int, x []float64) []*flv1.UpdateChunk {
	var cs []*flv1.UpdateChunk
	for off := 0; off < len(x); off += k {
		cs = append(cs, &flv1.UpdateChunk{Learner: int32(learner), Round: int32(round), Dim: int32(dim), Offset: int32(off), Values: x[off:min(off+k, len(x))]})
	}
	return cs
}

// preencoded is a message sent as the bytes it was encoded to once, so
// that a hostile peer in the test's own process costs the heap nothing a
// call: what the heap measures is then the server's.
type preencoded []byte

// rawCodec sends preencoded messages as they are and everything else as
// gRPC's proto codec does.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(preencoded); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return encoding.GetCodecV2(rawCodec{}.Name()).Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(rawCodec{}.Name()).Unmarshal(data, v)
}

func (rawCodec) Name() string { return "proto" }

// encodeChunks encodes each chunk once.
func encodeChunks(t *testing.T, cs []*flv1.UpdateChunk) []preencoded {
	t.Helper()
	out := make([]preencoded, len(cs))
	for j, c := range cs {
		b, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out[j] = b
	}
	return out
}

// sendEncoded streams an update of preencoded chunks and returns the
// server's status.
func sendEncoded(cl flv1.FederationClient, chunks []preencoded) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cl.SubmitUpdate(ctx, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if err := st.SendMsg(c); err != nil {
			break
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

// A peer that claims the absent learner 2 sends, from 32 goroutines on 4
// connections and for the whole run, uploads in the largest messages the
// limit allows: whole updates with a NaN or an Inf in their last entry,
// or of norm far over tau B_g (refused only once every value is in),
// updates for a round far in the future or in the past, and updates of
// the wrong dimension (each encoded once, so that the peer itself, in
// this process, allocates next to nothing a call); 4 of the 32 go on
// while the honest learners run. Every one is refused with its reason,
// never aggregated: the two honest learners' run releases the models of the
// simulation without learner 2 bit for bit (noise included), every entry
// finite. While only the hostile peer runs, the live heap of the test
// process (/gc/heap/live:bytes after a collection every 50 ms:
// liveHeapPeak, which counts what is held and not the garbage a loaded
// machine leaves uncollected) grows by at most what the server may hold
// under its limits, hostileHeapBound:
//
//   - learner 2's uploads: at most MaxUploadsPerLearner (2) at once pass
//     the per-learner limit, each growing a vector of at most 8 d bytes
//     (the wrong-dimension and wrong-round ones are refused at their first
//     chunk); while the last chunk is appended the array it outgrows is
//     still live, at most 8 d more: 2 x 2 x 8 d = 8 MiB;
//   - the MaxUploads (n x 2 = 6) calls in progress, each receiving one
//     message: raw and decoded, 2 MaxMsgSize each: 12 MiB;
//   - data received on a call that no handler has read yet: at most
//     StreamWindow (512 KiB) a call (gRPC acknowledges a connection's data
//     as it arrives, so ConnWindow does not bound it), on at most the
//     peer's 32 calls at once: 16 MiB;
//   - 8 MiB for the rest: gRPC's per-connection buffers (32 KiB each way
//     on both ends of 4 connections), headers (at most MaxHeaderListSize a
//     call), its buffer pools' spare buffers, and the server's log.
//
// 44 MiB in all. A server without the call limits would hold a whole
// update for each of the peer's 32 calls (measured: 64 MiB, above every
// other term). After the peer stops, the heap and the goroutines come back
// to what they were.
func TestPlainHostileUploads(t *testing.T) {
	const (
		n, R, d    = 3, 2, 1 << 18 // an update is 2 MiB: three of the largest messages
		hostile    = 2
		goroutines = 32 // on 4 connections: at most 64 calls in progress, far more than the limits
		// Without authentication an upload takes a slot in MaxUploads (6)
		// before its first chunk names the learner, so 32 calls at once
		// keep the honest learners' uploads out (they retry, and give up
		// after GiveUp): while they run, 4 of the goroutines go on.
		besideHonest = 4
		conns        = 4
	)
	r := denseRun(t, n, R, d)
	want := r.simulate(t, func(i, k int) bool { return i == hostile })
	var log testutil.SyncBuffer
	opt := r.options(t.TempDir(), &log)
	opt.MinLearners, opt.QuorumGrace, opt.Linger = 2, 300*time.Millisecond, 100*time.Millisecond
	opt.CallTimeout = 5 * time.Second
	if raceEnabled {
		opt.RoundTimeout = 60 * time.Second
	}
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	k := maxChunkValues(d)
	if k < d/3 || k*8 > MaxMsgSize {
		t.Fatalf("the largest message carries %d values, want about MaxMsgSize/8 = %d", k, MaxMsgSize/8)
	}
	nan, inf, big := make([]float64, d), make([]float64, d), make([]float64, d)
	nan[d-1], inf[d-1] = math.NaN(), math.Inf(-1)
	for j := range big {
		big[j] = 1 // norm sqrt(d) = 512, tau B_g = 1
	}
	// Each attack is encoded once for each round it may be sent in.
	type attack struct {
		name   string
		chunks [R + 1][]preencoded // by open round
		code   codes.Code
		reason string
	}
	attacks := []attack{
		{name: "a NaN in the last entry", code: codes.InvalidArgument, reason: "is NaN"},
		{name: "an Inf in the last entry", code: codes.InvalidArgument, reason: "is -Inf"},
		{name: "norm 512", code: codes.InvalidArgument, reason: "norm"},
		{name: "round 2^30", code: codes.FailedPrecondition, reason: "update for round 1073741824"},
		{name: "a past round", code: codes.FailedPrecondition, reason: "update for round"},
		{name: "dimension d+1", code: codes.InvalidArgument, reason: "dimension 262145"},
	}
	for open := range R + 1 {
		for j, cs := range [][]*flv1.UpdateChunk{
			splitChunks(hostile, open, d, k, nan),
			splitChunks(hostile, open, d, k, inf),
			splitChunks(hostile, open, d, k, big),
			splitChunks(hostile, 1<<30, d, k, big),
			splitChunks(hostile, open-1, d, k, big),
			splitChunks(hostile, open, d+1, k, big[:k]),
		} {
			attacks[j].chunks[open] = encodeChunks(t, cs)
		}
	}
	nan, inf, big = nil, nil, nil

	defer debug.SetGCPercent(debug.SetGCPercent(10)) // the heap in use then follows what is live
	liveBefore := liveHeap()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goBefore := runtime.NumGoroutine()
	peak := heapPeak()

	s := serveServer(t, srv)
	clients := make([]flv1.FederationClient, conns)
	ccs := make([]*grpc.ClientConn, conns)
	for c := range clients {
		if ccs[c], err = grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			t.Fatal(err)
		}
		clients[c] = flv1.NewFederationClient(ccs[c])
	}
	ctx, stopFlood := context.WithCancel(context.Background())
	var (
		flood    sync.WaitGroup
		phase2   atomic.Bool // the honest learners run: most goroutines stop
		mu       sync.Mutex
		refusals = make([]int, len(attacks)) // calls refused with the attack's own reason
		limited  atomic.Int64                // refused with ResourceExhausted
	)
	for g := range goroutines {
		cl := clients[g%conns]
		flood.Go(func() {
			for j := g; ctx.Err() == nil; j++ {
				if phase2.Load() && g >= besideHonest {
					return
				}
				a := attacks[j%len(attacks)]
				open, _ := s.srv.Round()
				err := sendEncoded(cl, a.chunks[open])
				switch code := status.Code(err); {
				case code == codes.OK:
					t.Errorf("%s: accepted", a.name)
				case code == a.code && strings.Contains(status.Convert(err).Message(), a.reason):
					mu.Lock()
					refusals[j%len(attacks)]++
					mu.Unlock()
				case code == codes.ResourceExhausted:
					limited.Add(1)
				case code == codes.FailedPrecondition || code == codes.Canceled || code == codes.Unavailable || code == codes.DeadlineExceeded:
					// The round moved on while the upload was sent, the
					// run ended, or a loaded machine.
				default:
					t.Errorf("%s: %v, want %v containing %q, or a refusal by the call limits or the round", a.name, err, a.code, a.reason)
				}
			}
		})
	}

	// The hostile peer alone, long enough for each goroutine to send
	// every attack more than once. Every 50 ms a collection shows what
	// is live (liveHeapPeak): the uploads in progress hold it, and it does
	// not depend on how late the collector runs on a loaded machine, which
	// the peak of the heap in use does (it is logged, not judged: at a
	// load of 5 it grew by 36 to 47 MiB alone, and by 49 with another
	// package's tests beside it). Before, the judged value was HeapAlloc
	// read after a collection, which also counts what the flood's
	// goroutines allocated between the two.
	live := liveHeapPeak()
	time.Sleep(3 * time.Second)
	l := live()
	p, _ := peak()
	growth := int64(l) - int64(liveBefore)
	const hostileHeapBound = DefaultCallsPerLearner*2*8*d + n*DefaultCallsPerLearner*2*MaxMsgSize + goroutines*StreamWindow + 8<<20
	t.Logf("the hostile peer alone for 3 s: live heap %d MiB before, at most %d MiB (+%d MiB, bound %d MiB); peak heap in use %d MiB", liveBefore>>20, l>>20, growth>>20, hostileHeapBound>>20, p>>20)
	if growth > hostileHeapBound {
		t.Errorf("the live heap grew by %d MiB under the hostile uploads, want at most %d MiB", growth>>20, hostileHeapBound>>20)
	}

	phase2.Store(true)
	finals, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	stopFlood()
	flood.Wait()
	for i, err := range errs {
		if err != nil {
			l := log.String()
			t.Fatalf("honest learner %d: %v; log ends %s", i, err, l[max(0, len(l)-2000):])
		}
		if !testutil.SameBits(finals[i], want[R]) {
			t.Fatalf("honest learner %d: final model differs from the run without learner 2", i)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	got := readRounds(t, opt.Dir, R)
	for k, x := range got {
		if !finite(x) {
			t.Fatalf("x^%d has a non-finite entry", k)
		}
	}
	requireSameModels(t, got, want)
	for j, a := range attacks {
		t.Logf("%s: refused %d times with its reason", a.name, refusals[j])
		if refusals[j] == 0 {
			t.Errorf("%s: never refused with %v %q (only by the call limits?)", a.name, a.code, a.reason)
		}
	}
	t.Logf("%d calls refused by the call limits", limited.Load())

	// Nothing of the refused uploads is left once the calls have ended.
	finals, got = nil, nil
	s.stop()
	for _, cc := range ccs {
		cc.Close()
	}
	if !eventually(func() bool { return runtime.NumGoroutine() <= goBefore+4 }) {
		t.Errorf("%d goroutines after the run, %d before", runtime.NumGoroutine(), goBefore)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// What stays: the honest run's data, models and noise (a few
	// vectors of d values); not the hundreds of refused updates.
	if g := int64(after.HeapInuse) - int64(before.HeapInuse); g > 8<<20 {
		t.Errorf("heap in use grew by %d MiB over the run and stayed, want at most 8 MiB", g>>20)
	}
}

// Connections that open and never send (not even HTTP/2's preface), and
// gRPC connections that complete their handshake and make no call, hold
// no call slot: two honest learners run beside 256 + 32 of them and
// release the simulation's models bit for bit. They are not bounded by
// the server (docs/distributed.md: limit them at the listener), but each
// costs a bounded amount: heap and goroutine stacks grow by at most 64
// KiB a connection, gRPC's read and write buffers for one (32 KiB each)
// if it held both (measured: about 11 KiB, the client's side of the gRPC
// connections, in this process, included).
func TestPlainIdleConnections(t *testing.T) {
	const (
		raw, idle = 256, 32
		perConn   = 64 << 10
	)
	r := newRun(t, 2, 2, 1, 3)
	want := r.simulate(t, nil)
	opt := r.options(t.TempDir(), nil)
	opt.Linger = 100 * time.Millisecond
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	s := serveServer(t, srv)
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for range raw {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for range idle {
		cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		cc.Connect()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
			if !cc.WaitForStateChange(ctx, st) {
				t.Fatalf("an idle gRPC connection did not become ready: %v", st)
			}
		}
		cancel()
	}
	// The server has taken every raw connection once its goroutines for
	// them are running: wait for the heap to settle.
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	var held runtime.MemStats
	runtime.ReadMemStats(&held)
	growth := int64(held.HeapInuse+held.StackInuse) - int64(before.HeapInuse+before.StackInuse)
	t.Logf("%d silent and %d idle gRPC connections: heap and stacks +%d KiB (%d KiB a connection; bound %d KiB a connection)",
		raw, idle, growth>>10, growth/(raw+idle)>>10, perConn>>10)
	if growth > (raw+idle)*perConn {
		t.Errorf("heap grew by %d KiB for %d connections, want at most %d KiB each", growth>>10, raw+idle, perConn>>10)
	}
	requireMatchesSimulation(t, r, s, opt.Dir, []int{0, 1}, nil, want)
}

// ofLearner returns the slots learner i has taken.
func (l *slots) ofLearner(i int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perLearner[i]
}

// Learner 0's identity claimed by three connections at once (no
// authentication): two uploads of different valid updates for round 0
// are in progress together (both past their first chunk), a third is
// refused by the per-learner limit. Exactly one of the two is taken, the
// other answered AlreadyExists, and round 0 releases what the taken
// update, learner 1's and the noise give (fedopt's server on the same
// updates and key), counted once.
func TestPlainIdentityClaimedTwice(t *testing.T) {
	r := newRun(t, 2, 1, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.Linger = 100 * time.Millisecond
	s := serve(t, opt, nil)
	updates := make([][]float64, 2)
	for i := range updates {
		l, err := fedopt.NewLearner(dpmodel.Logistic{}, r.data.Stream(i), r.cfg, r.tau, r.d)
		if err != nil {
			t.Fatal(err)
		}
		updates[i] = make([]float64, r.d)
		if err := l.Update(updates[i], 0, make([]float64, r.d)); err != nil {
			t.Fatal(err)
		}
	}
	claims := [][]float64{updates[0], {0.25, -0.25, 0.5}} // the honest update and an impostor's
	streams := make([]grpc.ClientStreamingClient[flv1.UpdateChunk, flv1.SubmitResponse], 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c := range streams {
		st, err := rawClient(t, s.addr).SubmitUpdate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&flv1.UpdateChunk{Learner: 0, Dim: 3, Values: claims[c][:1]}); err != nil {
			t.Fatal(err)
		}
		streams[c] = st
	}
	if !eventually(func() bool { return s.srv.uploads.ofLearner(0) == 2 }) {
		t.Fatal("the two uploads of learner 0 are not in progress together")
	}
	err := sendUpdate(rawClient(t, s.addr), &flv1.UpdateChunk{Learner: 0, Dim: 3, Values: updates[0]})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "learner 0 has 2 uploads in progress") {
		t.Errorf("a third upload of learner 0: %v, want ResourceExhausted naming the per-learner limit", err)
	}
	answers := make([]error, 2)
	var wg sync.WaitGroup
	for c, st := range streams {
		wg.Go(func() {
			if err := st.Send(&flv1.UpdateChunk{Learner: 0, Dim: 3, Offset: 1, Values: claims[c][1:]}); err != nil {
				answers[c] = err
				return
			}
			_, answers[c] = st.CloseAndRecv()
		})
	}
	wg.Wait()
	taken := -1
	for c, err := range answers {
		switch status.Code(err) {
		case codes.OK:
			if taken >= 0 {
				t.Fatal("both uploads of learner 0 for round 0 were taken")
			}
			taken = c
		case codes.AlreadyExists:
		default:
			t.Fatalf("upload %d of learner 0: %v, want OK or AlreadyExists", c, err)
		}
	}
	if taken < 0 {
		t.Fatalf("neither upload of learner 0 was taken: %v", answers)
	}
	if err := sendUpdate(rawClient(t, s.addr), &flv1.UpdateChunk{Learner: 1, Dim: 3, Values: updates[1]}); err != nil {
		t.Fatal(err)
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	m, err := r.noise(0, *r.key())
	if err != nil {
		t.Fatal(err)
	}
	core, err := fedopt.NewServer(r.cfg, r.shape(), m)
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Release([][]float64{claims[taken], updates[1]}); err != nil {
		t.Fatal(err)
	}
	got := readRounds(t, opt.Dir, 1)
	if !testutil.SameBits(got[1], core.Model()) {
		t.Fatalf("x^1 = %v, want %v: upload %d of learner 0 counted once, learner 1's and the noise", got[1], core.Model(), taken)
	}
}

// A learner that submitted for round 0 polls GetModel for round 1, which
// never comes (learner 1 never submits, MinLearners = 2), from 8
// goroutines on 2 connections. At most MaxModelStreamsPerLearner of its
// polls are in progress at any time, the rest are refused with
// ResourceExhausted, each waiting one ends after MaxWait with
// DeadlineExceeded; the round times out and Run stops with
// ErrTooFewLearners without releasing round 1; then every poll is
// answered Unavailable at once, and once they stop the goroutines come
// back to what they were.
func TestPlainPollForARoundThatNeverComes(t *testing.T) {
	const pollers = 8
	r := newRun(t, 2, 2, 1, 3)
	opt := r.options(t.TempDir(), nil)
	// A poll answered DeadlineExceeded must start MaxWait before the round
	// times out (counted from the first upload below): 2 s for the joins
	// and the pollers to start, 5 under -race, where the machine is
	// slowest.
	opt.RoundTimeout, opt.MaxWait = 3*time.Second, time.Second
	if raceEnabled {
		opt.RoundTimeout = 6 * time.Second
	}
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	s := serveServer(t, srv)
	l, err := fedopt.NewLearner(dpmodel.Logistic{}, r.data.Stream(0), r.cfg, r.tau, r.d)
	if err != nil {
		t.Fatal(err)
	}
	u := make([]float64, r.d)
	if err := l.Update(u, 0, make([]float64, r.d)); err != nil {
		t.Fatal(err)
	}
	if err := sendUpdate(rawClient(t, s.addr), &flv1.UpdateChunk{Learner: 0, Dim: 3, Values: u}); err != nil {
		t.Fatal(err)
	}
	clients := []flv1.FederationClient{rawClient(t, s.addr), rawClient(t, s.addr)}
	for _, cl := range clients { // connect them before counting goroutines
		if _, err := cl.Join(context.Background(), &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 1}); err != nil {
			t.Fatal(err)
		}
	}
	goBefore := runtime.NumGoroutine()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		polls   sync.WaitGroup
		mu      sync.Mutex
		codesOf = map[codes.Code]int{}
		stopped atomic.Bool // Run has returned
		slow    atomic.Int64
	)
	for g := range pollers {
		cl := clients[g%2]
		polls.Go(func() {
			for ctx.Err() == nil {
				after := stopped.Load()
				st, err := cl.GetModel(ctx, &flv1.GetModelRequest{Learner: 0})
				if err == nil {
					_, err = st.Recv()
				}
				if ctx.Err() != nil {
					return
				}
				code := status.Code(err)
				// After Run returned: Unavailable, or refused by the
				// limit beside a poll being answered so; never a wait,
				// which ends with DeadlineExceeded. The code says so
				// without a clock: an answer at once may take longer
				// than MaxWait on a loaded machine under -race.
				if after && code != codes.Unavailable && code != codes.ResourceExhausted {
					slow.Add(1)
				}
				if code == codes.OK {
					t.Errorf("a poll for round 1 got a model: %v", err)
				}
				mu.Lock()
				codesOf[code]++
				mu.Unlock()
				time.Sleep(time.Millisecond) // hammering, but not the shared machine's cores
			}
		})
	}
	var most atomic.Int64
	sampling := make(chan struct{})
	go func() {
		defer close(sampling)
		for ctx.Err() == nil {
			if n := int64(s.srv.streams.inUse()); n > most.Load() {
				most.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var runErr error
	select {
	case runErr = <-s.errc:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop after the round timeout")
	}
	if !errors.Is(runErr, ErrTooFewLearners) {
		t.Errorf("Run: %v, want ErrTooFewLearners", runErr)
	}
	stopped.Store(true)
	time.Sleep(500 * time.Millisecond) // polls after Run returned
	stop()
	polls.Wait()
	<-sampling
	t.Logf("poll answers %v; at most %d model streams in progress", codesOf, most.Load())
	if m := most.Load(); m > DefaultCallsPerLearner {
		t.Errorf("%d model streams of learner 0 in progress at once, want at most %d", m, DefaultCallsPerLearner)
	}
	for _, c := range []codes.Code{codes.ResourceExhausted, codes.DeadlineExceeded, codes.Unavailable} {
		if codesOf[c] == 0 {
			t.Errorf("no poll was answered %v", c)
		}
	}
	if n := slow.Load(); n > 0 {
		t.Errorf("%d polls after Run returned waited (not answered Unavailable or ResourceExhausted)", n)
	}
	if _, err := ReadRound(opt.Dir, 1); err == nil {
		t.Error("round 1 was released")
	}
	if !eventually(func() bool { return runtime.NumGoroutine() <= goBefore }) {
		t.Errorf("%d goroutines after the polls, %d before", runtime.NumGoroutine(), goBefore)
	}
}

// rawStream opens stream id on fr, an HTTP/2 connection to the server,
// with the header block hdr, and sends msg (a gRPC message, nil for none)
// without ending the stream.
func rawStream(fr *http2.Framer, id uint32, hdr []byte, msg []byte) error {
	const frame = 1 << 14 // HTTP/2's default largest frame
	first := hdr[:min(frame, len(hdr))]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(first) == len(hdr)}); err != nil {
		return err
	}
	for off := len(first); off < len(hdr); off += frame {
		end := min(off+frame, len(hdr))
		if err := fr.WriteContinuation(id, end == len(hdr), hdr[off:end]); err != nil {
			return err
		}
	}
	if msg == nil {
		return nil
	}
	framed := append([]byte{0, 0, 0, 0, 0}, msg...) // uncompressed, then the length
	binary.BigEndian.PutUint32(framed[1:], uint32(len(msg)))
	return fr.WriteData(id, false, framed)
}

// callHeaders is the hpack block of a call of method with an extra
// header of size bytes, every field "never indexed", so that the block
// does not depend on the connection's state and one copy serves every
// stream.
func callHeaders(t *testing.T, method string, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/" + flv1.Federation_ServiceDesc.ServiceName + "/" + method},
		{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"},
		{"x-pad", strings.Repeat("{", size)},
	} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true}); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// A peer that sends calls with 8 MiB of headers each (HTTP/2 allows a
// peer to send any size; gRPC's default limit is 16 MiB a call), on 4
// connections of 16 streams: model streams of learners 0 and 1, which
// wait for a round that learner 2 holds up, and uploads that send
// nothing, which wait for their first chunk. Under gRPC's default the
// server held every call's headers while it decoded them, and those of
// the calls the limits let in while they waited (MaxWait, CallTimeout):
// the heap peaked 400 MiB higher. The server takes
// headers of at most MaxHeaderListSize bytes (ServerOptionsGRPC), and
// drops the calls and connections that send more before it holds them:
// the live heap, marked by a collection every 50 ms until the server
// has closed every connection (or for 2 s, less than MaxWait and
// CallTimeout, for which a server that let the calls in would hold
// them), grows by at most MaxHeaderListSize for each call the limits let
// in, 64 KiB for each connection, and 8 MiB for the rest.
func TestPlainHugeHeaders(t *testing.T) {
	const (
		conns, streams = 4, MaxStreamsPerConn
		pad            = 8 << 20
	)
	r := newRun(t, 3, 1, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.MaxWait, opt.CallTimeout = 3*time.Second, 3*time.Second
	s := serve(t, opt, nil)
	for i := range 2 { // learners 0 and 1 submit; their model streams wait
		if err := sendUpdate(rawClient(t, s.addr), &flv1.UpdateChunk{Learner: int32(i), Dim: 3, Values: []float64{0, 0, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	model := callHeaders(t, "GetModel", pad)
	upload := callHeaders(t, "SubmitUpdate", pad)
	requests := make([][]byte, 2)
	for i := range requests {
		b, err := proto.Marshal(&flv1.GetModelRequest{Learner: int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		requests[i] = b
	}

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	before := liveHeap()
	peak := heapPeak()
	live := liveHeapPeak()
	var wg sync.WaitGroup
	closed := make([]chan struct{}, conns) // closed once the server closed connection c
	for c := range conns {
		nc, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		closed[c] = make(chan struct{})
		wg.Go(func() {
			fr := http2.NewFramer(nc, nc)
			go func() { // the server's frames: drained, never answered
				defer close(closed[c])
				for {
					if _, err := fr.ReadFrame(); err != nil {
						return
					}
				}
			}()
			if _, err := nc.Write([]byte(http2.ClientPreface)); err != nil {
				return
			}
			if err := fr.WriteSettings(); err != nil {
				return
			}
			for k := range streams {
				id := uint32(2*k + 1)
				var err error
				if k%2 == 0 {
					err = rawStream(fr, id, model, requests[(c+k/2)%2])
				} else {
					err = rawStream(fr, id, upload, nil)
				}
				if err != nil {
					return // the server closed the connection
				}
			}
		})
	}
	wg.Wait()
	// Every connection closed by the server: it has done all it will with
	// their calls. A server that lets the calls in keeps the connections
	// and holds the calls for MaxWait or CallTimeout (3 s): the 2 s
	// fallback samples while it does.
	var gone int
	fallback := time.After(2 * time.Second)
wait:
	for _, ch := range closed {
		select {
		case <-ch:
			gone++
		case <-fallback:
			break wait
		}
	}
	l := live()
	p, _ := peak()
	growth := int64(l) - int64(before)
	held := 2*DefaultCallsPerLearner + 3*DefaultCallsPerLearner // the model streams of learners 0 and 1, MaxUploads
	bound := int64(held*MaxHeaderListSize + conns*64<<10 + 8<<20)
	t.Logf("%d connections of %d calls with %d MiB of headers each (%d closed by the server): live heap %d MiB before, at most %d MiB (+%d MiB, bound %d MiB); peak heap in use %d MiB",
		conns, streams, pad>>20, gone, before>>20, l>>20, growth>>20, bound>>20, p>>20)
	if growth > bound {
		t.Errorf("the live heap grew by %d MiB under calls with huge headers, want at most %d MiB", growth>>20, bound>>20)
	}
	// The server goes on: learner 2 completes the round.
	if err := sendUpdate(rawClient(t, s.addr), &flv1.UpdateChunk{Learner: 2, Dim: 3, Values: []float64{0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { r, _ := s.srv.Round(); return r == 1 }) {
		t.Error("round 0 was not released after the huge headers")
	}
}

// h2peer is a raw HTTP/2 client connection that keeps to the server's
// flow control (the server closes a connection that does not), and
// sends whatever its caller asks, however un-gRPC-like.
type h2peer struct {
	fr  *http2.Framer
	wmu sync.Mutex // guards writes on fr

	mu      sync.Mutex
	cond    *sync.Cond
	conn    int64            // the connection's send window
	streams map[uint32]int64 // each stream's send window; negative: reset
	initial int64            // the window a new stream starts with
	dead    bool
}

// dialH2 connects an h2peer to addr (closed when the test ends).
func dialH2(t *testing.T, addr string) *h2peer {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	const window = 65535 // HTTP/2's initial windows
	p := &h2peer{fr: http2.NewFramer(nc, nc), conn: window, initial: window, streams: map[uint32]int64{}}
	p.cond = sync.NewCond(&p.mu)
	if _, err := nc.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := p.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go p.read()
	return p
}

// read takes the server's frames: window updates, settings (acked) and
// resets; it ends when the connection does.
func (p *h2peer) read() {
	for {
		f, err := p.fr.ReadFrame()
		p.mu.Lock()
		switch f := f.(type) {
		case nil:
			p.dead = true
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				p.conn += int64(f.Increment)
			} else {
				p.streams[f.StreamID] += int64(f.Increment)
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					for id := range p.streams {
						p.streams[id] += int64(v) - p.initial
					}
					p.initial = int64(v)
				}
				p.wmu.Lock()
				p.fr.WriteSettingsAck()
				p.wmu.Unlock()
			}
		case *http2.RSTStreamFrame:
			p.streams[f.StreamID] = math.MinInt64 / 2
		}
		p.cond.Broadcast()
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// send opens stream id with the header block hdr and sends msg as one
// gRPC message within the windows, without ending the stream; it
// reports whether all of it went out.
func (p *h2peer) send(id uint32, hdr, msg []byte) bool {
	p.mu.Lock()
	p.streams[id] = p.initial
	p.mu.Unlock()
	p.wmu.Lock()
	err := rawStream(p.fr, id, hdr, nil)
	p.wmu.Unlock()
	if err != nil {
		return false
	}
	framed := append([]byte{0, 0, 0, 0, 0}, msg...) // uncompressed, then the length
	binary.BigEndian.PutUint32(framed[1:], uint32(len(msg)))
	for len(framed) > 0 {
		p.mu.Lock()
		for !p.dead && p.streams[id] >= 0 && (p.conn <= 0 || p.streams[id] == 0) {
			p.cond.Wait()
		}
		if p.dead || p.streams[id] < 0 {
			p.mu.Unlock()
			return false
		}
		n := min(int64(len(framed)), p.conn, p.streams[id], 1<<14)
		p.conn -= n
		p.streams[id] -= n
		p.mu.Unlock()
		p.wmu.Lock()
		err := p.fr.WriteData(id, false, framed[:n])
		p.wmu.Unlock()
		if err != nil {
			return false
		}
		framed = framed[n:]
	}
	return true
}

// A peer sends GetModel and Join requests padded to the message limit
// (an unknown field of almost 1 MiB, which the decoder keeps) on 4
// connections of 16 streams, and never ends the streams. gRPC hands a
// call with a single request to the server only once the stream has
// ended (to check that no second request follows), so these calls never
// reach the server's code: they take no call slot, no CallTimeout or
// MaxWait ends them, and two honest learners run beside them to the
// simulation's models bit for bit. Each holds its request until the peer
// closes the connection: the heap grows by at most MaxStreamsPerConn x
// MaxMsgSize (16 MiB) for each connection, plus 16 MiB for the rest
// (measured: about 68 MiB for the 4). SecAgg requests (unary, as Join)
// behave the same. What bounds them is the number of connections, which
// the server does not (docs/distributed.md).
func TestPlainHalfOpenRequests(t *testing.T) {
	const conns = 4
	r := newRun(t, 2, 2, 1, 3)
	want := r.simulate(t, nil)
	opt := r.options(t.TempDir(), nil)
	opt.Linger = 100 * time.Millisecond
	s := serve(t, opt, nil)
	// Model streams and joins, each request padded to the limit.
	hdrs := [][]byte{callHeaders(t, "GetModel", 0), callHeaders(t, "Join", 0)}
	reqs := make([][]byte, 2)
	for j, m := range []proto.Message{&flv1.GetModelRequest{Learner: 0}, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0}} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = protowire.AppendTag(b, 1000, protowire.BytesType)
		reqs[j] = protowire.AppendBytes(b, make([]byte, MaxMsgSize-64))
	}

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var (
		wg   sync.WaitGroup
		sent atomic.Int64
	)
	for range conns {
		p := dialH2(t, s.addr)
		wg.Go(func() {
			for k := range MaxStreamsPerConn {
				if p.send(uint32(2*k+1), hdrs[k%2], reqs[k%2]) {
					sent.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := sent.Load(); n != conns*MaxStreamsPerConn {
		t.Fatalf("%d of %d padded requests went out", n, conns*MaxStreamsPerConn)
	}
	time.Sleep(500 * time.Millisecond) // the server has decoded them
	if n := s.srv.streams.inUse(); n != 0 {
		t.Errorf("%d model streams in progress for requests that never ended", n)
	}
	requireMatchesSimulation(t, r, s, opt.Dir, []int{0, 1}, nil, want)
	runtime.GC()
	var held runtime.MemStats
	runtime.ReadMemStats(&held)
	growth := int64(held.HeapInuse) - int64(before.HeapInuse)
	bound := int64(conns*MaxStreamsPerConn*MaxMsgSize + 16<<20)
	t.Logf("%d requests of %d KiB that never end: heap +%d MiB after the run (bound %d MiB)", sent.Load(), len(reqs[0])>>10, growth>>20, bound>>20)
	if growth > bound {
		t.Errorf("heap grew by %d MiB, want at most %d MiB", growth>>20, bound>>20)
	}
}
