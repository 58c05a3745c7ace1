package fedopt_test

import (
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/plan"
)

// The paper's synthetic(alpha, beta) data: n learners, R rounds, tau
// clients per learner and round, d = 60 features by default.
func ExampleSynthetic_Dataset() {
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(10, 800, 10, 1)
	if err != nil {
		panic(err)
	}
	a, y := data.Sample(3, 799, 9) // learner 3's last client
	fmt.Println(data.Name, data.Len(), "samples of dimension", data.Dim)
	fmt.Println(len(a), y == 1 || y == -1)
	// Output:
	// synthetic(0.1,0.1) 80000 samples of dimension 60
	// 60 true
}

// A data set of your own: NewDataset gives a zero data set of the shape;
// Index(i, r, t) is the row of learner i's client at step t of round r,
// whose features go into Features[row*Dim:(row+1)*Dim] and label into
// Labels[row]. Sample(i, r, t) reads them back (the features as a view).
func ExampleNewDataset() {
	data, err := fedopt.NewDataset("mine", 2, 3, 1, 2) // 2 learners, 3 rounds, tau 1, d 2
	if err != nil {
		panic(err)
	}
	for i := range data.Learners {
		for r := range data.Rounds {
			row := data.Index(i, r, 0)
			copy(data.Features[row*data.Dim:], []float64{float64(i), float64(r)})
			data.Labels[row] = float64(1 - 2*(i%2))
		}
	}
	if err := data.Validate(); err != nil {
		panic(err)
	}
	a, y := data.Sample(1, 2, 0)
	fmt.Println(a, y, data.Round(2).Len())
	// Output: [1 2] -1 2
}

// A CSV file of your own (label first, then the features), standardised
// and dealt to learners and rounds.
func ExampleLoadCSV() {
	t, err := fedopt.LoadCSV("../testdata/breast_cancer.csv")
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Len(), "rows,", t.Dim, "features, first", t.Names[0])
	data, err := t.Deal(2, 140, 2, fedopt.Split{Kind: fedopt.IID}, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(data.Learners, data.Rounds, data.Tau, data.Len())
	// Output:
	// 569 rows, 30 features, first mean_radius
	// 2 140 2 560
}

// NewProblem computes the reference values of the metrics: x*, F(x*), and
// every round's minimum (f^r)* and f^r(x*).
func ExampleNewProblem() {
	ctx := context.Background()
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := fedopt.NewProblem(ctx, data, fedopt.Logistic{L2: 1e-3}, fedopt.ProblemOptions{})
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

// Minimize finds the minimiser of a model's average loss; a model without
// a Minimize method of its own (here least squares) is minimised by L-BFGS.
// On y = 2 a_0 - a_1 exactly, least squares recovers (2, -1).
func ExampleMinimize() {
	s := fedopt.Samples{
		X:   []float64{1, 0, 0, 1, 1, 1, 2, 1},
		Y:   []float64{2, -1, 1, 3},
		Dim: 2,
	}
	x := make([]float64, 2)
	if err := fedopt.Minimize(context.Background(), squared{}, x, make([]float64, 2), s, 1e-12); err != nil {
		panic(err)
	}
	fmt.Printf("x = (%.6f, %.6f)\n", x[0], x[1])
	// Output: x = (2.000000, -1.000000)
}

// LBFGS minimises any smooth function from its gradient: here
// f(x) = (x_0 - 1)^2 + 10 (x_1 + 2)^2.
func ExampleLBFGS() {
	f := func(x []float64) float64 { return (x[0]-1)*(x[0]-1) + 10*(x[1]+2)*(x[1]+2) }
	grad := func(g, x []float64) { g[0], g[1] = 2*(x[0]-1), 20*(x[1]+2) }
	x := make([]float64, 2)
	if err := fedopt.LBFGS(context.Background(), x, []float64{0, 0}, f, grad, 1e-12); err != nil {
		panic(err)
	}
	fmt.Printf("x = (%.6f, %.6f)\n", x[0], x[1])
	// Output: x = (1.000000, -2.000000)
}

// Repeat runs repetitions with noise from a NoiseSource, a function from the
// repetition index to a fresh mechanism; FactorizationNoise seeds
// repetition k's with RepSeed(seed, k).
func ExampleRepeat() {
	ctx := context.Background()
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 10}.Dataset(4, 50, 5, 1)
	if err != nil {
		panic(err)
	}
	p, err := fedopt.NewProblem(ctx, data, fedopt.Logistic{L2: 1e-3}, fedopt.ProblemOptions{})
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
	noise := fedopt.FactorizationNoise(f, p.Model.NumParams(data.Dim), pr.NoiseStd, 1)
	s, err := fedopt.Repeat(ctx, p, cfg, noise, fedopt.RepeatOptions{Reps: 3})
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

// The roles by hand: each round every Learner's Update runs its tau local
// steps from the released model, and the Server's Release aggregates the
// updates and releases the next model. NewServerAt resumes a server at a
// round from the model released there (and, for a private run, a noise
// mechanism started at that round with mechanism.WithStartRound): here
// after round 2, ending at ExampleSimulate's x^3.
func ExampleNewServerAt() {
	data, err := fedopt.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 3, 2, 1)
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1}
	shape := fedopt.Shape{Learners: 2, Rounds: 3, Tau: 2, Dim: 3}
	learners := make([]*fedopt.Learner, shape.Learners)
	updates := make([][]float64, shape.Learners)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(fedopt.Logistic{}, data.Stream(i), cfg, shape.Tau, shape.Dim); err != nil {
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

// An Evaluator observes the released models and computes the metrics
// against a Problem: Simulate with an Evaluator is Run (compare ExampleRun).
func ExampleNewEvaluator() {
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
	ev := fedopt.NewEvaluator(p, cfg)
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
