package fednet

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
	dpmodel "github.com/dpmf/dpmf/model"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// runLearners runs learners ids against addr in goroutines and returns
// their final models.
func runLearners(t *testing.T, r *run, addr string, ids []int, creds func(i int) credentials.TransportCredentials) ([][]float64, []error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	finals := make([][]float64, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for k, i := range ids {
		wg.Go(func() {
			c := insecure.NewCredentials()
			if creds != nil {
				c = creds(i)
			}
			finals[k], errs[k] = RunLearner(ctx, LearnerOptions{
				Addr: addr, ID: i, Creds: c,
				Data:        func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, i) },
				CallTimeout: 5 * time.Second, WaitTimeout: 5 * time.Second, GiveUp: 5 * time.Second,
			})
		})
	}
	wg.Wait()
	return finals, errs
}

// requireMatchesSimulation runs learners ids against s (with creds, if
// any) and checks the run against the simulation want: no learner fails,
// every learner ends with x^R bit for bit, the server's Run returns nil,
// and the round files in dir are want's.
func requireMatchesSimulation(t *testing.T, r *run, s *served, dir string, ids []int, creds func(i int) credentials.TransportCredentials, want [][]float64) {
	t.Helper()
	finals, errs := runLearners(t, r, s.addr, ids, creds)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("learner %d: %v", ids[i], err)
		}
		if !testutil.SameBits(finals[i], want[r.R]) {
			t.Fatalf("learner %d: final model differs from the simulation's x^R", ids[i])
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
}

// Twenty learners over gRPC on loopback release the same models as the
// simulation, bit for bit, and every learner ends with x^R.
func TestTwentyLearnersMatchSimulation(t *testing.T) {
	r := newRun(t, 20, 6, 2, 5)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	s := serve(t, r.options(dir, nil), nil)
	ids := make([]int, r.n)
	for i := range ids {
		ids[i] = i
	}
	requireMatchesSimulation(t, r, s, dir, ids, nil, want)
}

// A model of dimension 10^6 (8 MB, twice gRPC's default message limit)
// goes through in chunks, and the result matches the simulation.
func TestMillionDimensions(t *testing.T) {
	if testing.Short() {
		t.Skip("8 MB models: skipped with -short")
	}
	const d = 1_000_000
	r := &run{n: 2, R: 2, tau: 1, d: d, std: 0.1, seed: 9,
		cfg: fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}}
	ds, err := dataset.NewDataset("dense", r.n, r.R, r.tau, d)
	if err != nil {
		t.Fatal(err)
	}
	for j := range ds.Features {
		ds.Features[j] = float64(j%7) - 3
	}
	for j := range ds.Labels {
		ds.Labels[j] = float64(2*(j%2) - 1)
	}
	r.data = ds
	want := r.simulate(t, nil)
	opt := r.options(t.TempDir(), nil)
	opt.Noise = nil
	s := serve(t, opt, nil)
	requireMatchesSimulation(t, r, s, opt.Dir, []int{0, 1}, nil, want)
}

// sendUpdate streams an update made of the given chunks and returns the
// server's status.
func sendUpdate(cl flv1.FederationClient, chunks ...*flv1.UpdateChunk) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cl.SubmitUpdate(ctx)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if err := st.Send(c); err != nil {
			break
		}
	}
	_, err = st.CloseAndRecv()
	return err
}

// logEventually reports whether log contains s within ten seconds: the
// client may see a call's status before the server's handler has written
// its log line, and TestModelSendDeadline's line comes only after the
// server's CallTimeout. It returns as soon as the line is there; the
// deadline (two seconds until now; logWithin's is ten) only bounds how
// long a loaded machine may take to run the handler.
func logEventually(log *testutil.SyncBuffer, s string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(log.String(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Malformed, oversized, non-finite, wrong-dimension, wrong-round,
// duplicate and too-large updates are rejected with a logged reason, and
// the released model is the one of the valid updates only.
func TestRejectedUpdates(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 2, 1, 2, 3)
	r.cfg.Clip = 0.5 // tau B_g = 1
	absent := func(i, k int) bool { return false }
	want := r.simulate(t, absent)
	var log testutil.SyncBuffer
	dir := t.TempDir()
	opt := r.options(dir, &log)
	opt.Linger = 100 * time.Millisecond // learner 1 never fetches x^R
	// Long enough for a 1 MiB upload on a loaded machine, short enough
	// for the stalled upload below.
	opt.CallTimeout = time.Second
	s := serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)

	// Learner 1's honest update for round 0.
	l1, err := fedopt.NewLearner(dpmodel.Logistic{}, r.data.Stream(1), r.cfg, r.tau, r.d)
	if err != nil {
		t.Fatal(err)
	}
	good := make([]float64, r.d)
	if err := l1.Update(good, 0, make([]float64, r.d)); err != nil {
		t.Fatal(err)
	}
	chunk := func(learner, round, dim, off int, v ...float64) *flv1.UpdateChunk {
		return &flv1.UpdateChunk{Learner: int32(learner), Round: int32(round), Dim: int32(dim), Offset: int32(off), Values: v}
	}
	nan, inf := math.NaN(), math.Inf(1)
	bad := []struct {
		name   string
		chunks []*flv1.UpdateChunk
		code   codes.Code
		reason string
	}{
		{"NaN", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 0.1, nan, 0)}, codes.InvalidArgument, "entry 1 is NaN"},
		{"Inf", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, inf, 0, 0)}, codes.InvalidArgument, "entry 0 is +Inf"},
		{"wrong dimension", []*flv1.UpdateChunk{chunk(1, 0, 4, 0, 0, 0, 0, 0)}, codes.InvalidArgument, "dimension 4, want 3"},
		{"oversized", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 0, 0, 0, 0)}, codes.InvalidArgument, "oversized update"},
		{"oversized in a second chunk", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 0, 0), chunk(1, 0, 3, 2, 0, 0)}, codes.InvalidArgument, "oversized update"},
		{"short", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 0, 0)}, codes.InvalidArgument, "short update: 2 of 3"},
		{"gap", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 0), chunk(1, 0, 3, 2, 0)}, codes.InvalidArgument, "offset 2, want 1"},
		{"mixed learners", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 0), chunk(0, 0, 3, 1, 0, 0)}, codes.InvalidArgument, "chunk for learner 0"},
		{"norm", []*flv1.UpdateChunk{chunk(1, 0, 3, 0, 1, 1, 0)}, codes.InvalidArgument, "norm"},
		{"wrong round", []*flv1.UpdateChunk{chunk(1, 1, 3, 0, good...)}, codes.FailedPrecondition, "update for round 1, the open round is 0"},
		{"unknown learner", []*flv1.UpdateChunk{chunk(7, 0, 3, 0, good...)}, codes.InvalidArgument, "learner 7, want 0..1"},
	}
	for _, b := range bad {
		err := sendUpdate(cl, b.chunks...)
		if status.Code(err) != b.code || !strings.Contains(status.Convert(err).Message(), b.reason) {
			t.Errorf("%s: %v, want %v containing %q", b.name, err, b.code, b.reason)
		}
		if !logEventually(&log, b.reason) {
			t.Errorf("%s: the reason %q is not in the log", b.name, b.reason)
		}
	}
	// A message over the size limit is refused by gRPC and logged.
	err = sendUpdate(cl, chunk(1, 0, 3, 0, make([]float64, MaxMsgSize/8+1)...))
	if status.Code(err) != codes.ResourceExhausted || !logEventually(&log, "larger than max") {
		t.Errorf("oversized message: %v, want ResourceExhausted and a logged reason", err)
	}
	// A stalled upload (one chunk, then nothing) is cut off by the
	// server's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	st, err := cl.SubmitUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(chunk(1, 0, 3, 0, 0)); err != nil {
		t.Fatal(err)
	}
	err = st.RecvMsg(new(flv1.SubmitResponse))
	cancel()
	if status.Code(err) != codes.DeadlineExceeded || !logEventually(&log, "upload not complete within") {
		t.Errorf("stalled upload: %v, want DeadlineExceeded from the server and a logged reason", err)
	}
	if err := sendUpdate(cl, chunk(1, 0, 3, 0, good...)); err != nil {
		t.Fatal(err)
	}
	err = sendUpdate(cl, chunk(1, 0, 3, 0, 0, 0, 0))
	if status.Code(err) != codes.AlreadyExists || !logEventually(&log, "duplicate update") {
		t.Errorf("second update of learner 1: %v, want AlreadyExists and a logged reason", err)
	}
	_, err = cl.Join(context.Background(), &flv1.JoinRequest{ProtocolVersion: 3, Learner: 0})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("join with protocol version 3: %v, want FailedPrecondition", err)
	}
	// A plain run serves learners of revision 1 (before secure
	// aggregation) and answers in their revision.
	if join, err := cl.Join(context.Background(), &flv1.JoinRequest{ProtocolVersion: flv1.ProtocolVersion_PROTOCOL_VERSION_1, Learner: 0}); err != nil || join.GetProtocolVersion() != flv1.ProtocolVersion_PROTOCOL_VERSION_1 {
		t.Errorf("join with protocol version 1: %v, %v; want an answer in version 1", join.GetProtocolVersion(), err)
	}
	// Learner 0 runs normally; the round closes with both honest updates.
	finals, errs := runLearners(t, r, s.addr, []int{0}, nil)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, dir, r.R), want)
	if !testutil.SameBits(finals[0], want[1]) {
		t.Errorf("final model %v, want %v", finals[0], want[1])
	}
}

// A learner that goes away mid-run and comes back (a new process, with no
// memory of what it sent) carries on: the run is the simulation's.
func TestLearnerReconnects(t *testing.T) {
	r := newRun(t, 3, 8, 2, 4)
	want := r.simulate(t, nil)
	opt := r.options(t.TempDir(), nil)
	s := serve(t, opt, nil)
	var wg sync.WaitGroup
	var others []error
	wg.Go(func() { _, others = runLearners(t, r, s.addr, []int{1, 2}, nil) })
	// Learner 0 stops once round 3 is open, then starts afresh.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if k, _ := s.srv.Round(); k >= 3 {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := RunLearner(ctx, LearnerOptions{Addr: s.addr, ID: 0, Creds: insecure.NewCredentials(),
		Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, 0) }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first life of learner 0: %v, want context.Canceled", err)
	}
	finals, errs := runLearners(t, r, s.addr, []int{0}, nil)
	wg.Wait()
	for _, err := range append(errs, others...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !testutil.SameBits(finals[0], want[r.R]) {
		t.Errorf("learner 0 ends with %v, want %v", finals[0], want[r.R])
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
}

// With -min-learners below n a round that times out closes with the
// updates it has (missing ones count as zero, the step divides by the
// planned n); with too few updates the server stops, and a restart resumes
// from the last released round.
func TestDropoutPolicy(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 3, 3, 2, 4)
	want := r.simulate(t, func(i, k int) bool { return i == 2 })
	opt := r.options(t.TempDir(), nil)
	opt.RoundTimeout, opt.MinLearners, opt.Linger = 150*time.Millisecond, 2, 100*time.Millisecond
	s := serve(t, opt, nil)
	_, errs := runLearners(t, r, s.addr, []int{0, 1}, nil)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
	for k := 1; k <= r.R; k++ {
		if rel, _ := ReadRound(opt.Dir, k); rel.Updates != 2 {
			t.Errorf("round %d records %d updates, want 2", k, rel.Updates)
		}
	}

	// Too few: with all three required, the first round stops the server.
	opt = r.options(t.TempDir(), nil)
	opt.RoundTimeout = 300 * time.Millisecond
	s = serve(t, opt, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go RunLearner(ctx, LearnerOptions{Addr: s.addr, ID: 0, Creds: insecure.NewCredentials(),
		Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, 0) }})
	if err := <-s.errc; !errors.Is(err, ErrTooFewLearners) {
		t.Fatalf("server with 1 of 3 learners: %v, want ErrTooFewLearners", err)
	}
	s.stop()
	// Restarted with everyone, the run completes as the simulation.
	opt.RoundTimeout = 20 * time.Second
	s = serve(t, opt, nil)
	_, errs = runLearners(t, r, s.addr, []int{0, 1, 2}, nil)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
	requireSameModels(t, readRounds(t, opt.Dir, r.R), r.simulate(t, nil))
}

// TLS: learners that trust the server's CA take part; with mutual TLS a
// learner without a certificate, with one from another CA, or with another
// learner's certificate cannot join or submit.
func TestTLS(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	want := r.simulate(t, nil)
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	srvCert, srvKey := ca.Issue(t, "server", true)
	for _, mutual := range []bool{false, true} {
		clientCA := ""
		if mutual {
			clientCA = ca.File
		}
		creds, err := ServerTLS(srvCert, srvKey, clientCA)
		if err != nil {
			t.Fatal(err)
		}
		var log testutil.SyncBuffer
		opt := r.options(t.TempDir(), &log)
		if mutual {
			opt.Identify = IdentifyByCertificate
		}
		s := serve(t, opt, creds)
		learnerCreds := func(i int) credentials.TransportCredentials {
			cert, key := "", ""
			if mutual {
				cert, key = ca.Issue(t, LearnerName(i), false)
			}
			c, err := ClientTLS(ca.File, "", cert, key)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if mutual {
			other := testpki.New(t, dir, "other")
			oc, ok := other.Issue(t, LearnerName(0), false)
			stolenCert, stolenKey := ca.Issue(t, LearnerName(1), false)
			for _, c := range []struct {
				name      string
				cert, key string
				code      codes.Code
			}{
				{"no certificate", "", "", codes.Unavailable},
				{"another CA", oc, ok, codes.Unavailable},
				{"learner 1's certificate", stolenCert, stolenKey, codes.PermissionDenied},
			} {
				cc, err := ClientTLS(ca.File, "", c.cert, c.key)
				if err != nil {
					t.Fatal(err)
				}
				conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(cc))
				if err != nil {
					t.Fatal(err)
				}
				cl := flv1.NewFederationClient(conn)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err = cl.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
				if status.Code(err) != c.code {
					t.Errorf("%s: join as learner 0: %v, want %v", c.name, err, c.code)
				}
				err = sendUpdate(cl, &flv1.UpdateChunk{Learner: 0, Round: 0, Dim: 3, Values: []float64{0, 0, 0}})
				if status.Code(err) == codes.OK {
					t.Errorf("%s: update accepted", c.name)
				}
				cancel()
				conn.Close()
			}
		}
		finals, errs := runLearners(t, r, s.addr, []int{0, 1}, learnerCreds)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("mutual %v: learner %d: %v", mutual, i, err)
			}
			if !testutil.SameBits(finals[i], want[r.R]) {
				t.Fatalf("mutual %v: learner %d: wrong final model", mutual, i)
			}
		}
		if err := <-s.errc; err != nil {
			t.Fatal(err)
		}
		requireSameModels(t, readRounds(t, opt.Dir, r.R), want)
	}
	// A plaintext client cannot talk to a TLS server.
	creds, _ := ServerTLS(srvCert, srvKey, "")
	s := serve(t, r.options(t.TempDir(), nil), creds)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := RunLearner(ctx, LearnerOptions{Addr: s.addr, ID: 0, Creds: insecure.NewCredentials(), GiveUp: 300 * time.Millisecond,
		Data: func(rc *flv1.RunConfig) (fedopt.Stream, error) { return r.learnerData(rc, 0) }})
	if err == nil {
		t.Error("plaintext learner joined a TLS server")
	}
}
