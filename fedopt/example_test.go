package fedopt_test

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
)

// The roles connected in one process: a server with no data and two
// learners with their own streams; the observer prints every released model.
func ExampleSimulate() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 3, 2, 1)
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: 2, Rounds: 3, Tau: 2, Dim: 3}
	srv, err := fedopt.NewServer(cfg, shape, nil)
	if err != nil {
		panic(err)
	}
	learners := make([]*fedopt.Learner, shape.Learners)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(model.Logistic{}, data.Stream(i), cfg, shape.Tau, shape.Dim); err != nil {
			panic(err)
		}
	}
	err = fedopt.Simulate(ctx, srv, learners, fedopt.SimOptions{Observe: func(r int, x []float64) error {
		fmt.Printf("x^%d = %.3f\n", r, x)
		return nil
	}})
	if err != nil {
		panic(err)
	}
	// Output:
	// x^0 = [0.000 0.000 0.000]
	// x^1 = [0.012 -0.004 0.053]
	// x^2 = [0.021 -0.017 0.117]
	// x^3 = [0.053 -0.031 0.198]
}
