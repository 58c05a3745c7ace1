package fednet

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
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

// witnessRefuser is a real server whose GetModel refuses every request
// that carries a witness of run old with refuse's status (its own words,
// a detail or none), and serves the others.
type witnessRefuser struct {
	*Server
	old    []byte
	refuse func(req *flv1.GetModelRequest) error
}

func (w witnessRefuser) GetModel(req *flv1.GetModelRequest, stream grpc.ServerStreamingServer[flv1.ModelChunk]) error {
	if bytes.Equal(req.SeenRun, w.old) {
		return w.refuse(req)
	}
	return w.Server.GetModel(req, stream)
}

// The server refuses a witness of another run with a typed status
// (FailedPrecondition, the words kept, an ErrorInfo detail naming both
// runs), and a learner whose record is of a run that is over (NewRun)
// recognises the refusal by the detail alone: against a server that words
// it otherwise it asks again without the witness and finishes the run;
// without NewRun it stops and names the way out. A FailedPrecondition
// with fednet's old words and no detail is not taken for it: the learner
// keeps its witness and stops (dropping a witness on the strength of a
// message's words would let any refusal that says "followed run" undo
// the learner's rollback check). Before, the learner matched the words
// "followed run": the refusal in other words stopped a NewRun learner,
// and the old words without the detail made it drop its witness.
func TestOtherRunRefusalTyped(t *testing.T) {
	r := newRun(t, 1, 2, 1, 3)
	old := []byte("0123456789abcdef") // the run of the learner's record
	digest := make([]byte, 64)

	// The real server's refusal, as a learner's gRPC call receives it.
	s := serve(t, r.options(t.TempDir(), nil), nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seenRound := int32(0)
	stream, err := flv1.NewFederationClient(conn).GetModel(ctx, &flv1.GetModelRequest{Learner: 0, SeenRound: &seenRound, SeenRun: old, SeenDigest: digest})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "the learner followed run 30313233") {
		t.Fatalf("a witness of another run: %v, want FailedPrecondition with the message kept", err)
	}
	if !isOtherRunRefusal(err, old) {
		t.Fatalf("a witness of another run: %v has no detail naming run %x", err, old)
	}
	info := status.Convert(err).Details()[0].(*errdetails.ErrorInfo)
	if info.GetDomain() != "fl.dpmf" || info.GetReason() != "WITNESS_OF_ANOTHER_RUN" || info.GetMetadata()["seen_run"] != "30313233343536373839616263646566" || len(info.GetMetadata()["run"]) != 32 {
		t.Fatalf("the detail: %v", info)
	}
	if isOtherRunRefusal(err, []byte("fedcba9876543210")) {
		t.Error("a detail naming another witness's run was taken for this learner's refusal")
	}
	s.stop()

	// A learner with a record of run old against servers that refuse its
	// witness in their own ways.
	oldWords := func(req *flv1.GetModelRequest) error {
		return status.Errorf(codes.FailedPrecondition, "the learner followed run %x, this server serves run 00: start the learner afresh for this run", req.GetSeenRun())
	}
	for _, tc := range []struct {
		name   string
		refuse func(req *flv1.GetModelRequest) error
		newRun bool
		want   string // "" : the learner finishes
	}{
		{"detail, other words, NewRun", func(req *flv1.GetModelRequest) error {
			return otherRunStatus(req.GetSeenRun(), []byte("fedcba9876543210"), "stale witness").Err()
		}, true, ""},
		{"detail, other words", func(req *flv1.GetModelRequest) error {
			return otherRunStatus(req.GetSeenRun(), []byte("fedcba9876543210"), "stale witness").Err()
		}, false, "the state directory is another run's"},
		{"old words, no detail, NewRun", oldWords, true, "followed run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ldir := t.TempDir()
			if err := os.WriteFile(filepath.Join(ldir, learnerFile), handRecord2(old, 0, 0, 0, nil, 0, 0, 1, digest), 0o600); err != nil {
				t.Fatal(err)
			}
			srv, err := NewServer(r.options(t.TempDir(), nil))
			if err != nil {
				t.Fatal(err)
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			g := grpc.NewServer()
			flv1.RegisterFederationServer(g, witnessRefuser{srv, old, tc.refuse})
			go g.Serve(lis)
			defer g.Stop()
			sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer scancel()
			errc := make(chan error, 1)
			go func() { errc <- srv.Run(sctx) }()
			o := plainLearner(r, lis.Addr().String(), 0, ldir)
			o.NewRun = tc.newRun
			_, err = RunLearner(sctx, o)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("the learner: %v, want it to finish the server's run", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("the learner: %v, want an error with %q", err, tc.want)
			}
			if tc.want == "" {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
				if rec := readRecord(t, ldir); rec.seenRound != r.R || bytes.Equal(rec.run[:], old) {
					t.Errorf("the record after the run: round %d of run %v, want round %d of the server's run", rec.seenRound, rec.run, r.R)
				}
			} else if rec := readRecord(t, ldir); !bytes.Equal(rec.run[:], old) || rec.seenRound != 1 {
				t.Errorf("the record was replaced: round %d of run %v", rec.seenRound, rec.run)
			}
		})
	}
}
