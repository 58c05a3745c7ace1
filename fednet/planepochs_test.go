package fednet

import (
	"strings"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// TestServerPlanEpochsFollowParticipation: a server given a plan
// (ServerOptions.Plan) must take the epochs its participation allows and
// no others, by the rule the learners apply at Join (fedopt.CheckEpochs).
// With R = 4 and E epochs a client takes part in rounds i, i + 4/E, ...:
// by hand, minsep:2 allows E = 2 (period 2 >= 2), minsep:2,2 too (2
// rounds <= 2), minsep:3 does not (period 2 < 3), minsep:2,1 does not (2
// rounds > 1) and minsep:1 allows E = 4 (period 1); epochs:2 allows
// exactly E = 2, single only E = 1. Before, NewServer compared the plan's
// epochs (1 for a min-separation) with E and refused every E > 1 under
// minsep, although its learners would take the data.
func TestServerPlanEpochsFollowParticipation(t *testing.T) {
	const d, R, n = 3, 4, 2
	dim := (dpmodel.Logistic{}).NumParams(d)
	for _, c := range []struct {
		part   string
		epochs int
		ok     bool
	}{
		{"minsep:2", 2, true}, {"minsep:2,2", 2, true}, {"minsep:1", 4, true}, {"minsep:2", 1, true},
		{"minsep:3", 2, false}, {"minsep:2,1", 2, false}, {"minsep:2", 4, false},
		{"epochs:2", 2, true}, {"epochs:2", 4, false}, {"single", 1, true}, {"single", 2, false},
	} {
		for _, algo := range []string{plan.AlgoCorrelated, plan.AlgoNonPrivate} {
			p := &plan.Plan{Workload: plan.WorkloadPrefix, Participation: c.part, Rounds: R, Algorithm: algo,
				Learners: n, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1, Model: &plan.Model{Name: "logistic", Features: d}}
			cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
			var noise func(int, [32]byte) (mechanism.Mechanism, error)
			if algo == plan.AlgoCorrelated {
				p.Strategy, p.Target = "identity", &plan.Target{Eps: 1, Delta: 1e-5}
				cfg.Algorithm = fedopt.Correlated
				cfg.Privacy, noise = planNoise(t, p, dim)
			}
			js, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			key := mechanism.SeedKey(1)
			opt := ServerOptions{Config: cfg, Shape: fedopt.Shape{Learners: n, Rounds: R, Tau: 1, Dim: dim},
				Model: Model{Name: "logistic", Features: d}, Noise: noise, Epochs: c.epochs, Dir: t.TempDir(), Plan: js}
			if noise != nil {
				opt.NoiseKey = &key
			}
			srv, err := NewServer(opt)
			if srv != nil {
				srv.Close()
			}
			switch {
			case c.ok && err != nil:
				t.Errorf("%s plan %s, %d epochs: %v, want accepted", algo, c.part, c.epochs, err)
			case !c.ok && (err == nil || !strings.Contains(err.Error(), "epochs")):
				t.Errorf("%s plan %s, %d epochs: %v, want a refusal naming the epochs", algo, c.part, c.epochs, err)
			}
		}
	}
}
