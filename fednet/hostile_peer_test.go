package fednet

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
	"github.com/dpmf/dpmf/secagg"
)

// Hostile peers, third review (docs/distributed.md, "Security model"):
// what hostile_plain_test.go, hostile_secure_test.go and flood_test.go
// leave out.

// A witness whose run identity is not a run identity (a peer's bytes, up
// to the 1 MiB message limit) is refused without echoing them: the
// refusal, its log line and its typed detail stay short. The server wrote
// the bytes in hex into the status message, the ErrorInfo detail and the
// log line, 2 MiB each (measured: a 2 MiB message, and 40 MiB of log for
// 20 calls), so that the log's rate limit (lines, not bytes) let one peer
// write 20 MiB of log a second and each such call, refused before any call
// limit applies, held about four times its request while it was answered.
// A 16-byte identity of another run is still refused with the typed
// detail (TestOtherRunRefusalTyped), and the run goes on.
func TestWitnessOfHugeRunNotEchoed(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	var log testutil.SyncBuffer
	opt := r.options(t.TempDir(), &log)
	s := serve(t, opt, nil)
	cl := rawClient(t, s.addr)
	c := firstChunk(t, cl, 0)
	huge := bytes.Repeat([]byte{0xab}, MaxMsgSize-4<<10)
	const calls = 20
	for k := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		round := int32(0)
		stream, err := cl.GetModel(ctx, &flv1.GetModelRequest{Learner: 0, SeenRound: &round, SeenRun: huge, SeenDigest: c.GetDigest()})
		if err == nil {
			_, err = stream.Recv()
		}
		cancel()
		if code := status.Code(err); code == codes.OK {
			t.Fatalf("call %d: a witness of a %d-byte run was taken", k, len(huge))
		}
		st := status.Convert(err)
		size := len(st.Message())
		for _, d := range st.Proto().GetDetails() {
			size += len(d.GetValue())
		}
		if size > 1<<10 {
			t.Fatalf("call %d: the refusal holds %d bytes (message and details), want at most 1 KiB: %.200s...", k, size, st.Message())
		}
		if k == 0 {
			t.Logf("refused: %v: %.300s", st.Code(), st.Message())
		}
	}
	if n := len(log.String()); n > calls<<10 {
		t.Errorf("the log holds %d bytes after %d refused witnesses, want at most 1 KiB each", n, calls)
	}
	want := r.simulate(t, nil)
	_, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil {
		t.Fatalf("server: %v", err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
}

// maxMaskedValues is the most values a MaskedChunk of dimension dim can
// carry within MaxMsgSize, every header field at its widest.
func maxMaskedValues(dim int) int {
	size := func(k int) int {
		return proto.Size(&flv1.MaskedChunk{Learner: math.MaxInt32, Round: math.MinInt32, Attempt: math.MaxUint32, Dim: int32(dim), Offset: math.MaxInt32, Values: make([]uint64, k)})
	}
	k := MaxMsgSize / 8
	for size(k) > MaxMsgSize {
		k--
	}
	return k
}

// secAggFiller is the largest SecAgg message field that keeps a request
// of learner, round, attempt and phase at their widest within MaxMsgSize.
func secAggFiller() int {
	size := func(k int) int {
		a := uint32(math.MaxUint32)
		return proto.Size(&flv1.SecAggRequest{Learner: math.MaxInt32, Round: math.MinInt32, Attempt: math.MaxUint32, Phase: math.MinInt32, HasMessage: true, Message: make([]byte, k), UnmaskedAttempt: &a})
	}
	k := MaxMsgSize
	for size(k) > MaxMsgSize {
		k--
	}
	return k
}

// sendMaskedEncoded streams a masked input of preencoded chunks and
// returns the server's status.
func sendMaskedEncoded(cl flv1.FederationClient, chunks []preencoded) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cl.SubmitMasked(ctx, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if err := st.SendMsg(c); err != nil {
			break
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

// A peer that claims the absent learner 2 of a secure run (n = 3, T = 2,
// d = 2^17: a masked input is 1 MiB, a little more than one of the
// largest messages) sends, from 32 calls at a time on 2 connections and
// for the whole run, the largest messages the limit allows: SecAgg
// messages of 1 MiB that do not decode, for the open phase of the open
// attempt, for attempt 2^32 - 1, for round 2^30 and for a past round,
// each with a claim that learner 2 unmasked another attempt; and masked
// inputs of the whole dimension for attempt 2^32 - 1, for round 2^30,
// of dimension d + 1, and for the open attempt (learner 2 is in no set
// after phase 0). Every message is encoded once, so that the peer, in
// this process, allocates next to nothing a call. Each is refused, and
// the two honest learners' run releases the models of the simulation
// without learner 2, bit for bit. While the peer runs alone, the live
// heap (liveHeapPeak) grows by at most what gRPC and the server's limits
// let it hold, secureHostileHeapBound:
//
//   - each of the peer's 32 calls in progress holds at most one message,
//     raw and decoded (a SecAgg request is read whole before the handler
//     runs, whatever the call limits; a masked input is refused at its
//     first chunk, and its other chunks are never read):
//     32 x 2 MaxMsgSize = 64 MiB;
//   - data received on a call and not read: StreamWindow a call,
//     32 x 512 KiB = 16 MiB;
//   - the open attempt's aggregator (O(d + n^2): its sum, 8 d = 1 MiB)
//     and 8 MiB for gRPC's buffers, headers and pools and the log, as in
//     TestPlainHostileUploads.
//
// 89 MiB in all.
func TestSecureHostileFloodMemory(t *testing.T) {
	const (
		n, R, d, T   = 3, 2, 1 << 17, 2
		hostile      = 2
		goroutines   = 32
		conns        = 2
		besideHonest = 4
		phases       = int(secagg.PhaseUnmask) + 1
	)
	r := denseRun(t, n, R, d)
	secureRun(t, r)
	want := r.simulate(t, func(i, _ int) bool { return i == hostile })
	var log testutil.SyncBuffer
	opt := secureOptions(r, t.TempDir(), T)
	opt.Log = slog.New(slog.NewTextHandler(&log, nil))
	opt.QuorumGrace, opt.MaxWait = 300*time.Millisecond, 200*time.Millisecond
	opt.CallTimeout = 5 * time.Second
	if raceEnabled {
		opt.RoundTimeout = 60 * time.Second
	}
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	filler := bytes.Repeat([]byte{0x5a}, secAggFiller())
	claim := uint32(math.MaxUint32 - 1)
	secAgg := func(round int, a uint32, p int) preencoded {
		b, err := proto.Marshal(&flv1.SecAggRequest{Learner: hostile, Round: int32(round), Attempt: a, Phase: int32(p), HasMessage: true, Message: filler, UnmaskedAttempt: &claim})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	k := maxMaskedValues(d)
	values := make([]uint64, d+1)
	for j := range values {
		values[j] = uint64(j) * 0x9e3779b97f4a7c15
	}
	masked := func(round int, a uint32, dim int) []preencoded {
		var out []preencoded
		for off := 0; off < dim; off += k {
			b, err := proto.Marshal(&flv1.MaskedChunk{Learner: hostile, Round: int32(round), Attempt: a, Dim: int32(dim), Offset: int32(off), Values: values[off:min(off+k, dim)]})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	// The attacks, encoded for each open round and phase (a run without
	// failures has attempt 0 only).
	type attack struct {
		name   string
		masked bool
		enc    [R + 1][phases][]preencoded
	}
	attacks := []*attack{{name: "SecAgg for the open phase"}, {name: "SecAgg for attempt 2^32-1"}, {name: "SecAgg for round 2^30"}, {name: "SecAgg for a past round"},
		{name: "masked for attempt 2^32-1", masked: true}, {name: "masked for round 2^30", masked: true}, {name: "masked of dimension d+1", masked: true}, {name: "masked for the open attempt", masked: true}}
	for open := range R + 1 {
		for p := range phases {
			attacks[0].enc[open][p] = []preencoded{secAgg(open, 0, p)}
		}
		attacks[1].enc[open][0] = []preencoded{secAgg(open, math.MaxUint32, 0)}
		attacks[2].enc[open][0] = []preencoded{secAgg(1<<30, 0, 0)}
		attacks[3].enc[open][0] = []preencoded{secAgg(open-1, 0, 0)}
		attacks[4].enc[open][0] = masked(open, math.MaxUint32, d)
		attacks[5].enc[open][0] = masked(1<<30, 0, d)
		attacks[6].enc[open][0] = masked(open, 0, d+1)
		attacks[7].enc[open][0] = masked(open, 0, d)
	}
	filler, values = nil, nil
	for _, a := range attacks[1:] {
		for open := range R + 1 {
			for p := 1; p < phases; p++ {
				a.enc[open][p] = a.enc[open][0]
			}
		}
	}

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	liveBefore := liveHeap()
	goBefore := runtime.NumGoroutine()
	s := serveServer(t, srv)
	ccs := make([]*grpc.ClientConn, conns)
	for c := range ccs {
		if ccs[c], err = grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stopFlood := context.WithCancel(context.Background())
	var (
		flood    sync.WaitGroup
		honest   atomic.Bool
		mu       sync.Mutex
		refusals = make([]int, len(attacks))
		limited  atomic.Int64
	)
	for g := range goroutines {
		cc := ccs[g%conns]
		cl := flv1.NewFederationClient(cc)
		flood.Go(func() {
			for j := g; ctx.Err() == nil; j++ {
				if honest.Load() && g >= besideHonest {
					return
				}
				a := attacks[j%len(attacks)]
				open, _, p := secOpen(srv)
				if open > R {
					open = R
				}
				var err error
				if a.masked {
					err = sendMaskedEncoded(cl, a.enc[open][p])
				} else {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					err = cc.Invoke(cctx, flv1.Federation_SecAgg_FullMethodName, a.enc[open][p][0], new(flv1.SecAggResponse), grpc.ForceCodecV2(rawCodec{}))
					cancel()
				}
				switch code := status.Code(err); code {
				case codes.OK:
					t.Errorf("%s: accepted", a.name)
				case codes.ResourceExhausted:
					limited.Add(1)
				case codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists:
					mu.Lock()
					refusals[j%len(attacks)]++
					mu.Unlock()
				case codes.Canceled, codes.Unavailable, codes.DeadlineExceeded:
					// The run ended, or a loaded machine.
				default:
					t.Errorf("%s: %v, want a refusal", a.name, err)
				}
			}
		})
	}

	live := liveHeapPeak()
	time.Sleep(3 * time.Second)
	l := live()
	growth := int64(l) - int64(liveBefore)
	const secureHostileHeapBound = goroutines*(2*MaxMsgSize+StreamWindow) + 8*d + 8<<20
	t.Logf("the hostile peer alone for 3 s: live heap %d MiB before, at most %d MiB (+%d MiB, bound %d MiB)", liveBefore>>20, l>>20, growth>>20, secureHostileHeapBound>>20)
	if growth > secureHostileHeapBound {
		t.Errorf("the live heap grew by %d MiB under the hostile secure-aggregation messages, want at most %d MiB", growth>>20, secureHostileHeapBound>>20)
	}

	honest.Store(true)
	lctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res := make([]learnerResult, 2)
	var wg sync.WaitGroup
	base := t.TempDir()
	for i := range res {
		wg.Go(func() {
			o := secLearner(r, s.addr, i, filepath.Join(base, strconv.Itoa(i)))
			o.GiveUp = 60 * time.Second
			res[i].x, res[i].err = RunLearner(lctx, o)
		})
	}
	wg.Wait()
	stopFlood()
	flood.Wait()
	requireLearnersOK(t, "honest learner", res)
	if err := <-s.errc; err != nil {
		l := log.String()
		t.Fatalf("server: %v; log ends %s", err, l[max(0, len(l)-2000):])
	}
	requireSameModels(t, readRounds(t, opt.Dir, R), want)
	for j, a := range attacks {
		t.Logf("%s: refused %d times", a.name, refusals[j])
		if refusals[j] == 0 {
			t.Errorf("%s: never refused with a reason (only by the call limits?)", a.name)
		}
	}
	t.Logf("%d calls refused by the call limits", limited.Load())
	s.stop()
	for _, cc := range ccs {
		cc.Close()
	}
	if !eventually(func() bool { return runtime.NumGoroutine() <= goBefore+4 }) {
		t.Errorf("%d goroutines after the run, %d before", runtime.NumGoroutine(), goBefore)
	}
}

// secOpen returns the open round, attempt and phase of srv's secure round
// (the attempt and phase 0 once the run is over).
func secOpen(srv *Server) (round int, attempt uint32, phase int32) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.sec == nil {
		return srv.round, 0, 0
	}
	return srv.round, srv.sec.ctx.Attempt, int32(srv.sec.phase)
}

// The run configuration's strings a hostile server may fill up to the
// message limit (the algorithm, the model's name) are refused with a
// one-line error that names their length, not their bytes, as the
// participation is (TestLearnerBoundsServersParticipation): the learner
// echoed both, so that a Join answer of 512 KiB made an error of 512 KiB
// (twice that for the algorithm, quoted by fedopt.ParseAlgorithm and
// wrapped). Short unknown names are still quoted.
func TestLearnerBoundsServerStrings(t *testing.T) {
	huge := strings.Repeat("x", 512<<10)
	for _, tc := range []struct {
		name string
		edit func(rc *flv1.RunConfig)
		want string
	}{
		{"a huge algorithm", func(rc *flv1.RunConfig) { rc.Algorithm = huge }, fmt.Sprintf("algorithm of %d bytes", len(huge))},
		{"a huge model name", func(rc *flv1.RunConfig) { rc.Model = huge }, fmt.Sprintf("model name of %d bytes", len(huge))},
		{"an unknown algorithm", func(rc *flv1.RunConfig) { rc.Algorithm = "sgd" }, `"sgd"`},
		{"an unknown model", func(rc *flv1.RunConfig) { rc.Model = "mlp" }, `"mlp"`},
	} {
		join := &flv1.JoinResponse{ProtocolVersion: Protocol, Config: fakeRunConfig()}
		tc.edit(join.Config)
		err := runLearnerAgainst(t, &fakeServer{join: join}, 10*time.Second)
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.name)
		case len(err.Error()) > 1<<10:
			t.Errorf("%s: an error of %d bytes, want at most 1 KiB: %.200s...", tc.name, len(err.Error()), err)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		default:
			t.Logf("%s: %v", tc.name, err)
		}
	}
}

// A hostile server's run identity of up to the message limit, where the
// learner expects the 16 bytes of its run, is named by its length in the
// learner's error, not written out: in a model (model.follows) and in a
// secure-aggregation answer. The learner wrote it in hex, an error of
// 2 MiB for a 1 MiB identity.
func TestLearnerBoundsServerRunIdentity(t *testing.T) {
	run := make([]byte, 16)
	run[0] = 1
	huge := bytes.Repeat([]byte{0xcd}, 1<<20)
	check := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: taken", what)
		case len(err.Error()) > 1<<10:
			t.Errorf("%s: an error of %d bytes, want at most 1 KiB: %.200s...", what, len(err.Error()), err)
		case !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", len(huge))):
			t.Errorf("%s: %v, want the identity's length named", what, err)
		default:
			t.Logf("%s: %v", what, err)
		}
	}
	seen := &model{round: 0, run: run, digest: []byte{1}}
	check("a model of another run", (&model{round: 1, run: huge}).follows(seen))

	sl := hostileLearner(t, run)
	h := &hostileSecAgg{run: huge, answer: func(int, *flv1.SecAggRequest) (*flv1.SecAggResponse, error) {
		return &flv1.SecAggResponse{State: flv1.SecAggState_SEC_AGG_STATE_ANSWER}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opt := LearnerOptions{ID: 0, CallTimeout: time.Second, WaitTimeout: time.Second}
	check("a secure answer for another run", sl.run(ctx, h, retrier{giveUp: time.Second, log: discard}, opt, discard, 0, make([]float64, 4), true))
}

// In a run without noise (nonprivate) there is no secret key, so the
// witness key (witnessKey of the zero key) is public and any peer can tag
// a witness. Such a witness of a round the server has not released, or
// of another model of a round it has, proves nothing: it is refused like
// a forged one, and the run goes on to the simulation's models. Before,
// one forged witness (computed here from the public key, as any peer
// can) stopped the server for good ("the state directory was rewound"):
// TestForgedWitnessDoesNotStopServer's promise held only for runs with a
// noise key. A learner still stops itself at a rewound server (its own
// witness, model.follows), and a run with noise keeps the server's check.
func TestNoNoiseWitnessCannotStopServer(t *testing.T) {
	r := newRun(t, 2, 3, 1, 3)
	r.f, r.cfg.Algorithm = nil, fedopt.NonPrivate
	opt := r.options(t.TempDir(), nil)
	s := serve(t, opt, nil)
	cl := rawClient(t, s.addr)
	c := firstChunk(t, cl, 0)
	public := witnessKey([32]byte{})
	forge := func(round int, sum []byte) []byte {
		m := hmac.New(sha256.New, public[:])
		m.Write(c.GetRun())
		m.Write(binary.LittleEndian.AppendUint64(nil, uint64(round)))
		m.Write(sum)
		return append(slices.Clone(sum), m.Sum(nil)...)
	}
	if !bytes.Equal(forge(0, c.GetDigest()[:sha256.Size]), c.GetDigest()) {
		t.Fatal("the forged tag of round 0 is not the server's: the test does not forge as a peer can")
	}
	other := bytes.Repeat([]byte{7}, sha256.Size)
	for _, tc := range []struct {
		name   string
		round  int32
		digest []byte
	}{
		{"a round not released", 2, forge(2, other)},
		{"another model of round 0", 0, forge(0, other)},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		round := tc.round
		st, err := cl.GetModel(ctx, &flv1.GetModelRequest{Learner: 0, SeenRound: &round, SeenRun: c.GetRun(), SeenDigest: tc.digest})
		if err == nil {
			_, err = st.Recv()
		}
		cancel()
		if code := status.Code(err); code != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", tc.name, err)
		} else {
			t.Logf("%s: %v", tc.name, status.Convert(err).Message())
		}
	}
	want := r.simulate(t, nil)
	_, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	requireNoErrors(t, errs)
	if err := <-s.errc; err != nil {
		t.Fatalf("server: %v", err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
}
