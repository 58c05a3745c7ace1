package fednet

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// listenAt serves srv's calls on addr (without running its rounds) and
// returns the address and a function that stops serving.
func listenAt(t *testing.T, srv *Server, addr string) (string, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(ServerOptionsGRPC()...)
	srv.Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String(), g.Stop
}

// runRounds runs srv's rounds until ctx ends; the result comes on the
// channel.
func runRounds(ctx context.Context, srv *Server) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx) }()
	return errc
}

// unmasks records, per (round, attempt, learner), every distinct Unmask
// message any of the servers received.
type unmasks struct {
	mu   sync.Mutex
	seen map[[3]int][][]byte
}

func (u *unmasks) record(e secEvent) {
	if e.Phase != secagg.PhaseUnmask {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	k := [3]int{e.Round, int(e.Attempt), e.From}
	for _, b := range u.seen[k] {
		if bytes.Equal(b, e.Bytes) {
			return
		}
	}
	u.seen[k] = append(u.seen[k], e.Bytes)
}

// A secure server frozen inside round 0 (A), its lock file removed, is
// overtaken by a second server (B) on the same directory and address,
// which the learners follow: B resumes A's attempt, releases round 0 and
// is killed inside round 1, after its phase 2 closed, while learner 2
// restarts (its process loses its keys; its state directory stays). A
// thaws before B dies, closes its phase and stops at its lock check. A
// third server (C) then resumes B's attempt of round 1 at phase 3, not
// anything A wrote, and the run completes to the simulation's models;
// every learner answered the unmask phase of each (round, attempt) with
// one message, whichever server asked. Before A's writes were confined to
// its own generation's file, A's snapshot of round 0 replaced B's, C
// opened round 1's attempt 0 afresh, the restarted learner advertised new
// keys in it, and the other two stopped on the changed roster.
func TestStaleSecureServerOvertaken(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 2, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	seen := &unmasks{seen: map[[3]int][][]byte{}}

	a, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.hooks.record = seen.record
	a.opt.RoundTimeout = 2 * time.Second // once thawed, A closes its phase soon
	frozen, thaw := make(chan struct{}), make(chan struct{})
	var thawOnce sync.Once
	defer thawOnce.Do(func() { close(thaw) })
	a.hooks.afterClose = func(round int, _ uint32, p secagg.Phase) error {
		if round == 0 && p == secagg.PhaseAdvertise {
			close(frozen)
			<-thaw
		}
		return nil
	}
	addr, stopA := listenAt(t, a, "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	aErr := runRounds(ctx, a)

	base := t.TempDir()
	learnerDone := make([]chan learnerResult, r.n)
	startLearner := func(i int, stop func(int, secagg.Phase) bool) {
		o := secLearner(r, addr, i, filepath.Join(base, strconv.Itoa(i)))
		o.stopBefore = stop
		// The learners wait out A's end and B's start (NewServer on a
		// loaded machine took more than secLearner's 20 s in a CI run).
		o.GiveUp = 60 * time.Second
		go func() {
			x, err := RunLearner(ctx, o)
			learnerDone[i] <- learnerResult{x, err}
		}()
	}
	for i := range r.n {
		learnerDone[i] = make(chan learnerResult, 2)
		var stop func(int, secagg.Phase) bool
		if i == 2 {
			stop = func(round int, p secagg.Phase) bool {
				return round == 1 && p == secagg.PhaseConsistency
			}
		}
		startLearner(i, stop)
	}

	select {
	case <-frozen:
	case err := <-aErr:
		t.Fatalf("server A: %v before it froze", err)
	case <-ctx.Done():
		t.Fatal("server A never closed phase 0 of round 0")
	}
	stopA() // the learners lose A and find B at its address
	if err := removeLock(dir); err != nil {
		t.Fatal(err)
	}
	b, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	b.hooks.record = seen.record
	b.hooks.afterClose = func(round int, _ uint32, p secagg.Phase) error {
		if round != 1 || p != secagg.PhaseMasked {
			return nil
		}
		thawOnce.Do(func() { close(thaw) }) // A thaws, closes its phase (or fails it) and stops
		select {
		case err := <-aErr:
			if err == nil {
				t.Error("server A finished after its lock file was removed")
			} else {
				t.Logf("server A: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server A did not stop within 30 s of thawing")
		}
		return errCrash
	}
	_, stopB := listenAt(t, b, addr)
	if err := <-runRounds(ctx, b); !errors.Is(err, errCrash) {
		t.Fatalf("server B: %v, want the simulated crash", err)
	}
	stopB()
	b.Close()
	// Learner 2 restarts on its state directory, without its keys.
	if l := <-learnerDone[2]; !errors.Is(l.err, errStopped) {
		t.Fatalf("learner 2: %v, want it stopped before phase 3 of round 1", l.err)
	}
	startLearner(2, nil)

	c, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.round != 1 || c.sec.ctx.Attempt != 0 || c.sec.phase != secagg.PhaseConsistency {
		t.Errorf("server C resumed round %d, attempt %d, phase %v; want B's round 1, attempt 0, phase 3", c.round, c.sec.ctx.Attempt, c.sec.phase)
	}
	c.hooks.record = seen.record
	c.opt.QuorumGrace = time.Second // learner 2 cannot answer phase 3
	_, _ = listenAt(t, c, addr)
	if err := <-runRounds(ctx, c); err != nil {
		t.Errorf("server C: %v", err)
		cancel()
	}
	for i := range r.n {
		if l := <-learnerDone[i]; l.err != nil {
			t.Errorf("learner %d: %v", i, l.err)
		}
	}
	if t.Failed() {
		return
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for k, msgs := range seen.seen {
		if len(msgs) > 1 {
			t.Errorf("learner %d answered the unmask phase of round %d, attempt %d with %d different messages", k[2], k[0], k[1], len(msgs))
		}
	}
}

// removeLock removes the state directory's lock file, as an operator
// cleaning up a "stale" lock would.
func removeLock(dir string) error { return os.Remove(filepath.Join(dir, lockFile)) }

// A learner that recorded its answer to the unmask phase of a (round,
// attempt) answers every later request for that phase of it, from a
// restarted or a stale server, whatever survivors it names, with the
// recorded bytes: in a new process too (a fresh secureLearner on the same
// state directory, no secagg.Client), so it never answers that phase for
// two survivor sets (its one message, made by one secagg.Client for the
// set it signed, holds a share of b_v or of s_v^SK for each v, never
// both). It sits out the phase in another attempt of the round, sending
// nothing.
func TestLearnerUnmaskAnswerIsFixed(t *testing.T) {
	run := make([]byte, 16)
	run[0] = 2
	dir := t.TempDir()
	recorded := []byte("the recorded Unmask message")
	ls, err := openLearnerState(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.bind(run, false); err != nil {
		t.Fatal(err)
	}
	if err := ls.recordUnmask(0, 0, recorded); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	rc := &flv1.RunConfig{Learners: 3, Tau: 1, Clip: 1, Params: 4,
		SecureAggregation: &flv1.SecureAggregation{Threshold: 2, RingBits: 64, ScaleBits: 8}}
	for _, c := range []struct {
		attempt   uint32
		survivors []int32
		want      [][]byte
	}{
		{0, []int32{0, 1, 2}, [][]byte{recorded}},
		{0, []int32{0, 1}, [][]byte{recorded}},
		{0, []int32{0, 2}, [][]byte{recorded}},
		{1, []int32{0, 1}, nil},
	} {
		sl, err := newSecureLearner(rc, 0)
		if err != nil {
			t.Fatal(err)
		}
		if sl.state, err = openLearnerState(dir, 0); err != nil {
			t.Fatal(err)
		}
		var sent [][]byte
		h := &hostileSecAgg{run: run, answer: func(k int, req *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
			if req.GetHasMessage() {
				sent = append(sent, bytes.Clone(req.GetMessage()))
			}
			if k > 3 || req.GetHasMessage() {
				return &flv1.SecAggResponse{State: flv1.SecAggState_SEC_AGG_STATE_DONE}, nil
			}
			return &flv1.SecAggResponse{State: flv1.SecAggState_SEC_AGG_STATE_ANSWER, Attempt: c.attempt,
				Phase: int32(secagg.PhaseUnmask), Survivors: c.survivors}, nil
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		opt := LearnerOptions{ID: 0, CallTimeout: time.Second, WaitTimeout: time.Second}
		err = sl.run(ctx, h, retrier{giveUp: time.Second, log: discard}, opt, discard, 0, make([]float64, 4), true)
		cancel()
		sl.state.Close()
		if err != nil {
			t.Fatalf("attempt %d, survivors %v: %v", c.attempt, c.survivors, err)
		}
		if len(sent) != len(c.want) || len(sent) == 1 && !bytes.Equal(sent[0], c.want[0]) {
			t.Errorf("attempt %d, survivors %v: the learner sent %q, want %q", c.attempt, c.survivors, sent, c.want)
		}
	}
}
