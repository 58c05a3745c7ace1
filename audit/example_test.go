package audit_test

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/audit"
	"github.com/dpmf/dpmf/factorize"
)

// The replay falsifier on a small run of Algorithm 1 with the optimal
// factorization: the adversarial sample attains the declared sensitivity
// 2 gamma B_g / n exactly, and every check passes.
func ExampleReplay() {
	ctx := context.Background()
	s, err := audit.NewSetup(ctx, audit.Plan{Learners: 4, Rounds: 32, Tau: 3, Dim: 5, Seed: 1})
	if err != nil {
		panic(err)
	}
	rep, err := audit.Replay(ctx, s)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ratio %.6f, checks passed: %v\n", rep.Ratio, rep.OK)
	// Output: ratio 1.000000, checks passed: true
}

// The canary audit of a reduced Fig. 4 setting (R = 100 rounds) with the
// banded factorization at (5, 1e-3): the 99% interval of mu-hat holds the
// analytic mu.
func ExampleCanary() {
	ctx := context.Background()
	s, err := audit.NewSetup(ctx, audit.Plan{Strategy: factorize.BandedStrategy{}, Rounds: 100, Tau: 2, Seed: 3})
	if err != nil {
		panic(err)
	}
	rep, err := audit.Canary(ctx, s, audit.CanaryOptions{Canaries: 1000})
	if err != nil {
		panic(err)
	}
	o := rep.AllIterates
	fmt.Printf("analytic mu %.3f, interval holds it: %v, violation: %v\n", o.MuAnalytic, o.Contains, rep.Violation)
	// Output: analytic mu 1.450, interval holds it: true, violation: false
}
