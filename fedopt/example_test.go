package fedopt_test

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/plan"
)

// Online federated logistic regression without noise on synthetic data:
// the loss error over all samples falls round by round.
func ExampleRun() {
	ctx := context.Background()
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := fedopt.NewProblem(ctx, data, fedopt.Logistic{L2: 1e-3}, fedopt.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 5, EvalEvery: 25}
	tr, err := fedopt.Run(ctx, p, cfg, nil)
	if err != nil {
		panic(err)
	}
	for k, r := range tr.Rounds {
		fmt.Printf("round %2d: loss error %.2f\n", r, tr.LossError[k])
	}
	// Output:
	// round  0: loss error 0.36
	// round 25: loss error 0.07
	// round 50: loss error 0.04
}

// squared is a model of your own: least squares, f(x; a, y) = (x.a - y)^2 / 2.
// It has no Minimize method, so x* and the per-round minima are found by
// L-BFGS from its gradient.
type squared struct{}

func (squared) NumParams(d int) int { return d }

func (squared) Loss(x, a []float64, y float64) float64 {
	r := -y
	for k := range x {
		r += x[k] * a[k]
	}
	return r * r / 2
}

func (squared) Grad(dst, x, a []float64, y float64) {
	r := -y
	for k := range x {
		r += x[k] * a[k]
	}
	for k := range dst {
		dst[k] = r * a[k]
	}
}

// Plugging in a model: any type with NumParams, Loss and Grad.
func Example_customModel() {
	ctx := context.Background()
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 5}.Dataset(2, 40, 4, 3)
	if err != nil {
		panic(err)
	}
	p, err := fedopt.NewProblem(ctx, data, squared{}, fedopt.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.005, EtaG: 1, EvalEvery: 40}
	tr, err := fedopt.Run(ctx, p, cfg, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("loss error %.3f -> %.3f\n", tr.LossError[0], tr.LossError[1])
	fmt.Println("accuracy reported:", tr.Accuracy[1] == tr.Accuracy[1]) // NaN: not a Classifier
	// Output:
	// loss error 0.260 -> 0.076
	// accuracy reported: false
}

// One configuration of the paper's experiments, scaled down: Algorithm 1
// with correlated noise from the optimal factorization at (5, 1e-3)-DP,
// exact calibration, 4 repetitions.
func ExampleExperiment() {
	ctx := context.Background()
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 100, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := fedopt.NewProblem(ctx, data, fedopt.Logistic{L2: 1e-4}, fedopt.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	e := fedopt.Experiment{
		Problem: p,
		Config:  fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.01, EtaG: 1, Clip: 5, EvalEvery: 50},
		Plan: &plan.Plan{Strategy: plan.SpecOf(factorize.OptimalStrategy{}),
			Target: &plan.Target{Eps: 5, Delta: 1e-3, Calibration: plan.Exact}},
		Repeat: fedopt.RepeatOptions{Reps: 4},
		Seed:   1,
	}
	res, err := e.Run(ctx)
	if err != nil {
		panic(err)
	}
	pr := res.Privacy
	fmt.Printf("sensitivity 2 gamma B_g / n = %.2f, noise std %.3f (%v)\n", pr.Sensitivity, pr.NoiseStd, pr.Method)
	s := res.Summary
	for k, r := range s.Rounds {
		fmt.Printf("round %3d: loss error %.2f\n", r, s.LossErrorMean[k])
	}
	// Output:
	// sensitivity 2 gamma B_g / n = 1.00, noise std 0.690 (exact)
	// round   0: loss error 0.48
	// round  50: loss error 0.12
	// round 100: loss error 0.07
}

// The roles connected in one process: a server with no data and two
// learners with their own streams; the observer prints every released model.
func ExampleSimulate() {
	ctx := context.Background()
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 3, 2, 1)
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
		if learners[i], err = fedopt.NewLearner(fedopt.Logistic{}, data.Stream(i), cfg, shape.Tau, shape.Dim); err != nil {
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
