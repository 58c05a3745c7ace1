package fedopt_test

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// Algorithm 1 with correlated noise on the real data set that ships with
// dpmf (testdata/breast_cancer.csv), wired by hand: the plan is calibrated
// (plan.Plan.Build), its record goes into the Config (PrivacyOf), the
// mechanism streams the plan's factorization with the record's std, and
// the server refuses a mechanism of another std. The std is the analytic
// Gaussian sigma for (2, 1e-3)-DP, 1.4452392 (Balle and Wang 2018,
// computed by bisection outside dpmf), times the release sensitivity
// 2 B_g / n = 1 for replace-one neighbours, B_g = 1 and n = 2 learners
// (the optimal factorization's columns have unit norm).
func Example_correlated() {
	ctx := context.Background()
	const learners, rounds, tau, clip = 2, 20, 2, 1.0
	table, err := dataset.LoadCSV("../testdata/breast_cancer.csv") // features standardised
	if err != nil {
		panic(err)
	}
	data, err := table.Deal(learners, rounds, tau, dataset.Split{Kind: dataset.IID}, 1)
	if err != nil {
		panic(err)
	}
	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: rounds, Learners: learners, Tau: tau, Clip: clip,
		Target: &plan.Target{Eps: 2, Delta: 1e-3}} // strategy optimal, replace-one, exact calibration
	f, err := p.Build(ctx)
	if err != nil {
		panic(err)
	}
	privacy, err := fedopt.PrivacyOf(p)
	if err != nil {
		panic(err)
	}
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.02, EtaG: 1, Clip: clip, Privacy: privacy}
	shape := fedopt.Shape{Learners: learners, Rounds: rounds, Tau: tau, Dim: table.Dim}
	// Leave out WithSeed in real use: the key then comes from crypto/rand.
	wrong, err := mechanism.New(f, table.Dim, 2*p.Privacy.NoiseStd, mechanism.WithSeed(1))
	if err != nil {
		panic(err)
	}
	_, err = fedopt.NewServer(cfg, shape, wrong)
	fmt.Println("a mechanism of twice the std refused:", err != nil)
	noise, err := mechanism.New(f, table.Dim, p.Privacy.NoiseStd, mechanism.WithSeed(1))
	if err != nil {
		panic(err)
	}
	srv, err := fedopt.NewServer(cfg, shape, noise)
	if err != nil {
		panic(err)
	}
	ls := make([]*fedopt.Learner, learners)
	for i := range ls {
		if ls[i], err = fedopt.NewLearner(model.Logistic{L2: 1e-3}, data.Stream(i), cfg, tau, table.Dim); err != nil {
			panic(err)
		}
	}
	if err := fedopt.Simulate(ctx, srv, ls, fedopt.SimOptions{}); err != nil {
		panic(err)
	}
	rec, _ := srv.Record()
	fmt.Printf("%d features, std %.7f, round %d of %d released\n", table.Dim, rec.NoiseStd, srv.Round(), rounds)
	fmt.Printf("(%v, %v)-DP for the whole run, calibrated %v\n", rec.Eps, rec.Delta, rec.Method)
	// Output:
	// a mechanism of twice the std refused: true
	// 30 features, std 1.4452392, round 20 of 20 released
	// (2, 0.001)-DP for the whole run, calibrated exact
}
