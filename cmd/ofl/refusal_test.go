package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/internal/cli"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// otherWords is a Federation server whose Join refuses every learner index
// with fednet's documented typed refusal (an ErrorInfo detail) but with a
// message in other words than fednet's server writes, or, with plain set,
// with fednet's old wording and no detail.
type otherWords struct {
	flv1.UnimplementedFederationServer
	learners int
	plain    bool
}

func (s otherWords) Join(_ context.Context, req *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	id := int(req.GetLearner())
	if s.plain {
		return nil, status.Errorf(codes.InvalidArgument, "learner %d, want 0..%d", id, s.learners-1)
	}
	st, err := status.New(codes.InvalidArgument, "no participant with that number here").WithDetails(&errdetails.ErrorInfo{
		Domain: fednet.RefusalDomain, Reason: fednet.ReasonLearnerIndex,
		Metadata: map[string]string{"learner": strconv.Itoa(id), "learners": strconv.Itoa(s.learners)},
	})
	if err != nil {
		return nil, err
	}
	return nil, st.Err()
}

// ofl learner recognises the server's refusal of its -id by the status's
// typed detail, not by its words: a server that words the refusal
// otherwise still gives the usage error naming -id and the range, and one
// that sends fednet's old words without the detail is not taken for it
// (the raw status, exit status 1). Before the typed refusal ofl parsed the
// message, and the first case was exit 1 with the raw status.
func TestLearnerIndexRefusedByDetail(t *testing.T) {
	for _, tc := range []struct {
		srv  otherWords
		code int
		want string
	}{
		{otherWords{learners: 3}, cli.ExitUsage, "ofl learner: -id 5 contradicts the server's run: want an index in 0..2 (the server refused it)"},
		{otherWords{learners: 3, plain: true}, cli.ExitFailure, "ofl learner: rpc error: code = InvalidArgument desc = learner 5, want 0..2"},
	} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := grpc.NewServer()
		flv1.RegisterFederationServer(g, tc.srv)
		go g.Serve(lis)
		r := runOfl(t, "learner", "-insecure", "-server", lis.Addr().String(), "-id", "5", "-seed", "1", "-give-up", "20s")
		g.Stop()
		if r.code != tc.code || !strings.HasPrefix(lastLine(r.stderr), tc.want) {
			t.Errorf("plain %v: exit %d, %q; want exit %d and a last line starting %q", tc.srv.plain, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
