package fednet

import (
	"context"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// NewServer refuses every count that crosses the protocol as int32 and
// does not fit it (or is not positive), before it touches the state
// directory.
func TestNewServerRefusesWireOverflow(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	// Counts beyond int32 exist only where an int has 64 bits; the
	// conversions from int64 keep this file compiling on 32-bit platforms,
	// where those cases are left out.
	wide, wide2 := int64(math.MaxInt32)+1, int64(1)<<32+2
	big, big2 := int(wide), int(wide2)
	for _, tc := range []struct {
		name string
		edit func(o *ServerOptions)
		want string
		wide bool // needs a 64-bit int
	}{
		{"rounds", func(o *ServerOptions) { o.Shape.Rounds = big }, "rounds 2147483648", true},
		{"rounds 2^32+2", func(o *ServerOptions) { o.Shape.Rounds = big2 }, "rounds 4294967298", true},
		{"learners", func(o *ServerOptions) { o.Shape.Learners, o.MinLearners = big, 1 }, "learners 2147483648", true},
		{"tau", func(o *ServerOptions) { o.Shape.Tau = big }, "tau 2147483648", true},
		{"dimension", func(o *ServerOptions) { o.Shape.Dim, o.Model.Features = big, big }, "dimension 2147483648", true},
		{"negative features", func(o *ServerOptions) { o.Shape.Dim, o.Model.Features = -3, -3 }, "dimension -3", false},
	} {
		if tc.wide && strconv.IntSize < 64 {
			continue
		}
		opt := r.options(t.TempDir(), nil)
		tc.edit(&opt)
		_, err := NewServer(opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "int32") {
			t.Errorf("%s: %v, want an error naming %q and int32", tc.name, err, tc.want)
		}
	}
}

// fakeServer answers Join and GetModel with what a test scripts: a
// broken or hostile server.
type fakeServer struct {
	flv1.UnimplementedFederationServer
	join  *flv1.JoinResponse
	model []*flv1.ModelChunk
}

func (f *fakeServer) Join(context.Context, *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	return f.join, nil
}

func (f *fakeServer) GetModel(_ *flv1.GetModelRequest, st grpc.ServerStreamingServer[flv1.ModelChunk]) error {
	for _, c := range f.model {
		if err := st.Send(c); err != nil {
			return err
		}
	}
	return nil
}

// fakeRunConfig is the run a fakeServer describes by default: 2 learners,
// 4 rounds, tau 2, 3 features.
func fakeRunConfig() *flv1.RunConfig {
	return &flv1.RunConfig{Algorithm: "correlated", Eta: 0.05, Clip: 1, Model: "logistic",
		Learners: 2, Rounds: 4, Tau: 2, Features: 3, Params: 3, Epochs: 1}
}

// runLearnerAgainst serves srv on 127.0.0.1 and runs learner 1 of
// fakeRunConfig's run against it until the learner returns or timeout
// passes; it returns the learner's error.
func runLearnerAgainst(t *testing.T, srv flv1.FederationServer, timeout time.Duration) error {
	t.Helper()
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	flv1.RegisterFederationServer(g, srv)
	go g.Serve(lis)
	defer g.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = RunLearner(ctx, LearnerOptions{Addr: lis.Addr().String(), ID: 1, Creds: insecure.NewCredentials(),
		Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return ds.Stream(1), nil }, GiveUp: time.Second})
	return err
}

// A learner never panics on a server's answers: counts that are zero,
// negative, wrapped or huge, a round outside the run, parameters that do
// not match the features, and model chunks of a round outside the run
// are clear errors.
func TestLearnerChecksServerAnswers(t *testing.T) {
	good := fakeRunConfig
	model := func(round int32, done bool) []*flv1.ModelChunk {
		return []*flv1.ModelChunk{{Round: round, Done: done, Dim: 3, Values: []float64{0, 0, 0}}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(j *flv1.JoinResponse)
		model []*flv1.ModelChunk
		want  string
	}{
		{"no config", func(j *flv1.JoinResponse) { j.Config = nil }, nil, "no run configuration"},
		{"zero learners", func(j *flv1.JoinResponse) { j.Config.Learners = 0 }, nil, "0 learners"},
		{"wrapped rounds", func(j *flv1.JoinResponse) { j.Config.Rounds = math.MinInt32 }, nil, "-2147483648 rounds"},
		{"negative tau", func(j *flv1.JoinResponse) { j.Config.Tau = -1 }, nil, "-1 tau"},
		{"zero features", func(j *flv1.JoinResponse) { j.Config.Features, j.Config.Params = 0, 0 }, nil, "0 features"},
		{"negative parameters", func(j *flv1.JoinResponse) { j.Config.Features, j.Config.Params = -5, -5 }, nil, "-5 features"},
		{"huge parameters", func(j *flv1.JoinResponse) { j.Config.Features, j.Config.Params = math.MaxInt32, math.MaxInt32 }, nil, "at most 134217728"},
		{"parameters not the features'", func(j *flv1.JoinResponse) { j.Config.Params = 4 }, nil, "4 parameters for 3 features"},
		{"negative epochs", func(j *flv1.JoinResponse) { j.Config.Epochs = -2 }, nil, "-2 epochs"},
		{"epochs not dividing", func(j *flv1.JoinResponse) { j.Config.Epochs = 3 }, nil, "3 epochs for 4 rounds"},
		{"round past the run", func(j *flv1.JoinResponse) { j.Round = 5 }, nil, "open round is 5"},
		{"negative round", func(j *flv1.JoinResponse) { j.Round = -1 }, nil, "open round is -1"},
		{"learner not in the run", func(j *flv1.JoinResponse) { j.Config.Learners = 1 }, nil, "learner 1"},
		{"secure run under revision 1", func(j *flv1.JoinResponse) {
			j.ProtocolVersion = flv1.ProtocolVersion_PROTOCOL_VERSION_1
			j.Config.SecureAggregation = &flv1.SecureAggregation{Threshold: 2, RingBits: 64, ScaleBits: 10}
		}, nil, "secure aggregation under protocol PROTOCOL_VERSION_1"},
		{"secure ring of 32 bits", func(j *flv1.JoinResponse) {
			j.Config.SecureAggregation = &flv1.SecureAggregation{Threshold: 2, RingBits: 32, ScaleBits: 10}
		}, nil, "ring has 32 bits"},
		{"secure threshold n/2", func(j *flv1.JoinResponse) {
			j.Config.SecureAggregation = &flv1.SecureAggregation{Threshold: 1, RingBits: 64, ScaleBits: 10}
		}, nil, "threshold 1 for 2 learners"},
		{"secure scale bits that wrap", func(j *flv1.JoinResponse) {
			j.Config.SecureAggregation = &flv1.SecureAggregation{Threshold: 2, RingBits: 64, ScaleBits: 62}
		}, nil, "62 scale bits"},
		{"model of a round past the run", nil, model(7, false), "round 7"},
		{"model of a negative round", nil, model(-1, false), "round -1"},
		{"final model early", nil, model(2, true), "round 2 (final: true)"},
		{"last round not final", nil, model(4, false), "round 4 (final: false)"},
		{"model of another dimension", nil, []*flv1.ModelChunk{{Round: 0, Dim: math.MaxInt32, Values: []float64{0}}}, "malformed model chunk"},
	} {
		join := &flv1.JoinResponse{ProtocolVersion: Protocol, Config: good()}
		if tc.edit != nil {
			tc.edit(join)
		}
		err := runLearnerAgainst(t, &fakeServer{join: join, model: tc.model}, 10*time.Second)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// headerServer is a fakeServer whose Join answers with headers of pad
// bytes.
type headerServer struct {
	fakeServer
	pad int
}

func (h *headerServer) Join(ctx context.Context, r *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	if err := grpc.SetHeader(ctx, metadata.Pairs("pad", strings.Repeat("x", h.pad))); err != nil {
		return nil, err
	}
	return h.fakeServer.Join(ctx, r)
}

// A learner takes at most MaxHeaderListSize bytes of a server's headers,
// as the server does of a learner's: a Join answered with 1 MiB of
// headers fails there (gRPC's default would take up to 16 MiB a call, and
// the learner went on), and one with 1 KiB goes on to the model, which this
// server never sends.
func TestLearnerBoundsServerHeaders(t *testing.T) {
	for _, tc := range []struct {
		pad     int
		want    string
		notWant string
	}{
		// Refused at Join (gRPC resets the stream), before any model.
		{1 << 20, "", "short model"},
		// Past Join to the model, which this server never sends.
		{1 << 10, "short model", ""},
	} {
		join := &flv1.JoinResponse{ProtocolVersion: Protocol, Config: fakeRunConfig()}
		err := runLearnerAgainst(t, &headerServer{fakeServer: fakeServer{join: join}, pad: tc.pad}, 10*time.Second)
		if err == nil || tc.want != "" && !strings.Contains(err.Error(), tc.want) || tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("headers of %d bytes: %v, want an error containing %q (and not %q)", tc.pad, err, tc.want, tc.notWant)
		}
	}
}
