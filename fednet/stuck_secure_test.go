package fednet

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// stuckLog records, across the servers of one test, the sums they
// unmasked and the unmask answers they received, by round.
type stuckLog struct {
	mu      sync.Mutex
	sums    map[int]int
	answers map[int][]secEvent
	// both is closed once learners 0 and 1 answered phase 4 of round 1.
	both chan struct{}
}

func newStuckLog() *stuckLog {
	return &stuckLog{sums: map[int]int{}, answers: map[int][]secEvent{}, both: make(chan struct{})}
}

// watch sets srv's hooks to record into l.
func (l *stuckLog) watch(srv *Server) {
	srv.hooks.sum = func(r int, _ []uint64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.sums[r]++
	}
	srv.hooks.record = func(e secEvent) {
		if e.Phase != secagg.PhaseUnmask {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.answers[e.Round] = append(l.answers[e.Round], e)
		if e.Round == 1 && len(l.answers[1]) == 2 {
			close(l.both)
		}
	}
}

// A secure round whose attempt failed in phase 4 after more than n - T
// learners recorded their unmask answers can no longer complete, and the
// server says so rather than wait. n = 3, T = 2, R = 2: round 0 is
// released; in round 1 learners 0 and 1 answer phase 4 of attempt 0 and
// learner 2 stops before it; the server is killed in the quorum grace, and
// learners 0 and 1 stay away. The restarted server resumes phase 4, which
// times out without an answer: attempt 0 failed. The next restart opens
// attempt 1; learners 0 and 1, restarted on their state directories, tell
// it that they answered attempt 0's unmask phase, and it stops within
// seconds with ErrRoundStuck, naming round 1, both learners and their
// attempt, T and the way out; the learners stop with its line. A restart
// after that reaches the same conclusion. Through it all x^1 stands (the
// simulation's), round 0 was unmasked once, and round 1 never: no server
// received an unmask answer of round 1 but the two of attempt 0.
func TestSecureRoundStuck(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 2, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2) // the quorum grace (20 s) holds phase 4 open
	log := newStuckLog()
	srv1, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	log.watch(srv1)
	s1 := serveServer(t, srv1)
	addr := s1.addr
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ctx01, kill01 := context.WithCancel(context.Background())
	defer kill01()
	errs := make([]chan error, 3)
	for i := range errs {
		errs[i] = make(chan error, 1)
		o := secLearner(r, addr, i, dirs[i])
		ctx := ctx01
		if i == 2 {
			ctx = context.Background()
			o.stopBefore = func(round int, p secagg.Phase) bool { return round == 1 && p == secagg.PhaseUnmask }
		}
		go func() {
			_, err := RunLearner(ctx, o)
			errs[i] <- err
		}()
	}
	select {
	case <-log.both:
	case <-time.After(60 * time.Second):
		t.Fatal("learners 0 and 1 did not answer phase 4 of round 1 within 60 s")
	}
	s1.stop() // killed in the quorum grace
	if err := <-s1.errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("first server: %v, want it stopped", err)
	}
	kill01() // learners 0 and 1 stay away
	for i := range 2 {
		if err := <-errs[i]; !errors.Is(err, context.Canceled) {
			t.Fatalf("first learner %d: %v", i, err)
		}
	}
	if err := <-errs[2]; !errors.Is(err, errStopped) {
		t.Fatalf("first learner 2: %v", err)
	}

	// Phase 4 resumed; only learner 2 comes, without its keys.
	opt2 := opt
	opt2.RoundTimeout = 2 * time.Second
	srv2, err := NewServer(opt2)
	if err != nil {
		t.Fatal(err)
	}
	log.watch(srv2)
	s2 := serveServerAt(t, srv2, nil, addr)
	go func() {
		_, err := RunLearner(context.Background(), secLearner(r, addr, 2, dirs[2]))
		errs[2] <- err
	}()
	if err := <-s2.errc; !errors.Is(err, ErrTooFewLearners) {
		t.Fatalf("second server: %v, want ErrTooFewLearners (attempt 0 failed in phase 4)", err)
	}
	s2.stop()

	// Attempt 1, then a restart of it: each server stops once learners 0
	// and 1 tell it.
	for k := range 2 {
		var buf testutil.SyncBuffer
		optk := opt
		optk.Log = slog.New(slog.NewTextHandler(&buf, nil))
		srv, err := NewServer(optk)
		if err != nil {
			t.Fatalf("server %d: %v", k+3, err)
		}
		log.watch(srv)
		start := time.Now()
		s := serveServerAt(t, srv, nil, addr)
		for i := range 2 {
			go func() {
				_, err := RunLearner(context.Background(), secLearner(r, addr, i, dirs[i]))
				errs[i] <- err
			}()
		}
		var serr error
		select {
		case serr = <-s.errc:
		case <-time.After(40 * time.Second):
			t.Fatalf("server %d did not stop within 40 s:\n%s", k+3, buf.String())
		}
		if !errors.Is(serr, ErrRoundStuck) {
			t.Fatalf("server %d: %v, want ErrRoundStuck", k+3, serr)
		}
		t.Logf("server %d stopped after %v: %v", k+3, time.Since(start).Round(time.Millisecond), serr)
		msg := serr.Error()
		for _, part := range []string{"round 1, attempt 1: 2 of 3 learners answered its unmask phase in another attempt (learner 0 in attempt 0, learner 1 in attempt 0)",
			"leaving 1, fewer than the threshold 2", "cannot release round 1", "up to x^1 stand", "start a new run"} {
			if !strings.Contains(msg, part) {
				t.Errorf("server %d's error lacks %q: %s", k+3, part, msg)
			}
		}
		if strings.Contains(msg, "\n") || strings.Count(msg, "fednet:") != 1 {
			t.Errorf("server %d's error is not one line naming the package once: %q", k+3, msg)
		}
		if !strings.Contains(buf.String(), `msg="round cannot complete" round=1 attempt=1 refused=2 learners=3 threshold=2`) {
			t.Errorf("server %d did not log the stop:\n%s", k+3, buf.String())
		}
		stopped := []int{0, 1}
		if k == 0 {
			stopped = append(stopped, 2) // learner 2 was still running
		}
		for _, i := range stopped {
			select {
			case err := <-errs[i]:
				if err == nil || !strings.Contains(err.Error(), ErrRoundStuck.Error()) {
					t.Errorf("learner %d: %v, want the server's line", i, err)
				}
			case <-time.After(40 * time.Second):
				t.Fatalf("learner %d did not stop within 40 s of the server", i)
			}
		}
		s.stop()
		if got, _ := srv.Round(); got != 1 {
			t.Errorf("server %d is at round %d, want 1", k+3, got)
		}
	}

	requireSameModels(t, readRounds(t, dir, 1), want[:2])
	if _, err := os.Lstat(filepath.Join(dir, roundName(2))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v, want no x^2", roundName(2), err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.sums[0] != 1 || log.sums[1] != 0 {
		t.Errorf("the servers unmasked round 0 %d times and round 1 %d times, want once and never", log.sums[0], log.sums[1])
	}
	for _, e := range log.answers[1] {
		if e.Attempt != 0 || e.From > 1 {
			t.Errorf("an unmask answer of round 1 from learner %d in attempt %d, want only learners 0 and 1 in attempt 0", e.From, e.Attempt)
		}
	}
}

// The server counts a learner's word that it answered the unmask phase of
// the round in another attempt (SecAggRequest.unmasked_attempt), over the
// wire, n = 4, T = 3, in attempt 1 (attempt 0 failed in phase 0): the
// open attempt named is no refusal; another attempt is, once per learner
// (the learner still answers phases 0-3, and a word withdrawn changes
// nothing); the second refusal leaves 2 < T, and the server stops with
// ErrRoundStuck and answers every call with it.
func TestSecureRefusalCounted(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 4, 1, 1, 4)
	secureRun(t, r)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 3)
	opt.RoundTimeout = time.Second
	opt.MaxWait = 100 * time.Millisecond
	s1 := serve(t, opt, nil)
	conn1, err := grpc.NewClient(s1.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn1.Close()
	(&secClient{t: t, cl: flv1.NewFederationClient(conn1), id: 0}).must(&flv1.SecAggRequest{Round: 0})
	if err := <-s1.errc; !errors.Is(err, ErrTooFewLearners) {
		t.Fatalf("first server: %v, want ErrTooFewLearners (attempt 0 failed)", err)
	}
	s1.stop()

	var buf testutil.SyncBuffer
	opt.Log = slog.New(slog.NewTextHandler(&buf, nil))
	opt.RoundTimeout = time.Minute
	s := serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	cs := make([]*secClient, 4)
	for i := range cs {
		cs[i] = &secClient{t: t, cl: cl, id: i}
	}
	attempt := func(a uint32) *uint32 { return &a }
	refusals := func() int { return strings.Count(buf.String(), `msg="learner refuses the open attempt"`) }
	resp := cs[0].must(&flv1.SecAggRequest{Round: 0, UnmaskedAttempt: attempt(1)})
	if resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_ANSWER || resp.GetAttempt() != 1 || resp.GetPhase() != 0 {
		t.Fatalf("learner 0 naming the open attempt: %v, want ANSWER of attempt 1, phase 0", resp)
	}
	if n := refusals(); n != 0 {
		t.Fatalf("the open attempt named counted as %d refusals, want none", n)
	}
	for range 2 {
		resp = cs[1].must(&flv1.SecAggRequest{Round: 0, UnmaskedAttempt: attempt(0)})
		if resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_ANSWER || resp.GetPhase() != 0 {
			t.Fatalf("learner 1 naming attempt 0: %v, want ANSWER phase 0 (it takes part in phases 0-3)", resp)
		}
	}
	cs[1].must(&flv1.SecAggRequest{Round: 0}) // withdrawn: changes nothing
	if n := refusals(); n != 1 || !strings.Contains(buf.String(), `msg="learner refuses the open attempt" learner=1 round=0 attempt=1 unmasked_attempt=0 refused=1 threshold=3`) {
		t.Fatalf("%d refusals logged, want learner 1's once:\n%s", n, buf.String())
	}
	select {
	case err := <-s.errc:
		t.Fatalf("the server stopped with 3 learners left, T = 3: %v", err)
	default:
	}
	_, err = cs[2].call(&flv1.SecAggRequest{Round: 0, UnmaskedAttempt: attempt(7)})
	wantCode(t, "the second refusal", err, codes.FailedPrecondition)
	if !strings.Contains(status.Convert(err).Message(), "round 0, attempt 1: 2 of 4 learners answered its unmask phase in another attempt (learner 1 in attempt 0, learner 2 in attempt 7) and refuse every other, leaving 2, fewer than the threshold 3") {
		t.Errorf("the second refusal's answer: %v", err)
	}
	if err := <-s.errc; !errors.Is(err, ErrRoundStuck) {
		t.Fatalf("server: %v, want ErrRoundStuck", err)
	}
	_, err = cs[3].call(&flv1.SecAggRequest{Round: 0})
	wantCode(t, "a poll after the stop", err, codes.FailedPrecondition)
	if !strings.Contains(status.Convert(err).Message(), ErrRoundStuck.Error()) {
		t.Errorf("a poll after the stop: %v, want the server's line", err)
	}
}

// A learner whose unmask answer of the open attempt is in cannot count as
// refusing it, whatever it says afterwards: two learners of three that
// answered phase 4 (T = 2) and then claim another attempt would otherwise
// stop a round that can complete. (White-box: the answers are set by
// hand.)
func TestSecureRefusalAfterAnswerIgnored(t *testing.T) {
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	srv, err := NewServer(secureOptions(r, t.TempDir(), 2))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	sr := srv.sec
	sr.phase = secagg.PhaseUnmask
	sr.answered[1], sr.answered[2], sr.got = true, true, 2
	srv.noteUnmasked(1, 0, 5)
	srv.noteUnmasked(2, 0, 5)
	if srv.fault != nil || len(sr.refused) != 0 {
		t.Fatalf("learners that answered phase 4 counted as refusing: %v, fault %v", sr.refused, srv.fault)
	}
	srv.noteUnmasked(0, 0, 5)
	if srv.fault != nil || len(sr.refused) != 1 || sr.expected[0] {
		t.Fatalf("learner 0's refusal: refused %v, waited for %v, fault %v; want it counted and not waited for, the run going on", sr.refused, sr.expected[0], srv.fault)
	}
	select {
	case <-sr.full:
	default:
		t.Fatal("phase 4 still waits with every learner but the refusing one answered")
	}
}

// A learner waiting in GetModel for a release when the server closes (its
// Run returned: it releases nothing more) is answered UNAVAILABLE at once,
// which it retries as a server that is down, up to its GiveUp, instead of
// waiting for ever on a server that still answers calls.
func TestClosedServerEndsWaits(t *testing.T) {
	r := newRun(t, 2, 1, 1, 4)
	opt := r.options(t.TempDir(), nil)
	opt.MaxWait = time.Minute
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	s := serveServer(t, srv)
	srv.mu.Lock()
	srv.submitted[0] = 0 // learner 0 submitted for round 0: GetModel waits for x^1
	srv.mu.Unlock()
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := flv1.NewFederationClient(conn).GetModel(ctx, &flv1.GetModelRequest{Learner: 0})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, func() { srv.Close() })
	_, err = st.Recv()
	wantCode(t, "GetModel waiting when the server closes", err, codes.Unavailable)
}

// A closed secure server (its Run returned: it closes no phase) answers a
// call of its open round with UNAVAILABLE before it takes anything, not
// only a call that waits: a learner that can only sit the open phase out
// (restarted without its keys, or refusing a second unmask) is otherwise
// answered ANSWER for ever and never reaches its GiveUp; and a claim of
// another attempt is not counted (the run already ended with its own
// error; a restarted server learns the claims again).
func TestClosedSecureServerAnswersUnavailable(t *testing.T) {
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	srv, err := NewServer(secureOptions(r, t.TempDir(), 3))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(ServerOptionsGRPC()...)
	srv.Register(g)
	go g.Serve(lis)
	defer g.Stop()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	_, err = (&secClient{t: t, cl: cl, id: 0}).call(&flv1.SecAggRequest{Round: 0})
	wantCode(t, "a poll of the open round on a closed server", err, codes.Unavailable)
	a := uint32(5)
	_, err = (&secClient{t: t, cl: cl, id: 1}).call(&flv1.SecAggRequest{Round: 0, UnmaskedAttempt: &a})
	wantCode(t, "a claim on a closed server", err, codes.Unavailable)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.fault != nil || len(srv.sec.refused) != 0 {
		t.Errorf("a closed server counted a claim: refused %v, fault %v", srv.sec.refused, srv.fault)
	}
}

// n - T learners that claim, over and over while the run goes on, to have
// answered another attempt's unmask phase (the open attempt, others, the
// largest, in past, open and future rounds) cannot stop it, and their
// claims, racing with the phase closes and the releases, change nothing
// but their own phase 4: n = 5, T = 3, learners 3 and 4 are claimed for
// by a flood besides their own honest calls; they take part in phases
// 0-3, are never waited for in phase 4 (no unmask answer of theirs
// reaches the server, also one sent after the claim), and both rounds are released once, to the
// simulation's models (their inputs in each sum).
func TestSecureClaimFloodCannotStopARun(t *testing.T) {
	r := newRun(t, 5, 2, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	srv, err := NewServer(secureOptions(r, dir, 3))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sums := map[int]int{}
	srv.hooks.sum = func(round int, _ []uint64) {
		mu.Lock()
		defer mu.Unlock()
		sums[round]++
	}
	srv.hooks.record = func(e secEvent) {
		if e.Phase == secagg.PhaseUnmask && e.From >= 3 {
			t.Errorf("learner %d's unmask answer of round %d reached the server", e.From, e.Round)
		}
	}
	s := serveServer(t, srv)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	ctx, stop := context.WithCancel(context.Background())
	var flood sync.WaitGroup
	for i := 3; i < 5; i++ {
		flood.Add(1)
		go func() {
			defer flood.Done()
			c := &secClient{t: t, cl: cl, id: i}
			for k := 0; ctx.Err() == nil; k++ {
				a := []uint32{0, 1, 7, math.MaxUint32}[k%4]
				round, _ := srv.Round()
				if k%2 == 1 {
					round = []int{0, 1, 2, 9}[k/2%4]
				}
				c.call(&flv1.SecAggRequest{Round: int32(round), UnmaskedAttempt: &a})
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	res := runSecLearners(t, context.Background(), r, s.addr, func(i int, o *LearnerOptions) {
		if i < 3 {
			return
		}
		// Asked for phase 4 before a claim was counted: the answer goes
		// once one is, and is refused.
		o.stopBefore = func(round int, p secagg.Phase) bool {
			for end := time.Now().Add(10 * time.Second); p == secagg.PhaseUnmask && time.Now().Before(end); time.Sleep(time.Millisecond) {
				srv.mu.Lock()
				counted := srv.sec != nil && srv.round == round
				if counted {
					_, counted = srv.sec.refused[i]
				}
				srv.mu.Unlock()
				if counted {
					break
				}
			}
			return false
		}
	})
	stop()
	flood.Wait()
	if err := <-s.errc; err != nil {
		t.Fatalf("server: %v", err)
	}
	requireLearnersOK(t, "learner", res)
	requireSameModels(t, readRounds(t, dir, 2), want)
	mu.Lock()
	defer mu.Unlock()
	if sums[0] != 1 || sums[1] != 1 {
		t.Errorf("rounds unmasked %v, want each once", sums)
	}
}
