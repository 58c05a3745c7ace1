package fednet

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
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
// Revision 2 adds secure aggregation; a server of a plain run also
// serves learners of revision 1.
const Protocol = flv1.ProtocolVersion_PROTOCOL_VERSION_2

// Model names the per-sample loss the learners use; the server only
// passes it on (in RunConfig: the name, L2 and the feature and parameter
// counts), it never evaluates it.
type Model struct {
	// Name is "logistic" (model.Logistic, which every learner knows), or
	// the name of a model the learners are given by the caller
	// (LearnerOptions.Model). The server checks Shape.Dim against
	// Features only for "logistic"; for any other name the caller must
	// make the learners' model agree with it: its NumParams(Features) must
	// be Shape.Dim (the learner checks that), and its loss must be the one
	// the name and the run's description stand for (nothing can check
	// that).
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
	// Noise returns the noise mechanism positioned at round start (with
	// mechanism.WithStartRound) whose randomness comes from key (with
	// mechanism.WithKey); nil for NonPrivate. The key stays on the server.
	// run.json records, with the key's fingerprint, the fingerprint of
	// mechanism.New's noise derivation (mechanism.DerivationFingerprint),
	// and a restart under another is refused: that binds the run's noise
	// only when Noise returns a mechanism of mechanism.New with key, as a
	// server with a privacy record must (fedopt checks the factorization
	// through mechanism.FactorizationOf). A mechanism of another origin,
	// which a run without Config.Privacy may use, or a wrapper (Unwrap)
	// whose Next changes the noise it wraps, is recorded with dpmf's
	// fingerprint all the same: whether it draws the same noise after a
	// restart is then the caller's to ensure. Without Plan, the run's
	// description binds the factorization (a record's OperatorSHA256;
	// without Config.Privacy, the noise std and the factorization's digest
	// of the mechanism Noise makes at round 0 with a fixed public probe key, which
	// NewServer calls it for), so a restart with another is refused; and
	// the mechanism made for the round a run starts or resumes at, with
	// the run's key, must have that std and digest too (a Noise whose
	// std depends on the round or the key is refused).
	Noise func(start int, key [32]byte) (mechanism.Mechanism, error)
	// NoiseKey, if not nil, is the noise key: for reproducible experiments
	// (mechanism.SeedKey(seed) gives the noise of mechanism.WithSeed(seed)).
	// Anyone who knows it can remove the noise from every released model;
	// the all-zero key, what an unset one holds, is refused. If nil, the
	// server draws the key from crypto/rand when the run
	// starts and keeps it in Dir/noise.key (mode 0600); a restart reads it
	// back, and a missing, foreign or group- or world-accessible key file
	// is an error, never replaced. Either way run.json records the key's
	// fingerprint, and a restart with another key is refused.
	NoiseKey *[32]byte
	// Epochs is passed on to the learners: each replays its R/K rounds
	// of clients K times (0 means 1). The participation of Config.Privacy
	// must allow it (fedopt.CheckEpochs: epochs:K, or a min-separation of
	// at most R/K): NewServer refuses it otherwise.
	Epochs int
	// Plan, if not nil, is the run's description in place of the one made
	// from Config, Shape and Model:
	// the JSON of the run's plan (plan.Plan.Marshal), which run.json
	// records as it is and [ReadPlan] gives back. NewServer checks that it
	// is the plan of this run: its algorithm, shape, step size, clipping
	// bound, model and noise std are those of Config, Shape and Model, its
	// epochs those of Epochs (a plan of epochs:K needs Epochs K; under
	// minsep:B[,K] any Epochs the participation allows, fedopt.CheckEpochs;
	// under single participation 1), and its privacy record (fedopt.PrivacyOf) that of
	// Config.Privacy: eps, delta, method, sensitivity, participation,
	// relation, calibration, gamma, unit sensitivity, effective clip,
	// quantization term and operator digest. A run with Noise needs
	// Config.Privacy with a Plan (the record binds the noise std and the
	// factorization to the run). A restart with a different plan is
	// refused.
	Plan json.RawMessage
	// Dir is the state directory: every released model is written there
	// before anyone sees it, and a restarted server resumes from it. One
	// server at a time may use it (an exclusive lock, released when Run
	// returns or by Close), and a restart refuses a directory whose state
	// was lost, rewound, copied or mixed with another run's (see
	// docs/distributed.md, "Faults").
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
	// update, and for a learner to take the chunks of one model (default
	// 30 s), whatever the learner's deadline: a stalled upload, or a
	// learner that stops reading a model, is cut off with
	// DeadlineExceeded. An upload is decided once: one that is cut off is
	// never aggregated, even if its last chunk arrives at that moment.
	CallTimeout time.Duration
	// MaxUploads bounds the SubmitUpdate calls in progress at once, from
	// all peers together (default Learners × MaxUploadsPerLearner), and
	// MaxUploadsPerLearner those of one learner (default
	// DefaultCallsPerLearner): the learner authenticated by Identify, or
	// without Identify the one the first chunk names. A call beyond
	// either limit is refused with ResourceExhausted and a reason (the
	// learners retry it). An upload holds only the values received so
	// far, so the uploads in progress take at most about MaxUploads × 8 ×
	// Dim bytes whatever the peers send, and with Identify and the
	// default limits one learner's calls cannot crowd out another's.
	MaxUploads, MaxUploadsPerLearner int
	// MaxModelStreams and MaxModelStreamsPerLearner are the same limits
	// for GetModel calls (defaults as for uploads). A model stream holds
	// at most one chunk (256 KiB) that the learner has not taken. The
	// SecAgg calls of secure aggregation, which wait for a phase to
	// close, have limits of their own of the same sizes.
	MaxModelStreams, MaxModelStreamsPerLearner int
	// Linger is how long the server keeps answering after the last round
	// so that every learner can fetch the final model (default 10 s).
	Linger time.Duration
	// Identify, if not nil, returns the learner index the peer of ctx is
	// authenticated as (from its client certificate with mutual TLS); a
	// call that names another learner is refused.
	Identify func(ctx context.Context) (int, error)
	// SecureAggregation, if not nil, runs every round with the
	// secure-aggregation protocol: the learners send their updates
	// quantized (Config.Quantizer) and masked, and the server learns only
	// their sum. A Plan with a secure_aggregation section sets it (and
	// Config.Quantizer) when nil, and must agree with it otherwise. It needs 2..secagg.MaxLearners learners, a clipping bound
	// and a quantizer, and replaces MinLearners by its threshold. See
	// docs/distributed.md, "Secure aggregation".
	SecureAggregation *SecureAggregation
	// Log receives one line per release and per rejected call (those
	// about rejected calls at most 10 a second after a burst of 50, with
	// the number suppressed in the next); nil discards.
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
	core *fedopt.Server

	stMu   sync.Mutex    // guards st and ran; taken before mu
	st     *state        // nil once closed
	ran    bool          // Run was called
	closed chan struct{} // closed with st: nothing more is released

	run     runID               // the run's identity, from the state directory
	digests [][sha256.Size]byte // per released round: the hash that ends its file
	witKey  [sha256.Size]byte   // the key of the releases' witness tags (witnessKey)

	uploads, streams *slots // calls in progress and their limits
	polls            *slots // SecAgg calls in progress (the model streams' limits)
	logLim           logLimiter

	mu        sync.Mutex
	round     int
	model     []float64     // x^round, never modified once published
	fault     error         // set when a learner's witness shows the state was rewound, or the secure round can no longer complete
	halted    bool          // a round's or phase's close failed: Run returns, and what the close changed in memory is never served
	faulted   chan struct{} // closed when fault is set
	released  chan struct{} // closed when round advances
	updates   [][]float64   // the current round's updates by learner
	tally                   // the updates received: want n, quorum MinLearners
	contact   chan struct{} // closed when a learner first reached this server
	contacted sync.Once
	submitted []int         // per learner: the last round it submitted for, -1
	fetched   []bool        // per learner: got the final model
	allDone   chan struct{} // closed when every learner got the final model
	sec       *secRound     // the open round's secure aggregation (nil: plain, or the run is over)
	// secGen is the generation of this server's snapshot file, claimed
	// (secClaimed) with its first write (secstore.go).
	secGen     uint64
	secClaimed bool

	hooks serverHooks // test-only
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
	opt.RoundTimeout = cmp.Or(opt.RoundTimeout, 60*time.Second)
	opt.MaxWait = cmp.Or(opt.MaxWait, 30*time.Second)
	opt.Linger = cmp.Or(opt.Linger, 10*time.Second)
	opt.CallTimeout = cmp.Or(opt.CallTimeout, 30*time.Second)
	opt.QuorumGrace = cmp.Or(opt.QuorumGrace, 3*time.Second)
	opt.MinLearners = cmp.Or(opt.MinLearners, sh.Learners)
	if opt.MinLearners < 1 || opt.MinLearners > sh.Learners {
		return nil, fmt.Errorf("fednet: minimum learners per round %d, want 1..%d", opt.MinLearners, sh.Learners)
	}
	if opt.Epochs < 0 || (opt.Epochs > 1 && sh.Rounds%opt.Epochs != 0) {
		return nil, fmt.Errorf("fednet: %d epochs for %d rounds, want a divisor of the rounds", opt.Epochs, sh.Rounds)
	}
	if pr := opt.Config.Privacy; pr != nil && opt.Epochs > 1 {
		// The learners replay their data as the server announces
		// (ofl learner builds it so): the record must allow it.
		if err := fedopt.CheckEpochs(pr.ParticipationPattern, sh.Rounds, opt.Epochs, sh.Rounds/opt.Epochs); err != nil {
			return nil, fmt.Errorf("fednet: ServerOptions.Epochs %d: %w", opt.Epochs, err)
		}
	}
	if err := checkWire(opt); err != nil {
		return nil, err
	}
	p, err := secureFromPlan(&opt)
	if err != nil {
		return nil, err
	}
	if err := checkSecure(&opt); err != nil {
		return nil, err
	}
	opt.MaxUploadsPerLearner = cmp.Or(opt.MaxUploadsPerLearner, DefaultCallsPerLearner)
	opt.MaxModelStreamsPerLearner = cmp.Or(opt.MaxModelStreamsPerLearner, DefaultCallsPerLearner)
	opt.MaxUploads = cmp.Or(opt.MaxUploads, sat(sh.Learners, opt.MaxUploadsPerLearner))
	opt.MaxModelStreams = cmp.Or(opt.MaxModelStreams, sat(sh.Learners, opt.MaxModelStreamsPerLearner))
	if opt.MaxUploads < 0 || opt.MaxUploadsPerLearner < 0 || opt.MaxModelStreams < 0 || opt.MaxModelStreamsPerLearner < 0 {
		return nil, fmt.Errorf("fednet: call limits %d uploads (%d per learner) and %d model streams (%d per learner), want >= 0 (0: the default)",
			opt.MaxUploads, opt.MaxUploadsPerLearner, opt.MaxModelStreams, opt.MaxModelStreamsPerLearner)
	}
	if opt.RoundTimeout < 0 || opt.MaxWait < 0 || opt.Linger < 0 || opt.CallTimeout < 0 || opt.JoinTimeout < 0 || opt.QuorumGrace < 0 {
		return nil, errors.New("fednet: negative timeout")
	}
	if opt.Model.Name == "" {
		return nil, errors.New("fednet: the model has no name (want logistic, or the name of the learners' LearnerOptions.Model)")
	}
	if opt.Model.Name == "logistic" && (dpmodel.Logistic{}).NumParams(opt.Model.Features) != sh.Dim {
		return nil, fmt.Errorf("fednet: model dimension %d for %d features, want %d", sh.Dim, opt.Model.Features, (dpmodel.Logistic{}).NumParams(opt.Model.Features))
	}
	if opt.NoiseKey != nil && opt.Noise == nil {
		return nil, errors.New("fednet: a noise key without a noise mechanism")
	}
	if opt.NoiseKey != nil && *opt.NoiseKey == ([32]byte{}) {
		return nil, errors.New("fednet: ServerOptions.NoiseKey is all zero, want a key (mechanism.SeedKey(seed) for an experiment; leave it nil for a secret one): the all-zero key is what an unset key holds, and its noise is public")
	}
	log := cmp.Or(opt.Log, slog.New(slog.DiscardHandler))
	desc, id, err := describe(opt, p)
	if err != nil {
		return nil, err
	}
	// Check what can be checked before the state directory is touched.
	if err := opt.Config.Validate(); err != nil {
		return nil, err
	}
	x0 := make([]float64, sh.Dim) // the optimiser's x^0: X0, or zeros
	if opt.Config.X0 != nil {
		if len(opt.Config.X0) != sh.Dim {
			return nil, fmt.Errorf("fednet: initial model of dimension %d, want %d", len(opt.Config.X0), sh.Dim)
		}
		copy(x0, opt.Config.X0)
	}
	st, err := openState(opt.Dir, stateOptions{plan: desc, x0: x0, noise: opt.Noise != nil, key: opt.NoiseKey})
	if err != nil {
		return nil, fmt.Errorf("fednet: %w", err)
	}
	s, err := newServer(opt, log, st, id)
	if err != nil {
		st.lock.Close()
		return nil, err
	}
	return s, nil
}

// newServer makes the server of a state directory opened by openState.
// id, if not nil, is the noise identity run.json records for a run
// without a privacy record (see [describe]); the mechanism made for the
// resume round with the run's key must have it.
func newServer(opt ServerOptions, log *slog.Logger, st *state, id *noiseID) (*Server, error) {
	sh, last := opt.Shape, st.last
	if len(last.X) != sh.Dim || last.Round > sh.Rounds {
		return nil, fmt.Errorf("fednet: %s holds round %d of dimension %d, want at most %d rounds of dimension %d", opt.Dir, last.Round, len(last.X), sh.Rounds, sh.Dim)
	}
	start := last.Round
	var noise mechanism.Mechanism
	if opt.Noise != nil {
		var err error
		if noise, err = opt.Noise(start, st.key); err != nil {
			return nil, fmt.Errorf("fednet: noise mechanism: %w", err)
		}
		if err := id.check(noise, start); err != nil {
			return nil, err
		}
	}
	core, err := fedopt.NewServerAt(opt.Config, sh, noise, start, last.X)
	if err != nil {
		return nil, err
	}
	// What Join announces (the record's participation, the quantizer's
	// scale bits) is the core's own copy, the one it checked: the
	// caller's record and quantizer may change after NewServer
	// (TestJoinAnnouncesWhatWasChecked).
	opt.Config = core.Config()
	if st.stale > 0 {
		log.Warn("removed stale temporary files", "dir", opt.Dir, "files", st.stale)
	}
	if st.resumed {
		log.Info("resumed", "round", start, "dir", opt.Dir, "run", st.run.String())
	}
	s := &Server{
		opt: opt, log: log, logLim: logLimiter{log: log}, st: st, core: core,
		round: start, model: slices.Clone(core.Model()),
		run: st.run, digests: slices.Clone(st.sums), witKey: witnessKey(st.key), faulted: make(chan struct{}), closed: make(chan struct{}),
		released: make(chan struct{}), tally: newTally(), allDone: make(chan struct{}), contact: make(chan struct{}),
		updates: make([][]float64, sh.Learners), submitted: slices.Repeat([]int{-1}, sh.Learners),
		fetched: make([]bool, sh.Learners),
		uploads: newSlots("uploads", sh.Learners, opt.MaxUploads, opt.MaxUploadsPerLearner),
		streams: newSlots("model streams", sh.Learners, opt.MaxModelStreams, opt.MaxModelStreamsPerLearner),
		polls:   newSlots("protocol calls", sh.Learners, opt.MaxModelStreams, opt.MaxModelStreamsPerLearner),
	}
	if opt.SecureAggregation != nil {
		if err := s.resumeSecure(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// MaxWire is the largest count the protocol carries: learners, rounds,
// tau, features, parameters, epochs, round numbers and offsets travel as
// int32.
const MaxWire = math.MaxInt32

// checkWire checks that every count of opt that crosses the protocol fits
// its int32 field, so that no learner is told a wrapped-around value.
func checkWire(opt ServerOptions) error {
	sh := opt.Shape
	for _, p := range []struct {
		name string
		v    int
	}{{"learners", sh.Learners}, {"rounds", sh.Rounds}, {"tau", sh.Tau}, {"model dimension", sh.Dim},
		{"features", opt.Model.Features}, {"epochs", max(opt.Epochs, 1)}} {
		if p.v < 1 || p.v > MaxWire {
			return fmt.Errorf("fednet: %s %d, want 1..%d (the protocol carries it as int32)", p.name, p.v, MaxWire)
		}
	}
	return nil
}

// sat returns a b, or the largest int if that overflows (a and b >= 0).
func sat(a, b int) int {
	if b != 0 && a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// describe returns the run's description as JSON: opt.Plan, parsed as
// p, or the one made from opt; and, for a run that adds noise without a
// privacy record, the noise identity the description records, which
// nothing else checks the run's mechanism against (a record's std and
// factorization fedopt checks).
func describe(opt ServerOptions, p *plan.Plan) ([]byte, *noiseID, error) {
	if p != nil {
		b, err := describePlan(opt, p)
		return b, nil, err
	}
	c := opt.Config
	var id *noiseID
	d := map[string]any{
		"protocol": int(Protocol), "algorithm": c.Algorithm.String(),
		"eta": c.Eta, "eta_g": c.EtaG, "eta_ind": c.EtaInd, "clip": c.Clip,
		"learners": opt.Shape.Learners, "rounds": opt.Shape.Rounds, "tau": opt.Shape.Tau, "dim": opt.Shape.Dim,
		"model": opt.Model.Name, "l2": opt.Model.L2, "features": opt.Model.Features,
		"x0": c.X0 != nil, "epochs": max(opt.Epochs, 1),
	}
	if sa := opt.SecureAggregation; sa != nil {
		sd := map[string]any{"threshold": sa.Threshold, "ring_bits": secagg.RingBits, "scale_bits": c.Quantizer.ScaleBits}
		if sa.Colluders != 0 {
			// Absent for c = 0: the description of a run recorded
			// before colluders were (c = 0) stays the same.
			sd["colluders"] = sa.Colluders
		}
		d["secure_aggregation"] = sd
	}
	switch p := c.Privacy; {
	case p != nil:
		d["eps"], d["delta"], d["noise_std"], d["sensitivity"] = p.Eps, p.Delta, p.NoiseStd, p.Sensitivity
		// The factorization the noise streams with (fedopt checks the
		// mechanism's against it): two records may agree in everything
		// above (the identity and the normalized square root both have
		// sensitivity 1) and stream another C.
		d["operator_sha256"] = p.OperatorSHA256
	case opt.Noise != nil:
		// No record: what the caller's guarantee rests on is the
		// mechanism's noise std and factorization, which a restart must
		// not change either.
		var err error
		if id, err = noiseIdentity(opt.Noise); err != nil {
			return nil, nil, err
		}
		d["noise_std"] = id.std
		if id.digest != "" {
			d["operator_sha256"] = id.digest
		}
	}
	b, err := json.Marshal(d) // maps marshal with sorted keys
	if err != nil {
		return nil, nil, fmt.Errorf("fednet: run description: %w", err)
	}
	return b, id, nil
}

// noiseID is what run.json records of the noise of a run without a
// privacy record: its std and the digest of its factorization
// (plan.OperatorDigest), "" for a mechanism that reports none
// (mechanism.FactorizationOf).
type noiseID struct {
	std    float64
	digest string
}

// identityProbeKey is the key noiseIdentity asks Noise for a mechanism
// with: fixed and public, since only the std and the factorization's digest
// of that mechanism are kept, and not all zero, which mechanism.WithKey
// refuses (it is what an unset key holds).
var identityProbeKey = sha256.Sum256([]byte("dpmf/fednet/noise-identity-probe/v1"))

// noiseIdentity returns the noise identity of the mechanism noise makes at
// round 0 with identityProbeKey, the one run.json records: a run's key is
// made or read only once the state directory is open, after the
// description is. [noiseID.check] holds the mechanism a run releases with
// to it.
func noiseIdentity(noise func(start int, key [32]byte) (mechanism.Mechanism, error)) (*noiseID, error) {
	m, err := noise(0, identityProbeKey)
	if err != nil {
		return nil, fmt.Errorf("fednet: noise mechanism: %w", err)
	}
	if m == nil {
		return nil, errors.New("fednet: noise mechanism: ServerOptions.Noise returned none")
	}
	return identityOf(m)
}

// identityOf returns m's noise identity.
func identityOf(m mechanism.Mechanism) (*noiseID, error) {
	id := &noiseID{std: m.Std()}
	if f, ok := mechanism.FactorizationOf(m); ok {
		var err error
		if id.digest, err = plan.OperatorDigest(f); err != nil {
			return nil, fmt.Errorf("fednet: noise mechanism of factorization %q: %w", f.Strategy, err)
		}
	}
	return id, nil
}

// check returns an error unless m, the mechanism ServerOptions.Noise made
// for round start with the run's key, has the identity id (nil: nothing
// to check). A Noise whose std or factorization depends on the round or
// the key would otherwise release noise other than run.json records, a
// tenth of it, say, with nothing to show for it.
func (id *noiseID) check(m mechanism.Mechanism, start int) error {
	if id == nil {
		return nil
	}
	if m == nil {
		return errors.New("fednet: noise mechanism: ServerOptions.Noise returned none")
	}
	got, err := identityOf(m)
	if err != nil {
		return err
	}
	if *got != *id {
		return fmt.Errorf("fednet: noise mechanism at round %d with the run's key has noise std %v and factorization digest %q, but run.json records %v and %q (ServerOptions.Noise at round 0 with a public probe key): a Noise whose std or factorization depends on the round or the key is refused",
			start, got.std, got.digest, id.std, id.digest)
	}
	return nil
}

// describePlan checks that opt.Plan, parsed as p, is the plan of the run
// opt describes and returns it compacted.
func describePlan(opt ServerOptions, p *plan.Plan) ([]byte, error) {
	c, sh := opt.Config, opt.Shape
	if c.X0 != nil {
		return nil, errors.New("fednet: a plan describes a run from x^0 = 0, not from Config.X0")
	}
	if opt.Noise != nil && c.Privacy == nil {
		// run.json records the plan as it is: without a record, nothing
		// there would name the noise std or the factorization, and a
		// restart could change either.
		return nil, errors.New("fednet: the run adds noise (ServerOptions.Noise) but has no privacy record: with a Plan, give its record as Config.Privacy (fedopt.PrivacyOf of the calibrated plan), or leave out the Plan")
	}
	m := cmp.Or(p.Model, &plan.Model{})
	// The epochs: a plan of epochs:K describes a run whose learners
	// replay their data K times, so ServerOptions.Epochs must be K; under
	// single participation or minsep:B[,K] (Plan.Epochs 1) the epochs are
	// those the participation allows (fedopt.CheckEpochs, the rule the
	// learners apply at Join): any under minsep:B whose period R/E is at
	// least B (with at most K of a client's rounds in the run).
	planEpochs, runEpochs := p.Epochs(), max(opt.Epochs, 1)
	if part, err := p.Pattern(); err == nil && part.Kind == factorize.KindMinSep {
		if err := fedopt.CheckEpochs(part, sh.Rounds, runEpochs, sh.Rounds/runEpochs); err != nil {
			return nil, fmt.Errorf("fednet: the run's plan has participation %v, which does not allow the run's %d epochs (ServerOptions.Epochs): %w", part, runEpochs, err)
		}
		planEpochs = runEpochs
	}
	std, planStd := cmp.Or(c.Privacy, &fedopt.Privacy{}).NoiseStd, cmp.Or(p.Privacy, &plan.Record{}).NoiseStd
	for _, f := range []struct {
		name      string
		plan, run any
	}{
		{"algorithm", p.Algorithm, c.Algorithm.String()},
		{"learners", p.Learners, sh.Learners}, {"rounds", p.Rounds, sh.Rounds}, {"tau", p.Tau, sh.Tau},
		{"epochs", planEpochs, runEpochs},
		{"eta", p.Eta, c.Eta}, {"eta_g", p.EtaG, c.EtaG}, {"eta_ind", p.EtaInd, c.EtaInd}, {"clip", p.Clip, c.Clip},
		{"model", m.Name, opt.Model.Name}, {"features", m.Features, opt.Model.Features}, {"l2", m.L2, opt.Model.L2},
		{"noise std", planStd, std},
	} {
		if f.plan != f.run {
			return nil, fmt.Errorf("fednet: the run's plan has %s %v, the run %v", f.name, f.plan, f.run)
		}
	}
	if c.Privacy != nil && p.Privacy != nil {
		// The guarantee run.json records must be the one the server
		// enforces, not only its noise std: the same std over another
		// factorization, participation or budget is another claim.
		pp, err := fedopt.PrivacyOf(p)
		if err != nil {
			return nil, fmt.Errorf("fednet: the run's plan: %w", err)
		}
		q := c.Privacy
		for _, f := range []struct {
			name      string
			plan, run any
		}{
			{"eps", pp.Eps, q.Eps}, {"delta", pp.Delta, q.Delta}, {"method", pp.Method, q.Method},
			{"sensitivity", pp.Sensitivity, q.Sensitivity}, {"participation", pp.ParticipationPattern, q.ParticipationPattern},
			{"add-remove relation", pp.AddRemove, q.AddRemove}, {"calibration", pp.Calibration, q.Calibration},
			{"gamma", pp.Gamma, q.Gamma}, {"unit sensitivity", pp.UnitSensitivity, q.UnitSensitivity},
			{"effective clip", pp.EffectiveClip, q.EffectiveClip}, {"quantization term", pp.QuantizationTerm, q.QuantizationTerm},
			{"operator sha256", pp.OperatorSHA256, q.OperatorSHA256},
		} {
			if f.plan != f.run {
				return nil, fmt.Errorf("fednet: the run's plan has a privacy record of %s %v, the run's (Config.Privacy) %v", f.name, f.plan, f.run)
			}
		}
	}
	var b bytes.Buffer
	if err := json.Compact(&b, opt.Plan); err != nil {
		return nil, fmt.Errorf("fednet: the run's plan: %w", err)
	}
	return b.Bytes(), nil
}

// Close releases the state directory without running: another server may
// then use it. Run closes the server when it returns. The gRPC methods of
// a closed server still serve the last released model but release
// nothing. Close of a closed server does nothing.
func (s *Server) Close() error {
	if !s.ok() {
		return errNoServer
	}
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if s.st == nil {
		return nil
	}
	err := s.st.lock.Close()
	s.st = nil
	close(s.closed)
	return err
}

// Register registers the Federation service on g.
func (s *Server) Register(g *grpc.Server) { flv1.RegisterFederationServer(g, s) }

// ServerOptionsGRPC returns the grpc.Server options the protocol needs
// (message size limits, at most MaxStreamsPerConn calls per connection,
// at most MaxHeaderListSize bytes of headers per call, fixed receive
// windows of StreamWindow and ConnWindow bytes).
func ServerOptionsGRPC() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMsgSize), grpc.MaxSendMsgSize(MaxMsgSize),
		grpc.MaxConcurrentStreams(MaxStreamsPerConn), grpc.MaxHeaderListSize(MaxHeaderListSize),
		grpc.InitialWindowSize(StreamWindow), grpc.InitialConnWindowSize(ConnWindow)}
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
	s.stMu.Lock()
	switch {
	case s.ran:
		s.stMu.Unlock()
		return errors.New("fednet: Run called twice; a Server runs once")
	case s.st == nil:
		s.stMu.Unlock()
		return errors.New("fednet: the Server is closed")
	}
	s.ran = true
	s.stMu.Unlock()
	defer s.Close()
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
		if s.opt.SecureAggregation != nil {
			if err := s.runSecureRound(ctx); err != nil {
				return err
			}
			continue
		}
		if err := s.awaitRound(ctx, full, quorum); err != nil {
			return err
		}
		if err := s.underState(s.release); err != nil {
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

// tally counts the answers of a round (or of a secure round's phase) as
// they come: full is closed when every expected answer is in, quorum when
// the least number that may close the round is, with fewer than all.
type tally struct {
	got          int
	full, quorum chan struct{}
}

func newTally() tally { return tally{full: make(chan struct{}), quorum: make(chan struct{})} }

// add counts an answer, of want expected and quorum the least number.
func (t *tally) add(want, quorum int) {
	t.got++
	if t.got == want {
		close(t.full)
	} else if t.got == quorum {
		close(t.quorum)
	}
}

// awaitRound waits until the open round (or, with secure aggregation,
// the open phase) may close: every learner submitted (full), QuorumGrace
// passed since MinLearners < n (or the threshold) did (quorum), or
// RoundTimeout passed.
func (s *Server) awaitRound(ctx context.Context, full, quorum <-chan struct{}) error {
	timer := time.NewTimer(s.opt.RoundTimeout)
	defer timer.Stop()
	var grace <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.faulted:
			return s.faultErr()
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

// underState runs f, which closes a round or a phase, holding s.stMu and
// s.mu, with the state directory open: if the server was closed or
// stopped (a rewound state, or a round that can no longer complete) while
// the round's wait ended, nothing more is closed or released. If f fails,
// Run returns its error, and the server is halted before s.mu is given
// back: f may have moved the open phase on in memory without writing it
// (a snapshot that could not be written), and nothing of that is served.
func (s *Server) underState(f func() error) error {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if s.st == nil {
		return errors.New("fednet: the Server is closed")
	}
	s.mu.Lock()
	if s.fault != nil {
		s.mu.Unlock()
		return s.faultErr()
	}
	defer s.mu.Unlock()
	err := f()
	if err != nil {
		s.halted = true
	}
	return err
}

// release closes the current round: with enough updates it aggregates
// them, writes x^{r+1} and publishes it. The caller holds s.stMu and
// s.mu (underState).
func (s *Server) release() error {
	r, n := s.round, s.opt.Shape.Learners
	if s.got < s.opt.MinLearners {
		s.log.Error("round timed out", "round", r, "updates", s.got, "learners", n, "min", s.opt.MinLearners)
		return fmt.Errorf("%w: round %d received %d of %d updates within %v, fewer than the minimum %d; released rounds are kept, restart the server to resume", ErrTooFewLearners, r, s.got, n, s.opt.RoundTimeout, s.opt.MinLearners)
	}
	if err := s.core.Release(s.updates); err != nil {
		return err // updates were checked on arrival: not reached
	}
	x := slices.Clone(s.core.Model())
	if err := s.st.release(Released{Round: r + 1, Updates: s.got, X: x}); err != nil {
		return fmt.Errorf("fednet: writing x^%d: %w", r+1, err)
	}
	s.log.Info("released", "round", r+1, "updates", s.got, "learners", n)
	s.round, s.model = r+1, x
	s.digests = append(s.digests, s.st.head)
	clear(s.updates)
	s.tally = newTally()
	close(s.released)
	s.released = make(chan struct{})
	return nil
}

// reject logs (rate-limited) and returns a refused call's error.
func (s *Server) reject(code codes.Code, call string, learner, round int, format string, args ...any) error {
	return s.logged(refusal(code, call, learner, round, format, args...))
}

// refusal returns a refused call's rejection, not yet logged.
func refusal(code codes.Code, call string, learner, round int, format string, args ...any) *rejection {
	return &rejection{code: code, call: call, learner: learner, round: round, msg: fmt.Sprintf(format, args...)}
}

// learnerError returns why the caller may not act as learner, or nil:
// learner must be a valid index and, with authentication, the caller's
// own.
func (s *Server) learnerError(ctx context.Context, call string, learner int) *rejection {
	if learner < 0 || learner >= s.opt.Shape.Learners {
		// Typed (index.go): the learner reads the detail, not the words.
		rj := refusal(codes.InvalidArgument, call, learner, -1, "learner %d, want 0..%d", learner, s.opt.Shape.Learners-1)
		rj.st = indexStatus(learner, s.opt.Shape.Learners, rj.msg)
		return rj
	}
	if s.opt.Identify != nil {
		id, err := s.opt.Identify(ctx)
		if err != nil {
			return refusal(codes.Unauthenticated, call, learner, -1, "%v", err)
		}
		if id != learner {
			return refusal(codes.PermissionDenied, call, learner, -1, "authenticated as learner %d, not %d", id, learner)
		}
	}
	// A learner reached the server: the first round's timeout starts.
	s.contacted.Do(func() { close(s.contact) })
	return nil
}

// identify returns the learner the peer of ctx is authenticated as, or -1
// without authentication.
func (s *Server) identify(ctx context.Context, call string) (int, *rejection) {
	if s.opt.Identify == nil {
		return -1, nil
	}
	id, err := s.opt.Identify(ctx)
	if err != nil {
		return -1, refusal(codes.Unauthenticated, call, -1, -1, "%v", err)
	}
	if id < 0 || id >= s.opt.Shape.Learners {
		return -1, refusal(codes.PermissionDenied, call, id, -1, "authenticated as learner %d, want 0..%d", id, s.opt.Shape.Learners-1)
	}
	return id, nil
}

// Join implements the Federation service.
func (s *Server) Join(ctx context.Context, req *flv1.JoinRequest) (*flv1.JoinResponse, error) {
	if !s.ok() {
		return nil, status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	switch v := req.GetProtocolVersion(); {
	case v == flv1.ProtocolVersion_PROTOCOL_VERSION_1 && s.opt.SecureAggregation != nil:
		return nil, s.reject(codes.FailedPrecondition, "Join", int(req.GetLearner()), -1, "protocol version %v, the run uses secure aggregation, which needs %v: upgrade the learner", v, Protocol)
	case v != Protocol && v != flv1.ProtocolVersion_PROTOCOL_VERSION_1:
		return nil, s.reject(codes.FailedPrecondition, "Join", int(req.GetLearner()), -1, "protocol version %v, the server speaks %v", v, Protocol)
	}
	if rj := s.learnerError(ctx, "Join", int(req.GetLearner())); rj != nil {
		return nil, s.logged(rj)
	}
	c, sh := s.opt.Config, s.opt.Shape
	r, _ := s.Round()
	s.logLim.line(time.Now(), slog.LevelInfo, "joined", "learner", req.GetLearner(), "round", r)
	var sec *flv1.SecureAggregation
	if sa := s.opt.SecureAggregation; sa != nil {
		col := int32(sa.Colluders)
		sec = &flv1.SecureAggregation{Threshold: int32(sa.Threshold), RingBits: secagg.RingBits, ScaleBits: int32(s.opt.Config.Quantizer.ScaleBits), Colluders: &col}
	}
	// The record's participation, against which a learner checks its
	// data's replay (checkDataEpochs).
	var part *string
	if c.Privacy != nil {
		spec := c.Privacy.ParticipationPattern.String()
		part = &spec
	}
	return &flv1.JoinResponse{
		ProtocolVersion: req.GetProtocolVersion(),
		Round:           int32(r),
		Config: &flv1.RunConfig{
			Algorithm: c.Algorithm.String(), Eta: c.Eta, Clip: c.Clip,
			Model: s.opt.Model.Name, L2: s.opt.Model.L2,
			Learners: int32(sh.Learners), Rounds: int32(sh.Rounds), Tau: int32(sh.Tau),
			Features: int32(s.opt.Model.Features), Params: int32(sh.Dim),
			Epochs:            int32(max(s.opt.Epochs, 1)),
			SecureAggregation: sec,
			Participation:     part,
		},
	}, nil
}

// GetModel implements the Federation service. A learner's model streams
// are limited (ServerOptions.MaxModelStreams, MaxModelStreamsPerLearner),
// and one that does not take the model within ServerOptions.CallTimeout
// is cut off.
func (s *Server) GetModel(req *flv1.GetModelRequest, stream grpc.ServerStreamingServer[flv1.ModelChunk]) error {
	const call = "GetModel"
	if !s.ok() {
		return status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	ctx := stream.Context()
	i := int(req.GetLearner())
	if rj := s.learnerError(ctx, call, i); rj != nil {
		return s.logged(rj)
	}
	if err := s.checkWitness(i, req); err != nil {
		return err
	}
	if r := s.streams.acquire(call, i, true); r != nil {
		return s.logged(r)
	}
	// The slot is given back when the handler and the sender have both
	// ended.
	done := bothDone(func() { s.streams.release(i, true) })
	defer done()
	wait := time.NewTimer(s.opt.MaxWait)
	defer wait.Stop()
	for {
		s.mu.Lock()
		r, x, rel, digest := s.round, s.model, s.released, s.digests[s.round]
		ready := r == s.opt.Shape.Rounds || s.submitted[i] < r
		s.mu.Unlock()
		if ready {
			final := r == s.opt.Shape.Rounds
			sent := make(chan error, 1)
			go func() {
				defer done()
				sent <- sendModel(stream, s.run, s.witness(r, digest), r, final, x)
			}()
			t := time.NewTimer(s.opt.CallTimeout)
			defer t.Stop()
			select {
			case err := <-sent:
				if err != nil {
					return err
				}
			case <-t.C:
				// Returning ends the stream, which unblocks the sender.
				return s.logged(refusal(codes.DeadlineExceeded, call, i, r, "model of round %d not taken within %v", r, s.opt.CallTimeout))
			}
			if final {
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
		case <-s.faulted:
			done() // no sender
			return status.Error(codes.FailedPrecondition, s.faultErr().Error())
		case <-s.closed:
			// Run returned: this server releases nothing more. The
			// learner retries as if it were down (a restart within its
			// GiveUp is invisible), rather than wait here for ever.
			done() // no sender
			return status.Errorf(codes.Unavailable, "the server stopped; it will not release round %d", r+1)
		case <-ctx.Done():
			done() // no sender
			return status.FromContextError(ctx.Err()).Err()
		case <-wait.C:
			done() // no sender
			return status.Errorf(codes.DeadlineExceeded, "round %d is not released yet", r+1)
		}
	}
}

// sendModel streams x^r in chunks, the first with the run's identity and
// the release's digest (see Server.witness).
func sendModel(stream grpc.ServerStreamingServer[flv1.ModelChunk], run runID, digest []byte, r int, done bool, x []float64) error {
	for off := 0; off == 0 || off < len(x); off += ChunkLen {
		end := min(off+ChunkLen, len(x))
		c := &flv1.ModelChunk{Round: int32(r), Done: done, Dim: int32(len(x)), Offset: int32(off), Values: x[off:end]}
		if off == 0 {
			c.Run, c.Digest = run[:], digest
		}
		err := stream.Send(c)
		if err != nil {
			return err
		}
	}
	return nil
}

// received is what the receiving goroutine of an upload got: a vector x
// (an update, or a masked input of attempt a) of learner i for round r,
// or why not (err, not yet logged).
type received[T any] struct {
	i, r int
	a    uint32
	x    []T
	err  error // a *rejection, or the error of a failed receive
}

// upload serves an upload of call (SubmitMasked if secure, else
// SubmitUpdate) on stream: it refuses a Server not made by
// NewServer, a peer that fails authentication and a call of the other
// kind of run, then runs receive, the upload's receiving goroutine, under
// the upload limits (ServerOptions.MaxUploads, MaxUploadsPerLearner) and
// CallTimeout, and hands what it delivered before the deadline to use,
// while the upload's slot is still held; otherwise it returns the error
// the handler is to return (logged): a refusal, a failed receive, or
// DeadlineExceeded, after which the upload is dropped whatever the
// goroutine does with it. receive is given id, the authenticated learner
// (-1 without authentication: the first chunk names the learner, whose
// slot receive takes and records in *perLearner).
func upload[T any](s *Server, stream interface{ Context() context.Context }, call string, secure bool, receive func(id int, perLearner *int) received[T], use func(received[T]) error) error {
	if !s.ok() {
		return status.Error(codes.FailedPrecondition, errNoServer.Error())
	}
	id, rj := s.identify(stream.Context(), call)
	if rj != nil {
		return s.logged(rj)
	}
	switch {
	case secure && s.opt.SecureAggregation == nil:
		return s.reject(codes.FailedPrecondition, call, id, -1, "the run does not use secure aggregation: updates go through SubmitUpdate")
	case !secure && s.opt.SecureAggregation != nil:
		return s.reject(codes.FailedPrecondition, call, id, -1, "the run uses secure aggregation: updates go through SecAgg and SubmitMasked")
	}
	if rj := s.uploads.acquire(call, id, true); rj != nil {
		return s.logged(rj)
	}
	perLearner := id // the learner whose slot is taken, -1 for none
	done := bothDone(func() { s.uploads.release(perLearner, true) })
	defer done()
	got := make(chan received[T], 1)
	go func() {
		defer done()
		got <- receive(id, &perLearner)
	}()
	t := time.NewTimer(s.opt.CallTimeout)
	defer t.Stop()
	var res received[T]
	select {
	case res = <-got:
	case <-t.C:
		return s.logged(refusal(codes.DeadlineExceeded, call, -1, -1, "upload not complete within %v", s.opt.CallTimeout))
	}
	if res.err != nil {
		if rj, ok := res.err.(*rejection); ok {
			return s.logged(rj)
		}
		// Not received (oversized, undecodable, or the peer went away).
		if st := status.Convert(res.err); st.Code() != codes.Canceled && st.Code() != codes.DeadlineExceeded {
			s.warn("rejected", "call", call, "learner", res.i, "round", res.r, "reason", st.Message())
		}
		return res.err
	}
	return use(res)
}

// SubmitUpdate implements the Federation service. Uploads in progress are
// limited (ServerOptions.MaxUploads, MaxUploadsPerLearner), and each gets
// ServerOptions.CallTimeout. A goroutine receives and checks the chunks;
// this handler alone decides: it stores the update only if the goroutine
// delivered it before the deadline, and otherwise answers
// DeadlineExceeded and drops it, so the answer and the log always say what
// happened to the update. Returning ends the stream, which ends a receive
// blocked in the goroutine.
func (s *Server) SubmitUpdate(stream grpc.ClientStreamingServer[flv1.UpdateChunk, flv1.SubmitResponse]) error {
	const call = "SubmitUpdate"
	receive := func(id int, perLearner *int) received[float64] {
		res := receiveVector(s, stream.Context(), stream.Recv, call, "update", id, perLearner, nil, func(i, r int, _ uint32) *rejection {
			return s.openError(call, i, r)
		})
		if res.err != nil {
			return res
		}
		if err := s.core.CheckUpdate(res.x); err != nil {
			return received[float64]{i: res.i, r: res.r, err: refusal(codes.InvalidArgument, call, res.i, res.r, "%s", strings.TrimPrefix(err.Error(), "fedopt: "))}
		}
		return res
	}
	// With authentication the learner's own limit applies at once;
	// without, the first chunk names the learner.
	return upload(s, stream, call, false, receive, func(res received[float64]) error {
		s.mu.Lock()
		if rj := s.openError(call, res.i, res.r); rj != nil {
			s.mu.Unlock()
			return s.logged(rj)
		}
		s.updates[res.i] = res.x
		s.submitted[res.i] = res.r
		s.add(s.opt.Shape.Learners, s.opt.MinLearners)
		s.mu.Unlock()
		return stream.SendAndClose(&flv1.SubmitResponse{Round: int32(res.r)})
	})
}

// receiveVector receives one upload of call (what: "update", "masked
// input"), checking the first chunk's learner, dimension and, under s.mu,
// open (the round, or the attempt with attempt not nil), then every chunk
// against the first. id is the authenticated learner (-1 without
// authentication); without it, receiveVector takes the per-learner upload
// slot of the learner the first chunk names and records it in
// *perLearner. The vector grows as its chunks arrive, so a stalled upload
// holds only what it was sent.
func receiveVector[T any, C vectorChunk[T]](s *Server, ctx context.Context, recv func() (C, error), call, what string, id int, perLearner *int,
	attempt func(C) uint32, open func(i, r int, a uint32) *rejection) received[T] {
	first, err := recv()
	if err == io.EOF {
		return received[T]{i: -1, r: -1, err: refusal(codes.InvalidArgument, call, -1, -1, "an empty %s: no chunk before the end of the stream", what)}
	}
	if err != nil {
		return received[T]{i: -1, r: -1, err: err}
	}
	// head names a chunk's upload: every chunk must name the first's.
	head := func(c C) string {
		if attempt == nil {
			return fmt.Sprintf("learner %d, round %d, dimension %d", c.GetLearner(), c.GetRound(), c.GetDim())
		}
		return fmt.Sprintf("learner %d, round %d, attempt %d, dimension %d", c.GetLearner(), c.GetRound(), attempt(c), c.GetDim())
	}
	i, r, dim := int(first.GetLearner()), int(first.GetRound()), int(first.GetDim())
	var a uint32
	if attempt != nil {
		a = attempt(first)
	}
	fail := func(code codes.Code, format string, args ...any) received[T] {
		return received[T]{i: i, r: r, err: refusal(code, call, i, r, format, args...)}
	}
	if rj := s.learnerError(ctx, call, i); rj != nil {
		return received[T]{i: i, r: r, err: rj}
	}
	if id < 0 {
		if rj := s.uploads.acquire(call, i, false); rj != nil {
			rj.round = r
			return received[T]{i: i, r: r, err: rj}
		}
		*perLearner = i
	}
	if dim != s.opt.Shape.Dim {
		return fail(codes.InvalidArgument, "%s of dimension %d, want %d", what, dim, s.opt.Shape.Dim)
	}
	s.mu.Lock()
	rj := open(i, r, a)
	s.mu.Unlock()
	if rj != nil {
		return received[T]{i: i, r: r, err: rj}
	}
	// Offsets are contiguous from 0.
	want := head(first)
	var x []T
	for c := first; ; {
		if h := head(c); h != want {
			return fail(codes.InvalidArgument, "chunk for %s inside the %s of %s", h, what, want)
		}
		if int(c.GetOffset()) != len(x) {
			return fail(codes.InvalidArgument, "chunk at offset %d, want %d", c.GetOffset(), len(x))
		}
		v := c.GetValues()
		if len(v) > dim-len(x) {
			return fail(codes.InvalidArgument, "oversized %s: more than %d values", what, dim)
		}
		if len(x)+len(v) > cap(x) {
			x = slices.Grow(x, min(dim, max(2*cap(x), len(x)+len(v)))-len(x))
		}
		x = append(x, v...)
		c, err = recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return received[T]{i: i, r: r, err: err}
		}
	}
	if len(x) != dim {
		return fail(codes.InvalidArgument, "short %s: %d of %d values", what, len(x), dim)
	}
	return received[T]{i: i, r: r, a: a, x: x}
}

// witnessKey derives the key of the witness tags from the run's noise key
// (zero without noise): learners never hold it, so none can forge a tag.
func witnessKey(noiseKey [32]byte) [sha256.Size]byte {
	return sha256.Sum256(append([]byte("dpmf/fednet/witness/v1"), noiseKey[:]...))
}

// witness returns the digest of round r's release as the learners receive
// it: the hash that ends its file, then an HMAC-SHA256 tag on the run, r
// and that hash under the witness key. The tag lets the server tell a
// learner's genuine witness from a forged one.
func (s *Server) witness(r int, sum [sha256.Size]byte) []byte {
	return append(sum[:len(sum):len(sum)], s.witnessTag(r, sum[:])...)
}

// witnessTag is the tag of witness.
func (s *Server) witnessTag(r int, sum []byte) []byte {
	m := hmac.New(sha256.New, s.witKey[:])
	m.Write(s.run[:])
	m.Write(binary.LittleEndian.AppendUint64(nil, uint64(r)))
	m.Write(sum)
	return m.Sum(nil)
}

// checkWitness compares what learner i has received (its witness in req)
// with the released rounds. A learner of this run that has received a
// round the server has not released, or another model of a round it has,
// proves the state directory was rewound or swapped: the server stops and
// releases nothing more, so no round is ever released twice with the same
// noise. Local checks at start (see openState) cannot see a complete
// older copy put back in place; the learners can. Only a witness whose
// tag verifies proves anything (a release under this run's noise key);
// any other is refused (InvalidArgument) and the server goes on, so that
// a lying peer cannot stop the run. A run without noise has no secret
// key (its witness key is public): there a witness that disagrees with
// the releases is refused the same way.
func (s *Server) checkWitness(i int, req *flv1.GetModelRequest) error {
	const call = "GetModel"
	if req.SeenRound == nil {
		return nil
	}
	seen := int(req.GetSeenRound())
	if n := len(req.GetSeenRun()); n != len(s.run) {
		// Not a run identity: refused without echoing the peer's bytes
		// (up to MaxMsgSize), which the message, its typed detail and
		// the log line would each hold twice over in hex.
		return s.reject(codes.InvalidArgument, call, i, seen, "the witness's run identity has %d bytes, want %d", n, len(s.run))
	}
	if !bytes.Equal(req.GetSeenRun(), s.run[:]) {
		// Typed (index.go): the learner reads the detail, not the words.
		rj := refusal(codes.FailedPrecondition, call, i, seen, "the learner followed run %x, this server serves run %v: start the learner afresh for this run", req.GetSeenRun(), s.run)
		rj.st = otherRunStatus(req.GetSeenRun(), s.run[:], rj.msg)
		return s.logged(rj)
	}
	if seen < 0 {
		return s.reject(codes.InvalidArgument, call, i, seen, "seen round %d, want >= 0", seen)
	}
	d := req.GetSeenDigest()
	if len(d) != 2*sha256.Size || !hmac.Equal(d[sha256.Size:], s.witnessTag(seen, d[:sha256.Size])) {
		return s.reject(codes.InvalidArgument, call, i, seen, "the witness of round %d does not verify: not a digest this run's server sent", seen)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault != nil {
		return status.Error(codes.FailedPrecondition, s.fault.Error())
	}
	if s.opt.Noise == nil && (seen > s.round || !bytes.Equal(d[:sha256.Size], s.digests[seen][:])) {
		// Without noise there is no secret key: the witness key is
		// public, anyone can tag a witness, and one that disagrees
		// with the server proves nothing. (No noise is reused either
		// way; a learner stops itself at a rewound server.)
		return s.reject(codes.InvalidArgument, call, i, seen, "the witness of round %d disagrees with this server's releases (newest round %d), and a run without noise has no key to tell a genuine witness from a forged one: refused", seen, s.round)
	}
	var err error
	switch {
	case seen > s.round:
		err = fmt.Errorf("learner %d has received round %d of run %v, but the newest round in %s is %d: the state directory was rewound (lost files, or an older copy put back); the server stops rather than release rounds %d..%d again with the same noise", i, seen, s.run, s.opt.Dir, s.round, s.round+1, seen)
	case !bytes.Equal(d[:sha256.Size], s.digests[seen][:]):
		err = fmt.Errorf("learner %d holds another model of round %d of run %v than %s: the state directory was swapped or rewound; the server stops and releases nothing more", i, seen, s.run, s.opt.Dir)
	default:
		return nil
	}
	s.fault = err
	close(s.faulted)
	s.log.Error("state rewound", "learner", i, "seen", seen, "round", s.round, "reason", err.Error())
	return status.Error(codes.FailedPrecondition, err.Error())
}

// faultErr returns the fault that stopped the server.
func (s *Server) faultErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(s.fault, ErrRoundStuck) {
		return s.fault // already names the package
	}
	return fmt.Errorf("fednet: %w", s.fault)
}

// openError returns why learner i may not submit for round r, or nil: the
// round is not the open one, the run is over, or i already submitted for
// it. The caller holds s.mu.
func (s *Server) openError(call string, i, r int) *rejection {
	switch {
	case s.fault != nil:
		return refusal(codes.FailedPrecondition, call, i, r, "%v", s.fault)
	case r != s.round:
		return refusal(codes.FailedPrecondition, call, i, r, "update for round %d, the open round is %d", r, s.round)
	case s.round == s.opt.Shape.Rounds:
		return refusal(codes.FailedPrecondition, call, i, r, "all %d rounds are released", s.round)
	case s.submitted[i] == r:
		return refusal(codes.AlreadyExists, call, i, r, "duplicate update: learner %d already submitted for round %d", i, r)
	}
	return nil
}

// finite reports whether every entry of x is finite.
func finite(x []float64) bool {
	return !slices.ContainsFunc(x, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
}

// vectorChunk is a chunk of an uploaded vector (UpdateChunk, MaskedChunk).
type vectorChunk[T any] interface {
	GetLearner() int32
	GetRound() int32
	GetDim() int32
	GetOffset() int32
	GetValues() []T
}
