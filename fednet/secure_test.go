package fednet

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	dpmodel "github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// secureRun makes r a run with secure aggregation's quantizer.
func secureRun(t *testing.T, r *run) {
	t.Helper()
	q, err := secagg.NewQuantizer(r.n, r.tau, r.cfg.Clip)
	if err != nil {
		t.Fatal(err)
	}
	r.cfg.Quantizer = &q
}

// secureOptions are r's server options with secure aggregation of
// threshold T. A phase closes when every learner answered; the quorum
// grace is long, so that a learner slowed by the machine's load (or in
// its backoff after a restart) is not dropped: tests with dropouts
// shorten it.
func secureOptions(r *run, dir string, T int) ServerOptions {
	opt := r.options(dir, nil)
	opt.SecureAggregation = &SecureAggregation{Threshold: T}
	opt.QuorumGrace = 20 * time.Second
	opt.MaxWait = time.Second
	opt.Linger = 300 * time.Millisecond // a dropped learner never fetches the final model
	return opt
}

// learnerResult is what a learner goroutine ended with.
type learnerResult struct {
	x   []float64
	err error
}

// secLearner is learner i's options against addr, with state directory
// dir.
func secLearner(r *run, addr string, i int, dir string) LearnerOptions {
	return LearnerOptions{Addr: addr, ID: i, Creds: insecure.NewCredentials(),
		Data:        func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, i) },
		WaitTimeout: 2 * time.Second, GiveUp: 20 * time.Second, StateDir: dir}
}

// requireLearnersOK fails the test at the first learner (named what and
// its index) whose run ended with an error.
func requireLearnersOK(t *testing.T, what string, res []learnerResult) {
	t.Helper()
	for i, l := range res {
		if l.err != nil {
			t.Fatalf("%s %d: %v", what, i, l.err)
		}
	}
}

// runSecLearners runs r's n learners against addr, each with its own
// state directory; opts may change each.
func runSecLearners(t *testing.T, ctx context.Context, r *run, addr string, opts func(i int, o *LearnerOptions)) []learnerResult {
	res := make([]learnerResult, r.n)
	base := t.TempDir()
	var wg sync.WaitGroup
	for i := range r.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := secLearner(r, addr, i, filepath.Join(base, strconv.Itoa(i)))
			if opts != nil {
				opts(i, &o)
			}
			res[i].x, res[i].err = RunLearner(ctx, o)
		}()
	}
	wg.Wait()
	return res
}

// A networked secure run releases the models of the in-process
// simulation with the same quantization, bit for bit: the server's
// unmasked sum is the plain ring sum of the quantized updates.
func TestSecureSameAsSimulation(t *testing.T) {
	r := newRun(t, 4, 3, 2, 5)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	s := serve(t, secureOptions(r, dir, 3), nil)
	requireLearnersOK(t, "learner", runSecLearners(t, context.Background(), r, s.addr, nil))
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
}

// TestSecureClippedSameAsSimulation: with clipping active (B_g = 0.1,
// tau = 1), about half of the learners' clipped updates exceed tau B_g by
// rounding in exact arithmetic; the server of secure aggregation sees only
// the sum, so each learner must scale such an update into tau B_g before
// it quantizes, as the in-process server does (fedopt.QuantizeUpdate). The
// networked learners used to quantize their updates as they were, and the
// released models differed from the simulation's; they must be the same
// bit for bit.
func TestSecureClippedSameAsSimulation(t *testing.T) {
	r := newRun(t, 3, 4, 1, 8)
	r.cfg.Clip = 0.1
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	s := serve(t, secureOptions(r, dir, 2), nil)
	requireLearnersOK(t, "learner", runSecLearners(t, context.Background(), r, s.addr, nil))
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
}

// Dropouts at each phase: a learner that stops before phase k of round
// 1 is absent from the sum if k <= 2 (it sent no masked input) and
// present if k >= 3 (its masked input is in and unmasked). With exactly T
// learners left the run completes; with fewer the round fails.
func TestSecureDropouts(t *testing.T) {
	const n, T = 4, 3
	for k := secagg.PhaseAdvertise; k <= secagg.PhaseUnmask; k++ {
		t.Run(fmt.Sprintf("phase%d", int(k)), func(t *testing.T) {
			t.Parallel()
			r := newRun(t, n, 2, 1, 4)
			secureRun(t, r)
			const drop = 2
			want := r.simulate(t, func(i, round int) bool {
				return i == drop && (round > 1 || round == 1 && k <= secagg.PhaseMasked)
			})
			dir := t.TempDir()
			opt := secureOptions(r, dir, T)
			opt.QuorumGrace = time.Second // the stopped learner's phases close after it
			s := serve(t, opt, nil)
			res := runSecLearners(t, context.Background(), r, s.addr, func(i int, o *LearnerOptions) {
				if i == drop {
					o.stopBefore = func(round int, p secagg.Phase) bool { return round == 1 && p == k }
				}
			})
			for i, l := range res {
				if (i == drop) != errors.Is(l.err, errStopped) || i != drop && l.err != nil {
					t.Fatalf("learner %d: %v", i, l.err)
				}
			}
			if err := <-s.errc; err != nil {
				t.Fatal(err)
			}
			requireSameModels(t, readRounds(t, dir, r.R), want)
		})
	}
	t.Run("below", func(t *testing.T) {
		t.Parallel()
		r := newRun(t, n, 2, 1, 4)
		secureRun(t, r)
		dir := t.TempDir()
		opt := secureOptions(r, dir, T)
		// Round 1's phases, below the threshold, close at RoundTimeout.
		// It also bounds round 0's advertise phase, which waits for the
		// learners to start: 3 s closed it with none at load 20 under
		// -race (CI), so the run failed in round 0.
		opt.RoundTimeout, opt.QuorumGrace = 8*time.Second, time.Second
		s := serve(t, opt, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go runSecLearners(t, ctx, r, s.addr, func(i int, o *LearnerOptions) {
			if i >= T-1 { // two learners stop: T-1 = 2 survive
				o.stopBefore = func(round int, p secagg.Phase) bool { return round == 1 && p == secagg.PhaseConsistency }
			}
			o.GiveUp = time.Second
		})
		err := <-s.errc
		if !errors.Is(err, ErrTooFewLearners) {
			t.Fatalf("Run: %v, want ErrTooFewLearners", err)
		}
		t.Log(err)
		if got, _ := s.srv.Round(); got != 1 {
			t.Fatalf("round %d after the failure, want 1", got)
		}
	})
}

// secClient drives one learner's side of the protocol over the wire by
// hand, for the refusal tests.
type secClient struct {
	t  *testing.T
	cl flv1.FederationClient
	id int
}

func (c *secClient) call(req *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req.Learner = int32(c.id)
	return c.cl.SecAgg(ctx, req)
}

func (c *secClient) must(req *flv1.SecAggRequest) *flv1.SecAggResponse {
	c.t.Helper()
	resp, err := c.call(req)
	if err != nil {
		c.t.Fatalf("learner %d: %v", c.id, err)
	}
	return resp
}

func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: %v, want %v", what, err, code)
	}
	t.Logf("%s: %v", what, status.Convert(err).Message())
}

// Replayed and reordered protocol messages are refused over the wire with
// one-line reasons: a message for a phase that is not open, for another
// attempt or round, another message in place of one already taken, a
// message naming another learner, a masked input outside SubmitMasked or
// twice; a repeat of the same message is a retry and changes nothing. An
// old learner (revision 1) is refused by a secure server.
func TestSecureRefusals(t *testing.T) {
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	opt := secureOptions(r, t.TempDir(), 2)
	opt.QuorumGrace = time.Hour
	opt.MaxWait = 100 * time.Millisecond
	s := serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	ctx := context.Background()
	_, err = cl.Join(ctx, &flv1.JoinRequest{ProtocolVersion: flv1.ProtocolVersion_PROTOCOL_VERSION_1, Learner: 0})
	wantCode(t, "old learner", err, codes.FailedPrecondition)
	join, err := cl.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
	if err != nil {
		t.Fatal(err)
	}
	if join.GetConfig().GetSecureAggregation().GetThreshold() != 2 {
		t.Fatalf("RunConfig.secure_aggregation %v, want threshold 2", join.GetConfig().GetSecureAggregation())
	}
	_, err = cl.SubmitUpdate(ctx)
	if err == nil {
		st, _ := cl.SubmitUpdate(ctx)
		st.Send(&flv1.UpdateChunk{Learner: 0, Round: 0, Dim: 4, Values: make([]float64, 4)})
		_, err = st.CloseAndRecv()
	}
	wantCode(t, "plain update", err, codes.FailedPrecondition)

	cs := make([]*secClient, 3)
	clients := make([]*secagg.Client, 3)
	var sctx secagg.Context
	for i := range cs {
		cs[i] = &secClient{t: t, cl: cl, id: i}
		resp := cs[i].must(&flv1.SecAggRequest{Round: 0})
		if resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_ANSWER || resp.GetPhase() != 0 {
			t.Fatalf("first poll: %v, want ANSWER phase 0", resp)
		}
		sctx = secagg.Context{Round: 0, Attempt: resp.GetAttempt(), N: 3, T: 2, Dim: 4}
		copy(sctx.Run[:], resp.GetRun())
		if clients[i], err = secagg.NewClient(sctx, i, rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	adv := func(i int) []byte {
		m, err := clients[i].Advertise()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m.MarshalBinary()
		return b
	}
	msg := func(p int, b []byte) *flv1.SecAggRequest {
		return &flv1.SecAggRequest{Round: 0, Attempt: sctx.Attempt, Phase: int32(p), HasMessage: true, Message: b}
	}
	a0 := adv(0)
	_, err = cs[0].call(msg(1, a0))
	wantCode(t, "message for a phase not open yet", err, codes.FailedPrecondition)
	_, err = cs[0].call(&flv1.SecAggRequest{Round: 0, Attempt: sctx.Attempt + 1, Phase: 0, HasMessage: true, Message: a0})
	wantCode(t, "message for another attempt", err, codes.FailedPrecondition)
	_, err = cs[0].call(&flv1.SecAggRequest{Round: 1, Attempt: sctx.Attempt, Phase: 0, HasMessage: true, Message: a0})
	wantCode(t, "message for another round", err, codes.FailedPrecondition)
	_, err = cs[1].call(msg(0, a0))
	wantCode(t, "learner 0's message sent by learner 1", err, codes.InvalidArgument)
	_, err = cs[0].call(msg(2, nil))
	wantCode(t, "masked input through SecAgg", err, codes.InvalidArgument)
	if resp := cs[0].must(msg(0, a0)); resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_WAIT {
		t.Fatalf("advertisement: %v, want WAIT", resp)
	}
	if resp := cs[0].must(msg(0, a0)); resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_WAIT {
		t.Fatalf("the same advertisement again (a retry): %v, want WAIT", resp)
	}
	other, _ := secagg.NewClient(sctx, 0, rand.Reader)
	m, _ := other.Advertise()
	b, _ := m.MarshalBinary()
	_, err = cs[0].call(msg(0, b))
	wantCode(t, "another advertisement", err, codes.AlreadyExists)
	cs[1].must(msg(0, adv(1)))
	cs[2].must(msg(0, adv(2)))
	// Phase 0 closed with every learner: each is asked for phase 1.
	resp := cs[0].must(&flv1.SecAggRequest{Round: 0})
	if resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_ANSWER || resp.GetPhase() != 1 || len(resp.GetMessages()) != 3 {
		t.Fatalf("after phase 0: %v, want ANSWER phase 1 with 3 advertisements", resp)
	}
	_, err = cs[0].call(msg(0, a0))
	wantCode(t, "advertisement replayed after its phase closed", err, codes.FailedPrecondition)
	roster := make([]secagg.Advertise, 3)
	for k, b := range resp.GetMessages() {
		if err := roster[k].UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
	}
	_, err = cs[0].call(msg(1, []byte("not a message")))
	wantCode(t, "undecodable shares", err, codes.InvalidArgument)
	for i := range cs {
		sh, err := clients[i].ShareKeys(roster)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := sh.MarshalBinary()
		cs[i].must(msg(1, b))
	}
	resp = cs[0].must(&flv1.SecAggRequest{Round: 0})
	if resp.GetState() != flv1.SecAggState_SEC_AGG_STATE_ANSWER || resp.GetPhase() != 2 || len(resp.GetMessages()) < 2 {
		t.Fatalf("after phase 1: state %v, phase %d, %d boxes, want ANSWER phase 2 with a box from each other learner", resp.GetState(), resp.GetPhase(), len(resp.GetMessages()))
	}
	inbox := make([]secagg.EncryptedShare, len(resp.GetMessages()))
	for k, b := range resp.GetMessages() {
		if err := inbox[k].UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
	}
	y, err := clients[0].MaskedInput(inbox, make([]uint64, 4))
	if err != nil {
		t.Fatal(err)
	}
	sctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := submitMasked(sctx2, cl, 0, 0, sctx.Attempt+1, y); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("masked input for another attempt: %v, want FailedPrecondition", err)
	}
	if err := submitMasked(sctx2, cl, 0, 0, sctx.Attempt, y[:3]); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("short masked input: %v, want InvalidArgument", err)
	}
	if err := submitMasked(sctx2, cl, 0, 0, sctx.Attempt, y); err != nil {
		t.Fatal(err)
	}
	err = submitMasked(sctx2, cl, 0, 0, sctx.Attempt, y)
	wantCode(t, "masked input replayed", err, codes.AlreadyExists)
}

// Nothing the server receives correlates with a learner's quantized
// update, while the released sum does. The learners' updates are
// computed here independently (fedopt.Learner at x^0, quantized); every
// masked input y_u the server receives is compared with every q_i by
// Pearson's r over d = 4096 coordinates. A masked input is uniform on
// Z_{2^64} and independent of q_i, so r is about N(0, 1/d): |r| >=
// 6/sqrt(d) has probability about 2 Phi(-6) = 2e-9 per comparison (16
// here), the test's false-failure rate. The other messages (keys, boxes,
// signatures, shares) do not depend on the updates at all.
func TestSecureServerSeesNoUpdate(t *testing.T) {
	const n, d = 4, 4096
	r := newRun(t, n, 1, 1, d)
	r.f, r.std = nil, 0
	r.cfg.Algorithm = fedopt.NonPrivate
	secureRun(t, r)
	q := make([][]uint64, n)
	for i := range q {
		l, err := fedopt.NewLearner(dpmodel.Logistic{}, r.data.Stream(i), r.cfg, r.tau, d)
		if err != nil {
			t.Fatal(err)
		}
		u := make([]float64, d)
		if err := l.Update(u, 0, make([]float64, d)); err != nil {
			t.Fatal(err)
		}
		q[i] = make([]uint64, d)
		if err := fedopt.QuantizeUpdate(*r.cfg.Quantizer, q[i], u, r.cfg.Clip, r.tau); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := NewServer(secureOptions(r, t.TempDir(), 3))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var masked [][]uint64
	var sum []uint64
	events := 0
	srv.hooks.record = func(e secEvent) {
		mu.Lock()
		defer mu.Unlock()
		events++
		if e.Masked != nil {
			masked = append(masked, e.Masked)
		}
	}
	srv.hooks.sum = func(_ int, s []uint64) { sum = s }
	s := serveServer(t, srv)
	requireLearnersOK(t, "learner", runSecLearners(t, context.Background(), r, s.addr, nil))
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	if len(masked) != n || events != 4*n+n {
		t.Fatalf("%d masked inputs and %d messages recorded, want %d and %d", len(masked), events, n, 5*n)
	}
	lim := 6 / math.Sqrt(d)
	for u, y := range masked {
		for i := range q {
			if c := testutil.RingPearson(y, q[i]); math.Abs(c) >= lim {
				t.Errorf("masked input %d vs learner %d's update: r = %.4f, |r| >= %.4f", u, i, c, lim)
			}
		}
	}
	var plain []uint64 = make([]uint64, d)
	for i := range q {
		secagg.AddRing(plain, q[i])
		if c := testutil.RingPearson(sum, q[i]); c < 0.2 {
			t.Errorf("released sum vs learner %d's update: r = %.4f, want a clear correlation", i, c)
		}
	}
	for k := range plain {
		if plain[k] != sum[k] {
			t.Fatalf("unmasked sum[%d] = %d, the plain ring sum of the quantized updates %d", k, int64(sum[k]), int64(plain[k]))
		}
	}
}

// errCrash is a simulated crash of the server.
var errCrash = errors.New("simulated crash")

// A server that dies in the middle of the protocol (a phase closed and
// its snapshot not yet written, or written and published) and is
// restarted on its state directory resumes the attempt at that phase:
// the learners resend their cached, identical messages, and the models
// are those of an uninterrupted run.
func TestSecureCrashResume(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	for p := secagg.PhaseAdvertise; p <= secagg.PhaseConsistency; p++ {
		for _, after := range []bool{false, true} {
			name := fmt.Sprintf("phase%d/before-snapshot", int(p))
			if after {
				name = fmt.Sprintf("phase%d/after-close", int(p))
			}
			t.Run(name, func(t *testing.T) {
				r := newRun(t, 4, 2, 1, 4)
				secureRun(t, r)
				want := r.simulate(t, nil)
				dir := t.TempDir()
				opt := secureOptions(r, dir, 3)
				srv, err := NewServer(opt)
				if err != nil {
					t.Fatal(err)
				}
				crash := func(round int, _ uint32, q secagg.Phase) error {
					if round == 1 && q == p {
						return errCrash
					}
					return nil
				}
				if after {
					srv.hooks.afterClose = crash
				} else {
					srv.hooks.beforeSnapshot = crash
				}
				s1 := serveServer(t, srv)
				done := make(chan []learnerResult, 1)
				go func() { done <- runSecLearners(t, context.Background(), r, s1.addr, nil) }()
				if err := <-s1.errc; !errors.Is(err, errCrash) {
					t.Fatalf("first server: %v, want the simulated crash", err)
				}
				s1.stop()
				var log testutil.SyncBuffer
				opt2 := opt
				opt2.Log = slog.New(slog.NewTextHandler(&log, nil))
				s2 := serveAt(t, opt2, nil, s1.addr)
				requireLearnersOK(t, "learner", <-done)
				if err := <-s2.errc; err != nil {
					t.Fatal(err)
				}
				requireSameModels(t, readRounds(t, dir, r.R), want)
				resumed := p // the snapshot of the close before p (or of the attempt's opening)
				if after {
					resumed = p + 1
				}
				if line := fmt.Sprintf("msg=\"resumed the secure round\" round=1 attempt=0 phase=%s", resumed); !strings.Contains(log.String(), line) {
					t.Errorf("the restarted server did not resume attempt 0 at phase %v (%q):\n%s", resumed, line, log.String())
				}
			})
		}
	}
}

// A snapshot of another run, of a round not yet open, of another
// generation than its name's, or a corrupt or truncated one is refused at start like
// the other state files, and so is the single snapshot file of an older
// dpmf; after a failed attempt a restart opens the next attempt.
func TestSecureSnapshotRefused(t *testing.T) {
	r := newRun(t, 3, 2, 1, 4)
	secureRun(t, r)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	if srv.secGen != 1 {
		t.Fatalf("the first server's generation is %d, want 1", srv.secGen)
	}
	path := srv.st.path(secName(1))
	srv.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSec(good)
	if err != nil || snap.round != 0 || snap.attempt != 0 || snap.phase != secagg.PhaseAdvertise || snap.gen != 1 {
		t.Fatalf("fresh snapshot: %+v, %v; want round 0, attempt 0, phase 0, generation 1", snap, err)
	}
	reseal := func(b []byte) []byte {
		b = bytes.Clone(b[:len(b)-sha256.Size])
		sum := sha256.Sum256(b)
		return append(b, sum[:]...)
	}
	other := bytes.Clone(good)
	other[len(secMagic)] ^= 1 // another run's identity
	later := bytes.Clone(good)
	later[len(secMagic)+16] = 1 // round 1
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 1
	older := bytes.Clone(good)
	copy(older, "DPMFSA02") // the format of the single file secagg.state
	renamed := bytes.Clone(good)
	renamed[len(secMagic)+16+8+4+4] = 2 // generation 2's
	for _, c := range []struct {
		name, want string
		data       []byte
		file       string
	}{
		{"another run", "belongs to run", reseal(other), secName(1)},
		{"a later round", "rewound", reseal(later), secName(1)},
		{"corrupt", "checksum mismatch", corrupt, secName(1)},
		{"truncated in its header", "(bad magic or too short)", good[:secHead], secName(1)},
		{"truncated in its body", "checksum mismatch", good[:len(good)-1], secName(1)},
		{"another generation", "holds generation 2's snapshot", reseal(renamed), secName(1)},
		{"an older format", "not a secure-aggregation snapshot of format DPMFSA03", reseal(older), secName(1)},
		{"an older dpmf's file", secOldFile + " is a secure-aggregation snapshot of an older dpmf (format \"DPMFSA02\"", reseal(older), secOldFile},
		{"an unexpected name", "unexpected file in the state directory", good, secPrefix + "1" + secSuffix},
	} {
		p := filepath.Join(dir, c.file)
		if err := os.WriteFile(p, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := NewServer(opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		t.Logf("%s: %v", c.name, err)
		if c.file != secName(1) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A failed attempt: the restart opens attempt 1, in generation 2,
	// and removes generation 1's file.
	failed := bytes.Clone(good)
	binary.LittleEndian.PutUint32(failed[len(secMagic)+16+8+4:], uint32(secagg.PhaseFailed))
	if err := os.WriteFile(path, reseal(failed), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err = NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.sec.ctx.Attempt != 1 || srv.sec.phase != secagg.PhaseAdvertise {
		t.Fatalf("after a failed attempt: attempt %d, phase %v; want attempt 1, phase 0", srv.sec.ctx.Attempt, srv.sec.phase)
	}
	if gs, err := srv.st.secGens(); err != nil || !slices.Equal(gs, []uint64{2}) {
		t.Fatalf("snapshot files of generations %v (%v), want only 2", gs, err)
	}
}

// With authentication (ServerOptions.Identify; mutual TLS in a
// deployment) a protocol message or masked input that names another
// learner than the caller's identity is refused.
func TestSecureIdentity(t *testing.T) {
	r := newRun(t, 3, 1, 1, 4)
	secureRun(t, r)
	opt := secureOptions(r, t.TempDir(), 2)
	opt.MaxWait = 100 * time.Millisecond
	opt.Identify = func(ctx context.Context) (int, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("as"); len(v) == 1 {
			return strconv.Atoi(v[0])
		}
		return -1, errors.New("no identity")
	}
	s := serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "as", "1")
	if _, err := cl.SecAgg(ctx, &flv1.SecAggRequest{Learner: 1}); err != nil {
		t.Fatalf("learner 1 as itself: %v", err)
	}
	_, err = cl.SecAgg(ctx, &flv1.SecAggRequest{Learner: 0})
	wantCode(t, "SecAgg as learner 0 by learner 1", err, codes.PermissionDenied)
	_, err = cl.SecAgg(context.Background(), &flv1.SecAggRequest{Learner: 0})
	wantCode(t, "SecAgg without identity", err, codes.Unauthenticated)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = submitMasked(cctx, cl, 0, 0, 0, make([]uint64, 4))
	wantCode(t, "masked input as learner 0 by learner 1", err, codes.PermissionDenied)
}

// A round that fails (fewer than T learners in a phase) is resumed by a
// restart in a new attempt with fresh keys: here two of three learners
// stop before phase 1 of round 0, the server fails with
// ErrTooFewLearners, and a restarted server with the two learners
// restarted (on their state directories) releases the simulation's
// models from attempt 1.
func TestSecureFailedAttemptRestarts(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 2, 1, 4)
	secureRun(t, r)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	opt := secureOptions(r, dir, 2)
	opt.RoundTimeout, opt.QuorumGrace = 2*time.Second, time.Second
	s1 := serve(t, opt, nil)
	var mu sync.Mutex
	stopped := map[int]bool{}
	first := make(chan []learnerResult, 1)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	go func() {
		first <- runSecLearners(t, context.Background(), r, s1.addr, func(i int, o *LearnerOptions) {
			o.StateDir = dirs[i]
			if i > 0 {
				o.stopBefore = func(round int, p secagg.Phase) bool {
					mu.Lock()
					defer mu.Unlock()
					if round == 0 && p == secagg.PhaseShares && !stopped[i] {
						stopped[i] = true
						return true
					}
					return false
				}
			}
		})
	}()
	if err := <-s1.errc; !errors.Is(err, ErrTooFewLearners) {
		t.Fatalf("first server: %v, want ErrTooFewLearners", err)
	}
	s1.stop()
	var log testutil.SyncBuffer
	opt.Log = slog.New(slog.NewTextHandler(&log, nil))
	opt.QuorumGrace = 20 * time.Second // learner 0 may be in its backoff
	s2 := serveAt(t, opt, nil, s1.addr)
	// Learner 0 is still running; learners 1 and 2 start afresh.
	var wg sync.WaitGroup
	for i := 1; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := RunLearner(context.Background(), secLearner(r, s2.addr, i, dirs[i])); err != nil {
				t.Errorf("restarted learner %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	res := <-first
	if res[0].err != nil {
		t.Fatalf("learner 0: %v", res[0].err)
	}
	if err := <-s2.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
	if !strings.Contains(log.String(), "msg=\"new attempt\" round=0 attempt=1") {
		t.Errorf("the restart did not open attempt 1:\n%s", log.String())
	}
}

// Secure-aggregation options out of range are refused by NewServer with
// one line naming them, before the state directory is touched.
func TestSecureOptionsRefused(t *testing.T) {
	r := newRun(t, 4, 2, 1, 4)
	secureRun(t, r)
	for _, c := range []struct {
		name, want string
		edit       func(o *ServerOptions)
	}{
		{"threshold n/2", "threshold 2 for 4 learners, want n/2 < T <= n", func(o *ServerOptions) { o.SecureAggregation.Threshold = 2 }},
		{"threshold above n", "threshold 5 for 4 learners", func(o *ServerOptions) { o.SecureAggregation.Threshold = 5 }},
		{"no quantizer", "needs the quantizer", func(o *ServerOptions) { o.Config.Quantizer = nil }},
		{"min learners", "minimum learners 2 with secure aggregation of threshold 3", func(o *ServerOptions) { o.MinLearners = 2 }},
		{"one learner", "secure aggregation with 1 learners, want 2..255", func(o *ServerOptions) {
			o.Shape.Learners = 1
			o.SecureAggregation.Threshold = 1
		}},
	} {
		dir := filepath.Join(t.TempDir(), "state")
		opt := secureOptions(r, dir, 3)
		c.edit(&opt)
		_, err := NewServer(opt)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.name, err, c.want)
			continue
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("%s: the state directory was created", c.name)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
