package fednet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// TestSecureLearnerRefusesAnnouncedColluders: a learner checks the
// threshold T and colluders c the server announces against 2T > n + c and
// c < T (by hand for n = 10: T = 6 allows c <= 1, T = 8 c <= 5, T = 10
// c <= 9), since a server may announce a pair under which the secrecy the
// run claims does not hold; without the field (an older server) it takes
// c = 0. End to end through Join, n = 2 with T = 2 allows c <= 1: c = 2 is
// refused before any update.
func TestSecureLearnerRefusesAnnouncedColluders(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	for _, c := range []struct {
		T   int32
		col *int32
		ok  bool
	}{
		{6, nil, true}, {6, i32(0), true}, {6, i32(1), true}, {6, i32(2), false},
		{8, i32(5), true}, {8, i32(6), false}, {10, i32(9), true}, {10, i32(10), false},
		{7, i32(3), true}, {7, i32(4), false}, {6, i32(-1), false},
	} {
		rc := fakeRunConfig()
		rc.Learners = 10
		rc.SecureAggregation = &flv1.SecureAggregation{Threshold: c.T, RingBits: 64, ScaleBits: 10, Colluders: c.col}
		_, err := newSecureLearner(rc, 0)
		name := fmt.Sprintf("n 10, T %d, c %v", c.T, c.col)
		if c.col != nil {
			name = fmt.Sprintf("n 10, T %d, c %d", c.T, *c.col)
		}
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v, want accepted", name, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "2T > n + c") || !strings.Contains(err.Error(), "refusing the run") || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want a one-line refusal naming the rule", name, err)
		}
	}
	join := &flv1.JoinResponse{ProtocolVersion: Protocol, Config: fakeRunConfig()}
	join.Config.SecureAggregation = &flv1.SecureAggregation{Threshold: 2, RingBits: 64, ScaleBits: 10, Colluders: i32(2)}
	srv := &fakeServer{join: join}
	err := runLearnerAgainst(t, srv, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "colluders 2 with threshold 2 of 2 learners") || !strings.Contains(err.Error(), "refusing the run") {
		t.Errorf("announced T = 2, c = 2 of n = 2: %v, want a refusal", err)
	}
}

// secureRunJSON returns the secure_aggregation object of the run
// description that dir's run.json records.
func secureRunJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	js, err := ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		SA map[string]any `json:"secure_aggregation"`
	}
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatal(err)
	}
	return d.SA
}

// TestSecureColludersRecordedAndResume: a server without a plan records
// its colluders c in run.json and announces them at Join; a restart with
// another c is refused (the record binds it), one with the same c resumes.
// With c = 0 the record's secure_aggregation holds exactly the keys a
// record had before c existed (threshold, ring_bits, scale_bits), so such
// a run resumes; NewServer refuses a c its threshold does not withstand
// (n = 4, T = 3: c <= 1), before touching the state directory.
func TestSecureColludersRecordedAndResume(t *testing.T) {
	r := newRun(t, 4, 2, 1, 4)
	secureRun(t, r)
	ctx := context.Background()
	start := func(dir string, c int) (*Server, error) {
		opt := secureOptions(r, dir, 3)
		opt.SecureAggregation.Colluders = c
		return NewServer(opt)
	}
	dir := t.TempDir()
	srv, err := start(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
	if err != nil {
		t.Fatal(err)
	}
	if sa := resp.GetConfig().GetSecureAggregation(); sa.Colluders == nil || sa.GetColluders() != 1 || sa.GetThreshold() != 3 {
		t.Errorf("Join announces %v, want threshold 3 and colluders 1", sa)
	}
	srv.Close()
	if sa := secureRunJSON(t, dir); sa["colluders"] != 1.0 {
		t.Errorf("run.json's secure aggregation %v, want colluders 1", sa)
	}
	if _, err := start(dir, 0); err == nil || !strings.Contains(err.Error(), "describes another run") {
		t.Errorf("restart with colluders 0 after 1: %v, want refused", err)
	}
	if srv, err = start(dir, 1); err != nil {
		t.Fatalf("restart with the same colluders: %v", err)
	}
	srv.Close()

	old := t.TempDir()
	if srv, err = start(old, 0); err != nil {
		t.Fatal(err)
	}
	resp, err = srv.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
	if err != nil || resp.GetConfig().GetSecureAggregation().Colluders == nil || resp.GetConfig().GetSecureAggregation().GetColluders() != 0 {
		t.Errorf("Join of c = 0: %v, %v; want colluders 0 announced", err, resp)
	}
	srv.Close()
	sa := secureRunJSON(t, old)
	if _, ok := sa["colluders"]; ok || len(sa) != 3 || sa["threshold"] != 3.0 {
		t.Errorf("run.json's secure aggregation with c = 0: %v, want the three keys of a record before colluders", sa)
	}
	if srv, err = start(old, 0); err != nil {
		t.Fatalf("resume of a record without colluders: %v", err)
	}
	srv.Close()
	if _, err := start(old, 1); err == nil || !strings.Contains(err.Error(), "describes another run") {
		t.Errorf("resume of a record without colluders with c = 1: %v, want refused", err)
	}

	for _, c := range []struct {
		c    int
		want string
	}{{2, "colluders 2 with threshold 3 of 4 learners: want 0 <= c < T and 2T > n + c (T = 3 allows c <= 1): raise the threshold to 4"}, {-1, "colluders -1"}} {
		dir := filepath.Join(t.TempDir(), "state")
		_, err := start(dir, c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("colluders %d: %v, want one line with %q", c.c, err, c.want)
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("colluders %d: the state directory was created", c.c)
		}
	}
}

// TestSecurePlanColluders: a server given a plan takes its colluders
// (announced at Join, recorded with the plan in run.json); options that
// name other colluders than the plan's are refused.
func TestSecurePlanColluders(t *testing.T) {
	const n, d = 4, 3
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: n, Rounds: 2, Tau: 1, Dim: (dpmodel.Logistic{}).NumParams(d)}
	sa, err := plan.NewSecureAggregation(n, 1, 1, d, 4)
	if err != nil {
		t.Fatal(err)
	}
	sa.Colluders = 3 // T = n = 4: 8 > 4 + 3
	p := &plan.Plan{Workload: plan.WorkloadPrefix, Participation: "single", Rounds: 2, Algorithm: plan.AlgoNonPrivate, Learners: n, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1,
		Model: &plan.Model{Name: "logistic", Features: d}, SecureAggregation: sa}
	js, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opt := ServerOptions{Config: cfg, Shape: shape, Model: Model{Name: "logistic", Features: d}, Dir: dir, Plan: js}
	srv, err := NewServer(opt)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Join(context.Background(), &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
	srv.Close()
	if err != nil || resp.GetConfig().GetSecureAggregation().GetColluders() != 3 || resp.GetConfig().GetSecureAggregation().GetThreshold() != 4 {
		t.Errorf("Join: %v, %v; want threshold 4 and colluders 3", err, resp)
	}
	if sa := secureRunJSON(t, dir); sa["colluders"] != 3.0 {
		t.Errorf("run.json's plan: secure aggregation %v, want colluders 3", sa)
	}
	opt.Dir = t.TempDir()
	opt.SecureAggregation = &SecureAggregation{Colluders: 1}
	if _, err := NewServer(opt); err == nil || !strings.Contains(err.Error(), "colluders 1, the run's plan has 3") {
		t.Errorf("options with colluders 1 against the plan's 3: %v", err)
	}
}

// countingServer is a fakeServer that counts the calls a learner makes
// after Join.
type countingServer struct {
	fakeServer
	after atomic.Int32
}

func (c *countingServer) GetModel(req *flv1.GetModelRequest, st grpc.ServerStreamingServer[flv1.ModelChunk]) error {
	c.after.Add(1)
	return c.fakeServer.GetModel(req, st)
}

// TestSecureLearnerMinColluders: a learner's own minimum m
// (LearnerOptions.MinColluders) refuses a run whose announced c is below
// m, or whose T does not withstand m colluders, whatever the server
// announces: by hand for n = 10, T = 7 allows c <= 3 (14 > 10 + 3), T = 6
// allows c <= 1, T = 10 allows c <= 9. A run without secure aggregation is
// refused for m > 0 (the server sees every update), accepted for m = 0.
// End to end (n = 2, T = 2, c = 0, which the announced rule accepts), a
// learner with m = 1 refuses the run after Join and before any other call,
// with one line naming the announced c and its minimum; m < 0 is refused
// before the learner dials.
func TestSecureLearnerMinColluders(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	for _, c := range []struct {
		m, T int32
		col  *int32
		sec  bool
		ok   bool
	}{
		{2, 7, i32(3), true, true}, {3, 7, i32(3), true, true}, {9, 10, i32(9), true, true},
		{2, 7, i32(0), true, false}, {2, 7, nil, true, false}, {2, 6, i32(1), true, false},
		{4, 7, i32(4), true, false}, {2, 6, i32(2), true, false}, {1, 0, nil, false, false},
		{0, 0, nil, false, true}, {0, 6, i32(0), true, true},
	} {
		rc := fakeRunConfig()
		rc.Learners = 10
		if c.sec {
			rc.SecureAggregation = &flv1.SecureAggregation{Threshold: c.T, RingBits: 64, ScaleBits: 10, Colluders: c.col}
		}
		err := checkMinColluders(rc, int(c.m))
		name := fmt.Sprintf("n 10, T %d, c %v, minimum %d, secure %v", c.T, c.col, c.m, c.sec)
		if c.col != nil {
			name = fmt.Sprintf("n 10, T %d, c %d, minimum %d", c.T, *c.col, c.m)
		}
		want := fmt.Sprintf("minimum colluders is %d", c.m)
		announced := int32(0)
		if c.col != nil {
			announced = *c.col
		}
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: %v, want accepted", name, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "refusing the run") || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want a one-line refusal naming %q", name, err, want)
		case !c.ok && c.sec && !strings.Contains(err.Error(), fmt.Sprintf("announces colluders %d with threshold %d of 10 learners", announced, c.T)):
			t.Errorf("%s: %v, want the announced c and T named", name, err)
		}
	}

	join := &flv1.JoinResponse{ProtocolVersion: Protocol, Config: fakeRunConfig()}
	join.Config.SecureAggregation = &flv1.SecureAggregation{Threshold: 2, RingBits: 64, ScaleBits: 10, Colluders: i32(0)}
	srv := &countingServer{fakeServer: fakeServer{join: join}}
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
	run := func(m int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := RunLearner(ctx, LearnerOptions{Addr: lis.Addr().String(), ID: 1, Creds: insecure.NewCredentials(), MinColluders: m, StateDir: t.TempDir(),
			Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return ds.Stream(1), nil }, GiveUp: time.Second})
		return err
	}
	err = run(1)
	if err == nil || !strings.Contains(err.Error(), "announces colluders 0 with threshold 2 of 2 learners, this learner's minimum colluders is 1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("announced T = 2, c = 0 of n = 2 against minimum 1: %v, want a one-line refusal", err)
	}
	if k := srv.after.Load(); k != 0 {
		t.Errorf("the learner made %d calls after Join, want none", k)
	}
	if err := run(-1); err == nil || !strings.Contains(err.Error(), "minimum colluders -1") {
		t.Errorf("minimum -1: %v, want refused", err)
	}
}
