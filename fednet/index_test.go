package fednet

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// A learner index outside the run (0..n-1) is refused by the server with
// a typed status (InvalidArgument with an ErrorInfo detail), and
// RunLearner returns it as a *LearnerIndexError that errors.Is finds as
// ErrLearnerIndex, carrying the index and the run's learners: the caller
// needs no parsing of the message (which is for people and may change).
// Before the typed refusal RunLearner returned the bare status, which
// errors.Is did not match.
func TestLearnerIndexRefusalTyped(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	s := serve(t, r.options(t.TempDir(), nil), nil)
	for _, id := range []int{2, 9} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := RunLearner(ctx, LearnerOptions{Addr: s.addr, ID: id, Creds: insecure.NewCredentials(), GiveUp: 20 * time.Second,
			Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, 0) }})
		cancel()
		if !errors.Is(err, ErrLearnerIndex) {
			t.Fatalf("learner %d of 2: %v, want an error that errors.Is finds as ErrLearnerIndex", id, err)
		}
		var ie *LearnerIndexError
		if !errors.As(err, &ie) || ie.ID != id || ie.Learners != 2 {
			t.Fatalf("learner %d of 2: %#v, want a *LearnerIndexError{ID: %d, Learners: 2}", id, ie, id)
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("learner %d of 2: code %v, want the status's InvalidArgument still seen through the error", id, status.Code(err))
		}
	}
}

// indexRefuser is a Federation server whose Join refuses every index with
// the typed detail of fednet's refusal, in words of its own.
type indexRefuser struct {
	flv1.UnimplementedFederationServer
	learners int
}

func (f indexRefuser) Join(_ context.Context, req *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	return nil, indexStatus(int(req.GetLearner()), f.learners, "no such participant").Err()
}

// The learner recognises the refusal by its detail alone: a server whose
// message says something else entirely is still understood, and a plain
// InvalidArgument with the old wording but no detail is not taken for it.
func TestLearnerIndexRefusalByDetailOnly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		srv   flv1.FederationServer
		typed bool
	}{
		{"detail, other words", indexRefuser{learners: 4}, true},
		{"old words, no detail", plainRefuser{}, false},
	} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := grpc.NewServer()
		flv1.RegisterFederationServer(g, tc.srv)
		go g.Serve(lis)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = RunLearner(ctx, LearnerOptions{Addr: lis.Addr().String(), ID: 6, Creds: insecure.NewCredentials(), GiveUp: 20 * time.Second,
			Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return nil, errors.New("not reached") }})
		cancel()
		g.Stop()
		var ie *LearnerIndexError
		switch {
		case tc.typed && (!errors.As(err, &ie) || ie.ID != 6 || ie.Learners != 4):
			t.Errorf("%s: %v, want a *LearnerIndexError{ID: 6, Learners: 4}", tc.name, err)
		case !tc.typed && (errors.Is(err, ErrLearnerIndex) || status.Code(err) != codes.InvalidArgument):
			t.Errorf("%s: %v, want the plain InvalidArgument status, not ErrLearnerIndex", tc.name, err)
		}
	}
}

// plainRefuser refuses Join with the refusal's old text and no detail.
type plainRefuser struct {
	flv1.UnimplementedFederationServer
}

func (plainRefuser) Join(_ context.Context, req *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	return nil, status.Errorf(codes.InvalidArgument, "learner %d, want 0..3", req.GetLearner())
}
