package fedopt

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Simulate with a nil server or learner is a *ParamError (package doc,
// "Errors and panics"), not a nil-pointer panic.
func TestSimulateNilIsParamError(t *testing.T) {
	var pe *ParamError
	assert.NotPanics(t, func() {
		assert.ErrorAs(t, Simulate(context.Background(), nil, nil, SimOptions{}), &pe)
	})
}

// TestSimulateRefusesSharedLearner: the same *Learner in two slots would
// put its clients' samples into the round's aggregate twice, so replacing
// one of them moves the direction by 4 B_g / n, twice the 2 B_g / n the
// record is calibrated for (and with Parallel two goroutines would share
// its buffers). Simulate refuses it with a *ParamError naming the second
// slot, before any round.
func TestSimulateRefusesSharedLearner(t *testing.T) {
	cfg := Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	l, err := NewLearner(linearModel{}, constStream{[]float64{1, 0}}, cfg, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewLearner(linearModel{}, constStream{[]float64{0, 1}}, cfg, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(cfg, Shape{Learners: 3, Rounds: 2, Tau: 1, Dim: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pe *ParamError
	err = Simulate(context.Background(), srv, []*Learner{l, other, l}, SimOptions{Parallel: true})
	if assert.ErrorAs(t, err, &pe) {
		assert.Equal(t, "learners[2]", pe.Param)
	}
	assert.Equal(t, 0, srv.Round(), "rounds released before the refusal")
}

// TestSimulateRefusesLearnerOfAnotherRun: the server's norm check bounds
// an update by tau B_g, which bounds one sample's share only under
// Algorithm 1; the baselines' 2 B_g / n rests on the learner clipping each
// gradient to the server's B_g and taking it at x^r. A learner made with
// clip 10 for a server of clip 1 lets a sample move the Independent
// baseline's direction by up to 2 min(10, tau) / n (here a gradient of
// norm 1.9 passed unclipped, in an update of norm 1.9 <= tau B_g = 4 that
// the server accepted), and
// a learner of Algorithm 1 (local steps) for a baseline server by 2 tau B_g
// / n. Simulate refuses both with a *ParamError naming the learner; a
// learner of the server's own configuration runs.
func TestSimulateRefusesLearnerOfAnotherRun(t *testing.T) {
	const tau = 4
	srvCfg := Config{Algorithm: Independent, Eta: 0.1, EtaG: 1, Clip: 1}
	for _, c := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"the server's", srvCfg, true},
		{"clip 10", Config{Algorithm: Independent, Eta: 0.1, EtaG: 1, Clip: 10}, false},
		{"no clipping", Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1}, false},
		{"local steps", Config{Algorithm: Correlated, Eta: 0.1, EtaG: 1, Clip: 1}, false},
	} {
		srv, err := NewServer(srvCfg, Shape{Learners: 2, Rounds: 2, Tau: tau, Dim: 2}, &fixedNoise{v: []float64{0, 0}, rounds: 2})
		if err != nil {
			t.Fatal(err)
		}
		ls := make([]*Learner, 2)
		for i := range ls {
			cfg := srvCfg
			if i == 1 {
				cfg = c.cfg
			}
			if ls[i], err = NewLearner(linearModel{}, firstStepStream{[]float64{1.9, 0}}, cfg, tau, 2); err != nil {
				t.Fatal(err)
			}
		}
		err = Simulate(context.Background(), srv, ls, SimOptions{})
		if c.ok {
			assert.NoError(t, err, c.name)
			continue
		}
		var pe *ParamError
		if assert.ErrorAs(t, err, &pe, c.name) {
			assert.Equal(t, "learners[1]", pe.Param, c.name)
		}
		assert.Equal(t, 0, srv.Round(), "%s: rounds released before the refusal", c.name)
	}
}

// firstStepStream gives local step 0 of every round the client a and the
// other steps the zero client.
type firstStepStream struct{ a []float64 }

func (s firstStepStream) Sample(r, t int) ([]float64, float64) {
	if t == 0 {
		return s.a, 1
	}
	return make([]float64, len(s.a)), 1
}
