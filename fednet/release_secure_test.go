package fednet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

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
			for i, l := range <-done {
				if l.err != nil {
					t.Fatalf("learner %d: %v", i, l.err)
				}
			}
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
// at start: the open round's attempts are unknown, and opening its
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
	for _, c := range []struct {
		name, want string
		data       []byte
	}{
		{"lost", "holds no secure-aggregation snapshot (secagg-GGGGGGGG.state), but round 2 was released", nil},
		{"an older round's", "is of round 0, but round 2 was released", old},
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
