package fednet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/secagg"
)

// secLog records what a secure server unmasked and the unmask answers it
// received, by round.
type secLog struct {
	mu      sync.Mutex
	sums    map[int][][]uint64
	answers map[int]map[int][][]byte // round -> learner -> answers
}

func newSecLog(srv *Server) *secLog {
	l := &secLog{sums: map[int][][]uint64{}, answers: map[int]map[int][][]byte{}}
	srv.hooks.sum = func(r int, s []uint64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.sums[r] = append(l.sums[r], s)
	}
	srv.hooks.record = func(e secEvent) {
		if e.Phase != secagg.PhaseUnmask {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.answers[e.Round] == nil {
			l.answers[e.Round] = map[int][][]byte{}
		}
		l.answers[e.Round][e.From] = append(l.answers[e.Round][e.From], e.Bytes)
	}
	return l
}

// A secure server killed at each write point of a round's release (the
// sum unmasked and nothing written; the round file written and not its
// mark; the mark written and the next round's attempt not opened) and
// restarted on its state directory releases every round once, to the
// simulation's models. Killed after unmasking, the restart resumes the
// same attempt at phase 4, receives from each learner the bytes it sent
// the first server, and unmasks the same sum (the same survivor set);
// killed after the round file, it takes that file as released and never
// unmasks the round again. TestSecureCrashResume covers the phase
// closes before phase 4, TestStateKilledBetweenRoundAndMark the plain
// path's round file and mark.
func TestSecureCrashAtRelease(t *testing.T) {
	for _, step := range []string{"unmasked", "round file", "released"} {
		t.Run(strings.ReplaceAll(step, " ", "-"), func(t *testing.T) {
			r := newRun(t, 3, 2, 1, 4)
			secureRun(t, r)
			want := r.simulate(t, nil)
			dir := t.TempDir()
			opt := secureOptions(r, dir, 2)
			srv1, err := NewServer(opt)
			if err != nil {
				t.Fatal(err)
			}
			log1 := newSecLog(srv1)
			if step == "round file" {
				srv1.st.beforeMark = func(round int) error {
					if round == 1 {
						return errCrash
					}
					return nil
				}
			} else {
				srv1.hooks.release = func(round int, s string) error {
					if round == 0 && s == step {
						return errCrash
					}
					return nil
				}
			}
			s1 := serveServer(t, srv1)
			done := make(chan []learnerResult, 1)
			go func() { done <- runSecLearners(t, context.Background(), r, s1.addr, nil) }()
			if err := <-s1.errc; !errors.Is(err, errCrash) {
				t.Fatalf("first server: %v, want the simulated crash", err)
			}
			s1.stop()
			var log testutil.SyncBuffer
			opt.Log = slog.New(slog.NewTextHandler(&log, nil))
			srv2, err := NewServer(opt)
			if err != nil {
				t.Fatal(err)
			}
			log2 := newSecLog(srv2)
			s2 := serveServerAt(t, srv2, nil, s1.addr)
			requireLearnersOK(t, "learner", <-done)
			if err := <-s2.errc; err != nil {
				t.Fatal(err)
			}
			requireSameModels(t, readRounds(t, dir, r.R), want)
			if len(log1.sums[0]) != 1 || len(log1.sums[1]) != 0 {
				t.Fatalf("the first server unmasked round 0 %d times and round 1 %d times, want once and never", len(log1.sums[0]), len(log1.sums[1]))
			}
			resumed := strings.Contains(log.String(), `msg="resumed the secure round" round=0 attempt=0 phase=unmask`)
			if step != "unmasked" {
				if len(log2.sums[0]) != 0 || len(log2.answers[0]) != 0 || resumed {
					t.Fatalf("the restart after the round file was written unmasked round 0 again (%d sums, unmask answers of %d learners, resumed %v)", len(log2.sums[0]), len(log2.answers[0]), resumed)
				}
				return
			}
			if !resumed {
				t.Errorf("the restart did not resume round 0's attempt 0 at phase 4:\n%s", log.String())
			}
			if len(log2.sums[0]) != 1 || !slices.Equal(log2.sums[0][0], log1.sums[0][0]) {
				t.Fatalf("round 0 unmasked by the restart: %v, want once, the first server's sum %v", log2.sums[0], log1.sums[0])
			}
			if len(log2.answers[0]) < 2 {
				t.Fatalf("the restart got unmask answers of %d learners for round 0, want at least T = 2", len(log2.answers[0]))
			}
			for i, as := range log2.answers[0] {
				first := log1.answers[0][i]
				if len(as) != 1 || len(first) != 1 || !bytes.Equal(as[0], first[0]) {
					t.Errorf("learner %d's unmask answers of round 0: %d to the first server, %d to the restart, want one each with the same bytes", i, len(first), len(as))
				}
			}
		})
	}
}

// A secure state directory that released a round but holds no snapshot,
// or only a snapshot of a round older than the one before the newest
// released (one kept from earlier in the run and put back), is refused
// at start, and a corrupt snapshot's refusal then does not advise
// removing it: the open round's attempts are unknown, and opening its
// attempt 0 again would rest the rule "one unmasking per round" on every
// learner's record alone. The intact directory resumes at the next
// round's attempt 0.
func TestSecureSnapshotLostRefused(t *testing.T) {
	r := newRun(t, 3, 3, 1, 4)
	secureRun(t, r)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	path := srv.st.path(secName(1))
	var old []byte // round 0's snapshot
	var mid []byte // round 1's, at its masked-input phase
	srv.hooks.afterClose = func(round int, _ uint32, p secagg.Phase) error {
		if round == 1 && p == secagg.PhaseShares {
			var err error
			mid, err = os.ReadFile(path)
			return err
		}
		return nil
	}
	srv.hooks.release = func(round int, step string) error {
		switch {
		case step != "released":
		case round == 0:
			var err error
			old, err = os.ReadFile(path)
			return err
		case round == 1:
			return errCrash
		}
		return nil
	}
	s := serveServer(t, srv)
	done := make(chan []learnerResult, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- runSecLearners(t, ctx, r, s.addr, nil) }()
	if err := <-s.errc; !errors.Is(err, errCrash) {
		t.Fatalf("server: %v, want the simulated crash", err)
	}
	s.stop()
	cancel()
	<-done
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if snap, err := decodeSec(good); err != nil || snap.round != 1 {
		t.Fatalf("the snapshot after round 2's release: %+v, %v; want one of round 1", snap, err)
	}
	if snap, err := decodeSec(old); err != nil || snap.round != 0 {
		t.Fatalf("the snapshot kept at round 1's release: %+v, %v; want one of round 0", snap, err)
	}
	if snap, err := decodeSec(mid); err != nil || snap.round != 1 || snap.phase != secagg.PhaseMasked {
		t.Fatalf("the snapshot kept in round 1: %+v, %v; want one of round 1 at phase 2", snap, err)
	}
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"lost", "holds no secure-aggregation snapshot (secagg-GGGGGGGG.state), but round 2 was released", nil},
		{"an older round's", "is of round 0, but round 2 was released", old},
		// Round 1 was released from its unmask phase, whose snapshot
		// (the one the crash left) is the last before the release; one
		// of an earlier phase of round 1 was put back. Before, it read as
		// the snapshot the release left, and round 2's attempt 0 was
		// opened again, whatever attempts of round 2 had run.
		{"an earlier point of the round released last", "is of round 1 at phase 2 (masked-input), but round 1 was released from its unmask phase", mid},
		// Removing it is no way out once a round was released.
		{"truncated", "checksum mismatch; refusing to resume (the attempt's state is lost: start a new run in a fresh state directory)", good[:len(good)-1]},
	} {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if c.data != nil {
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := NewServer(opt)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("snapshot %s: %v, want one line with %q", c.name, err, c.want)
		}
		t.Logf("snapshot %s: %v", c.name, err)
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv, err = NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.round != 2 || srv.sec.ctx.Round != 2 || srv.sec.ctx.Attempt != 0 || srv.sec.phase != secagg.PhaseAdvertise {
		t.Fatalf("the intact directory resumed at round %d, attempt %d of round %d, phase %v; want attempt 0 of round 2, phase 0", srv.round, srv.sec.ctx.Attempt, srv.sec.ctx.Round, srv.sec.phase)
	}
}

// A learner restarted between ShareKeys and Unmask with its state
// directory lost (a fresh one) cannot rejoin the attempt in progress: it
// has neither its keys nor a record, so it sends nothing more in that
// attempt (it sits out), the others complete the round without it, and
// it takes part again from the next round. Restarted before its masked
// input, it is absent from the round's sum and the others reveal shares
// of its masking key only; restarted after it (before phase 4), its
// input is in the sum and they reveal shares of its self-mask only: the
// server never holds both for it. The models are the simulation's with
// that learner absent, or present, in round 0.
func TestSecureLearnerRestartLosesState(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	for _, p := range []secagg.Phase{secagg.PhaseMasked, secagg.PhaseUnmask} {
		t.Run(p.String(), func(t *testing.T) {
			const restarted = 0
			r := newRun(t, 3, 2, 1, 4)
			secureRun(t, r)
			want := r.simulate(t, func(i, round int) bool {
				return i == restarted && round == 0 && p == secagg.PhaseMasked
			})
			dir := t.TempDir()
			opt := secureOptions(r, dir, 2)
			opt.QuorumGrace = 2 * time.Second // the restarted learner's phases close after the others
			srv, err := NewServer(opt)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var events []secEvent
			srv.hooks.record = func(e secEvent) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, e)
			}
			s := serveServer(t, srv)
			first := secLearner(r, s.addr, restarted, t.TempDir())
			first.stopBefore = func(round int, q secagg.Phase) bool { return round == 0 && q == p }
			lost := make(chan error, 1)
			go func() {
				if _, err := RunLearner(context.Background(), first); !errors.Is(err, errStopped) {
					lost <- fmt.Errorf("the first process: %v, want it stopped before phase %v", err, p)
					return
				}
				// Restarted at once, on a fresh directory.
				_, err := RunLearner(context.Background(), secLearner(r, s.addr, restarted, t.TempDir()))
				lost <- err
			}()
			others := make(chan error, r.n-1)
			for i := range r.n {
				if i != restarted {
					go func() {
						_, err := RunLearner(context.Background(), secLearner(r, s.addr, i, t.TempDir()))
						others <- err
					}()
				}
			}
			if err := <-lost; err != nil {
				t.Fatalf("learner %d: %v", restarted, err)
			}
			for range r.n - 1 {
				if err := <-others; err != nil {
					t.Fatal(err)
				}
			}
			if err := <-s.errc; err != nil {
				t.Fatal(err)
			}
			requireSameModels(t, readRounds(t, dir, r.R), want)
			mu.Lock()
			defer mu.Unlock()
			var sent []secagg.Phase
			self, secret := 0, 0
			for _, e := range events {
				if e.Round != 0 {
					continue
				}
				if e.From == restarted {
					sent = append(sent, e.Phase)
				}
				if e.Phase != secagg.PhaseUnmask {
					continue
				}
				var m secagg.Unmask
				if err := m.UnmarshalBinary(e.Bytes); err != nil {
					t.Fatal(err)
				}
				for _, k := range m.Self {
					if k.Of == restarted {
						self++
					}
				}
				for _, k := range m.Secret {
					if k.Of == restarted {
						secret++
					}
				}
			}
			wantSent := []secagg.Phase{secagg.PhaseAdvertise, secagg.PhaseShares}
			if p == secagg.PhaseUnmask {
				wantSent = append(wantSent, secagg.PhaseMasked, secagg.PhaseConsistency)
			}
			if !slicesEqual(sent, wantSent) {
				t.Errorf("learner %d sent phases %v of round 0, want %v (none after its restart)", restarted, sent, wantSent)
			}
			if p == secagg.PhaseMasked && (self != 0 || secret < 2) || p == secagg.PhaseUnmask && (secret != 0 || self < 2) {
				t.Errorf("the server received %d shares of learner %d's self-mask and %d of its masking key, want only one kind, at least T = 2", self, restarted, secret)
			}
		})
	}
}

// A snapshot of an earlier point of the open round put back in place of
// the newest (here the one of phase 1's close, after phase 3 closed with
// U3 = {0, 1, 2}) cannot be told from the newest, and the server resumes
// it; the learners keep the round from being unmasked for another
// survivor set: learner 2 sends the restarted server no masked input, so
// phase 2 closes with U3 = {0, 1}, and learners 0 and 1, whose clients
// signed {0, 1, 2}, refuse to sign it and stop. Neither server unmasks
// anything.
func TestSecureEarlierSnapshotOfTheRound(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	opt.QuorumGrace, opt.RoundTimeout = time.Second, 3*time.Second
	srv1, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	path := srv1.st.path(secName(1))
	var earlier []byte
	srv1.hooks.afterClose = func(_ int, _ uint32, p secagg.Phase) error {
		switch p {
		case secagg.PhaseShares:
			var err error
			earlier, err = os.ReadFile(path)
			return err
		case secagg.PhaseConsistency:
			return errCrash
		}
		return nil
	}
	var sums atomic.Int32
	srv1.hooks.sum = func(int, []uint64) { sums.Add(1) }
	s1 := serveServer(t, srv1)
	var restarted atomic.Bool
	done := make(chan []learnerResult, 1)
	go func() {
		done <- runSecLearners(t, context.Background(), r, s1.addr, func(i int, o *LearnerOptions) {
			o.GiveUp = 10 * time.Second
			if i == 2 {
				o.stopBefore = func(_ int, p secagg.Phase) bool { return restarted.Load() && p == secagg.PhaseMasked }
			}
		})
	}()
	if err := <-s1.errc; !errors.Is(err, errCrash) {
		t.Fatalf("first server: %v, want the simulated crash", err)
	}
	s1.stop()
	if err := os.WriteFile(path, earlier, 0o600); err != nil {
		t.Fatal(err)
	}
	var log testutil.SyncBuffer
	opt.Log = slog.New(slog.NewTextHandler(&log, nil))
	// Phase 2 waits the round timeout (3 s), not a 1 s grace, for
	// learner 2, whose connection may come back a gRPC reconnect backoff
	// (1 s, then 1.6 s, ...) after the others': else it is dropped from
	// phase 2 and ends retrying (seen once in a loaded full run).
	opt.QuorumGrace = opt.RoundTimeout
	srv2, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	srv2.hooks.sum = func(int, []uint64) { sums.Add(1) }
	restarted.Store(true)
	s2 := serveServerAt(t, srv2, nil, s1.addr)
	res := <-done
	for i, l := range res {
		switch {
		case i == 2 && !errors.Is(l.err, errStopped):
			t.Errorf("learner 2: %v, want it stopped before its masked input", l.err)
		case i < 2 && (l.err == nil || !strings.Contains(l.err.Error(), "Sign asked again with different survivors")):
			t.Errorf("learner %d: %v, want it to refuse signing another survivor set", i, l.err)
		}
	}
	if err := <-s2.errc; !errors.Is(err, ErrTooFewLearners) {
		t.Errorf("restarted server: %v, want ErrTooFewLearners", err)
	}
	if !strings.Contains(log.String(), `msg="resumed the secure round" round=0 attempt=0 phase=masked-input`) {
		t.Errorf("the restarted server did not resume phase 2:\n%s", log.String())
	}
	if n := sums.Load(); n != 0 {
		t.Fatalf("the servers unmasked %d sums of round 0, want none", n)
	}
}

// A learner killed between the durable record of its unmask answer and
// its send (the learner's last write point of a round) and restarted on
// its state directory sends the recorded bytes, which the server takes
// as the learner's first answer, and nothing else: it has no keys to
// compute another. The round completes to the simulation's models.
// (TestSecureLearnerRestartResendsUnmask kills a learner after the send.)
func TestSecureLearnerKilledBeforeUnmaskSent(t *testing.T) {
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	srv, err := NewServer(secureOptions(r, dir, 2)) // the quorum grace (20 s) waits for learner 0
	if err != nil {
		t.Fatal(err)
	}
	log := newSecLog(srv)
	s := serveServer(t, srv)
	dir0 := t.TempDir()
	first := secLearner(r, s.addr, 0, dir0)
	first.stopRecorded = func(int) bool { return true }
	restarted := make(chan error, 1)
	go func() {
		if _, err := RunLearner(context.Background(), first); !errors.Is(err, errStopped) {
			restarted <- fmt.Errorf("the first process: %v, want it stopped after its record", err)
			return
		}
		_, err := RunLearner(context.Background(), secLearner(r, s.addr, 0, dir0))
		restarted <- err
	}()
	others := make(chan error, 2)
	for i := 1; i < 3; i++ {
		go func() {
			_, err := RunLearner(context.Background(), secLearner(r, s.addr, i, t.TempDir()))
			others <- err
		}()
	}
	for _, c := range []chan error{restarted, others, others} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
	data, err := os.ReadFile(recordPath(t, dir0))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := decodeLearnerRecord(data)
	if err != nil || !rec.unmasked || rec.round != 0 || rec.attempt != 0 {
		t.Fatalf("learner 0's record: %+v, %v; want its unmask answer of round 0, attempt 0", rec, err)
	}
	if got := log.answers[0][0]; len(got) != 1 || !bytes.Equal(got[0], rec.msg) {
		t.Fatalf("the server received %d unmask answers from learner 0, want one, the recorded bytes", len(got))
	}
}
