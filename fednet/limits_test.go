package fednet

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testpki"
	"github.com/dpmf/dpmf/internal/testutil"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// eventually reports whether cond holds within 30 seconds. It returns as
// soon as cond holds; the deadline (five seconds until now) only bounds how
// long a failing test waits, and leaves a loaded machine under -race time
// to wind down connections and goroutines.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// stalledUpload opens an upload of learner i for round 0 that sends one
// value and stalls; its answer arrives on the returned channel.
func stalledUpload(t *testing.T, cl flv1.FederationClient, i int) <-chan error {
	t.Helper()
	st, err := cl.SubmitUpdate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A refused call may have ended before the chunk is sent: its status
	// comes from RecvMsg.
	if err := st.Send(&flv1.UpdateChunk{Learner: int32(i), Dim: 3, Values: []float64{0}}); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	answer := make(chan error, 1)
	go func() { answer <- st.RecvMsg(new(flv1.SubmitResponse)) }()
	return answer
}

// With authentication, a learner's uploads and model streams beyond
// MaxUploadsPerLearner and MaxModelStreamsPerLearner are refused with
// ResourceExhausted and a reason, while another learner's go through;
// without it, MaxUploads caps the uploads of everyone together.
func TestCallLimits(t *testing.T) {
	t.Parallel() // waits out its timeouts (little CPU); its own run, servers and hooks
	r := newRun(t, 2, 2, 1, 3)
	dir := t.TempDir()
	ca := testpki.New(t, dir, "ca")
	srvCert, srvKey := ca.Issue(t, "server", true)
	creds, err := ServerTLS(srvCert, srvKey, ca.File)
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]flv1.FederationClient, 2)
	var log testutil.SyncBuffer
	opt := r.options(t.TempDir(), &log)
	opt.Identify = IdentifyByCertificate
	opt.CallTimeout = time.Second
	opt.MaxUploadsPerLearner, opt.MaxModelStreamsPerLearner = 1, 1
	s := serve(t, opt, creds)
	for i := range clients {
		cert, key := ca.Issue(t, LearnerName(i), false)
		cc, err := ClientTLS(ca.File, "", cert, key)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(cc))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		clients[i] = flv1.NewFederationClient(conn)
	}
	first := stalledUpload(t, clients[0], 0)
	if !eventually(func() bool { return s.srv.uploads.inUse() == 1 }) {
		t.Fatal("the stalled upload is not in progress")
	}
	err = <-stalledUpload(t, clients[0], 0)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "learner 0 has 1 uploads in progress, at most 1") {
		t.Errorf("second upload of learner 0: %v, want ResourceExhausted naming the limit", err)
	}
	if !logEventually(&log, "learner 0 has 1 uploads in progress") {
		t.Error("the refusal is not in the log")
	}
	// Learner 1 is not held up by learner 0's upload.
	if err := sendUpdate(clients[1], &flv1.UpdateChunk{Learner: 1, Dim: 3, Values: []float64{0, 0, 0}}); err != nil {
		t.Errorf("learner 1's upload beside learner 0's stalled one: %v", err)
	}
	if err := <-first; status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("stalled upload: %v, want DeadlineExceeded", err)
	}
	if !eventually(func() bool { return s.srv.uploads.inUse() == 0 }) {
		t.Error("the stalled upload's slot was not given back")
	}

	// Learner 1 submitted for round 0: its GetModel waits for round 1,
	// holding its one model stream.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting, err := clients[1].GetModel(ctx, &flv1.GetModelRequest{Learner: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return s.srv.streams.inUse() == 1 }) {
		t.Fatal("the waiting model stream is not in progress")
	}
	st, err := clients[1].GetModel(context.Background(), &flv1.GetModelRequest{Learner: 1})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "learner 1 has 1 model streams in progress, at most 1") {
		t.Errorf("second model stream of learner 1: %v, want ResourceExhausted naming the limit", err)
	}
	st, err = clients[0].GetModel(context.Background(), &flv1.GetModelRequest{Learner: 0})
	if err == nil {
		_, err = st.Recv()
	}
	if err != nil {
		t.Errorf("learner 0's model beside learner 1's waiting stream: %v", err)
	}
	cancel()
	if _, err := waiting.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled model stream: %v", err)
	}
	if !eventually(func() bool { return s.srv.streams.inUse() == 0 }) {
		t.Error("the model streams' slots were not given back")
	}

	// Without authentication the total applies from the first message.
	opt = r.options(t.TempDir(), nil)
	opt.MaxUploads, opt.CallTimeout = 1, time.Second
	s = serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	first = stalledUpload(t, cl, 0)
	if !eventually(func() bool { return s.srv.uploads.inUse() == 1 }) {
		t.Fatal("the stalled upload is not in progress")
	}
	err = sendUpdate(cl, &flv1.UpdateChunk{Learner: 1, Dim: 3, Values: []float64{0, 0, 0}})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "the server has 1 uploads in progress, at most 1") {
		t.Errorf("upload beside a stalled one with MaxUploads 1: %v, want ResourceExhausted naming the limit", err)
	}
	<-first
}

// A learner that asks for a model and stops reading it is cut off after
// CallTimeout, with a logged reason, and its stream's slot is given back.
func TestModelSendDeadline(t *testing.T) {
	const d = 1 << 20 // 8 MiB: far more than the flow-control windows
	var lg testutil.SyncBuffer
	opt := ServerOptions{Config: fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1},
		Shape: fedopt.Shape{Learners: 1, Rounds: 1, Tau: 1, Dim: d}, Model: Model{Name: "logistic", Features: d},
		Dir: t.TempDir(), CallTimeout: 300 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&lg, nil))}
	s := serve(t, opt, nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := flv1.NewFederationClient(conn).GetModel(ctx, &flv1.GetModelRequest{Learner: 0}); err != nil {
		t.Fatal(err)
	}
	// Never read.
	if !logEventually(&lg, "model of round 0 not taken within 300ms") {
		t.Fatalf("no cut-off in the log: %s", lg.String())
	}
	if !eventually(func() bool { return s.srv.streams.inUse() == 0 }) {
		t.Error("the stalled model stream's slot was not given back")
	}
}

// Negative call limits are refused; zero means the default.
func TestCallLimitOptions(t *testing.T) {
	r := newRun(t, 3, 2, 1, 3)
	for _, edit := range []func(o *ServerOptions){
		func(o *ServerOptions) { o.MaxUploads = -1 },
		func(o *ServerOptions) { o.MaxUploadsPerLearner = -1 },
		func(o *ServerOptions) { o.MaxModelStreams = -1 },
		func(o *ServerOptions) { o.MaxModelStreamsPerLearner = -1 },
	} {
		opt := r.options(t.TempDir(), nil)
		edit(&opt)
		if _, err := NewServer(opt); err == nil || !strings.Contains(err.Error(), "want >= 0") {
			t.Errorf("%v, want an error about the call limits", err)
		}
	}
	s, err := NewServer(r.options(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.uploads.max != 3*DefaultCallsPerLearner || s.uploads.perMax != DefaultCallsPerLearner ||
		s.streams.max != 3*DefaultCallsPerLearner || s.streams.perMax != DefaultCallsPerLearner {
		t.Errorf("default limits %d/%d uploads, %d/%d streams; want %d in all, %d per learner",
			s.uploads.max, s.uploads.perMax, s.streams.max, s.streams.perMax, 3*DefaultCallsPerLearner, DefaultCallsPerLearner)
	}
}

// Joins, which any peer can repeat at will, share the log's rate limit
// with refused calls: 500 joins in a burst write at most the burst.
func TestJoinLogLimited(t *testing.T) {
	r := newRun(t, 2, 2, 1, 3)
	var log testutil.SyncBuffer
	s := serve(t, r.options(t.TempDir(), &log), nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := flv1.NewFederationClient(conn)
	start := time.Now()
	for range 500 {
		if _, err := cl.Join(context.Background(), &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0}); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	lines := strings.Count(log.String(), "msg=joined")
	if max := logBurst + int(elapsed.Seconds()+1)*logRate; lines > max {
		t.Errorf("%d joined lines for 500 joins in %v, want at most %d", lines, elapsed, max)
	}
	if lines == 0 {
		t.Error("no join logged")
	}
}

// inUse returns the slots taken in total.
func (l *slots) inUse() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
