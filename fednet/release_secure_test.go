package fednet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
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
