package fednet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// ChunkLen is the number of float64 values per message of a model or an
// update: 256 KiB of payload, far below gRPC's 4 MiB default limit, so
// vectors of any dimension go through.
const ChunkLen = 1 << 15

// MaxMsgSize is the largest message the server and the learners accept:
// one chunk and its header with room to spare. A larger message is
// refused by gRPC before it reaches the server's code.
const MaxMsgSize = 1 << 20

// Protocol is the protocol revision this package speaks.
const Protocol = flv1.ProtocolVersion_PROTOCOL_VERSION_1

// Model names the per-sample loss the learners use; the server only
// passes it on.
type Model struct {
	// Name is "logistic".
	Name string
	// L2 is the L2 coefficient of the logistic loss.
	L2 float64
	// Features is the feature dimension d; the model has NumParams(d)
	// parameters.
	Features int
}

// ServerOptions configure [NewServer].
type ServerOptions struct {
	// Config is the optimiser's configuration (algorithm, steps, clipping
	// bound, initial model, privacy record).
	Config fedopt.Config
	// Shape is n, R, tau and the model dimension.
	Shape fedopt.Shape
	// Model is passed on to the learners.
	Model Model
	// Noise returns the noise mechanism positioned at round start (for
	// example with mechanism.WithStartRound); nil for NonPrivate. Its
	// key stays on the server.
	Noise func(start int) (mechanism.Mechanism, error)
	// Epochs is passed on to the learners: each replays its R/K rounds
	// of clients K times (0 means 1). The privacy calibration in
	// Config.Privacy must account for it.
	Epochs int
	// Describe is the run's description other than Config, Shape and
	// Model (for example the factorization and the privacy budget). A
	// restart with a different description is refused.
	Describe map[string]any
	// Dir is the state directory: every released model is written there
	// before anyone sees it, and a restarted server resumes from it.
	Dir string
	// RoundTimeout is how long a round waits for updates after it opens
	// (default 60 s). Then it closes with the updates received if there
	// are at least MinLearners, and otherwise the server stops. In the
	// first round of a server process it counts from the first learner's
	// call (see JoinTimeout), not from the server's start.
	RoundTimeout time.Duration
	// JoinTimeout bounds how long [Server.Run] waits for the first learner
	// to reach it (a Join, or any call of a learner that joined before a
	// restart) before it starts the first round's RoundTimeout; with no
	// learner by then Run returns ErrTooFewLearners. 0, the default,
	// waits without limit, so a server may be started long before its
	// learners.
	JoinTimeout time.Duration
	// MinLearners is the least number of updates a round may close with
	// (default: all learners). Missing updates count as zero (see
	// fedopt.Server), so the privacy guarantee holds whatever it is.
	MinLearners int
	// QuorumGrace is how long a round waits for the rest of the learners
	// once MinLearners updates are in, when MinLearners is below the
	// number of learners (default 3 s): the round then closes with the
	// updates received, without waiting for RoundTimeout. A round with
	// every learner's update closes at once.
	QuorumGrace time.Duration
	// MaxWait bounds how long GetModel waits for the next release before
	// it answers DeadlineExceeded (default 30 s), whatever the learner's
	// deadline.
	MaxWait time.Duration
	// CallTimeout bounds how long the server waits for the chunks of one
	// update (default 30 s), whatever the learner's deadline: a stalled
	// upload is cut off with DeadlineExceeded.
	CallTimeout time.Duration
	// Linger is how long the server keeps answering after the last round
	// so that every learner can fetch the final model (default 10 s).
	Linger time.Duration
	// Identify, if not nil, returns the learner index the peer of ctx is
	// authenticated as (from its client certificate with mutual TLS); a
	// call that names another learner is refused.
	Identify func(ctx context.Context) (int, error)
	// Log receives one line per release and per rejected call; nil
	// discards.
	Log *slog.Logger
}

// Server serves the Federation protocol: it collects the learners' updates
// for the current round, releases the next model through a fedopt.Server
// (which adds the noise), writes it to the state directory and then makes
// it available. Create it with [NewServer], register it on a grpc.Server
// with [Server.Register] and drive the rounds with [Server.Run].
type Server struct {
	flv1.UnimplementedFederationServer
	opt  ServerOptions
	log  *slog.Logger
	st   store
	core *fedopt.Server

	mu        sync.Mutex
	round     int
	model     []float64     // x^round, never modified once published
	released  chan struct{} // closed when round advances
	updates   [][]float64   // the current round's updates by learner
	got       int
	full      chan struct{} // closed when every learner submitted
	quorum    chan struct{} // closed when MinLearners < n learners submitted
	contact   chan struct{} // closed when a learner first reached this server
	contacted sync.Once
	submitted []int         // per learner: the last round it submitted for, -1
	fetched   []bool        // per learner: got the final model
	allDone   chan struct{} // closed when every learner got the final model
}

// errNoServer is returned by the methods of a nil or zero-value Server
// (one not made by NewServer).
var errNoServer = errors.New("fednet: the Server was not created by NewServer")

// ok reports whether s was made by NewServer.
func (s *Server) ok() bool { return s != nil && s.core != nil }

// NewServer opens the state directory and resumes from its last released
// model, or starts at round 0 and writes x^0.
func NewServer(opt ServerOptions) (*Server, error) {
	sh := opt.Shape
	if opt.Dir == "" {
		return nil, errors.New("fednet: the server needs a state directory")
	}
	if opt.RoundTimeout == 0 {
		opt.RoundTimeout = 60 * time.Second
	}
	if opt.MaxWait == 0 {
		opt.MaxWait = 30 * time.Second
	}
	if opt.Linger == 0 {
		opt.Linger = 10 * time.Second
	}
	if opt.CallTimeout == 0 {
		opt.CallTimeout = 30 * time.Second
	}
	if opt.QuorumGrace == 0 {
		opt.QuorumGrace = 3 * time.Second
	}
	if opt.MinLearners == 0 {
		opt.MinLearners = sh.Learners
	}
	if opt.MinLearners < 1 || opt.MinLearners > sh.Learners {
		return nil, fmt.Errorf("fednet: minimum learners per round %d, want 1..%d", opt.MinLearners, sh.Learners)
	}
	if opt.Epochs < 0 || (opt.Epochs > 1 && sh.Rounds%opt.Epochs != 0) {
		return nil, fmt.Errorf("fednet: %d epochs for %d rounds, want a divisor of the rounds", opt.Epochs, sh.Rounds)
	}
	if opt.RoundTimeout < 0 || opt.MaxWait < 0 || opt.Linger < 0 || opt.CallTimeout < 0 || opt.JoinTimeout < 0 || opt.QuorumGrace < 0 {
		return nil, errors.New("fednet: negative timeout")
	}
	if opt.Model.Name != "logistic" {
		return nil, fmt.Errorf("fednet: model %q, want logistic", opt.Model.Name)
	}
	if (fedopt.Logistic{}).NumParams(opt.Model.Features) != sh.Dim {
		return nil, fmt.Errorf("fednet: model dimension %d for %d features, want %d", sh.Dim, opt.Model.Features, (fedopt.Logistic{}).NumParams(opt.Model.Features))
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("fednet: state directory: %w", err)
	}
	st := store{opt.Dir}
	desc, err := describe(opt)
	if err != nil {
		return nil, err
	}
	if err := st.checkRun(desc); err != nil {
		return nil, fmt.Errorf("fednet: %w", err)
	}
	last, ok, err := st.last()
	if err != nil {
		return nil, fmt.Errorf("fednet: %w", err)
	}
	start, x := 0, opt.Config.X0
	if ok {
		if len(last.X) != sh.Dim || last.Round > sh.Rounds {
			return nil, fmt.Errorf("fednet: %s holds round %d of dimension %d, want at most %d rounds of dimension %d", opt.Dir, last.Round, len(last.X), sh.Rounds, sh.Dim)
		}
		start, x = last.Round, last.X
	}
	var noise mechanism.Mechanism
	if opt.Noise != nil {
		if noise, err = opt.Noise(start); err != nil {
			return nil, fmt.Errorf("fednet: noise mechanism: %w", err)
		}
	}
	core, err := fedopt.NewServerAt(opt.Config, sh, noise, start, x)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := st.writeRound(Released{Round: 0, X: core.Model()}); err != nil {
			return nil, fmt.Errorf("fednet: %w", err)
		}
	} else {
		log.Info("resumed", "round", start, "dir", opt.Dir)
	}
	s := &Server{
		opt: opt, log: log, st: st, core: core,
		round: start, model: slices.Clone(core.Model()),
		released: make(chan struct{}), full: make(chan struct{}), allDone: make(chan struct{}),
		quorum: make(chan struct{}), contact: make(chan struct{}),
		updates: make([][]float64, sh.Learners), submitted: make([]int, sh.Learners),
		fetched: make([]bool, sh.Learners),
	}
	for i := range s.submitted {
		s.submitted[i] = -1
	}
	return s, nil
}

// describe returns the run's description as JSON.
func describe(opt ServerOptions) ([]byte, error) {
	c := opt.Config
	d := map[string]any{
		"protocol": int(Protocol), "algorithm": c.Algorithm.String(),
		"eta": c.Eta, "eta_g": c.EtaG, "eta_ind": c.EtaInd, "clip": c.Clip,
		"learners": opt.Shape.Learners, "rounds": opt.Shape.Rounds, "tau": opt.Shape.Tau, "dim": opt.Shape.Dim,
		"model": opt.Model.Name, "l2": opt.Model.L2, "features": opt.Model.Features,
		"x0": c.X0 != nil, "epochs": max(opt.Epochs, 1),
	}
	if p := c.Privacy; p != nil {
		d["eps"], d["delta"], d["noise_std"], d["sensitivity"] = p.Eps, p.Delta, p.NoiseStd, p.Sensitivity
	}
	for k, v := range opt.Describe {
		d[k] = v
	}
	b, err := json.Marshal(d) // maps marshal with sorted keys
	if err != nil {
		return nil, fmt.Errorf("fednet: run description: %w", err)
	}
	return b, nil
}

// Register registers the Federation service on g.
func (s *Server) Register(g *grpc.Server) { flv1.RegisterFederationServer(g, s) }

// ServerOptionsGRPC returns the grpc.Server options the protocol needs
// (message size limits).
func ServerOptionsGRPC() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMsgSize), grpc.MaxSendMsgSize(MaxMsgSize)}
}

// Round returns the server's current round and model x^round (not to be
// modified).
func (s *Server) Round() (int, []float64) {
	if !s.ok() {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.round, s.model
}

// ErrTooFewLearners is returned by [Server.Run] when a round times out with
// fewer updates than ServerOptions.MinLearners, or no learner comes within
// ServerOptions.JoinTimeout.
var ErrTooFewLearners = errors.New("fednet: too few learners")

// Run drives the rounds until all are released, ctx is done or a round
// fails the dropout policy. The first round's timeout starts when the
// first learner reaches the server. Every released model is on disk
// before it is served. After the last round it keeps serving the final
// model until every learner fetched it or Linger passed.
func (s *Server) Run(ctx context.Context) error {
	if !s.ok() {
		return errNoServer
	}
	for first := true; ; first = false {
		s.mu.Lock()
		r, full, quorum := s.round, s.full, s.quorum
		s.mu.Unlock()
		if r == s.opt.Shape.Rounds {
			break
		}
		if first {
			if err := s.awaitContact(ctx); err != nil {
				return err
			}
		}
		if err := s.awaitRound(ctx, full, quorum); err != nil {
			return err
		}
		if err := s.release(); err != nil {
			return err
		}
	}
	t := time.NewTimer(s.opt.Linger)
	defer t.Stop()
	select {
	case <-s.allDone:
		s.log.Info("done", "rounds", s.opt.Shape.Rounds, "final", "fetched by every learner")
	case <-t.C:
		s.log.Warn("done", "rounds", s.opt.Shape.Rounds, "final", "not fetched by every learner within the linger time")
	case <-ctx.Done():
	}
	return nil
}

// awaitContact waits until a learner has reached the server, for at most
// JoinTimeout if it is set.
func (s *Server) awaitContact(ctx context.Context) error {
	var limit <-chan time.Time
	if s.opt.JoinTimeout > 0 {
		t := time.NewTimer(s.opt.JoinTimeout)
		defer t.Stop()
		limit = t.C
	}
	select {
	case <-s.contact:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-limit:
		r, _ := s.Round()
		s.log.Error("no learner", "round", r, "join_timeout", s.opt.JoinTimeout)
		return fmt.Errorf("%w: no learner reached the server within the join timeout %v; released rounds are kept, restart the server to resume", ErrTooFewLearners, s.opt.JoinTimeout)
	}
}

// awaitRound waits until the open round may close: every learner
// submitted (full), QuorumGrace passed since MinLearners < n did
// (quorum), or RoundTimeout passed.
func (s *Server) awaitRound(ctx context.Context, full, quorum <-chan struct{}) error {
	timer := time.NewTimer(s.opt.RoundTimeout)
	defer timer.Stop()
	var grace <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-full:
			return nil
		case <-timer.C:
			return nil
		case <-quorum:
			quorum = nil
			g := time.NewTimer(s.opt.QuorumGrace)
			defer g.Stop()
			grace = g.C
		case <-grace:
			return nil
		}
	}
}

// release closes the current round: with enough updates it aggregates
// them, writes x^{r+1} and publishes it.
func (s *Server) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, n := s.round, s.opt.Shape.Learners
	if s.got < s.opt.MinLearners {
		s.log.Error("round timed out", "round", r, "updates", s.got, "learners", n, "min", s.opt.MinLearners)
		return fmt.Errorf("%w: round %d received %d of %d updates within %v, fewer than the minimum %d; released rounds are kept, restart the server to resume", ErrTooFewLearners, r, s.got, n, s.opt.RoundTimeout, s.opt.MinLearners)
	}
	if err := s.core.Release(s.updates); err != nil {
		return err // updates were checked on arrival: not reached
	}
	x := slices.Clone(s.core.Model())
	if err := s.st.writeRound(Released{Round: r + 1, Updates: s.got, X: x}); err != nil {
		return fmt.Errorf("fednet: writing x^%d: %w", r+1, err)
	}
	s.log.Info("released", "round", r+1, "updates", s.got, "learners", n)
	s.round, s.model = r+1, x
	clear(s.updates)
	s.got = 0
	close(s.released)
	s.released = make(chan struct{})
	s.full = make(chan struct{})
	s.quorum = make(chan struct{})
	return nil
}

// reject logs and returns a refused call's error.
func (s *Server) reject(code codes.Code, call string, learner, round int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	s.log.Warn("rejected", "call", call, "learner", learner, "round", round, "reason", msg)
	return status.Error(code, msg)
}

// checkLearner checks that learner is a valid index and, with
// authentication, the caller's own.
func (s *Server) checkLearner(ctx context.Context, call string, learner int) error {
	if learner < 0 || learner >= s.opt.Shape.Learners {
		return s.reject(codes.InvalidArgument, call, learner, -1, "learner %d, want 0..%d", learner, s.opt.Shape.Learners-1)
	}
	if s.opt.Identify != nil {
		id, err := s.opt.Identify(ctx)
		if err != nil {
			return s.reject(codes.Unauthenticated, call, learner, -1, "%v", err)
		}
		if id != learner {
			return s.reject(codes.PermissionDenied, call, learner, -1, "authenticated as learner %d, not %d", id, learner)
		}
	}
	s.firstContact()
	return nil
}

// firstContact records that a learner reached the server: the first round's
// timeout starts.
func (s *Server) firstContact() {
	s.contacted.Do(func() { close(s.contact) })
}

// Join implements the Federation service.
func (s *Server) Join(ctx context.Context, req *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	if !s.ok() {
		return nil, status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	if req.GetProtocolVersion() != Protocol {
		return nil, s.reject(codes.FailedPrecondition, "Join", int(req.GetLearner()), -1, "protocol version %v, the server speaks %v", req.GetProtocolVersion(), Protocol)
	}
	if err := s.checkLearner(ctx, "Join", int(req.GetLearner())); err != nil {
		return nil, err
	}
	c, sh := s.opt.Config, s.opt.Shape
	r, _ := s.Round()
	s.log.Info("joined", "learner", req.GetLearner(), "round", r)
	return &flv1.JoinResponse{
		ProtocolVersion: Protocol,
		Round:           int32(r),
		Config: &flv1.RunConfig{
			Algorithm: c.Algorithm.String(), Eta: c.Eta, Clip: c.Clip,
			Model: s.opt.Model.Name, L2: s.opt.Model.L2,
			Learners: int32(sh.Learners), Rounds: int32(sh.Rounds), Tau: int32(sh.Tau),
			Features: int32(s.opt.Model.Features), Params: int32(sh.Dim),
			Epochs: int32(max(s.opt.Epochs, 1)),
		},
	}, nil
}

// GetModel implements the Federation service.
func (s *Server) GetModel(req *flv1.GetModelRequest, stream grpc.ServerStreamingServer[flv1.ModelChunk]) error {
	if !s.ok() {
		return status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	ctx := stream.Context()
	i := int(req.GetLearner())
	if err := s.checkLearner(ctx, "GetModel", i); err != nil {
		return err
	}
	wait := time.NewTimer(s.opt.MaxWait)
	defer wait.Stop()
	for {
		s.mu.Lock()
		r, x, rel := s.round, s.model, s.released
		ready := r == s.opt.Shape.Rounds || s.submitted[i] < r
		s.mu.Unlock()
		if ready {
			if err := sendModel(stream, r, r == s.opt.Shape.Rounds, x); err != nil {
				return err
			}
			if r == s.opt.Shape.Rounds {
				s.mu.Lock()
				if !s.fetched[i] {
					s.fetched[i] = true
					if !slices.Contains(s.fetched, false) {
						close(s.allDone)
					}
				}
				s.mu.Unlock()
			}
			return nil
		}
		select {
		case <-rel:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-wait.C:
			return status.Errorf(codes.DeadlineExceeded, "round %d is not released yet", r+1)
		}
	}
}

// sendModel streams x^r in chunks.
func sendModel(stream grpc.ServerStreamingServer[flv1.ModelChunk], r int, done bool, x []float64) error {
	for off := 0; off == 0 || off < len(x); off += ChunkLen {
		end := min(off+ChunkLen, len(x))
		err := stream.Send(&flv1.ModelChunk{Round: int32(r), Done: done, Dim: int32(len(x)), Offset: int32(off), Values: x[off:end]})
		if err != nil {
			return err
		}
	}
	return nil
}

// SubmitUpdate implements the Federation service. The upload gets
// ServerOptions.CallTimeout: when it expires the handler returns, which
// ends the stream and the receive blocked in it.
func (s *Server) SubmitUpdate(stream grpc.ClientStreamingServer[flv1.UpdateChunk, flv1.SubmitResponse]) error {
	if !s.ok() {
		return status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	done := make(chan error, 1)
	go func() { done <- s.submitUpdate(stream) }()
	t := time.NewTimer(s.opt.CallTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		s.log.Warn("rejected", "call", "SubmitUpdate", "reason", fmt.Sprintf("upload not complete within %v", s.opt.CallTimeout))
		return status.Errorf(codes.DeadlineExceeded, "upload not complete within %v", s.opt.CallTimeout)
	}
}

// submitUpdate receives, checks and stores one update.
func (s *Server) submitUpdate(stream grpc.ClientStreamingServer[flv1.UpdateChunk, flv1.SubmitResponse]) error {
	const call = "SubmitUpdate"
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return s.recvError(call, -1, -1, err)
	}
	i, r, dim := int(first.GetLearner()), int(first.GetRound()), int(first.GetDim())
	if err := s.checkLearner(ctx, call, i); err != nil {
		return err
	}
	if dim != s.opt.Shape.Dim {
		return s.reject(codes.InvalidArgument, call, i, r, "update of dimension %d, want %d", dim, s.opt.Shape.Dim)
	}
	if err := s.checkOpen(call, i, r); err != nil {
		return err
	}
	u := make([]float64, dim)
	filled := 0
	for c := first; ; {
		if int(c.GetLearner()) != i || int(c.GetRound()) != r || int(c.GetDim()) != dim {
			return s.reject(codes.InvalidArgument, call, i, r, "chunk for learner %d, round %d, dimension %d inside an update of learner %d, round %d, dimension %d", c.GetLearner(), c.GetRound(), c.GetDim(), i, r, dim)
		}
		if int(c.GetOffset()) != filled {
			return s.reject(codes.InvalidArgument, call, i, r, "chunk at offset %d, want %d", c.GetOffset(), filled)
		}
		if len(c.GetValues()) > dim-filled {
			return s.reject(codes.InvalidArgument, call, i, r, "oversized update: more than %d values", dim)
		}
		filled += copy(u[filled:], c.GetValues())
		c, err = stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.recvError(call, i, r, err)
		}
	}
	if filled != dim {
		return s.reject(codes.InvalidArgument, call, i, r, "short update: %d of %d values", filled, dim)
	}
	if err := s.core.CheckUpdate(u); err != nil {
		return s.reject(codes.InvalidArgument, call, i, r, "%s", trimPrefix(err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpenLocked(call, i, r); err != nil {
		return err
	}
	s.updates[i] = u
	s.submitted[i] = r
	s.got++
	if s.got == s.opt.Shape.Learners {
		close(s.full)
	}
	if s.got == s.opt.MinLearners && s.got < s.opt.Shape.Learners {
		close(s.quorum)
	}
	return stream.SendAndClose(&flv1.SubmitResponse{Round: int32(r)})
}

// recvError logs a message that could not be received (oversized,
// undecodable, or the peer went away) and returns its status.
func (s *Server) recvError(call string, learner, round int, err error) error {
	st := status.Convert(err)
	if st.Code() != codes.Canceled && st.Code() != codes.DeadlineExceeded {
		s.log.Warn("rejected", "call", call, "learner", learner, "round", round, "reason", st.Message())
	}
	return err
}

// checkOpen checks that round r is open and learner i has not submitted
// for it.
func (s *Server) checkOpen(call string, i, r int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkOpenLocked(call, i, r)
}

func (s *Server) checkOpenLocked(call string, i, r int) error {
	switch {
	case r != s.round:
		return s.reject(codes.FailedPrecondition, call, i, r, "update for round %d, the open round is %d", r, s.round)
	case s.round == s.opt.Shape.Rounds:
		return s.reject(codes.FailedPrecondition, call, i, r, "all %d rounds are released", s.round)
	case s.submitted[i] == r:
		return s.reject(codes.AlreadyExists, call, i, r, "duplicate update: learner %d already submitted for round %d", i, r)
	}
	return nil
}

// trimPrefix drops a library's package prefix from an error message.
func trimPrefix(err error) string {
	msg := err.Error()
	for _, p := range []string{"fedopt: ", "fednet: "} {
		if len(msg) > len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	return msg
}

// finite reports whether every entry of x is finite.
func finite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
