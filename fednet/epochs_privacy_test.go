package fednet

import (
	"strings"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// TestServerRefusesEpochsBeyondRecord: a server told to have its learners
// replay their clients K = 2 times (ServerOptions.Epochs) with a privacy
// record calibrated for single participation would release a run whose
// every client enters two rows of G, while the noise is calibrated for
// one (fedopt's Simulate and NewLearner refuse that pairing; fednet's
// learners, which hold no record, cannot). NewServer must refuse it,
// naming the epochs and the record's participation; the record of the
// same run calibrated for epochs:2 is accepted.
func TestServerRefusesEpochsBeyondRecord(t *testing.T) {
	const d, R = 3, 4
	for _, c := range []struct {
		participation string
		ok            bool
	}{{"single", false}, {"epochs:2", true}} {
		p := &plan.Plan{Workload: plan.WorkloadPrefix, Participation: c.participation, Rounds: R, Algorithm: plan.AlgoCorrelated,
			Strategy: "optimal", Learners: 2, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
		dim := (dpmodel.Logistic{}).NumParams(d)
		pr, noise := planNoise(t, p, dim)
		cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr}
		key := mechanism.SeedKey(1)
		opt := ServerOptions{Config: cfg, Shape: fedopt.Shape{Learners: 2, Rounds: R, Tau: 1, Dim: dim},
			Model: Model{Name: "logistic", Features: d}, Noise: noise, NoiseKey: &key, Dir: t.TempDir(), Epochs: 2}
		srv, err := NewServer(opt)
		if c.ok {
			if err != nil {
				t.Errorf("%s record with 2 epochs: %v, want accepted", c.participation, err)
			} else {
				srv.Close()
			}
			continue
		}
		if err == nil {
			srv.Close()
			t.Errorf("%s record with 2 epochs: accepted, want refused", c.participation)
			continue
		}
		if !strings.Contains(err.Error(), "epochs") {
			t.Errorf("%s record with 2 epochs: %v, want an error naming the epochs", c.participation, err)
		}
	}
}

// TestLearnerRefusesDataOfMoreEpochs: the server's run (its plan's
// participation) says how often a client may be used, and a learner's
// stream of clients says how often it is: a learner whose data replays
// each client in 2 rounds of a run the server describes with 1 epoch would
// use its clients twice under a record calibrated for once. The learner
// must refuse before it computes anything; data of the server's epochs is
// accepted.
func TestLearnerRefusesDataOfMoreEpochs(t *testing.T) {
	once, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := once.Epochs(2) // 4 rounds, each client in rounds r and r + 2
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		epochs int32
		ok     bool
	}{{"1 epoch", 1, false}, {"2 epochs", 2, true}} {
		rc := fakeRunConfig()
		rc.Epochs = c.epochs
		opt := LearnerOptions{ID: 1, Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return twice.Stream(1), nil }}
		_, _, err := newLearner(rc, opt)
		switch {
		case c.ok && err != nil:
			t.Errorf("data of 2 epochs, server's run of %s: %v, want accepted", c.name, err)
		case !c.ok && err == nil:
			t.Errorf("data of 2 epochs, server's run of %s: accepted, want refused", c.name)
		case !c.ok && !strings.Contains(err.Error(), "epochs"):
			t.Errorf("data of 2 epochs, server's run of %s: %v, want an error naming the epochs", c.name, err)
		}
	}
}

// TestLearnerRefusesDataOfOtherShape: a learner's data dealt for 2 rounds
// in a run of 4 has no clients for rounds 2 and 3 (the learner panicked
// there with an index out of range), and data dealt with tau = 1 for a
// run of tau = 2 would make the learner's second step use another
// learner's client (dataset.Dataset.Index); learner 1 given learner 0's
// data would use learner 0's clients, which learner 0 uses too. Each is
// refused before the learner computes anything.
func TestLearnerRefusesDataOfOtherShape(t *testing.T) {
	for _, c := range []struct {
		name      string
		R, tau, i int
		wantInErr string
	}{{"2 rounds", 2, 2, 1, "2 rounds"}, {"tau 1", 4, 1, 1, "tau = 2"}, {"learner 0's", 4, 2, 0, "learner 0's"}} {
		ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, c.R, c.tau, 1)
		if err != nil {
			t.Fatal(err)
		}
		opt := LearnerOptions{ID: 1, Data: func(*flv1.RunConfig) (fedopt.Stream, error) { return ds.Stream(c.i), nil }}
		_, _, err = newLearner(fakeRunConfig(), opt) // 4 rounds, tau 2
		if err == nil || !strings.Contains(err.Error(), c.wantInErr) {
			t.Errorf("learner 1 given data of %s for a run of 4 rounds, tau 2: %v, want an error with %q", c.name, err, c.wantInErr)
		}
	}
}
