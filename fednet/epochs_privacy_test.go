package fednet

import (
	"context"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
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
		f, err := p.Build(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pr, err := fedopt.PrivacyOf(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr}
		dim := (dpmodel.Logistic{}).NumParams(d)
		noise := func(start int, key [32]byte) (mechanism.Mechanism, error) {
			return mechanism.New(f, dim, pr.NoiseStd, mechanism.WithKey(key), mechanism.WithStartRound(start))
		}
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
