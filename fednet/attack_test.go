package fednet

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

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
