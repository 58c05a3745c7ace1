package fednet

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// discard is a logger that writes nothing.
var discard = slog.New(slog.DiscardHandler)

// rawClient connects a protocol-speaking test client to addr.
func rawClient(t *testing.T, addr string) flv1.FederationClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return flv1.NewFederationClient(conn)
}

// firstChunk fetches the first chunk of learner i's model, with no witness.
func firstChunk(t *testing.T, cl flv1.FederationClient, i int) *flv1.ModelChunk {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cl.GetModel(ctx, &flv1.GetModelRequest{Learner: int32(i)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// A witness a learner cannot have received (a round the server never
// released, or a digest it never sent) proves nothing: the server refuses
// that call but does not stop. Otherwise one lying learner (or, without
// mutual TLS, anyone who reaches the port) would halt the run for good.
func TestForgedWitnessDoesNotStopServer(t *testing.T) {
	r := newRun(t, 2, 3, 1, 3)
	opt := r.options(t.TempDir(), nil)
	s := serve(t, opt, nil)
	cl := rawClient(t, s.addr)
	c := firstChunk(t, cl, 0)
	for _, tc := range []struct {
		name   string
		round  int32
		digest []byte
	}{
		{"a later round", 2, c.GetDigest()},
		{"a later round, digest of zeros", 2, make([]byte, len(c.GetDigest()))},
		{"another model of round 0", 0, make([]byte, len(c.GetDigest()))},
		{"a short digest", 0, c.GetDigest()[:8]},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		round := tc.round
		st, err := cl.GetModel(ctx, &flv1.GetModelRequest{Learner: 0, SeenRound: &round, SeenRun: c.GetRun(), SeenDigest: tc.digest})
		if err == nil {
			_, err = st.Recv()
		}
		cancel()
		if code := status.Code(err); code != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", tc.name, err)
		}
	}
	// The run goes on: honest learners finish it with the simulation's
	// models.
	want := r.simulate(t, nil)
	_, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil {
		t.Fatalf("server: %v", err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
}

// hostileSecAgg is a FederationClient whose SecAgg answers are scripted:
// a hostile or broken server, without the network in between.
type hostileSecAgg struct {
	flv1.FederationClient // nil: any other call panics
	run                   []byte
	calls                 int
	answer                func(k int, req *flv1.SecAggRequest) (*flv1.SecAggResponse, error)
}

func (h *hostileSecAgg) SecAgg(ctx context.Context, req *flv1.SecAggRequest, _ ...grpc.CallOption) (*flv1.SecAggResponse, error) {
	if err := ctx.Err(); err != nil { // as a gRPC call does
		return nil, status.FromContextError(err).Err()
	}
	h.calls++
	resp, err := h.answer(h.calls, req)
	if resp != nil {
		resp.Run = h.run
	}
	return resp, err
}

// hostileLearner is learner 0's secure side of a run of 3 learners, bound
// to run, as RunLearner makes it.
func hostileLearner(t *testing.T, run []byte) *secureLearner {
	t.Helper()
	rc := &flv1.RunConfig{Learners: 3, Tau: 1, Clip: 1, Params: 4,
		SecureAggregation: &flv1.SecureAggregation{Threshold: 2, RingBits: 64, ScaleBits: 8}}
	sl, err := newSecureLearner(rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sl.state, err = openLearnerState(t.TempDir(), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sl.state.Close() })
	if err := sl.state.bind(run, false); err != nil {
		t.Fatal(err)
	}
	return sl
}

// A hostile server cannot make a secure learner keep a secagg.Client for
// every attempt it names, nor spin: each attempt it opens replaces the
// previous one's client, and answers that make no progress (WAIT at once,
// the same phase again, a refusal of what it asked for, DeadlineExceeded
// at once) are followed by a pause.
func TestLearnerSurvivesHostileSecAgg(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	run := make([]byte, 16)
	run[0] = 1
	answer := func(a uint32, p int32) *flv1.SecAggResponse {
		return &flv1.SecAggResponse{State: flv1.SecAggState_SEC_AGG_STATE_ANSWER, Attempt: a, Phase: p}
	}
	for _, tc := range []struct {
		name   string
		answer func(k int, req *flv1.SecAggRequest) (*flv1.SecAggResponse, error)
		// maxCalls bounds the calls within the test's 400 ms.
		maxCalls int
	}{
		{"a new attempt in every answer", func(k int, _ *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
			return answer(uint32(k), 0), nil
		}, 20},
		{"WAIT at once", func(int, *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
			return &flv1.SecAggResponse{State: flv1.SecAggState_SEC_AGG_STATE_WAIT}, nil
		}, 20},
		{"the same phase again", func(int, *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
			return answer(0, 0), nil
		}, 20},
		{"refusing what it asked for", func(_ int, req *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
			if req.GetHasMessage() {
				return nil, status.Error(codes.FailedPrecondition, "no")
			}
			return answer(0, 0), nil
		}, 20},
		{"DeadlineExceeded at once", func(int, *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
			return nil, status.Error(codes.DeadlineExceeded, "not yet")
		}, 20},
	} {
		sl := hostileLearner(t, run)
		h := &hostileSecAgg{run: run, answer: tc.answer}
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		opt := LearnerOptions{ID: 0, CallTimeout: time.Second, WaitTimeout: time.Second}
		err := sl.run(ctx, h, retrier{giveUp: time.Second, log: discard}, opt, discard, 0, make([]float64, 4), true)
		cancel()
		if err == nil || ctx.Err() == nil {
			t.Errorf("%s: %v, want the context's end", tc.name, err)
		}
		if h.calls > tc.maxCalls {
			t.Errorf("%s: %d calls in 400 ms, want at most %d", tc.name, h.calls, tc.maxCalls)
		}
		if len(sl.clients) > 1 {
			t.Errorf("%s: the learner keeps %d clients, want at most 1", tc.name, len(sl.clients))
		}
	}
}

// spinServer serves the model of round 0 again and again and takes every
// update: a hostile server that tries to make a plain learner spin.
type spinServer struct {
	fakeServer
	submits atomic.Int64
}

func (f *spinServer) SubmitUpdate(st grpc.ClientStreamingServer[flv1.UpdateChunk, flv1.SubmitResponse]) error {
	for {
		if _, err := st.Recv(); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
	}
	f.submits.Add(1)
	return st.SendAndClose(&flv1.SubmitResponse{})
}

// A plain learner served the same round again and again pauses before it
// works on it again: a server's answers alone never make it spin.
func TestLearnerDoesNotSpinOnRepeatedRound(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := &spinServer{fakeServer: fakeServer{
		join: &flv1.JoinResponse{ProtocolVersion: Protocol, Config: &flv1.RunConfig{Algorithm: "correlated", Eta: 0.05, Clip: 1,
			Model: "logistic", Learners: 2, Rounds: 4, Tau: 2, Features: 3, Params: 3, Epochs: 1}},
		model: []*flv1.ModelChunk{{Round: 0, Dim: 3, Values: []float64{0, 0, 0}, Run: make([]byte, 16)}},
	}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	flv1.RegisterFederationServer(g, f)
	go g.Serve(lis)
	defer g.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = RunLearner(ctx, LearnerOptions{Addr: lis.Addr().String(), ID: 1, Creds: insecure.NewCredentials(),
		Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return ds.Stream(1), nil }, GiveUp: time.Second})
	if ctx.Err() == nil {
		t.Fatalf("the learner stopped with %v, want it to run until its context ends", err)
	}
	if n := f.submits.Load(); n > 15 {
		t.Errorf("%d updates for round 0 in 500 ms, want at most 15", n)
	}
}

// An operator who removes the lock file of a running server (a "stale"
// lock) lets a second server start on the directory; the first then
// stops at its next release before serving it, so only one of them ever
// serves a round. Likewise a learner whose lock file was removed stops
// before it sends an unmask answer it recorded.
func TestRemovedLockFileStopsTheHolder(t *testing.T) {
	dir := t.TempDir()
	first, err := openState(dir, testOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer first.lock.Close()
	if err := first.release(Released{Round: 1, Updates: 2, X: testModel(1)}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	second, err := openState(dir, testOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer second.lock.Close()
	if err := first.release(Released{Round: 2, Updates: 2, X: testModel(2)}); err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Fatalf("the first server released round 2 after its lock file was replaced: %v", err)
	}
	if err := second.release(Released{Round: 2, Updates: 1, X: testModel(-2)}); err != nil {
		t.Fatalf("the second server: %v", err)
	}

	ldir := t.TempDir()
	ls, err := openLearnerState(ldir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	if err := ls.bind(make([]byte, 16), false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ldir, lockFile)); err != nil {
		t.Fatal(err)
	}
	if err := ls.recordUnmask(0, 0, []byte("answer")); err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Fatalf("the learner recorded an unmask answer to send after its lock file was removed: %v", err)
	}
}

// Uploads that carry no chunk, and masked inputs sent to a server of a
// plain run, are refused with a reason that names them.
func TestEmptyAndMisdirectedUploads(t *testing.T) {
	r := newRun(t, 2, 1, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.Linger = 100 * time.Millisecond
	s := serve(t, opt, nil)
	cl := rawClient(t, s.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	up, err := cl.SubmitUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = up.CloseAndRecv()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no chunk") {
		t.Errorf("an empty update: %v, want InvalidArgument naming the missing chunk", err)
	}
	mk, err := cl.SubmitMasked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server may refuse the call before it reads the chunk: Send then
	// returns io.EOF, and the status comes from CloseAndRecv.
	if err := mk.Send(&flv1.MaskedChunk{Learner: 0, Round: 0, Dim: 3, Values: []uint64{1, 2, 3}}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	_, err = mk.CloseAndRecv()
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "does not use secure aggregation") {
		t.Errorf("a masked input to a plain run: %v, want FailedPrecondition saying the run does not use secure aggregation", err)
	}
}

// A running server's directory moved away and a copy put in its place (a
// backup taken with mv and cp): the server, which writes by path, would
// write into the copy, whose lock it does not hold, and a restart on the
// moved original (its inode matches run.json) would resume behind what
// was served. The server stops at its next release instead, before
// serving it, so the original resumes where the served rounds end.
func TestMovedDirectoryStopsTheServer(t *testing.T) {
	base := t.TempDir()
	dir, moved := filepath.Join(base, "state"), filepath.Join(base, "moved")
	st, err := openState(dir, testOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.lock.Close()
	if err := st.release(Released{Round: 1, Updates: 2, X: testModel(1)}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name := range snapshot(t, moved) {
		cp(t, moved, dir, name)
	}
	if err := st.release(Released{Round: 2, Updates: 2, X: testModel(2)}); err == nil || !strings.Contains(err.Error(), "removed or replaced") {
		t.Fatalf("the server released round 2 into a copy of its directory: %v", err)
	}
	st.lock.Close()
	again, err := openState(moved, testOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	defer again.lock.Close()
	if again.last.Round != 1 {
		t.Fatalf("the original resumes at round %d, want 1 (round 2 was never served)", again.last.Round)
	}
	if err := reopen(dir, true); err == nil || !strings.Contains(err.Error(), "copy") {
		t.Fatalf("the copy: %v, want it refused as a copy", err)
	}
}
