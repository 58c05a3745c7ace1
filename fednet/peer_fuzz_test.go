package fednet

import (
	"context"
	"io"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// fakeUpload is the server side of a SubmitUpdate stream whose messages
// are the given bytes, decoded as gRPC's proto codec does (a message that
// does not decode ends the stream with the error gRPC returns for it).
type fakeUpload struct {
	grpc.ServerStream // nil: the handlers call none of its methods
	ctx               context.Context
	msgs              [][]byte
	resp              *flv1.SubmitResponse
}

func (u *fakeUpload) Context() context.Context { return u.ctx }

func (u *fakeUpload) Recv() (*flv1.UpdateChunk, error) {
	if len(u.msgs) == 0 {
		return nil, io.EOF
	}
	m := u.msgs[0]
	u.msgs = u.msgs[1:]
	c := new(flv1.UpdateChunk)
	if err := proto.Unmarshal(m, c); err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return c, nil
}

func (u *fakeUpload) SendAndClose(r *flv1.SubmitResponse) error {
	u.resp = r
	return nil
}

// fakeModel is the server side of a GetModel stream: it keeps the chunks
// sent.
type fakeModel struct {
	grpc.ServerStream
	ctx  context.Context
	sent []*flv1.ModelChunk
}

func (m *fakeModel) Context() context.Context { return m.ctx }

func (m *fakeModel) Send(c *flv1.ModelChunk) error {
	m.sent = append(m.sent, proto.Clone(c).(*flv1.ModelChunk))
	return nil
}

// splitMessages cuts data into at most 8 messages, each a length byte and
// that many bytes (the last takes what is left).
func splitMessages(data []byte) [][]byte {
	var msgs [][]byte
	for len(data) > 0 && len(msgs) < 8 {
		n := min(int(data[0]), len(data)-1)
		msgs, data = append(msgs, data[1:1+n]), data[1+n:]
	}
	return msgs
}

// framed encodes messages as splitMessages reads them.
func framed(tb testing.TB, ms ...proto.Message) []byte {
	var out []byte
	for _, m := range ms {
		b, err := proto.Marshal(m)
		if err != nil || len(b) > 255 {
			tb.Fatalf("seed message of %d bytes: %v", len(b), err)
		}
		out = append(append(out, byte(len(b))), b...)
	}
	return out
}

// wantUpdate is what the server must make of an update's chunks, by the
// protocol (docs/distributed.md): chunks of one learner in 0..n-1, the open
// round (0) and dimension d, at contiguous offsets from 0 covering 0..d-1,
// every entry finite and the norm, in exact arithmetic, at most bound
// (fedopt.UpdateBound: tau B_g and a relative 1e-9 for a learner's
// rounding; the server scales such an update to tau B_g in its own copy). It returns the update, or nil if the server must refuse it.
func wantUpdate(msgs [][]byte, n, d int, bound float64) []float64 {
	var x []float64
	var first *flv1.UpdateChunk
	for _, m := range msgs {
		c := new(flv1.UpdateChunk)
		if proto.Unmarshal(m, c) != nil {
			return nil
		}
		if first == nil {
			first = c
		}
		if c.GetLearner() != first.GetLearner() || c.GetRound() != first.GetRound() || c.GetDim() != first.GetDim() || int(c.GetOffset()) != len(x) {
			return nil
		}
		x = append(x, c.GetValues()...)
		if len(x) > d {
			return nil
		}
	}
	if first == nil || first.GetLearner() < 0 || int(first.GetLearner()) >= n || first.GetRound() != 0 || int(first.GetDim()) != d || len(x) != d {
		return nil
	}
	sq := new(big.Float).SetPrec(5000)
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		b := new(big.Float).SetPrec(5000).SetFloat64(v)
		sq.Add(sq, b.Mul(b, b))
	}
	lim := new(big.Float).SetPrec(5000).SetFloat64(bound)
	if sq.Cmp(lim.Mul(lim, lim)) > 0 {
		return nil
	}
	return x
}

// FuzzPeerMessages gives a server (3 learners, 2 rounds, d = 4, clip 1,
// tau 1, no authentication, round 0 open) a peer's messages as raw bytes:
// a JoinRequest, a GetModelRequest or the chunks of a SubmitUpdate, each
// decoded as gRPC decodes them. Whatever the bytes, the handler must not
// panic or block; a refusal is a gRPC status whose message is one line of
// at most 1 KiB; Join answers only a learner in 0..2 speaking a protocol
// the server speaks, with the run's shape; GetModel sends x^0 (d zeros,
// round 0) or refuses; and SubmitUpdate accepts exactly the updates
// wantUpdate accepts, storing them as sent. The seeds run in every plain
// go test.
func FuzzPeerMessages(f *testing.F) {
	const n, R, tau, d = 3, 2, 1, 4
	w, err := factorize.Prefix(R)
	if err != nil {
		f.Fatal(err)
	}
	fz, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.Participation{})
	if err != nil {
		f.Fatal(err)
	}
	r := &run{n: n, R: R, tau: tau, d: d, f: fz, std: 0.2, seed: 5,
		cfg: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.05, EtaG: 1, Clip: 1}}
	seen := int32(0)
	for _, s := range []struct {
		call uint8
		msgs []proto.Message
	}{
		{0, []proto.Message{&flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 1}}},
		{0, []proto.Message{&flv1.JoinRequest{ProtocolVersion: flv1.ProtocolVersion_PROTOCOL_VERSION_1, Learner: 2}}},
		{0, []proto.Message{&flv1.JoinRequest{Learner: -1}}},
		{1, []proto.Message{&flv1.GetModelRequest{Learner: 0}}},
		{1, []proto.Message{&flv1.GetModelRequest{Learner: 2, SeenRound: &seen, SeenRun: make([]byte, 16), SeenDigest: make([]byte, 64)}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 1, Dim: d, Values: []float64{0.5, -0.5, 0.5, -0.5}}}},
		{2, []proto.Message{
			&flv1.UpdateChunk{Learner: 0, Dim: d, Values: []float64{0.1, 0.2}},
			&flv1.UpdateChunk{Learner: 0, Dim: d, Offset: 2, Values: []float64{0.3}},
			&flv1.UpdateChunk{Learner: 0, Dim: d, Offset: 3, Values: []float64{-0.4}},
		}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 2, Dim: d, Values: []float64{1, 0, 0, 0}}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 2, Dim: d, Values: []float64{1, 0x1p-30, 0, 0}}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 2, Dim: d, Values: []float64{1, 0x1p-14, 0, 0}}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 2, Dim: d, Values: []float64{1 + 1e-9, 0, 0, 0}}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 2, Dim: d, Values: []float64{1 + 1.1e-9, 0, 0, 0}}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 1, Dim: d, Values: []float64{math.NaN(), 0, 0, 0}}}},
		{2, []proto.Message{
			&flv1.UpdateChunk{Learner: 0, Dim: d, Values: []float64{0.1, 0.2}},
			&flv1.UpdateChunk{Learner: 0, Dim: d, Offset: 1, Values: []float64{0.3, 0.4}},
		}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 0, Round: 1, Dim: d, Values: []float64{0, 0, 0, 0}}}},
		{2, []proto.Message{&flv1.UpdateChunk{Learner: 3, Dim: 1 << 30}}},
	} {
		f.Add(s.call, framed(f, s.msgs...))
	}
	f.Add(uint8(2), []byte{3, 0xff, 0xff, 0xff})
	f.Add(uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, call uint8, data []byte) {
		opt := r.options(t.TempDir(), nil)
		opt.CallTimeout = 10 * time.Second
		s, err := NewServer(opt)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		msgs := splitMessages(data)
		refused := func(err error) {
			st, ok := status.FromError(err)
			if !ok {
				t.Fatalf("call %d, %x: %T %v, not a gRPC status", call%3, data, err, err)
			}
			if m := st.Message(); m == "" || strings.ContainsAny(m, "\n\r") || len(m) > 1<<10 {
				t.Fatalf("call %d, %x: refused with %d bytes over %d lines: %.300q", call%3, data, len(m), strings.Count(m, "\n")+1, m)
			}
		}
		switch call % 3 {
		case 0:
			req := new(flv1.JoinRequest)
			if len(msgs) == 0 || proto.Unmarshal(msgs[0], req) != nil {
				return
			}
			resp, err := s.Join(ctx, req)
			if err != nil {
				refused(err)
				if l, v := req.GetLearner(), req.GetProtocolVersion(); l >= 0 && l < n && (v == Protocol || v == flv1.ProtocolVersion_PROTOCOL_VERSION_1) {
					t.Fatalf("%v refused: %v", req, err)
				}
				return
			}
			if l, v := req.GetLearner(), req.GetProtocolVersion(); l < 0 || l >= n || v != Protocol && v != flv1.ProtocolVersion_PROTOCOL_VERSION_1 {
				t.Fatalf("%v answered: %v", req, resp)
			}
			c := resp.GetConfig()
			if resp.GetRound() != 0 || c.GetLearners() != n || c.GetRounds() != R || c.GetTau() != tau || c.GetParams() != d || c.GetAlgorithm() != "correlated" {
				t.Fatalf("%v answered %v", req, resp)
			}
		case 1:
			req := new(flv1.GetModelRequest)
			if len(msgs) == 0 || proto.Unmarshal(msgs[0], req) != nil {
				return
			}
			st := &fakeModel{ctx: ctx}
			if err := s.GetModel(req, st); err != nil {
				refused(err)
				return
			}
			var x []float64
			for _, c := range st.sent {
				if c.GetRound() != 0 || c.GetDone() || c.GetDim() != d || int(c.GetOffset()) != len(x) {
					t.Fatalf("%v: sent %v", req, st.sent)
				}
				x = append(x, c.GetValues()...)
			}
			if len(x) != d || x[0] != 0 || x[1] != 0 || x[2] != 0 || x[3] != 0 {
				t.Fatalf("%v: sent x^0 = %v, want %d zeros", req, x, d)
			}
			if req.GetLearner() < 0 || req.GetLearner() >= n {
				t.Fatalf("%v: sent the model to learner %d", req, req.GetLearner())
			}
		default:
			want := wantUpdate(msgs, n, d, fedopt.UpdateBound(r.cfg.Clip, tau))
			st := &fakeUpload{ctx: ctx, msgs: msgs}
			err := s.SubmitUpdate(st)
			if ctx.Err() != nil {
				t.Fatalf("%x: still receiving after 20 s", data)
			}
			if err != nil {
				refused(err)
				if want != nil {
					t.Fatalf("%x: the update %v refused: %v", data, want, err)
				}
				return
			}
			if want == nil || st.resp == nil || st.resp.GetRound() != 0 {
				t.Fatalf("%x: accepted (%v), want a refusal", data, st.resp)
			}
			c := new(flv1.UpdateChunk)
			_ = proto.Unmarshal(msgs[0], c)
			s.mu.Lock()
			got := s.updates[c.GetLearner()]
			s.mu.Unlock()
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
					t.Fatalf("%x: stored %v, sent %v", data, got, want)
				}
			}
		}
	})
}
