package fedopt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// TestCalibratedPlansAccepted: every plan that plan.Plan.Build calibrates
// (each strategy the registry lists, each participation, relation,
// calibration, secure aggregation and algorithm it allows at
// R = 8) gives a record that NewServer accepts with the plan's own noise,
// and a refusal is one line; a plan Build refuses is skipped. A refusal of
// a calibrated plan would stop a valid run at its start. The amplified
// accounting (Target.Sampling) is left out: PrivacyOf refuses its method,
// so no such record reaches NewServer. With -short each strategy,
// participation and algorithm is tried with one of the twelve
// combinations of tau, target and secure aggregation, in turn (92 of the
// 1104 plans the full product builds in 3.5 s).
func TestCalibratedPlansAccepted(t *testing.T) {
	const R, n, dim = 8, 4, 3
	built, refused, combo := 0, 0, 0
	for _, algo := range []string{plan.AlgoCorrelated, plan.AlgoBaselineCorrelated, plan.AlgoIndependent} {
		for _, s := range factorize.Strategies() {
			for _, part := range []string{"single", "epochs:2", "minsep:2", "minsep:4,2"} {
				for _, tau := range []int{1, 2} {
					for _, target := range []plan.Target{
						{Eps: 1, Delta: 1e-5},
						{Eps: 1, Delta: 1e-5, Relation: "add-remove"},
						{Eps: 1, Delta: 1e-5, Calibration: plan.Paper},
					} {
						for _, secure := range []bool{false, true} {
							k := combo
							combo++
							if testing.Short() && k%12 != (k/12)%12 {
								continue
							}
							name := fmt.Sprintf("%s/%s/%s/tau=%d/%+v/secure=%v", algo, s, part, tau, target, secure)
							p := &plan.Plan{Algorithm: algo, Strategy: s, Participation: part, Rounds: R, Learners: n, Tau: tau, Clip: 1, Target: &target}
							if secure {
								sa, err := plan.NewSecureAggregation(n, tau, 1, dim, 0)
								if err != nil {
									t.Fatal(err)
								}
								p.SecureAggregation = sa
							}
							f, err := p.Build(context.Background())
							if err != nil {
								refused++
								continue
							}
							built++
							pr, err := fedopt.PrivacyOf(p)
							if err != nil {
								t.Errorf("%s: PrivacyOf: %v", name, err)
								continue
							}
							a, err := fedopt.ParseAlgorithm(algo)
							if err != nil {
								t.Fatal(err)
							}
							cfg := fedopt.Config{Algorithm: a, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr}
							if secure {
								q := p.SecureAggregation.Quantizer()
								cfg.Quantizer = &q
							}
							noise, err := mechanism.New(f, dim, pr.NoiseStd, mechanism.WithSeed(1))
							if err != nil {
								t.Errorf("%s: mechanism: %v", name, err)
								continue
							}
							shape := fedopt.Shape{Learners: n, Rounds: R, Tau: tau, Dim: dim}
							if _, err := fedopt.NewServer(cfg, shape, noise); err != nil {
								t.Errorf("%s: NewServer refuses a calibrated plan: %v", name, err)
							}
							// The same record claiming a tenth of its eps
							// is refused, in one line.
							edited := *pr
							edited.Eps /= 10
							cfg.Privacy = &edited
							if noise, err = mechanism.New(f, dim, pr.NoiseStd, mechanism.WithSeed(1)); err != nil {
								t.Fatal(err)
							}
							if _, err := fedopt.NewServer(cfg, shape, noise); err == nil || strings.Contains(err.Error(), "\n") {
								t.Errorf("%s: a record claiming eps / 10: error %q, want a one-line refusal", name, err)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d plans built, %d refused by Build", built, refused)
	if built == 0 {
		t.Fatal("no plan built")
	}
}
