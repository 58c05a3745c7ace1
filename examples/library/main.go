// Command library uses dpmf as a library: the optimal factorization for 800
// rounds, and the noise it needs for (5, 1e-3)-DP with 10 learners, clip 1.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
)

func main() {
	w, err := factorize.Prefix(800)
	if err != nil {
		log.Fatal(err)
	}
	f, err := factorize.OptimalStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		log.Fatal(err)
	}
	sens, err := accountant.ReleaseSensitivity(1, 10, accountant.ReplaceOne, f.Metrics.UnitSensitivity.Value)
	if err != nil {
		log.Fatal(err)
	}
	std, err := accountant.NoiseStd(5, 1e-3, sens, accountant.Exact)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("loss %.1f, RMSE %.3f, noise std %.4f\n", f.Metrics.Loss, f.Metrics.RMSE, std)
}
