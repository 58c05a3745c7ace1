package fedopt_test

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
)

// Sensitivity is the L2 sensitivity of C G: 2 gamma B_g / n for the exact
// calibration, n times that for the paper's.
func ExampleSensitivity() {
	for _, cal := range []fedopt.Calibration{fedopt.Exact, fedopt.Paper} {
		s, err := fedopt.Sensitivity(cal, 10, 5, 1) // n = 10, B_g = 5, gamma = 1
		if err != nil {
			panic(err)
		}
		fmt.Println(cal, s)
	}
	// Output:
	// exact 1
	// paper 10
}

// Calibrate gives the noise standard deviation for (eps, delta)-DP and the
// privacy record of a run: here the paper's Fig. 4 setting at (5, 1e-3),
// with the optimal factorization for R = 800 (gamma = 1).
func ExampleCalibrate() {
	ctx := context.Background()
	w, err := factorize.Prefix(800)
	if err != nil {
		panic(err)
	}
	f, err := factorize.OptimalStrategy{}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		panic(err)
	}
	pr, err := fedopt.Calibrate(fedopt.Correlated, fedopt.Exact, 5, 1e-3, 10, 5, f.Metrics)
	if err != nil {
		panic(err)
	}
	fmt.Printf("gamma %.3f, sensitivity %.3f, noise std %.3f (%v)\n", pr.Gamma, pr.Sensitivity, pr.NoiseStd, pr.Method)
	// Output: gamma 1.000, sensitivity 1.000, noise std 0.690 (exact)
}

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
