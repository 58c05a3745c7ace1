package fednet

import (
	"context"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	dpmodel "github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// The plan run.json records (ServerOptions.Plan) must hold the privacy
// record the server enforces (Config.Privacy), not only its noise std.
// Before, NewServer compared the plan's noise std and nothing else of its
// record: a plan calibrated for the identity at eps 0.6 whose noise std
// was set to that of the tree at eps 1 (a record Parse accepts: the noise
// is enough for its own claim) was recorded for a run that streamed the
// tree's noise, and run.json (and ofl evaluate after it) claimed
// (0.6, 1e-5)-DP of a factorization the run did not use; the run's
// guarantee is (1, 1e-5). The check is the record of the server's plan
// itself: the record Config.Privacy came from passes.
func TestServerPlanRecordIsEnforced(t *testing.T) {
	const d, R = 3, 4
	dim := (dpmodel.Logistic{}).NumParams(d)
	mk := func(strategy string, eps float64) *plan.Plan {
		return &plan.Plan{Workload: plan.WorkloadPrefix, Participation: "single", Rounds: R, Algorithm: plan.AlgoCorrelated,
			Strategy: strategy, Learners: 2, Tau: 1, Eta: 0.1, EtaG: 1, Clip: 1, Model: &plan.Model{Name: "logistic", Features: d},
			Target: &plan.Target{Eps: eps, Delta: 1e-5}}
	}
	run := mk("tree", 1)
	pr, noise := planNoise(t, run, dim)
	claim := mk("identity", 0.6)
	if _, err := claim.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !(claim.Privacy.NoiseStd < pr.NoiseStd) {
		t.Fatalf("the identity's std at eps 0.6, %v, is not below the tree's at eps 1, %v", claim.Privacy.NoiseStd, pr.NoiseStd)
	}
	claim.Privacy.NoiseStd = pr.NoiseStd
	claim.Privacy.Sigma = claim.Privacy.NoiseStd / claim.Privacy.Sensitivity
	opts := func(p *plan.Plan) ServerOptions {
		js, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plan.Parse(js); err != nil {
			t.Fatalf("the plan does not parse: %v", err)
		}
		return ServerOptions{Config: fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr},
			Shape: fedopt.Shape{Learners: 2, Rounds: R, Tau: 1, Dim: dim}, Model: Model{Name: "logistic", Features: d},
			Noise: noise, Dir: t.TempDir(), Plan: js}
	}
	srv, err := NewServer(opts(run))
	if err != nil {
		t.Fatalf("the run's own plan: %v", err)
	}
	srv.Close()
	if srv, err := NewServer(opts(claim)); err == nil || !strings.Contains(err.Error(), "privacy record") {
		if srv != nil {
			srv.Close()
		}
		t.Errorf("a plan whose record is not Config.Privacy: %v, want an error naming the privacy record", err)
	}
}
