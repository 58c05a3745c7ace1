package fedopt_test

import (
	"fmt"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
)

// The roles by hand: each round every Learner's Update runs its tau local
// steps from the released model, and the Server's Release aggregates the
// updates and releases the next model. NewServerAt resumes a server at a
// round from the model released there (and, for a private run, a noise
// mechanism started at that round with mechanism.WithStartRound): here
// after round 2, ending at ExampleSimulate's x^3.
func ExampleNewServerAt() {
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 3, 2, 1)
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: 2, Rounds: 3, Tau: 2, Dim: 3}
	learners := make([]*fedopt.Learner, shape.Learners)
	updates := make([][]float64, shape.Learners)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(model.Logistic{}, data.Stream(i), cfg, shape.Tau, shape.Dim); err != nil {
			panic(err)
		}
		updates[i] = make([]float64, shape.Dim)
	}
	round := func(srv *fedopt.Server) {
		for i, l := range learners {
			if err := l.Update(updates[i], srv.Round(), srv.Model()); err != nil {
				panic(err)
			}
		}
		if err := srv.Release(updates); err != nil {
			panic(err)
		}
	}
	srv, err := fedopt.NewServer(cfg, shape, nil)
	if err != nil {
		panic(err)
	}
	round(srv)
	round(srv)
	x2 := append([]float64(nil), srv.Model()...) // a checkpoint: x^2
	resumed, err := fedopt.NewServerAt(cfg, shape, nil, 2, x2)
	if err != nil {
		panic(err)
	}
	round(resumed)
	fmt.Printf("x^%d = %.3f, done: %v\n", resumed.Round(), resumed.Model(), resumed.Done())
	// Output: x^3 = [0.053 -0.031 0.198], done: true
}
