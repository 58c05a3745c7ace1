// Command library uses dpmf as a library: the plan of a run of 800 rounds
// with the optimal factorization, and the noise it needs for (5, 1e-3)-DP
// with 10 learners, clip 1.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/plan"
)

func main() {
	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: 800, Strategy: "optimal",
		Learners: 10, Clip: 1, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	f, err := p.Build(context.Background()) // the factorization; p.Privacy its record
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("loss %.1f, RMSE %.3f, noise std %.4f\n", f.Metrics.Loss, f.Metrics.RMSE, p.Privacy.NoiseStd)
}
