package plan_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/plan"
)

// The plan of a run whose samples come back in 4 fixed epochs, with
// independent noise (the identity factorization) for (5, 1e-3)-DP, 10
// learners and clip 1. A sample takes part in 4 rounds, so C = I has
// sensitivity sqrt(4) = 2 under the participation, the release sensitivity
// is 2 clip / n x 2 = 0.4 (replace-one), and the noise std is the exact
// (5, 1e-3) multiplier 0.68984233 times 0.4. The plan's JSON reads back
// bit for bit: the plan parsed from it writes the same JSON.
func ExamplePlan_Build() {
	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: 100, Participation: "epochs:4",
		Strategy: "identity", Learners: 10, Clip: 1, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	if _, err := p.Build(context.Background()); err != nil {
		log.Fatal(err)
	}
	r := p.Privacy
	fmt.Printf("unit sensitivity %g (exact %v, %s)\n", r.UnitSensitivity, r.UnitExact, r.UnitRule)
	fmt.Printf("release sensitivity %g, noise std %.6f, sigma %.8f\n", r.Sensitivity, r.NoiseStd, r.Sigma)

	js, err := p.Marshal()
	if err != nil {
		log.Fatal(err)
	}
	q, err := plan.Parse(js)
	if err != nil {
		log.Fatal(err)
	}
	js2, err := q.Marshal()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("JSON reads back bit for bit:", bytes.Equal(js, js2), q.Privacy.NoiseStd == r.NoiseStd)
	// Output:
	// unit sensitivity 2 (exact true, epoch residue classes)
	// release sensitivity 0.4, noise std 0.275937, sigma 0.68984233
	// JSON reads back bit for bit: true true
}
