package fedopt

import (
	"context"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// The plan names the algorithms as fedopt does, and knows which are
// private.
func TestPlanAlgorithmNames(t *testing.T) {
	private := map[string]bool{plan.AlgoCorrelated: true, plan.AlgoBaselineCorrelated: true, plan.AlgoIndependent: true, plan.AlgoNonPrivate: false}
	for _, a := range Algorithms() {
		p := &plan.Plan{Algorithm: a.String()}
		want, ok := private[a.String()]
		if !ok || want != a.Private() || p.Private() != a.Private() {
			t.Errorf("%v: the plan knows it %v, private %v; fedopt says %v", a, ok, p.Private(), a.Private())
		}
	}
}

// stepModel is a one-parameter per-sample loss made to show how far one
// absent client moves Algorithm 1's update: a client with label 0 is absent
// (zero gradient), feature 0 has the constant gradient +1, and feature 1
// the gradient +1 left of -1/2 and -1 right of it (a non-convex loss).
type stepModel struct{}

func (stepModel) NumParams(d int) int                    { return d }
func (stepModel) Loss(x, a []float64, y float64) float64 { return 0 }
func (stepModel) Grad(dst, x, a []float64, y float64) {
	switch {
	case y == 0:
		dst[0] = 0
	case a[0] == 0:
		dst[0] = 1
	case x[0] < -0.5:
		dst[0] = 1
	default:
		dst[0] = -1
	}
}

// stepStream holds the two clients of round 0; absent removes the first.
type stepStream struct{ absent bool }

func (s stepStream) Sample(r, t int) ([]float64, float64) {
	if t == 0 && s.absent {
		return []float64{0}, 0
	}
	return []float64{float64(t)}, 1
}

// TestAddRemoveAlgorithm1 checks, by hand, that removing one client moves
// a learner's update in Algorithm 1 by more than the B_g per step of the
// add/remove bound: with tau = 2, B_g = 1 and eta = 1 from x = 0, the
// present client's step (gradient +1) moves z to -1, where the second
// client's gradient is +1 (update 2); without it z stays at 0, where that
// gradient is -1 (update -1): 3 = (2 tau - 1) B_g, not tau B_g = 2. The
// baseline, whose gradients are all taken at x, moves by B_g. So a plan of
// Algorithm 1 with local steps and add/remove neighbours must not be
// calibrated with the add/remove sensitivity B_g / n.
func TestAddRemoveAlgorithm1(t *testing.T) {
	update := func(algo Algorithm, absent bool) float64 {
		cfg := Config{Algorithm: algo, Eta: 1, EtaG: 1, Clip: 1}
		l, err := NewLearner(stepModel{}, stepStream{absent}, cfg, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		u := []float64{0}
		if err := l.Update(u, 0, []float64{0}); err != nil {
			t.Fatal(err)
		}
		return u[0]
	}
	if d, e := update(Correlated, false), update(Correlated, true); d != 2 || e != -1 {
		t.Errorf("Algorithm 1: updates %v with the client and %v without it, want 2 and -1 (worked by hand)", d, e)
	}
	if d, e := update(BaselineCorrelated, false), update(BaselineCorrelated, true); d != 0 || e != -1 {
		t.Errorf("baseline: updates %v with the client and %v without it, want 0 and -1 (worked by hand)", d, e)
	}
	target := func() *plan.Target { return &plan.Target{Eps: 1, Delta: 1e-5, Relation: "add-remove"} }
	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: 4, Learners: 1, Tau: 2, Clip: 1, Target: target()}
	if _, err := p.Build(context.Background()); err == nil {
		t.Errorf("a plan of Algorithm 1 with tau = 2 and add/remove neighbours was calibrated at sensitivity %v; the update above moves by 3 B_g", p.Privacy.Sensitivity)
	}
	for _, q := range []*plan.Plan{
		{Algorithm: plan.AlgoCorrelated, Rounds: 4, Learners: 1, Tau: 1, Clip: 1, Target: target()},
		{Algorithm: plan.AlgoBaselineCorrelated, Rounds: 4, Learners: 1, Tau: 2, Clip: 1, Target: target()},
	} {
		if _, err := q.Build(context.Background()); err != nil || q.Privacy.Sensitivity != 1 {
			t.Errorf("%s, tau = %d, add/remove: %v; want release sensitivity B_g = 1", q.Algorithm, q.Tau, err)
		}
	}
}

// TestAddRemoveRecordNeedsOneStep: a plan of Algorithm 1 with tau unset
// (as mfsolve makes them) may be calibrated for add/remove neighbours, at
// the sensitivity B_g / n that holds only when a sample enters its
// learner's update as one clipped gradient. A server of a run with local
// steps (tau = 2, where TestAddRemoveAlgorithm1 moves the update by 3 B_g)
// must refuse that record; with tau = 1 it is the run's, and a
// replace-one record serves any tau.
func TestAddRemoveRecordNeedsOneStep(t *testing.T) {
	for _, c := range []struct {
		rel     string
		tau     int
		refused bool
	}{{"add-remove", 2, true}, {"add-remove", 1, false}, {"replace-one", 2, false}} {
		p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: 4, Learners: 1, Clip: 1, Target: &plan.Target{Eps: 1, Delta: 1e-5, Relation: c.rel}}
		f, err := p.Build(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pr, err := PrivacyOf(p)
		if err != nil {
			t.Fatal(err)
		}
		noise, err := mechanism.New(f, 1, pr.NoiseStd, mechanism.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}
		_, err = NewServer(cfg, Shape{Learners: 1, Rounds: 4, Tau: c.tau, Dim: 1}, noise)
		if (err != nil) != c.refused || err != nil && !strings.Contains(err.Error(), "add-remove") {
			t.Errorf("%s record, run with tau = %d: error %v, want refused %v (naming add-remove)", c.rel, c.tau, err, c.refused)
		}
	}
}
