package fedopt

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dpmf/dpmf/dataset"
	dpmodel "github.com/dpmf/dpmf/model"
)

// TestLearnerRefusesStreamOfOtherShape: a data set deals sample (i, r, t)
// at index (r n + i) tau + t (dataset.Dataset.Index), so a learner that
// takes tau = 2 local steps on data dealt with tau = 1 reads, at its step
// t = 1, learner i+1's client of the round (checked by hand below): that
// client then enters two learners' updates, twice the sensitivity of
// single participation. NewLearner refuses data dealt with a smaller tau
// and the stream of a learner the data set does not have (it reads another
// round's clients); Simulate refuses two learners on one learner's data
// (each client in two updates) and data of fewer rounds than the server's,
// whose last rounds do not exist (Sample panicked with an index out of
// range). Data of the run's shape runs.
func TestLearnerRefusesStreamOfOtherShape(t *testing.T) {
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 2, 1, 1) // n = 2, R = 2, tau = 1
	if err != nil {
		t.Fatal(err)
	}
	a, y := ds.Sample(0, 0, 1)
	b, z := ds.Sample(1, 0, 0)
	if !slices.Equal(a, b) || y != z {
		t.Fatalf("sample (0, 0, 1) = %v, %v; want learner 1's client (0, 0, 0) = %v, %v (the dealing this test is about)", a, y, b, z)
	}
	cfg := Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	m := dpmodel.Logistic{}
	if _, err := NewLearner(m, ds.Stream(0), cfg, 2, 3); err == nil {
		t.Errorf("NewLearner with tau = 2 on data dealt with tau = 1: accepted, want refused")
	}

	// Learner 2 of a data set of 2 reads round 1's clients of learner 0.
	if _, err := NewLearner(m, ds.Stream(2), cfg, 1, 3); err == nil {
		t.Errorf("NewLearner with learner 2's stream of a data set of 2 learners: accepted, want refused")
	}
	// Two learners on learner 0's clients: each client in two updates.
	srv, err := NewServer(cfg, Shape{Learners: 2, Rounds: 2, Tau: 1, Dim: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	twin := make([]*Learner, 2)
	for i := range twin {
		if twin[i], err = NewLearner(m, ds.Stream(0), cfg, 1, 3); err != nil {
			t.Fatal(err)
		}
	}
	assert.Error(t, Simulate(context.Background(), srv, twin, SimOptions{}), "two learners on learner 0's data")
	assert.Equal(t, 0, srv.Round(), "rounds released before the refusal")

	srv, err = NewServer(cfg, Shape{Learners: 2, Rounds: 3, Tau: 1, Dim: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ls := make([]*Learner, 2)
	for i := range ls {
		if ls[i], err = NewLearner(m, ds.Stream(i), cfg, 1, 3); err != nil {
			t.Fatal(err)
		}
	}
	assert.NotPanics(t, func() {
		assert.Error(t, Simulate(context.Background(), srv, ls, SimOptions{}), "data of 2 rounds for a run of 3")
	})
	assert.Equal(t, 0, srv.Round(), "rounds released before the refusal")

	srv, err = NewServer(cfg, Shape{Learners: 2, Rounds: 2, Tau: 1, Dim: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	assert.NoError(t, Simulate(context.Background(), srv, ls, SimOptions{}), "data of the run's shape")
}
