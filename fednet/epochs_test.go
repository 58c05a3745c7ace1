package fednet

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// TestLearnerEpochsNeedTheServers: a networked learner is built without
// the server's privacy record, so it checks its data against what the
// server announces at Join, its epochs K (fedopt.CheckEpochs, the check of
// fedopt.NewLearner). Data of 2 epochs (dataset.Dataset.Epochs(2): each
// client in 2 of the 4 rounds, 2 apart) is what participation epochs:2
// allows and single participation does not (for the identity, unit
// sensitivity sqrt(2) against 1, TestEpochsNeedTheirParticipation): a
// private run that announces 1 epoch must refuse it at Join, naming the
// data's 2 epochs and the participation, before any update; one that
// announces 2 epochs, or a non-private run, must take it (the fake server
// then sends the final model and the learner returns it).
func TestLearnerEpochsNeedTheServers(t *testing.T) {
	base, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := base.Epochs(2)
	if err != nil {
		t.Fatal(err)
	}
	once, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	final := []*flv1.ModelChunk{{Round: 4, Done: true, Dim: 3, Values: []float64{0, 0, 0}}}
	for _, c := range []struct {
		algo   string
		epochs int32
		data   *dataset.Dataset
		ok     bool
	}{
		{"correlated", 1, twice, false},
		{"correlated", 0, twice, false}, // 0 epochs means 1
		{"independent", 1, twice, false},
		{"correlated", 2, twice, true},
		{"correlated", 1, once, true},
		{"correlated", 2, once, true},
		{"nonprivate", 1, twice, true},
	} {
		name := fmt.Sprintf("%s, server %d epochs, data %d rounds of %d", c.algo, c.epochs, c.data.Rounds, func() int { k, _ := c.data.Stream(0).Epochs(); return k }())
		rc := fakeRunConfig()
		rc.Algorithm, rc.Epochs = c.algo, c.epochs
		srv := &fakeServer{join: &flv1.JoinResponse{ProtocolVersion: Protocol, Config: rc}, model: final}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := grpc.NewServer()
		flv1.RegisterFederationServer(g, srv)
		go g.Serve(lis)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		x, err := RunLearner(ctx, LearnerOptions{Addr: lis.Addr().String(), ID: 1, Creds: insecure.NewCredentials(),
			Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return c.data.Stream(1), nil }, GiveUp: time.Second})
		cancel()
		g.Stop()
		if c.ok {
			if err != nil || len(x) != 3 {
				t.Errorf("%s: %v, want the final model", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "2 epochs") || !strings.Contains(err.Error(), "participation is single") || !strings.Contains(err.Error(), "epochs:2") {
			t.Errorf("%s: %v, want a refusal naming the data's 2 epochs, single participation and epochs:2", name, err)
		}
	}
}

// TestServerEpochsNeedTheirParticipation: ServerOptions.Epochs tells the
// learners to replay their data (ofl learner builds it so), so a server
// given a privacy record (without a plan, which binds the epochs itself)
// must refuse epochs its record's participation does not allow: 2 epochs
// of 4 rounds under single participation, or under minsep:3 (period 2 <
// 3), and accept them under epochs:2 and minsep:2.
func TestServerEpochsNeedTheirParticipation(t *testing.T) {
	const n, R, tau, features = 2, 4, 1, 3
	dim := (dpmodel.Logistic{}).NumParams(features)
	for _, c := range []struct {
		part string
		ok   bool
	}{{"single", false}, {"minsep:3", false}, {"epochs:2", true}, {"minsep:2", true}} {
		p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: "identity", Participation: c.part, Rounds: R, Learners: n, Tau: tau, Clip: 1, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
		pr, noise := planNoise(t, p, dim)
		key := mechanism.SeedKey(1)
		opt := ServerOptions{
			Config:   fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr},
			Shape:    fedopt.Shape{Learners: n, Rounds: R, Tau: tau, Dim: dim},
			Model:    Model{Name: "logistic", Features: features},
			Noise:    noise,
			NoiseKey: &key, Epochs: 2, Dir: t.TempDir(),
		}
		srv, err := NewServer(opt)
		if srv != nil {
			srv.Close()
		}
		if c.ok && err != nil {
			t.Errorf("%s, 2 epochs: %v, want accepted", c.part, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "Epochs 2") || !strings.Contains(err.Error(), "participation is "+c.part)) {
			t.Errorf("%s, 2 epochs: %v, want a refusal naming Epochs 2 and %s", c.part, err, c.part)
		}
	}
}

// TestLearnerChecksDataAgainstServersParticipation: a server that announces
// its privacy record's participation (RunConfig.participation) has the
// learner's data checked against it, not against epochs:K of its announced
// epochs. Data of 2 epochs of 4 rounds (each client in rounds i and i + 2)
// is allowed by epochs:2, minsep:2 and minsep:2,2 and refused under
// minsep:3 (period 2 < 3), minsep:2,1 (2 rounds > 1), single, and epochs:4
// (period 1, not 2), whatever epochs the server announces; a participation
// that is no pattern over the run's rounds is refused; data of one epoch
// passes every pattern; a non-private run takes any data. (Without the
// field, TestLearnerEpochsNeedTheServers: minsep:2 data with 1 announced
// epoch is refused.)
func TestLearnerChecksDataAgainstServersParticipation(t *testing.T) {
	base, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := base.Epochs(2)
	if err != nil {
		t.Fatal(err)
	}
	once, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	final := []*flv1.ModelChunk{{Round: 4, Done: true, Dim: 3, Values: []float64{0, 0, 0}}}
	for _, c := range []struct {
		algo   string
		epochs int32
		part   string
		data   *dataset.Dataset
		want   string // "" to accept, else a part of the refusal
	}{
		{"correlated", 1, "minsep:2", twice, ""},
		{"correlated", 1, "minsep:2,2", twice, ""},
		{"correlated", 2, "epochs:2", twice, ""},
		{"independent", 1, "minsep:2", twice, ""},
		{"correlated", 1, "minsep:3", twice, "participation is minsep:3"},
		{"correlated", 1, "minsep:2,1", twice, "participation is minsep:2,1"},
		{"correlated", 2, "single", twice, "participation is single"},
		{"correlated", 2, "epochs:4", twice, "participation is epochs:4"},
		{"correlated", 1, "epochs:3", once, `participation "epochs:3"`},
		{"correlated", 1, "minsep:0", once, `participation "minsep:0"`},
		{"correlated", 1, "", once, `participation ""`},
		{"correlated", 1, "single", once, ""},
		{"correlated", 1, "minsep:3,1", once, ""},
		{"nonprivate", 1, "single", twice, ""},
	} {
		name := fmt.Sprintf("%s, server %d epochs, participation %q, data %d rounds", c.algo, c.epochs, c.part, c.data.Rounds)
		rc := fakeRunConfig()
		rc.Algorithm, rc.Epochs, rc.Participation = c.algo, c.epochs, &c.part
		srv := &fakeServer{join: &flv1.JoinResponse{ProtocolVersion: Protocol, Config: rc}, model: final}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := grpc.NewServer()
		flv1.RegisterFederationServer(g, srv)
		go g.Serve(lis)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		x, err := RunLearner(ctx, LearnerOptions{Addr: lis.Addr().String(), ID: 1, Creds: insecure.NewCredentials(),
			Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return c.data.Stream(1), nil }, GiveUp: time.Second})
		cancel()
		g.Stop()
		switch {
		case c.want == "" && (err != nil || len(x) != 3):
			t.Errorf("%s: %v, want the final model", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v, want a one-line refusal naming %s", name, err, c.want)
		case c.want != "" && strings.HasPrefix(c.want, "participation is") && (!strings.Contains(err.Error(), "privacy record") || !strings.Contains(err.Error(), "2 epochs")):
			t.Errorf("%s: %v, want a refusal naming the server's privacy record and the data's 2 epochs", name, err)
		}
	}
}

// TestServerAnnouncesItsParticipation: a private server's Join carries its
// privacy record's participation, against which the learner's check
// (checkDataEpochs) takes data of 2 epochs of 4 rounds under minsep:2 and
// refuses it under minsep:3 (both with 1 announced epoch); a non-private
// server announces none.
func TestServerAnnouncesItsParticipation(t *testing.T) {
	const n, R, tau, features = 2, 4, 1, 3
	ctx := context.Background()
	dim := (dpmodel.Logistic{}).NumParams(features)
	base, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: features}.Dataset(n, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := base.Epochs(2)
	if err != nil {
		t.Fatal(err)
	}
	join := func(opt ServerOptions) *flv1.RunConfig {
		t.Helper()
		opt.Shape = fedopt.Shape{Learners: n, Rounds: R, Tau: tau, Dim: dim}
		opt.Model = Model{Name: "logistic", Features: features}
		opt.Dir = t.TempDir()
		srv, err := NewServer(opt)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		resp, err := srv.Join(ctx, &flv1.JoinRequest{ProtocolVersion: Protocol, Learner: 0})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetConfig()
	}
	for _, c := range []struct {
		part string
		ok   bool
	}{{"minsep:2", true}, {"minsep:3", false}} {
		p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: "identity", Participation: c.part, Rounds: R, Learners: n, Tau: tau, Clip: 1, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
		pr, noise := planNoise(t, p, dim)
		key := mechanism.SeedKey(1)
		rc := join(ServerOptions{
			Config:   fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr},
			Noise:    noise,
			NoiseKey: &key,
		})
		if rc.Participation == nil || rc.GetParticipation() != c.part || rc.GetEpochs() != 1 {
			t.Errorf("%s: Join announces participation %v (set %v) and %d epochs, want %s and 1", c.part, rc.GetParticipation(), rc.Participation != nil, rc.GetEpochs(), c.part)
		}
		err = checkDataEpochs(rc, fedopt.Correlated, twice.Stream(0))
		if c.ok && err != nil {
			t.Errorf("%s: data of 2 epochs: %v, want accepted", c.part, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "participation is "+c.part)) {
			t.Errorf("%s: data of 2 epochs: %v, want a refusal naming %s", c.part, err, c.part)
		}
	}
	rc := join(ServerOptions{Config: fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}})
	if rc.Participation != nil {
		t.Errorf("a non-private server announces participation %q, want none", rc.GetParticipation())
	}
}

// TestLearnerBoundsServersParticipation: the participation a server
// announces is parsed within bounds. A spec of a hostile server's 512 KiB
// is refused with a one-line error that names its length, not the spec
// (echoing it would put half a megabyte, twice, in the learner's error);
// numbers beyond int64 are refused; a separation or epochs count at
// int64's maximum is parsed and judged like any other (CheckEpochs: data
// of 2 epochs, period 2 of 4 rounds, is refused under a separation of
// 2^63 - 1 and taken under minsep:1 with at most 2^63 - 1 rounds; epochs
// 2^63 - 1 do not divide 4 rounds).
func TestLearnerBoundsServersParticipation(t *testing.T) {
	base, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := base.Epochs(2)
	if err != nil {
		t.Fatal(err)
	}
	huge := "minsep:" + strings.Repeat("9", 512<<10)
	maxInt := strconv.Itoa(math.MaxInt)
	for _, c := range []struct {
		part string
		want string // "" to accept, else a part of the refusal
	}{
		{huge, fmt.Sprintf("participation of %d bytes", len(huge))},
		{"minsep:" + strings.Repeat("9", 20), "bad separation"},
		{"minsep:2," + strings.Repeat("9", 20), "bad number of participations"},
		// math.MaxInt: a count the parser accepts on every platform
		// (2^63 - 1 on 386 was "bad separation", a number beyond int).
		{"minsep:" + maxInt, "participation is minsep:" + maxInt},
		{"minsep:1," + maxInt, ""},
		{"epochs:" + maxInt, "divides the rounds"},
	} {
		rc := fakeRunConfig()
		rc.Participation = &c.part
		err := checkDataEpochs(rc, fedopt.Correlated, twice.Stream(0))
		name := c.part
		if len(name) > 40 {
			name = fmt.Sprintf("%.40s... (%d bytes)", name, len(name))
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %.300v, want a refusal naming %s", name, err, c.want)
		case err != nil && (len(err.Error()) > 512 || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: an error of %d bytes, want one line of at most 512", name, len(err.Error()))
		}
	}
}
