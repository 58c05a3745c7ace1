package mechanism_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// This is the shape of a private training loop with correlated noise: each
// round, add the mechanism's vector to the clipped, averaged update before
// applying it. The sum of the noisy updates over rounds 0..r is then the
// true prefix sum plus row r of B Z. The noise std is calibrated by the
// run's plan (plan.Plan.Calibrate, dpmf's calibration recipe): the
// release's sensitivity from the clip norm, the number of learners averaged
// per round, the neighbouring relation and the factorization's sensitivity
// under the participation, then the accountant's std for (eps, delta).
func Example() {
	const (
		rounds   = 8    // training rounds R
		dim      = 5    // model parameters d
		clip     = 1.0  // bound on one sample's clipped contribution
		learners = 4    // contributions averaged per round
		eps      = 2.0  // privacy budget of the whole release
		delta    = 1e-5 //
		lr       = 0.1
	)
	w, err := factorize.Prefix(rounds)
	if err != nil {
		log.Fatal(err)
	}
	// Each sample takes part in one round (single participation).
	strategy := factorize.BLTStrategy{Buffers: 2}
	f, err := strategy.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		log.Fatal(err)
	}
	// Replace-one neighbours: one sample moves a learner's contribution by
	// 2 clip, the round's average by 2 clip / learners. The plan names the
	// strategy whose noise is released: its record then verifies against
	// the plan's own factorization, as a reader of the plan checks it.
	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: rounds, Learners: learners, Clip: clip,
		Strategy: plan.SpecOf(strategy), Target: &plan.Target{Eps: eps, Delta: delta, Relation: "replace-one"}}
	if err := p.Calibrate(context.Background(), f); err != nil {
		log.Fatal(err)
	}
	if err := p.VerifyRecord(context.Background()); err != nil {
		log.Fatal(err)
	}
	sens, std := p.Privacy.Sensitivity, p.Privacy.NoiseStd
	// Leave out WithSeed in real use: the key then comes from crypto/rand.
	m, err := mechanism.New(f, dim, std, mechanism.WithSeed(1))
	if err != nil {
		log.Fatal(err)
	}
	model := make([]float64, dim)
	update := make([]float64, dim)
	noise := make([]float64, dim)
	for {
		for i := range update {
			update[i] = 0.01 // your clipped, averaged update for this round
		}
		if err := m.Next(noise); errors.Is(err, mechanism.ErrExhausted) {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		for i := range model {
			model[i] -= lr * (update[i] + noise[i])
		}
	}
	fmt.Printf("sensitivity %.4f (gamma %.4f), std %.4f\n", sens, f.Metrics.Gamma, std)
	fmt.Printf("%v: %d of %d rounds, d = %d, %d bytes of noise state\n", m, m.Round(), m.Rounds(), m.Dim(), m.StateBytes())
	// Output:
	// sensitivity 0.5000 (gamma 1.0000), std 0.9969
	// blt(k=2): 8 of 8 rounds, d = 5, 80 bytes of noise state
}

// NoiseMatrix draws a whole stream as a matrix, one row per round, for
// inspection or for tools that add noise offline.
func ExampleNoiseMatrix() {
	w, _ := factorize.Prefix(4)
	f, _ := factorize.TreeStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	m, err := mechanism.New(f, 3, 1.0, mechanism.WithSeed(7))
	if err != nil {
		log.Fatal(err)
	}
	z, err := mechanism.NoiseMatrix(m)
	if err != nil {
		log.Fatal(err)
	}
	r, c := z.Dims()
	fmt.Println(m, r, c)
	// Output: tree(buffers=2) 4 3
}

// RoundStds answers "how much noise does round r get?": each coordinate
// of round r's vector is N(0, s_r^2) with s_r the std of Z's entries times
// the norm of row r of the noise operator (C^{-1} here), read from the
// operator's structure without forming dense factors. For the binary tree
// round r subtracts the t buffered nodes that the node ending at r closes
// (t the trailing zeros of r+1): s_r = std sqrt(1 + t). The std would be a
// plan's calibrated p.Privacy.NoiseStd in a real run.
func ExampleRoundStds() {
	w, _ := factorize.Prefix(8)
	f, _ := factorize.TreeStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	m, err := mechanism.New(f, 10, 0.5, mechanism.WithSeed(1))
	if err != nil {
		log.Fatal(err)
	}
	stds, err := mechanism.RoundStds(m)
	if err != nil {
		log.Fatal(err)
	}
	for r, s := range stds {
		fmt.Printf("round %d: %.4f\n", r, s)
	}
	last, _ := mechanism.RoundStd(m, 7) // one round alone
	fmt.Printf("round 7 alone: %.4f\n", last)
	// Output:
	// round 0: 0.5000
	// round 1: 0.7071
	// round 2: 0.5000
	// round 3: 0.8660
	// round 4: 0.5000
	// round 5: 0.7071
	// round 6: 0.5000
	// round 7: 1.0000
	// round 7 alone: 1.0000
}
