package fednet

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// fakeModelClient is a FederationClient whose GetModel streams the given
// messages, decoded as gRPC's proto codec does.
type fakeModelClient struct {
	flv1.FederationClient // nil: getModel calls GetModel only
	msgs                  [][]byte
}

func (c *fakeModelClient) GetModel(context.Context, *flv1.GetModelRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[flv1.ModelChunk], error) {
	return &fakeModelStream{msgs: c.msgs}, nil
}

type fakeModelStream struct {
	grpc.ClientStream
	msgs [][]byte
}

func (s *fakeModelStream) Recv() (*flv1.ModelChunk, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	c := new(flv1.ModelChunk)
	if err := proto.Unmarshal(m, c); err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return c, nil
}

// epochData is a learner's data that reports its epochs and nothing else.
type epochData struct {
	fedopt.Stream
	k, period int
}

func (d epochData) Epochs() (int, int) { return d.k, d.period }

// FuzzServerAnswers gives a learner a server's answers as raw bytes: a
// JoinResponse (checkJoin, then the participation check of checkDataEpochs
// for data of one epoch) and the chunks of a model (getModel, dimension
// 1..8). Whatever the bytes, the learner must not panic; an error is one
// line of at most 1 KiB; checkJoin accepts only positive counts, epochs
// dividing the rounds, an open round in 0..R and at most MaxParams
// parameters; and getModel returns a model exactly when the chunks are
// whole (one round, the learner's dimension, contiguous offsets covering
// it, every value finite), holding their values bit for bit. The seeds run
// in every plain go test.
func FuzzServerAnswers(f *testing.F) {
	part := "minsep:2,2"
	for _, s := range []struct {
		join   proto.Message
		chunks []proto.Message
		dim    uint8
	}{
		{&flv1.JoinResponse{ProtocolVersion: Protocol, Round: 1, Config: &flv1.RunConfig{Algorithm: "correlated", Eta: 0.1, Clip: 1, Model: "logistic",
			Learners: 3, Rounds: 4, Tau: 2, Features: 3, Params: 4, Epochs: 2}},
			[]proto.Message{&flv1.ModelChunk{Round: 1, Dim: 4, Values: []float64{1, 2}, Run: make([]byte, 16), Digest: make([]byte, 64)},
				&flv1.ModelChunk{Round: 1, Dim: 4, Offset: 2, Values: []float64{3, -0}}}, 3},
		{&flv1.JoinResponse{ProtocolVersion: Protocol, Config: &flv1.RunConfig{Algorithm: "independent", Learners: 2, Rounds: 4, Tau: 1, Features: 1, Params: 2, Participation: &part}},
			[]proto.Message{&flv1.ModelChunk{Round: 4, Done: true, Dim: 2, Values: []float64{0.5, 0.25}}}, 1},
		{&flv1.JoinResponse{ProtocolVersion: flv1.ProtocolVersion_PROTOCOL_VERSION_1, Config: &flv1.RunConfig{Learners: 1, Rounds: 3, Tau: 1, Features: 1, Params: 1 << 30, Epochs: 2}},
			[]proto.Message{&flv1.ModelChunk{Dim: 1, Values: []float64{math.Inf(1)}}}, 0},
		{&flv1.JoinResponse{ProtocolVersion: Protocol, Round: 5, Config: &flv1.RunConfig{Algorithm: "correlated", Learners: 1, Rounds: 4, Tau: 1, Features: 1, Params: 2, Participation: &part}},
			[]proto.Message{&flv1.ModelChunk{Dim: 1, Values: []float64{1, 2}}, &flv1.ModelChunk{Dim: 1}}, 0},
	} {
		f.Add(framed(f, s.join), framed(f, s.chunks...), s.dim)
	}
	f.Fuzz(func(t *testing.T, joinBytes, chunkBytes []byte, dimSel uint8) {
		oneLine := func(what string, err error) {
			if m := err.Error(); strings.ContainsAny(m, "\n\r") || len(m) > 1<<10 {
				t.Fatalf("%s: an error of %d bytes over %d lines: %.300q", what, len(m), strings.Count(m, "\n")+1, m)
			}
		}
		if msgs := splitMessages(joinBytes); len(msgs) > 0 {
			join := new(flv1.JoinResponse)
			if proto.Unmarshal(msgs[0], join) == nil {
				err := checkJoin(join)
				rc := join.GetConfig()
				if err != nil {
					oneLine("checkJoin", err)
				} else {
					R, e := rc.GetRounds(), max(rc.GetEpochs(), 1)
					if rc.GetLearners() < 1 || R < 1 || rc.GetTau() < 1 || rc.GetFeatures() < 1 || rc.GetParams() < 1 || rc.GetParams() > MaxParams ||
						rc.GetEpochs() < 0 || R%e != 0 || join.GetRound() < 0 || join.GetRound() > R {
						t.Fatalf("checkJoin accepted %v", join)
					}
					if algo, perr := fedopt.ParseAlgorithm(rc.GetAlgorithm()); perr == nil {
						if err := checkDataEpochs(rc, algo, epochData{k: 1, period: int(R)}); err != nil {
							oneLine("checkDataEpochs", err)
						}
					}
				}
			}
		}
		dim := 1 + int(dimSel)%8
		msgs := splitMessages(chunkBytes)
		m, err := getModel(context.Background(), &fakeModelClient{msgs: msgs}, 0, dim, nil)
		// The oracle: every message decodes, and the chunks are whole.
		var want []float64
		ok, round := len(msgs) > 0, int32(0)
		for k, b := range msgs {
			c := new(flv1.ModelChunk)
			if proto.Unmarshal(b, c) != nil {
				ok = false
				break
			}
			if k == 0 {
				round = c.GetRound()
			}
			if int(c.GetDim()) != dim || int(c.GetOffset()) != len(want) || c.GetRound() != round || len(want)+len(c.GetValues()) > dim {
				ok = false
				break
			}
			want = append(want, c.GetValues()...)
		}
		ok = ok && len(want) == dim
		for _, v := range want {
			ok = ok && !math.IsNaN(v) && !math.IsInf(v, 0)
		}
		if err != nil {
			oneLine("getModel", err)
			if ok {
				t.Fatalf("the model %v refused: %v", want, err)
			}
			return
		}
		if !ok || m.round != int(round) || len(m.x) != dim {
			t.Fatalf("chunks %x taken as round %d, %v", chunkBytes, m.round, m.x)
		}
		for j := range want {
			if math.Float64bits(m.x[j]) != math.Float64bits(want[j]) {
				t.Fatalf("model %v, sent %v", m.x, want)
			}
		}
	})
}
