//go:build unix

package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// The attacks of this file run "ofl server" as a real process and kill,
// race, copy and restore it and its state directory, while learners of a
// ledger record every model they receive. The promise they attack
// (docs/distributed.md, "Faults"): no round is ever released twice. The
// learners of the ledger submit random updates, so that two releases of a
// round from other updates differ; a deterministic learner would
// recompute the same update and hide a second release.

// ledger records every model the learners received: per run and round,
// the SHA-256 of the model's bits and the release's digest. Two records
// of one round that differ are a round released twice.
type ledger struct {
	mu        sync.Mutex
	seen      map[string]string // run/round -> model hash and digest
	received  int
	conflicts []string
}

func newLedger() *ledger { return &ledger{seen: map[string]string{}} }

func (l *ledger) record(who string, run []byte, r int, digest []byte, x []float64) {
	rec := modelHash(x) + "/" + hex.EncodeToString(digest)
	key := hex.EncodeToString(run) + "/" + strconv.Itoa(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.received++
	if old, ok := l.seen[key]; ok && old != rec {
		l.conflicts = append(l.conflicts, fmt.Sprintf("%s received round %d of run %x as %s, an earlier learner as %s", who, r, run, rec[:16], old[:16]))
		return
	}
	l.seen[key] = rec
}

// check fails t if a round was received with two values, and checks the
// round files in dir, if given, against what the learners received of
// the run dir holds (run.json's identity): a ledger may also hold the
// rounds of earlier runs, in other directories. It returns how many
// rounds it compared with dir's files.
func (l *ledger) check(t *testing.T, dir string) (compared int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conflicts {
		t.Errorf("a round released twice: %s", c)
	}
	if dir == "" {
		return 0
	}
	var held struct {
		Run string `json:"run"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "run.json")); err != nil || json.Unmarshal(b, &held) != nil || held.Run == "" {
		return 0 // as ReadRound below: a directory the attack replaced
	}
	for key, rec := range l.seen {
		run, round, _ := strings.Cut(key, "/")
		if run != held.Run {
			continue // another run's round
		}
		r, _ := strconv.Atoi(round)
		rel, err := fednet.ReadRound(dir, r)
		if err != nil {
			continue // a directory the attack replaced
		}
		compared++
		if got := modelHash(rel.X); !strings.HasPrefix(rec, got) {
			plan, _ := fednet.ReadPlan(dir)
			t.Errorf("round %d of run %s: learners received %s, %s holds %s (plan %s)", r, run, rec[:16], dir, got[:16], plan)
		}
	}
	return compared
}

// modelHash returns the SHA-256 of x's bits, in hex.
func modelHash(x []float64) string {
	h := sha256.New()
	for _, v := range x {
		h.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// seenModel is a learner's witness: the newest model it received.
type seenModel struct {
	round       int
	run, digest []byte
}

// ledgerLearner is learner id of a plain run at addr: it follows the
// protocol as fednet's learner does (Join, GetModel with its witness,
// SubmitUpdate; retrying while the server is away) but submits a random
// update within the norm bound, and records every model in l; with
// submits > 0, after that many updates it only receives. It returns nil
// when it received the final model, or the error that stopped it (a
// refusal of the server, or ctx's).
func ledgerLearner(ctx context.Context, addr string, id int, l *ledger, rng *rand.Rand, submits int) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	retry := func(err error) bool {
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Canceled:
			return ctx.Err() == nil
		}
		return false
	}
	// pause returns err if it is not one to retry; otherwise it waits a
	// moment and returns nil, or ctx's error.
	pause := func(err error) error {
		if err != nil && !retry(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
			return nil
		}
	}
	var join *flv1.JoinResponse
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		join, err = cl.Join(cctx, &flv1.JoinRequest{ProtocolVersion: fednet.Protocol, Learner: int32(id)})
		cancel()
		if err == nil {
			break
		}
		if err := pause(err); err != nil {
			return err
		}
	}
	rc := join.GetConfig()
	dim, bound := int(rc.GetParams()), float64(rc.GetTau())*rc.GetClip()
	if bound == 0 {
		bound = 1
	}
	var seen *seenModel
	u, last, sent := make([]float64, dim), -1, 0
	for {
		req := &flv1.GetModelRequest{Learner: int32(id)}
		if seen != nil {
			r := int32(seen.round)
			req.SeenRound, req.SeenRun, req.SeenDigest = &r, seen.run, seen.digest
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		m, x, err := receiveModel(cctx, cl, req, dim)
		cancel()
		if err != nil {
			if err := pause(err); err != nil {
				return err
			}
			continue
		}
		r := int(m.GetRound())
		if seen != nil && m.GetRound() < int32(seen.round) {
			return fmt.Errorf("learner %d: the server went back from round %d to %d", id, seen.round, r)
		}
		l.record("learner "+strconv.Itoa(id), m.GetRun(), r, m.GetDigest(), x)
		seen = &seenModel{round: r, run: m.GetRun(), digest: m.GetDigest()}
		if m.GetDone() {
			return nil
		}
		if submits > 0 && sent >= submits {
			if err := pause(nil); err != nil {
				return err
			}
			continue
		}
		if r == last {
			if err := pause(nil); err != nil {
				return err
			}
		} else {
			ss := 0.0
			for k := range u {
				u[k] = rng.NormFloat64()
				ss += u[k] * u[k]
			}
			scale := bound * rng.Float64() / math.Sqrt(ss)
			for k := range u {
				u[k] *= scale
			}
			last = r
		}
		cctx, cancel = context.WithTimeout(ctx, 3*time.Second)
		err = submit(cctx, cl, id, r, u)
		cancel()
		switch status.Code(err) {
		case codes.OK:
			sent++
		case codes.AlreadyExists:
		case codes.FailedPrecondition:
			if strings.Contains(status.Convert(err).Message(), "rewound") || strings.Contains(status.Convert(err).Message(), "swapped") {
				return err
			}
		default:
			if !retry(err) {
				return err
			}
		}
	}
}

// receiveModel receives one model.
func receiveModel(ctx context.Context, cl flv1.FederationClient, req *flv1.GetModelRequest, dim int) (*flv1.ModelChunk, []float64, error) {
	st, err := cl.GetModel(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var first *flv1.ModelChunk
	x := make([]float64, 0, dim)
	for {
		c, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if first == nil {
			first = c
		}
		x = append(x, c.GetValues()...)
	}
	if first == nil || len(x) != dim {
		return nil, nil, status.Errorf(codes.Internal, "short model")
	}
	return first, x, nil
}

// submit sends learner id's update u for round r.
func submit(ctx context.Context, cl flv1.FederationClient, id, r int, u []float64) error {
	st, err := cl.SubmitUpdate(ctx)
	if err != nil {
		return err
	}
	for off := 0; off == 0 || off < len(u); off += fednet.ChunkLen {
		end := min(off+fednet.ChunkLen, len(u))
		if err := st.Send(&flv1.UpdateChunk{Learner: int32(id), Round: int32(r), Dim: int32(len(u)), Offset: int32(off), Values: u[off:end]}); err != nil {
			break
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

// crew is a set of ledger learners running in the background.
type crew struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   map[int]error
}

// startCrew starts ledger learners ids at addr.
func startCrew(addr string, ids []int, l *ledger, seed uint64) *crew {
	return startCrewN(addr, ids, l, seed, 0)
}

// startCrewN starts ledger learners ids at addr that submit at most
// submits updates each (0: no limit).
func startCrewN(addr string, ids []int, l *ledger, seed uint64, submits int) *crew {
	ctx, cancel := context.WithCancel(context.Background())
	c := &crew{cancel: cancel, errs: map[int]error{}}
	for _, i := range ids {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			err := ledgerLearner(ctx, addr, i, l, rand.New(rand.NewPCG(seed, uint64(i))), submits)
			c.mu.Lock()
			c.errs[i] = err
			c.mu.Unlock()
		}()
	}
	return c
}

// stop stops the learners and returns the error of each.
func (c *crew) stop() map[int]error {
	c.cancel()
	c.wg.Wait()
	return c.errs
}

// wait waits up to d for the learners to end by themselves.
func (c *crew) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// learnerIDs are the learners of faultRun.
var learnerIDs = []int{0, 1, 2}

// faultRun is the run of the attacks: 3 learners, small model, noise.
func faultRun(rounds int) []string {
	return []string{"-learners", "3", "-tau", "2", "-rounds", strconv.Itoa(rounds), "-dim", "4", "-eps", "2"}
}

// serverArgs are ofl server's arguments on state at listen.
func serverArgs(state, listen string, run []string, extra ...string) []string {
	return append(append([]string{"server", "-insecure", "-state", state, "-listen", listen, "-linger", "1s", "-round-timeout", "20s"}, extra...), run...)
}

// fixture is what an attack is set up with: the ofl binary (built once
// per test binary), the number of trials, the attack's random source, the
// run's flags, and a tally of the outcomes it saw.
type fixture struct {
	t        *testing.T
	bin      string
	n        int
	rng      *rand.Rand
	args     []string
	outcomes map[string]int
}

// newFixture skips t under -short; otherwise it builds ofl and returns the
// fixture of an attack of trials(def) trials, with random source
// PCG(seed1, seed2), on the run of flags args.
func newFixture(t *testing.T, def int, seed1, seed2 uint64, args []string) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("stress test")
	}
	return &fixture{t: t, bin: buildOfl(t), n: trials(def), rng: rand.New(rand.NewPCG(seed1, seed2)), args: args, outcomes: map[string]int{}}
}

// stateDir returns a new state directory's path (not yet made).
func (f *fixture) stateDir() string { return filepath.Join(f.t.TempDir(), "state") }

// server starts ofl server on state at listen, with extra flags, and
// returns it with the address it serves at.
func (f *fixture) server(state, listen string, extra ...string) (*proc, string) {
	f.t.Helper()
	return startServerArgs(f.t, f.bin, serverArgs(state, listen, f.args, extra...))
}

// launch starts ofl server on state at listen without waiting for it;
// addr, if not nil, receives the address it serves at.
func (f *fixture) launch(state, listen string, addr chan<- string) *proc {
	f.t.Helper()
	return start(f.t, f.bin, serverArgs(state, listen, f.args), addr)
}

// start starts a server on state at a free port, with extra flags, and
// ledger learners 0, 1, 2 that record in l (random updates from seed).
func (f *fixture) start(state string, l *ledger, seed uint64, extra ...string) (*proc, string, *crew) {
	f.t.Helper()
	srv, addr := f.server(state, "127.0.0.1:0", extra...)
	return srv, addr, startCrew(addr, learnerIDs, l, seed)
}

// resume restarts the server on state at addr, with extra flags, and fails
// the attack if it does not log that it resumed; what names it.
func (f *fixture) resume(what, state, addr string, extra ...string) *proc {
	f.t.Helper()
	srv, _ := f.server(state, addr, extra...)
	if !waitLog(srv, "msg=resumed", 5*time.Second) {
		f.t.Fatalf("%s did not resume: %s", what, logOf(srv))
	}
	return srv
}

// learners starts ofl learner processes 0, 1, 2 at addr, learner i with
// the flags flags(i), and returns them with a function that SIGKILLs
// learner i and starts it again in its place.
func (f *fixture) learners(addr string, flags func(i int) []string) ([]*proc, func(i int)) {
	learner := func(i int) *proc {
		return start(f.t, f.bin, append([]string{"learner", "-insecure", "-server", addr, "-id", strconv.Itoa(i)}, flags(i)...), nil)
	}
	ls := []*proc{learner(0), learner(1), learner(2)}
	return ls, func(i int) {
		kill(f.t, ls[i])
		ls[i] = learner(i)
	}
}

// logOutcomes logs the tally of outcomes.
func (f *fixture) logOutcomes() {
	f.t.Helper()
	for k, v := range f.outcomes {
		f.t.Logf("%3d  %s", v, k)
	}
}

// kill SIGKILLs p and waits for it.
func kill(t *testing.T, p *proc) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		t.Fatalf("a SIGKILLed ofl %s did not exit", p.cmd.Args[1])
	}
}

// ended reports whether p has exited, leaving its exit status for exited.
func ended(p *proc) bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// exited waits up to d for p to exit and returns its log, or fails t.
func exited(t *testing.T, p *proc, d time.Duration) (error, string) {
	t.Helper()
	select {
	case err := <-p.done:
		return err, logOf(p)
	case <-time.After(d):
		p.cmd.Process.Kill()
		t.Fatalf("ofl did not exit within %v: %s", d, logOf(p))
		return nil, ""
	}
}

// requireStop waits up to d for p to exit with an error whose log holds
// one of phrases (any error where none is given), fails t otherwise, and
// returns the log; what names p.
func requireStop(t *testing.T, p *proc, d time.Duration, what string, phrases ...string) string {
	t.Helper()
	err, log := exited(t, p, d)
	ok := err != nil && len(phrases) == 0
	for _, s := range phrases {
		ok = ok || err != nil && strings.Contains(log, s)
	}
	if !ok {
		t.Fatalf("%s exited with %v, want an error naming one of %q: %s", what, err, phrases, log)
	}
	return log
}

// finishRun waits for a server and its learners to finish the run.
func finishRun(t *testing.T, what string, srv *proc, c *crew) {
	t.Helper()
	if err, log := exited(t, srv, 120*time.Second); err != nil {
		t.Fatalf("%s: the server: %v\n%s", what, err, log)
	}
	if !c.wait(30 * time.Second) {
		t.Fatalf("%s: the learners did not finish", what)
	}
	for i, err := range c.stop() {
		if err != nil {
			t.Errorf("%s: learner %d: %v", what, i, err)
		}
	}
}

// learnersEnded returns how many of the learners exited since the last call (each
// exit is received once), failing the test with the learner's log if one
// exited with an error.
func learnersEnded(t *testing.T, what string, learners []*proc) int {
	t.Helper()
	n := 0
	for i, l := range learners {
		select {
		case err := <-l.done:
			if err != nil {
				t.Fatalf("%s: learner %d: %v\n%s", what, i, err, logOf(l))
			}
			n++
		default:
		}
	}
	return n
}

// waitLog waits up to d for p's log to contain s.
func waitLog(p *proc, s string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(logOf(p), s) {
			return true
		}
	}
	return false
}

// waitFor returns a channel closed once p's log contains s.
func waitFor(p *proc, s string) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		if waitLog(p, s, 10*time.Second) {
			close(c)
		}
	}()
	return c
}

// trials returns how many trials a stress test runs: DPMF_FAULT_TRIALS,
// or def, a few, so that the whole suite (without -short) stays within
// minutes. The report of these attacks ran them with
// DPMF_FAULT_TRIALS=30 (20 for the slower ones):
//
//	DPMF_FAULT_TRIALS=30 go test -run TestStressServerSIGKILL -v ./cmd/ofl/
func trials(def int) int {
	if n, err := strconv.Atoi(os.Getenv("DPMF_FAULT_TRIALS")); err == nil && n > 0 {
		return n
	}
	return def
}

// stateOf returns the number of round files in dir and of temporary
// files: where in a release a kill left it.
func stateOf(dir string) (files int, temps int) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		switch {
		case strings.HasPrefix(e.Name(), "round-"):
			files++
		case strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-"):
			temps++
		}
	}
	return files, temps
}

// Attack 1: the server is SIGKILLed at random moments (0-2 s apart, so
// also while it writes a round file or its mark) and restarted on the
// same state directory and port, trials times, while three ledger
// learners with random updates ride through. No round is ever received
// with two values, and the files on disk are what the learners received.
func TestStressServerSIGKILL(t *testing.T) {
	f := newFixture(t, 3, 1, 2, faultRun(1000))
	l := newLedger()
	kills, temps, unmarked := 0, 0, 0
	for run := 0; kills < f.n; run++ {
		state := f.stateDir()
		var extra []string
		if run%2 == 1 { // rounds that close without a learner, too
			extra = []string{"-min-learners", "2", "-quorum-grace", "5ms"}
		}
		srv, addr, c := f.start(state, l, uint64(run), extra...)
		for kills < f.n {
			time.Sleep(time.Duration(f.rng.Float64() * float64(2*time.Second)))
			if ended(srv) {
				break
			}
			kill(t, srv)
			kills++
			files, tmp := stateOf(state)
			temps += tmp
			if m, err := os.ReadFile(filepath.Join(state, "released")); err == nil && len(m) >= 32 {
				if r := int(binary.LittleEndian.Uint64(m[24:])); files-1 > r {
					unmarked++
				}
			}
			srv = f.resume("the restarted server", state, addr, extra...)
		}
		finishRun(t, fmt.Sprintf("run %d", run), srv, c)
		l.check(t, state)
	}
	t.Logf("%d kills: %d left temporary files, %d a round file written but not marked; %d models received", kills, temps, unmarked, l.received)
	l.check(t, "")
}

// One ledger over two runs in two state directories, as
// TestStressServerSIGKILL keeps when a run ends before its kills are
// done (it did so on a loaded machine): each directory's round files are
// what the learners received of its own run, and the check compares
// every round of the run the directory holds, none of the other's.
func TestLedgerCheckTwoRuns(t *testing.T) {
	const rounds = 5
	f := newFixture(t, 1, 1, 2, faultRun(rounds))
	l := newLedger()
	for run := range 2 {
		state := f.stateDir()
		srv, _, c := f.start(state, l, uint64(run))
		finishRun(t, fmt.Sprintf("run %d", run), srv, c)
		if n := l.check(t, state); n != rounds+1 {
			t.Errorf("run %d: the check compared %d rounds with the files, want %d (x^0 to x^%d)", run, n, rounds+1, rounds)
		}
	}
}

// inUse is the refusal of a second server on a state directory.
const inUse = "is in use by another server ("

// Attack 2a: two servers started on one state directory at the same
// instant, on a fresh directory and on one that holds a run: exactly one
// serves, the other exits 1 naming the holder.
func TestStressTwoServersAtOnce(t *testing.T) {
	f := newFixture(t, 10, 3, 4, faultRun(50))
	holders := map[string]int{}
	for trial := range f.n {
		state := f.stateDir()
		if trial%2 == 1 { // a directory that holds a run
			srv, _ := f.server(state, "127.0.0.1:0")
			kill(t, srv)
		}
		addrs := make(chan string, 2)
		a := f.launch(state, "127.0.0.1:0", addrs)
		time.Sleep(time.Duration(f.rng.IntN(3000)) * time.Microsecond)
		b := f.launch(state, "127.0.0.1:0", addrs)
		var refused []string
		serving := 0
		for _, p := range []*proc{a, b} {
			select {
			case err := <-p.done:
				log := logOf(p)
				if err == nil || !strings.Contains(log, inUse) {
					t.Fatalf("trial %d: a server exited with %v, not the in-use refusal: %s", trial, err, log)
				}
				refused = append(refused, log)
			case <-time.After(10 * time.Second):
				t.Fatalf("trial %d: a server neither served nor was refused: %s", trial, logOf(p))
			case <-waitFor(p, "msg=serving"):
				serving++
			}
		}
		if serving != 1 || len(refused) != 1 {
			t.Fatalf("trial %d: %d servers serve, %d refused, want one each", trial, serving, len(refused))
		}
		holder := "a server that is starting"
		if strings.Contains(refused[0], inUse+"pid ") {
			holder = "pid"
		}
		holders[holder]++
		for _, p := range []*proc{a, b} {
			p.cmd.Process.Kill()
		}
	}
	t.Logf("%d trials; the refusal named the holder as: %v", f.n, holders)
}

// Attack 2b and 2c: a server whose lock file is removed while it runs, or
// which is stopping (SIGTERM), and a second server started on the same
// state directory at another port, each with its own learners. The first
// stops without releasing a round the second releases; no round is
// received with two values.
func TestStressSecondServerTakesOver(t *testing.T) {
	f := newFixture(t, 2, 5, 6, faultRun(400))
	for trial := range f.n {
		l := newLedger()
		state := f.stateDir()
		a, _, ca := f.start(state, l, uint64(trial))
		time.Sleep(time.Duration(200+f.rng.IntN(800)) * time.Millisecond)
		stopping := trial%2 == 1
		if stopping {
			a.cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(time.Duration(f.rng.IntN(20)) * time.Millisecond)
		} else if err := os.Remove(filepath.Join(state, "lock")); err != nil {
			t.Fatal(err)
		}
		var b *proc
		var addrB string
		for try := 0; ; try++ {
			addrs := make(chan string, 1)
			b = f.launch(state, "127.0.0.1:0", addrs)
			select {
			case addrB = <-addrs:
			case err := <-b.done:
				if log := logOf(b); !strings.Contains(log, inUse) || try > 200 {
					t.Fatalf("trial %d: the second server: %v %s", trial, err, log)
				}
				f.outcomes["second refused while the first stopped"]++
				time.Sleep(10 * time.Millisecond)
				continue
			}
			break
		}
		cb := startCrew(addrB, learnerIDs, l, uint64(1000+trial))
		errA, logA := exited(t, a, 30*time.Second)
		switch {
		case stopping && strings.Contains(logA, "interrupted at round"):
			f.outcomes["first interrupted by SIGTERM"]++
		case !stopping && errA != nil && strings.Contains(logA, "removed or replaced"):
			f.outcomes["first stopped: lock removed"]++
		case !stopping && errA != nil && strings.Contains(logA, "already exists"):
			f.outcomes["first stopped: round file exists"]++
		case !stopping && errA != nil && (strings.Contains(logA, "temporary file is gone") || strings.Contains(logA, "no such file or directory")):
			// The second server's start removed the first one's
			// temporary file, under the first one's feet.
			f.outcomes["first stopped: its temporary file removed"]++
		default:
			t.Fatalf("trial %d: the first server exited with %v: %s", trial, errA, logA)
		}
		ca.stop()
		finishRun(t, fmt.Sprintf("trial %d: the second server", trial), b, cb)
		l.check(t, state)
	}
	t.Logf("%d trials: %v", f.n, f.outcomes)
}

// copyTree copies the regular files of dir from to a new directory to
// (a new inode, as cp -a, tar and rsync make), keeping modes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			continue // removed meanwhile (a temporary file)
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// copyFile puts file from in place of file to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// restoreInPlace empties dir, keeping the directory itself (its inode),
// and copies the files of from into it.
func restoreInPlace(t *testing.T, from, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, from, dir)
}

// Attack 3: restores. A copy of the state directory taken while the server
// runs (cp -a, or a tar round trip: a new inode) is refused wherever it is
// started; the copy put back in place (the directory's inode kept) after
// the server was killed is refused or, consistent, stopped by the
// learners before it releases anything; single files put back (an older
// released, the newest round file lost, another run's run.json) are
// refused or resume without a second release. No learner ever receives a
// round with two values.
func TestStressRestores(t *testing.T) {
	f := newFixture(t, 1, 7, 8, faultRun(3000))
	// Another run of the same flags, for its run.json.
	other := filepath.Join(t.TempDir(), "other")
	o, _ := f.server(other, "127.0.0.1:0")
	kill(t, o)
	for trial := range f.n {
		for _, fault := range []string{"copy", "tar", "in place", "released", "newest round", "run.json"} {
			l := newLedger()
			base := t.TempDir()
			state := filepath.Join(base, "state")
			srv, addr, c := f.start(state, l, uint64(trial))
			time.Sleep(time.Duration(100+f.rng.IntN(700)) * time.Millisecond)
			old := filepath.Join(base, "old")
			switch fault {
			case "tar":
				// tar and cp complain of temporary files that vanish
				// under them, as they would on a live directory.
				execCmd("sh", "-c", "mkdir -p "+old+" && tar -C "+state+" -cf - . | tar -C "+old+" -xpf -")
			case "copy":
				execCmd("cp", "-a", state, old)
			default:
				copyTree(t, state, old)
			}
			time.Sleep(time.Duration(100+f.rng.IntN(700)) * time.Millisecond)
			kill(t, srv)
			target := state
			switch fault {
			case "copy", "tar":
				target = old
			case "in place":
				restoreInPlace(t, old, state)
			case "released":
				copyFile(t, filepath.Join(old, "released"), filepath.Join(state, "released"))
			case "newest round":
				files, _ := stateOf(state)
				os.Remove(filepath.Join(state, fmt.Sprintf("round-%08d.x", files-1)))
			case "run.json":
				copyFile(t, filepath.Join(other, "run.json"), filepath.Join(state, "run.json"))
			}
			addrs := make(chan string, 1)
			s2 := f.launch(target, addr, addrs)
			var outcome string
			select {
			case err := <-s2.done:
				log := logOf(s2)
				if err == nil {
					t.Fatalf("%s: the server on the restored directory exited 0: %s", fault, log)
				}
				outcome = "refused: " + refusalKind(log)
			case <-addrs:
				// It serves: the learners ride on. Either they stop it
				// (a rewound directory) or the run finishes.
				err, log := exited(t, s2, 120*time.Second)
				switch {
				case err == nil:
					outcome = "resumed and finished"
				case strings.Contains(log, "state rewound"):
					outcome = "stopped by a learner's witness"
				default:
					t.Fatalf("%s: the restored server: %v\n%s", fault, err, log)
				}
			}
			c.stop()
			l.check(t, "")
			f.outcomes[fault+": "+outcome]++
		}
	}
	f.logOutcomes()
}

// refusalKind names a refusal by the phrase of the docs' table.
func refusalKind(log string) string {
	for _, k := range []string{"is a copy or a restore", "holds rounds up to", "belongs to run", "broken hash chain", "describes another run", "is not run", "is missing", "state rewound", "records another hash"} {
		if strings.Contains(log, k) {
			return k
		}
	}
	return "other: " + log
}

// refusalOf returns the reason of a server's final error line.
func refusalOf(log string) string {
	for _, k := range []string{"removed or replaced", "already exists", "temporary file is gone", "no such file"} {
		if strings.Contains(log, k) {
			return k
		}
	}
	return lastLine(log)
}

// execCmd runs a command and returns its combined output.
func execCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// openBase returns a new directory that any user may traverse (t.TempDir's
// parent is private), removed at the end of the test.
func openBase(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "ofl-faults-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// nobody is the user a root test runs the server as, so that a directory
// without write permission stops it.
const nobody = 65534

// asNobody makes cmd, an ofl command, run as nobody, and ofl's directory
// one that nobody may enter.
func asNobody(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(cmd.Path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
}

// serverAs starts ofl server with args, as nobody when the test runs as
// root, and returns it with its address.
func serverAs(t *testing.T, bin string, args []string) (*proc, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if os.Geteuid() == 0 {
		asNobody(t, cmd)
	}
	return startServerCmd(t, cmd)
}

// Attack 4: disk trouble. The state directory becomes read-only mid-run,
// the disk fills up (a small tmpfs, when the test may mount one), a state
// file is replaced by a directory, and the state directory is a symbolic
// link that is later pointed at a copy. The server stops with the write's
// error, without serving the round it could not write, and resumes once
// the trouble is gone; a replaced file is refused; no round is received
// with two values.
func TestStressDiskTrouble(t *testing.T) {
	f := newFixture(t, 1, 9, 10, faultRun(800))
	// As root the read-only attack runs the server as nobody; where that
	// is not allowed (a container that maps no other user, a TMPDIR that
	// nobody cannot enter) it is not tried.
	readOnly := true
	if os.Geteuid() == 0 {
		probe := exec.Command(f.bin, "-h")
		asNobody(t, probe)
		if out, err := probe.CombinedOutput(); err != nil {
			t.Logf("cannot run ofl as uid %d (%v %.200s): the read-only directory is not tried", nobody, err, out)
			readOnly = false
		}
	}
	for trial := range f.n {
		pause := func() { time.Sleep(time.Duration(200+f.rng.IntN(600)) * time.Millisecond) }

		// Read-only mid-run.
		if readOnly {
			l := newLedger()
			state := filepath.Join(openBase(t), "state")
			if err := os.Mkdir(state, 0o755); err != nil {
				t.Fatal(err)
			}
			if os.Geteuid() == 0 {
				os.Chown(state, nobody, nobody)
			}
			srv, addr := serverAs(t, f.bin, serverArgs(state, "127.0.0.1:0", f.args))
			c := startCrew(addr, learnerIDs, l, uint64(trial))
			pause()
			os.Chmod(state, 0o555)
			requireStop(t, srv, 30*time.Second, "read-only: the server", "permission denied")
			f.outcomes["read-only: stopped, permission denied"]++
			os.Chmod(state, 0o755)
			srv, _ = serverAs(t, f.bin, serverArgs(state, addr, f.args))
			finishRun(t, "read-only", srv, c)
			l.check(t, state)
			f.outcomes["read-only: resumed and finished"]++
		}

		// A full disk.
		if os.Geteuid() == 0 {
			l := newLedger()
			mnt := filepath.Join(openBase(t), "fs")
			os.Mkdir(mnt, 0o755)
			if out, err := execCmd("mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", mnt); err == nil {
				t.Cleanup(func() { execCmd("umount", mnt) })
				state := filepath.Join(mnt, "state")
				srv, addr, c := f.start(state, l, uint64(100+trial))
				requireStop(t, srv, 60*time.Second, "full disk: the server", "no space left on device")
				f.outcomes["full disk: stopped, no space left"]++
				if out, err := execCmd("mount", "-o", "remount,size=64m", mnt); err != nil {
					t.Fatalf("remount: %v %s", err, out)
				}
				srv, _ = f.server(state, addr)
				finishRun(t, "full disk", srv, c)
				l.check(t, state)
				f.outcomes["full disk: resumed and finished"]++
			} else {
				t.Logf("no tmpfs (%v %s): the full disk is not tried", err, out)
			}
		}

		// A state file replaced by a directory: the mark, or a round
		// file not yet written.
		for _, name := range []string{"released", "next round"} {
			l := newLedger()
			state := f.stateDir()
			srv, addr, c := f.start(state, l, uint64(200+trial))
			pause()
			if name == "released" {
				for os.Remove(filepath.Join(state, name)) != nil || os.Mkdir(filepath.Join(state, name), 0o755) != nil {
				}
			} else {
				files, _ := stateOf(state)
				os.Mkdir(filepath.Join(state, fmt.Sprintf("round-%08d.x", files+2)), 0o755)
			}
			log := requireStop(t, srv, 30*time.Second, name+" replaced by a directory: the server")
			f.outcomes[name+" a directory: stopped: "+lastLine(log)]++
			log = requireStop(t, f.launch(state, addr, nil), 30*time.Second, name+" replaced by a directory: the restarted server")
			f.outcomes[name+" a directory: restart refused: "+lastLine(log)]++
			c.stop()
			l.check(t, "")
		}

		// A symbolic link to the state directory: the server resumes
		// through the link or the directory's own path, a second server
		// through the other name is refused, and pointing the link at a
		// copy stops the server before it writes.
		{
			l := newLedger()
			base := t.TempDir()
			real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
			os.Mkdir(real, 0o755)
			os.Symlink(real, link)
			srv, addr, c := f.start(link, l, uint64(300+trial))
			pause()
			second := runOfl(t, serverArgs(real, "127.0.0.1:0", f.args)...)
			if !strings.Contains(second.stderr, inUse) {
				t.Fatalf("a second server through the directory's own path: %s", second.stderr)
			}
			kill(t, srv)
			srv = f.resume("the server through the directory's own path", real, addr)
			kill(t, srv)
			srv, _ = f.server(link, addr)
			pause()
			copyTree(t, real, filepath.Join(base, "copy"))
			os.Remove(link)
			os.Symlink(filepath.Join(base, "copy"), link)
			// The server stops at its check of the lock, or, repointed
			// inside a write, when its temporary file is not where the
			// link now leads.
			requireStop(t, srv, 30*time.Second, "the link pointed at a copy: the server", "removed or replaced", "temporary file is gone", "no such file or directory")
			f.outcomes["symlink: resumed through both names; repointed at a copy: stopped"]++
			requireStop(t, f.launch(link, addr, nil), 30*time.Second, "a server on the copy", "is a copy or a restore")
			c.stop()
			l.check(t, real)
		}
	}
	f.logOutcomes()
}

// Attack 1b: learner processes (ofl learner) are SIGKILLed at random
// moments and restarted, trials times; the server waits for them (every
// round needs all three) and releases exactly the models of the
// uninterrupted simulation: a restarted learner recomputes its update and
// a second submission of a round is refused, never counted twice.
func TestStressLearnerSIGKILL(t *testing.T) {
	f := newFixture(t, 5, 11, 12, nil)
	R := 400 + 300*f.n // a round takes 2 to 5 ms, a kill comes every 0.5 s
	run := []string{"-learners", "3", "-tau", "2", "-rounds", strconv.Itoa(R), "-dim", "4", "-seed", "5"}
	want, _ := simulated(t, run)
	state := t.TempDir()
	srv, addr := startServer(t, f.bin, state, run)
	learners, killLearner := f.learners(addr, func(int) []string {
		return []string{"-seed", "5", "-give-up", "30s", "-call-timeout", "5s", "-wait-timeout", "5s"}
	})
	kills := 0
	for ; kills < f.n; kills++ {
		time.Sleep(time.Duration(f.rng.Float64() * float64(time.Second)))
		i := f.rng.IntN(3)
		if ended(srv) {
			t.Fatalf("the run ended after %d of %d kills: make it longer", kills, f.n)
		}
		killLearner(i)
	}
	for i, l := range learners {
		l.wait(t, "learner "+strconv.Itoa(i), 120*time.Second)
	}
	srv.wait(t, "server", 30*time.Second)
	got := readModels(t, state, R)
	for r := range want {
		requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
	}
	t.Logf("%d learner kills; all %d models equal the simulation's", kills, R+1)
}

// Attack 5: the learners of one run pointed at the server of another (a
// fresh state directory under the same flags and address): each is told
// it followed another run and stops, and the new run goes on with its own
// learners.
func TestStressLearnersOfAnotherRun(t *testing.T) {
	f := newFixture(t, 1, 0, 0, faultRun(300))
	for trial := range f.n {
		l := newLedger()
		srv, addr, cx := f.start(filepath.Join(t.TempDir(), "x"), l, uint64(trial))
		time.Sleep(300 * time.Millisecond)
		kill(t, srv)
		srv, _ = f.server(filepath.Join(t.TempDir(), "y"), addr)
		if !cx.wait(30 * time.Second) {
			t.Fatal("the old run's learners did not stop")
		}
		for i, err := range cx.stop() {
			if err == nil || !strings.Contains(err.Error(), "the learner followed run") {
				t.Errorf("learner %d of the old run: %v, want the other-run refusal", i, err)
			}
		}
		cy := startCrew(addr, learnerIDs, l, uint64(100+trial))
		finishRun(t, "the new run", srv, cy)
		l.check(t, "")
	}
}

// Attack 2d: the operator's "stale lock". The server is frozen (SIGSTOP)
// at a random moment, perhaps inside a release; its lock file is removed
// and a second server takes the directory over at another port with its
// own learners; the first is thawed (SIGCONT) a moment later and must stop
// without serving or replacing anything the second released. The second
// is then SIGKILLed and restarted, and fresh learners (no witness) join
// it: whatever the first wrote, they receive the models the second
// released. (Before round files were linked into place, the thawed server
// renamed its model of the round over the second one's, and the fresh
// learners received that round a second time, with other updates.)
func TestStressFrozenServerOvertaken(t *testing.T) {
	f := newFixture(t, 1, 13, 14, faultRun(800))
	for trial := range f.n {
		l := newLedger()
		state := f.stateDir()
		a, _, ca := f.start(state, l, uint64(trial))
		time.Sleep(time.Duration(200+f.rng.IntN(800)) * time.Millisecond)
		a.cmd.Process.Signal(syscall.SIGSTOP)
		if err := os.Remove(filepath.Join(state, "lock")); err != nil {
			t.Fatal(err)
		}
		b, addrB := f.server(state, "127.0.0.1:0")
		// The second server's learners submit once: it releases one
		// round, the one the first was closing, and waits.
		cb := startCrewN(addrB, learnerIDs, l, uint64(1000+trial), 1)
		if !waitLog(b, "msg=released", 10*time.Second) {
			t.Fatalf("trial %d: the second server released nothing: %s", trial, logOf(b))
		}
		time.Sleep(time.Duration(f.rng.IntN(100)) * time.Millisecond)
		a.cmd.Process.Signal(syscall.SIGCONT)
		logA := requireStop(t, a, 30*time.Second, fmt.Sprintf("trial %d: the thawed server", trial))
		f.outcomes["the thawed server stopped: "+refusalOf(logA)]++
		ca.stop()
		time.Sleep(time.Duration(f.rng.IntN(50)) * time.Millisecond)
		kill(t, b)
		cb.stop()
		b2 := f.launch(state, addrB, nil)
		fresh := startCrew(addrB, learnerIDs, l, uint64(2000+trial))
		errB, logB := exited(t, b2, 120*time.Second)
		switch {
		case errB == nil:
			f.outcomes["the second server, restarted: finished"]++
		case strings.Contains(logB, "ofl server: "):
			f.outcomes["the second server, restarted: refused: "+refusalKind(logB)]++
		default:
			t.Fatalf("trial %d: the restarted second server: %v %s", trial, errB, logB)
		}
		fresh.stop()
		l.check(t, "")
	}
	f.logOutcomes()
}

// Attack 1c: a secure run (-secure-aggregation, learner processes with
// their own state directories) whose server is SIGKILLed at random
// moments, inside any phase, and restarted, trials times; then its
// learners are SIGKILLed and restarted on their state directories. Every
// model of the run with server kills equals the simulation's, bit for bit.
// With learner kills, a learner restarted inside an attempt cannot join it,
// and an attempt that loses too many stops the server ("too few learners
// ... restart the server to start attempt 1", as documented): the test
// restarts it, as an operator would, and the learners, which stop at a
// second model of a round, finish.
func TestStressSecureSIGKILL(t *testing.T) {
	f := newFixture(t, 1, 15, 16, nil)
	n := f.n
	R := 200 + 65*n // a secure round takes about 25 ms, a kill comes every 0.5 s
	run := append(faultRun(R), "-seed", "7", "-secure-aggregation", "-threshold", "2")
	want, _ := simulated(t, run)
	for _, victim := range []string{"server", "learners"} {
		state := t.TempDir()
		srv, addr := startServer(t, f.bin, state, run)
		restart := func() *proc {
			return start(t, f.bin, append([]string{"server", "-insecure", "-state", state, "-listen", addr, "-linger", "3s", "-round-timeout", "5s"}, run...), nil)
		}
		// alive restarts a server that stopped for too few learners and
		// reports whether the run is still on.
		stopped, over := 0, false
		alive := func() bool {
			if over {
				return false
			}
			select {
			case err := <-srv.done:
				if err == nil {
					over = true
					return false
				}
				if !strings.Contains(logOf(srv), "too few learners") {
					t.Fatalf("%s: the server: %v\n%s", victim, err, logOf(srv))
				}
				stopped++
				srv = restart()
			default:
			}
			return true
		}
		lstate := []string{t.TempDir(), t.TempDir(), t.TempDir()}
		learners, killLearner := f.learners(addr, func(i int) []string {
			return []string{"-seed", "7", "-state", lstate[i], "-give-up", "60s", "-call-timeout", "5s", "-wait-timeout", "5s"}
		})
		for k := 0; k < n; k++ {
			time.Sleep(time.Duration(f.rng.Float64() * float64(time.Second)))
			if !alive() {
				t.Fatalf("%s: the run ended after %d of %d kills: make it longer", victim, k, n)
			}
			if victim == "server" {
				kill(t, srv)
				srv = restart()
				continue
			}
			killLearner(f.rng.IntN(3))
		}
		finished := 0
		for end := time.Now().Add(300 * time.Second); finished < len(learners); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: the learners did not finish", victim)
			}
			finished += learnersEnded(t, victim, learners)
			alive()
		}
		if alive() {
			srv.wait(t, victim+": server", 30*time.Second)
		}
		got := readModels(t, state, R)
		differ := 0
		for r := range want {
			if victim == "server" {
				requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
			} else if !testutil.SameBits(got[r], want[r]) {
				differ++
			}
		}
		t.Logf("%s: %d kills; the server stopped for too few learners %d times; %d of %d models differ from the simulation's", victim, n, stopped, differ, R+1)
	}
}
