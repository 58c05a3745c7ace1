package fednet

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// LearnerOptions configure [RunLearner].
type LearnerOptions struct {
	// Addr is the server's address (host:port).
	Addr string
	// ID is the learner's index, 0 <= ID < n.
	ID int
	// Creds are the transport credentials (TLS, or insecure for
	// loopback tests).
	Creds credentials.TransportCredentials
	// Data returns the learner's stream of clients for the run the server
	// describes (n, R, tau and d come from the server). In a private run
	// a stream that reports epochs (see fedopt.Stream) must replay its
	// clients no more than the participation of the server's privacy
	// record (cfg.Participation) allows, or, from a server that does not
	// announce it, no more than the server's epochs (cfg.Epochs) do (the
	// learner then takes the participation as epochs:K, single for
	// K <= 1); other data is refused at Join (fedopt.CheckEpochs).
	// A stream that reports its shape (dataset.Stream does) must be
	// learner ID's, dealt for at least the server's rounds and its tau
	// clients per round: other data would use another learner's or
	// round's clients, and is refused at Join too. A stream that reports
	// the digest of its data (a method DataSHA256() string, as
	// dataset.Stream has) binds it to the learner's record in StateDir.
	Data func(cfg *flv1.RunConfig) (fedopt.Stream, error)
	// Model is the per-sample loss the learner computes its updates with.
	// nil, the default, takes the model the server names: only
	// "logistic" (model.Logistic with the server's L2) is known. A
	// caller-given model is used whatever name the server announces (the
	// server passes the name only, see Model): the caller must make sure
	// it is the model the server's run stands for. The learner checks only
	// that Model.NumParams(features) is the server's parameter count. It
	// must be safe for concurrent use if several learners share it.
	Model dpmodel.Model
	// CallTimeout is the deadline of Join, SubmitUpdate and SubmitMasked
	// (default 30 s).
	CallTimeout time.Duration
	// WaitTimeout is the deadline of one GetModel call, which waits for the
	// next release, and of one SecAgg call, which waits for a phase to
	// close (default 60 s); the learner then asks again.
	WaitTimeout time.Duration
	// GiveUp is how long the learner keeps retrying while the server is
	// unreachable before it stops (default 2 min). A server restart within
	// it is invisible to the run.
	GiveUp time.Duration
	// Log receives one line per round; nil discards.
	Log *slog.Logger
	// StateDir is the learner's state directory, optional in a plain run
	// and required when the server's run uses secure aggregation. The
	// learner locks it while it runs (one learner per directory) and
	// records in it, durably, the newest model it received (its round and
	// the server's digest) before it uses the model, so that a restarted
	// learner still witnesses a server whose state was rolled back behind
	// it; and in a secure run, before it sends the answer, the newest
	// round whose unmask phase it answered and in which attempt, so that a
	// restarted learner never unmasks a second attempt of a round. The
	// record is bound to the run, the learner and the directory (a copy or
	// a restore into a new directory is refused), and to the digest that
	// Data's stream reports, if any: a learner restarted in the run with
	// data of another digest is refused before it uses it, since clients
	// dealt anew mid-run would serve again clients that released rounds
	// used. See docs/distributed.md, "Faults" and "Secure aggregation".
	StateDir string
	// NewRun lets the learner replace a record of another run in StateDir
	// with the server's run. Give it only when that run is over for good:
	// its record is gone. The normal way is a fresh directory per run.
	NewRun bool
	// MinColluders is the least number of colluding learners this learner
	// requires the run to withstand: it refuses, after Join and before it
	// sends anything else, a run without secure aggregation (for
	// MinColluders > 0), one whose announced colluders c are fewer, and
	// one whose threshold T does not satisfy 2T > n + MinColluders and
	// MinColluders < T (plan.CheckColluders). 0, the default, requires
	// only that the announced T and c satisfy the rule. A server can
	// announce any c; with the minimum, the secrecy of this learner's
	// updates against a server colluding with MinColluders learners rests
	// on the T and n this learner checks and enforces itself, not on the
	// server's word (docs/distributed.md, "Secure aggregation: threat
	// model").
	MinColluders int

	// stopBefore, test-only: the learner stops (returns errStopped)
	// before it answers phase p of round r when it reports true.
	stopBefore func(r int, p secagg.Phase) bool
	// stopRecorded, test-only: the learner stops (returns errStopped)
	// when it has recorded its unmask answer of round r and not sent it,
	// if it reports true.
	stopRecorded func(r int) bool
}

// errStopped is the error of a learner stopped by stopBefore.
var errStopped = errors.New("fednet: learner stopped (test)")

// MaxParams is the largest model a learner accepts from a server: 2^27
// parameters, 1 GiB per model or update. A server that announces more is
// refused before anything is allocated.
const MaxParams = 1 << 27

// checkJoin checks a server's answer to Join before the learner acts on
// it: the protocol, every count positive (epochs 0 means 1), the open
// round within the run, the parameters those of the features and at most
// MaxParams. A server's answer never makes the learner panic or allocate
// without bound.
func checkJoin(join *flv1.JoinResponse) error {
	rc := join.GetConfig()
	switch v := join.GetProtocolVersion(); {
	case v != Protocol && v != flv1.ProtocolVersion_PROTOCOL_VERSION_1:
		return fmt.Errorf("fednet: the server speaks protocol %v, this learner %v", v, Protocol)
	case rc == nil:
		return errors.New("fednet: the server's Join answer has no run configuration")
	case v != Protocol && rc.GetSecureAggregation() != nil:
		return fmt.Errorf("fednet: the server's run uses secure aggregation under protocol %v, which needs %v", v, Protocol)
	}
	for _, p := range []struct {
		name string
		v    int32
	}{{"learners", rc.GetLearners()}, {"rounds", rc.GetRounds()}, {"tau", rc.GetTau()},
		{"features", rc.GetFeatures()}, {"parameters", rc.GetParams()}} {
		if p.v < 1 {
			return fmt.Errorf("fednet: the server's run has %d %s, want >= 1", p.v, p.name)
		}
	}
	R, epochs := rc.GetRounds(), max(rc.GetEpochs(), 1)
	if rc.GetEpochs() < 0 || R%epochs != 0 {
		return fmt.Errorf("fednet: the server's run has %d epochs for %d rounds, want a divisor of the rounds", rc.GetEpochs(), R)
	}
	if r := join.GetRound(); r < 0 || r > R {
		return fmt.Errorf("fednet: the server's open round is %d, want 0..%d", r, R)
	}
	if p := int(rc.GetParams()); p > MaxParams {
		return fmt.Errorf("fednet: the server's model has %d parameters, this learner accepts at most %d", p, MaxParams)
	}
	return nil
}

// RunLearner joins the server and works until the last round is released:
// it fetches the model of the round to work on, computes its update with a
// fedopt.Learner and submits it. It returns the final model x^R. Calls that
// fail because the server is unreachable or busy are retried (with backoff,
// up to GiveUp); a learner that reconnects simply asks for the current
// round again, so it never submits twice for a round the server still has.
// A learner and a server that disagree on TLS fail at once with
// [ErrTLSMismatch]; a learner whose index the server refuses as outside
// its run fails with a *[LearnerIndexError] ([ErrLearnerIndex]).
func RunLearner(ctx context.Context, opt LearnerOptions) ([]float64, error) {
	opt.CallTimeout = cmp.Or(opt.CallTimeout, 30*time.Second)
	opt.WaitTimeout = cmp.Or(opt.WaitTimeout, 60*time.Second)
	opt.GiveUp = cmp.Or(opt.GiveUp, 2*time.Minute)
	if opt.ID < 0 || opt.ID > MaxWire {
		return nil, fmt.Errorf("fednet: learner %d, want 0..%d", opt.ID, MaxWire)
	}
	if opt.MinColluders < 0 || opt.MinColluders > MaxWire {
		return nil, fmt.Errorf("fednet: learner's minimum colluders %d (LearnerOptions.MinColluders), want 0..%d", opt.MinColluders, MaxWire)
	}
	log := cmp.Or(opt.Log, slog.New(slog.DiscardHandler))
	if opt.Creds == nil || opt.Data == nil {
		return nil, errors.New("fednet: a learner needs credentials and data")
	}
	creds := &learnerCreds{TransportCredentials: opt.Creds, plainServer: new(atomic.Bool)}
	// The server's headers are bounded as the learners' are on the server
	// (MaxHeaderListSize): gRPC's default would let a hostile server make
	// each call hold 16 MiB.
	conn, err := grpc.NewClient(opt.Addr, grpc.WithTransportCredentials(creds),
		grpc.WithMaxHeaderListSize(MaxHeaderListSize),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMsgSize), grpc.MaxCallSendMsgSize(MaxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("fednet: server address %q: %w", opt.Addr, err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	rt := retrier{giveUp: opt.GiveUp, log: log,
		fatal: func(err error) error { return creds.mismatch(ctx, opt.Addr, err) }}

	var join *flv1.JoinResponse
	err = rt.do(ctx, "Join", opt.CallTimeout, func(cctx context.Context) error {
		var err error
		join, err = cl.Join(cctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: int32(opt.ID)})
		return err
	})
	if err != nil {
		return nil, learnerIndexError(err, opt.ID)
	}
	if err := checkJoin(join); err != nil {
		return nil, err
	}
	rc := join.GetConfig()
	if err := checkMinColluders(rc, opt.MinColluders); err != nil {
		return nil, err
	}
	lrn, digest, err := newLearner(rc, opt)
	if err != nil {
		return nil, err
	}
	var sec *secureLearner
	if rc.GetSecureAggregation() != nil {
		if sec, err = newSecureLearner(rc, opt.ID); err != nil {
			return nil, err
		}
		if opt.StateDir == "" {
			return nil, errors.New("fednet: the server's run uses secure aggregation: the learner needs a state directory (LearnerOptions.StateDir, ofl learner -state DIR) to record durably which attempt of each round it unmasked, so that a restart cannot unmask a second")
		}
	}
	// The state directory, plain or secure: the durable witness (and, in a
	// secure run, the unmask record).
	var ls *learnerState
	if opt.StateDir != "" {
		if ls, err = openLearnerState(opt.StateDir, opt.ID); err != nil {
			return nil, err
		}
		defer ls.Close()
		ls.data = digest
		if sec != nil {
			sec.state = ls
		}
	}
	dim, rounds := int(rc.GetParams()), int(rc.GetRounds())
	u := make([]float64, dim)
	last := -1 // the round u was computed for
	// The witness: the newest model received, as the server described it;
	// with a state directory, the one recorded there by an earlier process
	// of this learner. Under NewRun too: a record of the server's own run
	// is kept (NewRun replaces only another run's), and its witness must
	// reach a rolled-back server; the server refuses another run's, and
	// the learner then asks again without it.
	seen := ls.witness()
	recorded := seen
	for {
		var m *model
		err := rt.do(ctx, "GetModel", opt.WaitTimeout, func(cctx context.Context) error {
			var err error
			m, err = getModel(cctx, cl, opt.ID, dim, seen)
			return err
		})
		if err != nil && seen != nil && seen == recorded && status.Code(err) == codes.FailedPrecondition {
			otherRun := isOtherRunRefusal(err, seen.run)
			if otherRun && opt.NewRun {
				// The record is of a run that is over: the first model
				// binds the directory to the server's run.
				seen, recorded = nil, nil
				continue
			}
			hint := ""
			if otherRun {
				hint = "; the state directory is another run's: give a new run a fresh state directory (LearnerOptions.NewRun, ofl learner -new-run, replaces the old run's record)"
			}
			return nil, fmt.Errorf("fednet: the server refused this learner's first request, which carried the witness recorded in %s (round %d of run %x): %s%s", ls.path(), seen.round, seen.run, status.Convert(err).Message(), hint)
		}
		if err != nil {
			return nil, err
		}
		r, done, x := m.round, m.done, m.x
		if r < 0 || r > rounds || done != (r == rounds) {
			return nil, fmt.Errorf("fednet: the server sent the model of round %d (final: %v) in a run of %d rounds, want round 0..%d and final only at %d", r, done, rounds, rounds, rounds)
		}
		if err := m.follows(seen); err != nil {
			return nil, err
		}
		if ls != nil {
			// Before anything is written or the data used: a record of
			// this run written with other data is refused.
			if err := ls.checkData(m.run); err != nil {
				return nil, err
			}
			if seen == nil {
				if err := ls.bind(m.run, opt.NewRun); err != nil {
					return nil, err
				}
			}
			// Durably, before the model is used: a restarted learner
			// then never witnesses less than this one received.
			if err := ls.recordWitness(m); err != nil {
				return nil, err
			}
		}
		seen = m
		if done {
			log.Info("finished", "learner", opt.ID, "round", r)
			return x, nil
		}
		// A round that is not fresh is the round this learner already
		// worked on, again: an honest server serves it again only after
		// it restarted or the learner's update was lost, a hostile one to
		// make the learner spin, so the learner pauses first.
		fresh := r != last
		if fresh {
			if err := lrn.Update(u, r, x); err != nil {
				return nil, err
			}
			last = r
		} else if err := sleep(ctx, minTry); err != nil {
			return nil, err
		}
		if sec != nil {
			if err := sec.run(ctx, cl, rt, opt, log, r, u, fresh); err != nil {
				return nil, err
			}
			continue
		}
		err = rt.do(ctx, "SubmitUpdate", opt.CallTimeout, func(cctx context.Context) error {
			return sendChunks(cctx, cl.SubmitUpdate, len(u), func(off, end int) *flv1.UpdateChunk {
				return &flv1.UpdateChunk{Learner: int32(opt.ID), Round: int32(r), Dim: int32(len(u)), Offset: int32(off), Values: u[off:end]}
			})
		})
		switch status.Code(err) {
		case codes.OK:
			log.Info("submitted", "learner", opt.ID, "round", r)
		case codes.AlreadyExists, codes.FailedPrecondition:
			// A retry after a lost answer, or the round closed without
			// us: ask for the current round again.
			log.Warn("update not taken", "learner", opt.ID, "round", r, "reason", status.Convert(err).Message())
		default:
			return nil, err
		}
	}
}

// dataDigest is what a stream of a finite data set reports of it
// (dataset.Stream does): a digest that is the same for two streams only
// when they deal the same clients to the same learners and rounds.
type dataDigest interface {
	DataSHA256() string
}

// newLearner makes the fedopt.Learner of the run the server described,
// and returns the digest of the learner's data that its stream reports
// ("": none, or no StateDir to keep it in).
func newLearner(rc *flv1.RunConfig, opt LearnerOptions) (*fedopt.Learner, string, error) {
	// Not echoed when long: a hostile server could fill the error (and
	// the learner's log) up to the message limit.
	if n := len(rc.GetAlgorithm()); n > maxConfigName {
		return nil, "", fmt.Errorf("fednet: the server's run configuration has an algorithm of %d bytes, want one of correlated, independent, nonprivate or baseline-correlated", n)
	}
	algo, err := fedopt.ParseAlgorithm(rc.GetAlgorithm())
	if err != nil {
		return nil, "", fmt.Errorf("fednet: the server's %w", err)
	}
	m := opt.Model
	if m == nil {
		if n := len(rc.GetModel()); n > maxConfigName {
			return nil, "", fmt.Errorf("fednet: the server's run configuration has a model name of %d bytes, this learner knows logistic (LearnerOptions.Model gives another)", n)
		}
		if rc.GetModel() != "logistic" {
			return nil, "", fmt.Errorf("fednet: the server's model is %q, this learner knows logistic (LearnerOptions.Model gives another)", rc.GetModel())
		}
		m = dpmodel.Logistic{L2: rc.GetL2()}
	}
	n, tau, dim := int(rc.GetLearners()), int(rc.GetTau()), int(rc.GetParams())
	if opt.ID < 0 || opt.ID >= n {
		return nil, "", fmt.Errorf("fednet: learner %d, the server has learners 0..%d", opt.ID, n-1)
	}
	if m.NumParams(int(rc.GetFeatures())) != dim {
		return nil, "", fmt.Errorf("fednet: the server's model has %d parameters for %d features, want %d", dim, rc.GetFeatures(), m.NumParams(int(rc.GetFeatures())))
	}
	data, err := opt.Data(rc)
	if err != nil {
		return nil, "", err
	}
	// A stream dealt for another learner, fewer rounds or fewer clients
	// per round would use other learners' clients or run out.
	if err := fedopt.CheckShape(data, opt.ID, int(rc.GetRounds()), tau); err != nil {
		return nil, "", err
	}
	if err := checkDataEpochs(rc, algo, data); err != nil {
		return nil, "", err
	}
	// The learner's part of the configuration; eta_g is the server's.
	cfg := fedopt.Config{Algorithm: algo, Eta: rc.GetEta(), EtaG: 1, Clip: rc.GetClip()}
	l, err := fedopt.NewLearner(m, data, cfg, tau, dim)
	if err != nil {
		return nil, "", err
	}
	// Only where a record keeps it (a data set's digest reads the whole
	// data set).
	var digest string
	if dd, ok := data.(dataDigest); ok && opt.StateDir != "" {
		if digest = dd.DataSHA256(); len(digest) > maxDigest {
			return nil, "", fmt.Errorf("fednet: the learner's data reports a digest of %d bytes, want at most %d", len(digest), maxDigest)
		}
	}
	return l, digest, nil
}

// maxConfigName is the longest algorithm or model name of a server's run
// configuration that a learner quotes in its errors.
const maxConfigName = 64

// maxParticipationSpec is the longest participation spec a learner reads
// from a server: "minsep:B,K" with two 19-digit numbers is 46 bytes.
const maxParticipationSpec = 64

// checkDataEpochs refuses, in a private run, data that serves each client
// in more rounds than the server's run allows (fedopt.CheckEpochs, the
// check of fedopt.NewLearner and fedopt.Simulate). The server announces
// the participation of its privacy record (RunConfig.participation), on
// which the run's privacy claim rests: the data is checked against it, so
// that a record that allows less than the data needs is refused, and
// data replayed under a min-separation the record allows is taken. A
// server that does not announce it (an older one) announces only its
// epochs K, which its record allows (NewServer checks it): the
// participation taken is then epochs:K for K > 1 and single otherwise,
// which refuses data replayed under a min-separation too (safe, but
// strict).
func checkDataEpochs(rc *flv1.RunConfig, algo fedopt.Algorithm, data fedopt.Stream) error {
	if !algo.Private() {
		return nil
	}
	rounds, epochs := int(rc.GetRounds()), int(max(rc.GetEpochs(), 1))
	part, from := factorize.SingleParticipation(), fmt.Sprintf("the server's run announces %d epochs and no participation", epochs)
	if epochs > 1 {
		part = factorize.FixedEpochs(epochs)
	}
	if rc.Participation != nil {
		if n := len(rc.GetParticipation()); n > maxParticipationSpec {
			// Not echoed: a hostile server could fill the error (and
			// the learner's log) with up to a message's worth.
			return fmt.Errorf("fednet: the server's run configuration has a participation of %d bytes, want a spec of at most %d (single, epochs:K or minsep:B[,K])", n, maxParticipationSpec)
		}
		p, err := factorize.ParseParticipation(rc.GetParticipation())
		if err == nil {
			err = p.Validate(rounds)
		}
		if err != nil {
			return fmt.Errorf("fednet: the server's run configuration has participation %q, want that of a privacy record over its %d rounds: %v", rc.GetParticipation(), rounds, err)
		}
		part, from = p, "the server's privacy record"
	}
	es, ok := data.(interface{ Epochs() (k, period int) })
	if !ok {
		return nil
	}
	k, period := es.Epochs()
	if err := fedopt.CheckEpochs(part, rounds, k, period); err != nil {
		return fmt.Errorf("fednet: %s (participation %v): %w", from, part, err)
	}
	return nil
}

// model is a model received from the server: x^round, the run it belongs
// to and the release's digest.
type model struct {
	round       int
	done        bool
	x           []float64
	run, digest []byte
}

// follows checks that m may come after the previous model seen (nil for
// none): the same run, and no earlier round. A server that goes back had
// its state rewound; the learner stops rather than help it release a
// round twice.
func (m *model) follows(seen *model) error {
	switch {
	case seen == nil:
		return nil
	case !bytes.Equal(m.run, seen.run):
		return fmt.Errorf("fednet: the server now serves run %s, this learner followed run %s: its state directory was replaced; stopping", runText(m.run), runText(seen.run))
	case m.round < seen.round:
		return fmt.Errorf("fednet: the server went back from round %d to %d: its state was rewound; stopping", seen.round, m.round)
	case m.round == seen.round && !bytes.Equal(m.digest, seen.digest):
		return fmt.Errorf("fednet: the server sent another model of round %d: its state was swapped; stopping", m.round)
	}
	return nil
}

// runText writes a run identity a server sent for an error: in hex if it
// has the length of one, else only its length (a hostile server's bytes,
// up to the message limit, are not echoed).
func runText(run []byte) string {
	if len(run) != len(runID{}) {
		return fmt.Sprintf("identity of %d bytes", len(run))
	}
	return hex.EncodeToString(run)
}

// getModel receives one model, telling the server the newest one seen.
func getModel(ctx context.Context, cl flv1.FederationClient, id, dim int, seen *model) (*model, error) {
	req := &flv1.GetModelRequest{Learner: int32(id)}
	if seen != nil {
		r := int32(seen.round)
		req.SeenRound, req.SeenRun, req.SeenDigest = &r, seen.run, seen.digest
	}
	st, err := cl.GetModel(ctx, req)
	if err != nil {
		return nil, err
	}
	m := &model{x: make([]float64, dim)}
	filled := 0
	for k := 0; ; k++ {
		c, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if k == 0 {
			m.round, m.done, m.run, m.digest = int(c.GetRound()), c.GetDone(), c.GetRun(), c.GetDigest()
		}
		if int(c.GetDim()) != dim || int(c.GetOffset()) != filled || len(c.GetValues()) > dim-filled || int(c.GetRound()) != m.round {
			return nil, status.Errorf(codes.Internal, "malformed model chunk (round %d, dimension %d, offset %d, %d values; want dimension %d, offset %d)", c.GetRound(), c.GetDim(), c.GetOffset(), len(c.GetValues()), dim, filled)
		}
		filled += copy(m.x[filled:], c.GetValues())
	}
	if filled != dim {
		return nil, status.Errorf(codes.Internal, "short model: %d of %d values", filled, dim)
	}
	if !finite(m.x) {
		return nil, status.Errorf(codes.Internal, "model of round %d has a value that is not finite", m.round)
	}
	return m, nil
}

// sendChunks opens an upload stream with open and sends the chunks
// chunk(off, end) of a vector of length n through it, and returns the
// server's answer.
func sendChunks[C any](ctx context.Context, open func(context.Context, ...grpc.CallOption) (grpc.ClientStreamingClient[C, flv1.SubmitResponse], error),
	n int, chunk func(off, end int) *C) error {
	st, err := open(ctx)
	if err != nil {
		return err
	}
	for off := 0; off == 0 || off < n; off += ChunkLen {
		err := st.Send(chunk(off, min(off+ChunkLen, n)))
		if err == io.EOF {
			break // the server answered early; CloseAndRecv has its status
		}
		if err != nil {
			return err
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

// minTry is the least time between two tries of a call in a retrier, and
// the pause of a secure learner before it answers again what it already
// answered: a server's answers alone never make a learner spin.
const minTry = 50 * time.Millisecond

// retrier retries calls that fail for transient reasons.
type retrier struct {
	giveUp time.Duration
	log    *slog.Logger
	// fatal, if not nil, returns the error to stop with instead of
	// retrying a failed call (a TLS mismatch), or nil.
	fatal func(err error) error
}

// transient reports whether a call that failed with err may succeed later:
// the server is unreachable or restarting, or a wait timed out.
func transient(err error) bool {
	if containsAny(status.Convert(err).Message(), "authentication handshake failed", "tls: ", "x509: ") {
		return false // a certificate problem does not go away
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted:
		return true
	}
	return false
}

// do calls f, each try under its own timeout, until it succeeds, fails
// for a reason that is not transient, ctx is done, or the server has been
// unreachable for longer than giveUp. Waiting for a round
// (DeadlineExceeded) does not count as unreachable.
func (rt retrier) do(ctx context.Context, call string, timeout time.Duration, f func(ctx context.Context) error) error {
	backoff := 50 * time.Millisecond
	var down time.Time
	tries := 0
	for {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := f(cctx)
		cancel()
		if err != nil && rt.fatal != nil && ctx.Err() == nil {
			if ferr := rt.fatal(err); ferr != nil {
				return ferr
			}
		}
		if err == nil || !transient(err) || ctx.Err() != nil {
			if ctx.Err() != nil && err != nil {
				return ctx.Err()
			}
			return err
		}
		if status.Code(err) == codes.DeadlineExceeded {
			// Waiting for a round is not being unreachable, but a
			// DeadlineExceeded that comes back at once (a broken or
			// hostile server) must not make the learner spin.
			down, backoff, tries = time.Time{}, 50*time.Millisecond, 0
			if rest := minTry - time.Since(start); rest > 0 {
				if err := sleep(ctx, rest); err != nil {
					return err
				}
			}
			continue
		}
		tries++
		if down.IsZero() {
			down = time.Now()
		} else if time.Since(down) > rt.giveUp {
			return fmt.Errorf("fednet: %s: server unreachable for %v: %w", call, rt.giveUp, err)
		}
		if tries == 1 || tries%30 == 0 { // the first failure, then every half minute
			rt.log.Warn("retrying", "call", call, "tries", tries, "err", err)
		}
		if err := sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// sleep waits for d, or returns ctx's error if ctx is done first.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// secureLearner is a learner's side of the secure rounds: one
// secagg.Client per attempt of the round it works on, and its state
// directory, which records the attempt whose unmask phase it answered.
type secureLearner struct {
	id      int
	n, t    int
	dim     int
	quant   secagg.Quantizer
	clip    float64 // B_g
	tau     int
	round   int
	clients map[uint32]*secagg.Client
	state   *learnerState
	q       []uint64
}

// sitOutPause is how long a learner that cannot answer the open phase
// waits before it asks again where the server stands.
const sitOutPause = 200 * time.Millisecond

// checkMinColluders checks the run the server describes against the
// learner's minimum colluders m (LearnerOptions.MinColluders): for m > 0,
// secure aggregation whose announced colluders c are at least m and whose
// threshold T withstands m colluders (m < T, 2T > n + m). (newSecureLearner
// checks the announced T and c against the rule themselves.)
func checkMinColluders(rc *flv1.RunConfig, m int) error {
	if m == 0 {
		return nil
	}
	sa := rc.GetSecureAggregation()
	if sa == nil {
		return fmt.Errorf("fednet: the server's run has no secure aggregation, this learner's minimum colluders is %d (LearnerOptions.MinColluders, ofl learner -colluders): the server would see every update; refusing the run", m)
	}
	n, t, c := int(rc.GetLearners()), int(sa.GetThreshold()), int(sa.GetColluders())
	if c >= m && plan.CheckColluders(n, t, m) == nil {
		return nil
	}
	return fmt.Errorf("fednet: the server's secure aggregation announces colluders %d with threshold %d of %d learners, this learner's minimum colluders is %d (LearnerOptions.MinColluders, ofl learner -colluders): want c >= %d, %d < T and 2T > n + %d (T = %d allows c <= %d); refusing the run",
		c, t, n, m, m, m, m, t, max(plan.MaxColluders(n, t), -1))
}

// newSecureLearner checks the server's secure-aggregation settings.
func newSecureLearner(rc *flv1.RunConfig, id int) (*secureLearner, error) {
	sa := rc.GetSecureAggregation()
	n, t, c := int(rc.GetLearners()), int(sa.GetThreshold()), int(sa.GetColluders())
	switch {
	case sa.GetRingBits() != secagg.RingBits:
		return nil, fmt.Errorf("fednet: the server's ring has %d bits, this learner knows %d", sa.GetRingBits(), secagg.RingBits)
	case n < 2 || n > secagg.MaxLearners || 2*t <= n || t > n:
		return nil, fmt.Errorf("fednet: the server's secure aggregation has threshold %d for %d learners, want n/2 < T <= n <= %d", t, n, secagg.MaxLearners)
	case plan.CheckColluders(n, t, c) != nil:
		// The server may announce a c its threshold does not withstand:
		// the secrecy the run claims would then not hold.
		return nil, fmt.Errorf("fednet: the server's secure aggregation announces %v: its secrecy would not hold; refusing the run", plan.CheckColluders(n, t, c))
	case !(rc.GetClip() > 0) || math.IsInf(rc.GetClip(), 0):
		return nil, fmt.Errorf("fednet: the server's secure aggregation has clipping bound %v, want a finite bound > 0", rc.GetClip())
	case int(rc.GetParams()) > secagg.MaxDim:
		return nil, fmt.Errorf("fednet: the server's model has %d parameters, secure aggregation takes at most %d", rc.GetParams(), secagg.MaxDim)
	}
	want, err := secagg.NewQuantizer(n, int(rc.GetTau()), rc.GetClip())
	if err != nil {
		return nil, fmt.Errorf("fednet: the server's secure aggregation: %w", err)
	}
	if k := int(sa.GetScaleBits()); k > want.ScaleBits {
		return nil, fmt.Errorf("fednet: the server's quantization has %d scale bits, want at most %d for n = %d, tau = %d, B_g = %v (the sum could exceed 2^53, where its read-back rounds, and wrap)", k, want.ScaleBits, n, rc.GetTau(), rc.GetClip())
	}
	want.ScaleBits = int(sa.GetScaleBits())
	return &secureLearner{id: id, n: n, t: t, dim: int(rc.GetParams()), quant: want,
		clip: rc.GetClip(), tau: int(rc.GetTau()), round: -1, q: make([]uint64, rc.GetParams())}, nil
}

// run takes part in round r's protocol with update u until the round is
// released or the learner is dropped from it; it returns nil then, and
// the caller fetches the next model. A phase it cannot answer (of an
// attempt it did not start, or the unmask phase of a second attempt) it
// sits out, asking again until the phase closes.
func (sl *secureLearner) run(ctx context.Context, cl flv1.FederationClient, rt retrier, opt LearnerOptions, log *slog.Logger, r int, u []float64, fresh bool) error {
	if err := sl.state.checkRound(r); err != nil {
		return err
	}
	if fresh || sl.round != r {
		// The server sees only the sum: the update's norm is held to tau
		// B_g exactly here, by this learner (fedopt.QuantizeUpdate).
		if err := fedopt.QuantizeUpdate(sl.quant, sl.q, u, sl.clip, sl.tau); err != nil {
			return fmt.Errorf("fednet: learner %d, round %d: %w", sl.id, r, err)
		}
		sl.round, sl.clients = r, map[uint32]*secagg.Client{}
	}
	poll := &flv1.SecAggRequest{Learner: int32(sl.id), Round: int32(r)}
	req := poll
	var warned [2]uint64 // the attempt and phase last sat out, plus one
	// The attempt and the highest phase the server asked for: a request
	// for that phase or an earlier one again, or for another attempt, is
	// answered after a pause (an honest server asks again only after it
	// restarted).
	var top struct {
		ok bool
		a  uint32
		p  secagg.Phase
	}
	sitOut := func(a uint32, p secagg.Phase, msg string, args ...any) error {
		if k := [2]uint64{uint64(a) + 1, uint64(p) + 1}; k != warned {
			warned = k
			log.Warn(msg, append([]any{"learner", sl.id, "round", r, "attempt", a, "phase", int(p)}, args...)...)
		}
		req = poll
		return sleep(ctx, sitOutPause)
	}
	refusing := false // logged that this learner refuses the server's attempt
	for {
		// Every call of the round tells the server the attempt whose
		// unmask phase this learner answered, if any: from another
		// attempt than the open one, the server learns that this learner
		// will not answer phase 4 of any attempt it may still open, and
		// stops the run if fewer than T learners remain that can.
		if ua, ok := sl.state.unmaskedAttempt(r); ok {
			req.UnmaskedAttempt = &ua
		}
		var resp *flv1.SecAggResponse
		err := rt.do(ctx, "SecAgg", opt.WaitTimeout, func(cctx context.Context) error {
			var err error
			resp, err = cl.SecAgg(cctx, req)
			return err
		})
		switch status.Code(err) {
		case codes.OK:
		case codes.FailedPrecondition, codes.AlreadyExists:
			// A replay the server no longer wants (its phase moved on,
			// or it restarted): ask where it stands.
			log.Warn("protocol message not taken", "learner", sl.id, "round", r, "reason", status.Convert(err).Message())
			if !req.GetHasMessage() {
				return err
			}
			if err := sleep(ctx, minTry); err != nil {
				return err
			}
			req = poll
			continue
		default:
			return err
		}
		if int(resp.GetRound()) != r {
			return fmt.Errorf("fednet: the server answered for round %d, this learner is in round %d", resp.GetRound(), r)
		}
		if run := sl.state.rec.run; !bytes.Equal(resp.GetRun(), run[:]) {
			return fmt.Errorf("fednet: the server answered for run %s, this learner's state is of run %v; stopping", runText(resp.GetRun()), run)
		}
		if ua, ok := sl.state.unmaskedAttempt(r); ok && ua != resp.GetAttempt() && !refusing && resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_DONE {
			refusing = true
			log.Warn("this learner answered the round's unmask phase in another attempt: it will not unmask this one (the server is told)", "learner", sl.id, "round", r, "attempt", resp.GetAttempt(), "unmasked_attempt", ua)
		}
		switch resp.GetState() {
		case flv1.SecAggState_SEC_AGG_STATE_DONE:
			return nil
		case flv1.SecAggState_SEC_AGG_STATE_DROPPED:
			log.Warn("left out of the round", "learner", sl.id, "round", r, "attempt", resp.GetAttempt(), "phase", resp.GetPhase())
			return nil
		case flv1.SecAggState_SEC_AGG_STATE_WAIT:
			// An honest server answers WAIT only after its MaxWait.
			if err := sleep(ctx, minTry); err != nil {
				return err
			}
			req = poll
			continue
		case flv1.SecAggState_SEC_AGG_STATE_ANSWER:
		default:
			return fmt.Errorf("fednet: the server answered with state %v", resp.GetState())
		}
		a, p := resp.GetAttempt(), secagg.Phase(resp.GetPhase())
		if opt.stopBefore != nil && opt.stopBefore(r, p) {
			return errStopped
		}
		if top.ok && (a != top.a || p <= top.p) {
			if err := sleep(ctx, minTry); err != nil {
				return err
			}
		}
		if !top.ok || a != top.a || p > top.p {
			top.ok, top.a, top.p = true, a, p
		}
		if p == secagg.PhaseUnmask {
			// With T > n/2 at most one attempt of a round can be
			// unmasked: answering a second could reveal an update. The
			// record survives restarts; the same attempt again gets
			// the same answer.
			b, ok, err := sl.state.unmasked(r, a)
			if err != nil {
				if err := sitOut(a, p, "refusing to unmask a second attempt", "reason", err.Error()); err != nil {
					return err
				}
				continue
			}
			if ok {
				req = &flv1.SecAggRequest{Learner: int32(sl.id), Round: int32(r), Attempt: a, Phase: int32(p), HasMessage: true, Message: b}
				continue
			}
		}
		c := sl.clients[a]
		if c == nil {
			if p != secagg.PhaseAdvertise {
				// An attempt this learner did not start (it restarted):
				// it cannot answer; it sits the attempt out.
				if err := sitOut(a, p, "cannot join the attempt"); err != nil {
					return err
				}
				continue
			}
			if len(resp.GetRun()) != 16 {
				return fmt.Errorf("fednet: the server's run identity has %d bytes, want 16", len(resp.GetRun()))
			}
			sc := secagg.Context{Run: [16]byte(resp.GetRun()), Round: r, Attempt: a, N: sl.n, T: sl.t, Dim: sl.dim}
			var err error
			if c, err = secagg.NewClient(sc, sl.id, rand.Reader); err != nil {
				return fmt.Errorf("fednet: %w", err)
			}
			// Only the newest attempt's client is kept: an honest
			// server never goes back to an earlier attempt (this
			// learner would sit it out), and a hostile one cannot make
			// the learner keep a client per attempt it names.
			clear(sl.clients)
			sl.clients[a] = c
		}
		var msg encoding.BinaryMarshaler
		var err2 error
		switch p {
		case secagg.PhaseAdvertise:
			msg, err2 = c.Advertise()
		case secagg.PhaseShares:
			roster, err := unmarshalAll[secagg.Advertise]("roster", resp.GetMessages())
			if err != nil {
				return err
			}
			msg, err2 = c.ShareKeys(roster)
		case secagg.PhaseMasked:
			inbox, err := unmarshalAll[secagg.EncryptedShare]("inbox", resp.GetMessages())
			if err != nil {
				return err
			}
			y, err := c.MaskedInput(inbox, sl.q)
			if err != nil {
				return fmt.Errorf("fednet: learner %d, round %d: %w", sl.id, r, err)
			}
			err = rt.do(ctx, "SubmitMasked", opt.CallTimeout, func(cctx context.Context) error {
				return submitMasked(cctx, cl, sl.id, r, a, y)
			})
			switch status.Code(err) {
			case codes.OK, codes.AlreadyExists, codes.FailedPrecondition:
			default:
				return err
			}
			req = poll
			continue
		case secagg.PhaseConsistency:
			msg, err2 = c.Sign(convert[int](resp.GetSurvivors()))
		case secagg.PhaseUnmask:
			sigs, err := unmarshalAll[secagg.Signature]("signatures", resp.GetMessages())
			if err != nil {
				return err
			}
			msg, err2 = c.Unmask(convert[int](resp.GetSurvivors()), sigs)
		default:
			return fmt.Errorf("fednet: the server asked for phase %d, want 0..4", int(p))
		}
		if err2 != nil {
			return fmt.Errorf("fednet: learner %d, round %d, attempt %d, phase %d (%v): %w", sl.id, r, a, int(p), p, err2)
		}
		b, err := msg.MarshalBinary()
		if err != nil {
			return fmt.Errorf("fednet: %w", err)
		}
		if p == secagg.PhaseUnmask {
			// On disk before it is sent.
			if err := sl.state.recordUnmask(r, a, b); err != nil {
				return err
			}
			if opt.stopRecorded != nil && opt.stopRecorded(r) {
				return errStopped
			}
		}
		req = &flv1.SecAggRequest{Learner: int32(sl.id), Round: int32(r), Attempt: a, Phase: int32(p), HasMessage: true, Message: b}
	}
}

// convert converts indices to and from the wire's int32.
func convert[To, From int | int32](v []From) []To {
	out := make([]To, len(v))
	for k, x := range v {
		out[k] = To(x)
	}
	return out
}

// unmarshalAll decodes the server's list of messages (what names it).
func unmarshalAll[M any, PM interface {
	*M
	encoding.BinaryUnmarshaler
}](what string, bs [][]byte) ([]M, error) {
	out := make([]M, len(bs))
	for k, b := range bs {
		if err := PM(&out[k]).UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("fednet: the server's %s: %w", what, err)
		}
	}
	return out, nil
}

// submitMasked sends a masked input in chunks.
func submitMasked(ctx context.Context, cl flv1.FederationClient, id, r int, a uint32, y []uint64) error {
	return sendChunks(ctx, cl.SubmitMasked, len(y), func(off, end int) *flv1.MaskedChunk {
		return &flv1.MaskedChunk{Learner: int32(id), Round: int32(r), Attempt: a, Dim: int32(len(y)), Offset: int32(off), Values: y[off:end]}
	})
}
