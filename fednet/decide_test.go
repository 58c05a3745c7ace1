package fednet

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// An upload is decided once: one answered DeadlineExceeded is never
// aggregated. Learner 0's upload in every round completes right at the
// server's CallTimeout (the delay before its last chunk walks up after an
// OK and down after a DeadlineExceeded, so it stays at the boundary);
// after a DeadlineExceeded it sends another vector until it is taken,
// and it must never be refused as a duplicate, and the released models must be those of
// the updates the answers said were taken, bit for bit.
func TestUploadDecidedOnce(t *testing.T) {
	const n, d = 2, 1 << 16
	R, timeout := 40, 60*time.Millisecond
	if raceEnabled {
		R, timeout = 20, 300*time.Millisecond
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: n, Rounds: R, Tau: 1, Dim: d}
	dir := t.TempDir()
	opt := ServerOptions{Config: cfg, Shape: shape, Model: Model{Name: "logistic", Features: d}, Dir: dir,
		RoundTimeout: 20 * time.Second, CallTimeout: timeout, Linger: time.Millisecond}
	s := serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	fill := func(v float64) []float64 {
		x := make([]float64, d)
		for k := range x {
			x[k] = v
		}
		return x
	}
	late, retry, honest := fill(1e-3), fill(-1.5e-3), fill(5e-4) // norms 0.26, 0.38, 0.13
	chunks := func(i, r int, u []float64) []*flv1.UpdateChunk {
		var cs []*flv1.UpdateChunk
		for off := 0; off < len(u); off += ChunkLen {
			cs = append(cs, &flv1.UpdateChunk{Learner: int32(i), Round: int32(r), Dim: d, Offset: int32(off), Values: u[off:min(off+ChunkLen, len(u))]})
		}
		return cs
	}
	// take sends learner i's update u for round r until it is taken: a
	// loaded machine may cut it off too, which is as good a test.
	take := func(i, r int, u []float64) {
		t.Helper()
		for k := 0; ; k++ {
			err := sendUpdate(cl, chunks(i, r, u)...)
			if c := status.Code(err); c == codes.AlreadyExists || c == codes.FailedPrecondition {
				// A duplicate, or the round closed, which it can only
				// do with both updates.
				t.Fatalf("round %d: learner %d: an upload answered DeadlineExceeded was stored: %v", r, i, err)
			}
			if status.Code(err) == codes.DeadlineExceeded && k < 100 {
				continue
			}
			if err != nil {
				t.Fatalf("round %d: learner %d: %v", r, i, err)
			}
			return
		}
	}
	taken := make([][]float64, R) // learner 0's update in each round, as the answers say
	delay, step := timeout*19/20, timeout/100
	var expired, ok int
	for r := range R {
		take(1, r, honest)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cl.SubmitUpdate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs := chunks(0, r, late)
		start := time.Now()
		for _, c := range cs[:len(cs)-1] {
			if st.Send(c) != nil {
				break
			}
		}
		time.Sleep(delay - time.Since(start))
		st.Send(cs[len(cs)-1])
		_, err = st.CloseAndRecv()
		cancel()
		switch status.Code(err) {
		case codes.OK:
			ok++
			taken[r] = late
			delay += step
		case codes.DeadlineExceeded:
			expired++
			delay -= step
			take(0, r, retry)
			taken[r] = retry
		default:
			t.Fatalf("round %d: learner 0: %v", r, err)
		}
		for k, _ := s.srv.Round(); k == r; k, _ = s.srv.Round() {
			time.Sleep(time.Millisecond)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	core, err := fedopt.NewServer(cfg, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{slices.Clone(core.Model())}
	for r := range R {
		if err := core.Release([][]float64{taken[r], honest}); err != nil {
			t.Fatal(err)
		}
		want = append(want, slices.Clone(core.Model()))
	}
	for r, x := range readRounds(t, dir, R) {
		if !testutil.SameBits(x, want[r]) {
			t.Fatalf("x^%d is not the model of the updates the answers said were taken", r)
		}
	}
	t.Logf("%d uploads taken, %d cut off at the deadline", ok, expired)
	if ok == 0 || expired == 0 {
		t.Logf("the uploads did not straddle the deadline (%d taken, %d cut off): the test proved less than it should", ok, expired)
	}
}
