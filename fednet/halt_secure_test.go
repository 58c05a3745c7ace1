package fednet

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// A secure phase close whose snapshot is not written (here the lock file
// was removed under the server, so writeSecSnapshot refuses; a full disk
// fails the same way) stops the server, and the close's result is never
// served: between the failed close and the end of Run (Close), a learner
// that polls is answered UNAVAILABLE, not the next phase with its inputs
// (the roster), which the docs promise only once the close is on disk.
// The phase's own messages are still what a restart resumes: the
// snapshot on disk is the attempt's opening, and a restart serves phase 0
// again. Before, the failed close's in-memory phase 1 was served
// (ANSWER, phase 1, the three advertisements).
func TestSecureFailedCloseServesNothing(t *testing.T) {
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	opt.MaxWait = 1 // a message is answered WAIT at once
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	for i := range 3 {
		resp, err := srv.SecAgg(ctx, &flv1.SecAggRequest{Learner: int32(i), Round: 0})
		if err != nil || resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_ANSWER || resp.GetPhase() != 0 {
			t.Fatalf("learner %d's first poll: %v, %v; want ANSWER phase 0", i, resp, err)
		}
		sctx := secagg.Context{Round: 0, Attempt: resp.GetAttempt(), N: 3, T: 2, Dim: 4}
		copy(sctx.Run[:], resp.GetRun())
		c, err := secagg.NewClient(sctx, i, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.Advertise()
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.SecAgg(ctx, &flv1.SecAggRequest{Learner: int32(i), Round: 0, Attempt: sctx.Attempt, HasMessage: true, Message: b}); err != nil {
			t.Fatalf("learner %d's advertisement: %v", i, err)
		}
	}
	if err := os.Remove(filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	// What Run does when phase 0 may close; its error ends Run.
	srv.mu.Lock()
	sr := srv.sec
	srv.mu.Unlock()
	if err := srv.underState(func() error { return srv.closeSecPhase(sr) }); err == nil {
		t.Fatal("the phase closed without its snapshot")
	} else {
		t.Logf("the close: %v", err)
	}
	resp, err := srv.SecAgg(ctx, &flv1.SecAggRequest{Learner: 0, Round: 0})
	if err == nil {
		t.Fatalf("after the failed close a poll was answered %v (phase %d, %d messages), want UNAVAILABLE: the close's result served before it is on disk", resp.GetState(), resp.GetPhase(), len(resp.GetMessages()))
	}
	wantCode(t, "a poll after the failed close", err, codes.Unavailable)
	srv.Close()

	// The restart resumes the attempt as written: phase 0.
	srv2, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	resp, err = srv2.SecAgg(ctx, &flv1.SecAggRequest{Learner: 0, Round: 0})
	if err != nil || resp.GetPhase() != 0 {
		t.Fatalf("the restart's first poll: %v, %v; want phase 0", resp, err)
	}
}
