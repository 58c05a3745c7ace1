package experiment_test

import (
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// NewProblem computes the reference values of the metrics: x*, F(x*), and
// every round's minimum (f^r)* and f^r(x*).
func ExampleNewProblem() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := experiment.NewProblem(ctx, data, model.Logistic{L2: 1e-3}, experiment.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("F(x*) = %.4f over %d samples\n", p.FStar, data.Len()) // F(0) = log 2 = 0.6931
	ok := true
	for r := range data.Rounds {
		ok = ok && p.RoundStar[r] <= p.RoundAtXStar[r] // (f^r)* <= f^r(x*)
	}
	fmt.Println(len(p.RoundStar), "per-round minima, each at most f^r(x*):", ok)
	// Output:
	// F(x*) = 0.3328 over 1000 samples
	// 50 per-round minima, each at most f^r(x*): true
}

// Repeat runs repetitions with noise from a NoiseSource, a function from the
// repetition index to a fresh mechanism; FactorizationNoise seeds
// repetition k's with RepSeed(seed, k).
func ExampleRepeat() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := experiment.NewProblem(ctx, data, model.Logistic{L2: 1e-3}, experiment.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	w, err := factorize.Prefix(data.Rounds)
	if err != nil {
		panic(err)
	}
	f, err := factorize.BLTStrategy{}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		panic(err)
	}
	// The plan's calibration (plan.Plan.Calibrate) gives the record.
	pl := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: data.Rounds, Learners: data.Learners, Clip: 5,
		Strategy: plan.SpecOf(factorize.BLTStrategy{}), Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	if err := pl.Calibrate(ctx, f); err != nil {
		panic(err)
	}
	pr, err := fedopt.PrivacyOf(pl)
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 5, EvalEvery: 50, Privacy: pr}
	noise := experiment.FactorizationNoise(f, p.Model.NumParams(data.Dim), pr.NoiseStd, 1)
	s, err := experiment.Repeat(ctx, p, cfg, noise, experiment.RepeatOptions{Reps: 3})
	if err != nil {
		panic(err)
	}
	last := len(s.Rounds) - 1
	fmt.Println(len(s.Traces), "repetitions, evaluated at rounds", s.Rounds)
	fmt.Println("finite loss error and regret:", !math.IsNaN(s.LossErrorMean[last]+s.RegretMean[last]))
	// Output:
	// 3 repetitions, evaluated at rounds [0 50]
	// finite loss error and regret: true
}

// An Evaluator observes the released models and computes the metrics
// against a Problem: Simulate with an Evaluator is Run (compare ExampleRun).
func ExampleNewEvaluator() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := experiment.NewProblem(ctx, data, model.Logistic{L2: 1e-3}, experiment.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 5, EvalEvery: 25}
	shape := fedopt.Shape{Learners: 4, Rounds: 50, Tau: 5, Dim: 10}
	srv, err := fedopt.NewServer(cfg, shape, nil)
	if err != nil {
		panic(err)
	}
	learners := make([]*fedopt.Learner, shape.Learners)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(p.Model, data.Stream(i), cfg, shape.Tau, shape.Dim); err != nil {
			panic(err)
		}
	}
	ev := experiment.NewEvaluator(p, cfg)
	if err := fedopt.Simulate(ctx, srv, learners, fedopt.SimOptions{Observe: ev.Observe}); err != nil {
		panic(err)
	}
	tr := ev.Trace()
	for k, r := range tr.Rounds {
		fmt.Printf("round %2d: loss error %.2f\n", r, tr.LossError[k])
	}
	// Output:
	// round  0: loss error 0.36
	// round 25: loss error 0.07
	// round 50: loss error 0.04
}

// Online federated logistic regression without noise on synthetic data:
// the loss error over all samples falls round by round.
func ExampleRun() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := experiment.NewProblem(ctx, data, model.Logistic{L2: 1e-3}, experiment.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 5, EvalEvery: 25}
	tr, err := experiment.Run(ctx, p, cfg, nil)
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

// One configuration of the paper's experiments, scaled down: Algorithm 1
// with correlated noise from the optimal factorization at (5, 1e-3)-DP,
// exact calibration, 4 repetitions.
func ExampleExperiment() {
	ctx := context.Background()
	data, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 100, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := experiment.NewProblem(ctx, data, model.Logistic{L2: 1e-4}, experiment.ProblemOptions{})
	if err != nil {
		panic(err)
	}
	e := experiment.Experiment{
		Problem: p,
		Config:  fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.01, EtaG: 1, Clip: 5, EvalEvery: 50},
		Plan: &plan.Plan{Strategy: plan.SpecOf(factorize.OptimalStrategy{}),
			Target: &plan.Target{Eps: 5, Delta: 1e-3, Calibration: plan.Exact}},
		Repeat: experiment.RepeatOptions{Reps: 4},
		Seed:   1,
		Seeded: true,
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
