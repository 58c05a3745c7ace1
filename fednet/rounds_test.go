package fednet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
)

// logWithin reports whether log contains s within ten seconds (a generous
// margin on a loaded machine: the line is written after the peer saw the
// connection fail).
func logWithin(log *testutil.SyncBuffer, s string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(log.String(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// requireNoErrors fails the test on the first non-nil error.
func requireNoErrors(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("learner %d: %v", i, err)
		}
	}
}

// A server started long before its learners does not time out its first
// round: the round's timeout counts from the first learner's call.
func TestFirstRoundWaitsForLearners(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 2, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.RoundTimeout = 4 * time.Second // generous: every round needs all three
	s := serve(t, opt, nil)
	// One and a half round timeouts without a learner: the old server
	// stopped after one.
	select {
	case err := <-s.errc:
		t.Fatalf("server without learners stopped: %v", err)
	case <-time.After(6 * time.Second):
	}
	_, errs := runLearners(t, r, s.addr, []int{0, 1, 2}, nil)
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), r.simulate(t, nil))
}

// With JoinTimeout set, a server that no learner reaches stops with
// ErrTooFewLearners after it, not after RoundTimeout.
func TestJoinTimeout(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.JoinTimeout, opt.RoundTimeout = 200*time.Millisecond, 50*time.Second
	start := time.Now()
	s := serve(t, opt, nil)
	err := <-s.errc
	if !errors.Is(err, ErrTooFewLearners) || !strings.Contains(err.Error(), "join timeout 200ms") {
		t.Fatalf("Run: %v, want ErrTooFewLearners after the join timeout", err)
	}
	if d := time.Since(start); d < opt.JoinTimeout || d > 20*time.Second {
		t.Errorf("stopped after %v, want between the join timeout %v and far below the round timeout %v", d, opt.JoinTimeout, opt.RoundTimeout)
	}
	opt.JoinTimeout = -time.Second
	if _, err := NewServer(opt); err == nil || !strings.Contains(err.Error(), "negative timeout") {
		t.Errorf("negative JoinTimeout: %v", err)
	}
}

// With MinLearners below n and a learner gone, each round closes
// QuorumGrace after the quorum is in, not after RoundTimeout; the models
// are the simulation's with that learner's updates missing (zero, divided
// by the planned n). With every learner present a round closes at once,
// whatever the grace.
func TestQuorumGrace(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 6, 1, 3)
	opt := r.options(t.TempDir(), nil)
	opt.MinLearners, opt.QuorumGrace, opt.RoundTimeout, opt.Linger = 2, 200*time.Millisecond, 30*time.Second, 100*time.Millisecond
	s := serve(t, opt, nil)
	start := time.Now()
	_, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	d := time.Since(start) // the learners got the final model
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil { // after Linger: learner 2 never fetches
		t.Fatal(err)
	}
	t.Logf("%d rounds with 2 of 3 learners and a grace of %v: %v", r.R, opt.QuorumGrace, d)
	// Every round waits out its grace for learner 2, and no round waits
	// for its timeout (the old server took R times 30 s).
	if min := time.Duration(r.R) * opt.QuorumGrace; d < min || d > opt.RoundTimeout/2 {
		t.Errorf("%d rounds took %v, want at least %v (R times the grace) and far below the round timeout %v", r.R, d, min, opt.RoundTimeout)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), r.simulate(t, func(i, k int) bool { return i == 2 }))
	for k := 1; k <= r.R; k++ {
		if rel, _ := ReadRound(opt.Dir, k); rel.Updates != 2 {
			t.Errorf("round %d records %d updates, want 2", k, rel.Updates)
		}
	}

	// Everyone present: no round waits for a long grace.
	opt = r.options(t.TempDir(), nil)
	opt.MinLearners, opt.QuorumGrace, opt.RoundTimeout = 2, 30*time.Second, 30*time.Second
	s = serve(t, opt, nil)
	start = time.Now()
	_, errs = runLearners(t, r, s.addr, []int{0, 1, 2}, nil)
	d = time.Since(start)
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	if d > opt.QuorumGrace/2 {
		t.Errorf("%d full rounds took %v, want far below one grace %v", r.R, d, opt.QuorumGrace)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), r.simulate(t, nil))
}
