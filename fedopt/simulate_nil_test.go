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
