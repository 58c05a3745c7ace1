package audit

import (
	"context"
	"math"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/plan"
)

// canaryPlan is a reduced Fig. 4 setting: n = 10, R = 100, tau = 3.
func canaryPlan(strategy string, eps float64, seed uint64) Plan {
	s, err := factorize.ParseStrategy(strategy)
	if err != nil {
		panic(err)
	}
	return Plan{Strategy: s, Learners: 10, Rounds: 100, Tau: 3, Eps: eps, Seed: seed}
}

// TestCanaryCorrectRun: for a correct run the 99% interval of mu-hat holds
// the analytic mu = sensitivity / noise std (fails with probability 1% for
// a random seed; the seeds are fixed), for both observers, and no
// violation is reported.
func TestCanaryCorrectRun(t *testing.T) {
	for _, name := range []string{"optimal", "tree", "identity"} {
		s := mustSetup(t, canaryPlan(name, 5, 11))
		rep, err := Canary(context.Background(), s, CanaryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []Observer{rep.AllIterates, rep.FinalModel} {
			t.Logf("%s: m %d, analytic mu %.4f, mu-hat %.4f [%.4f, %.4f], score std %.4f, eps lower bound %.3f (%d/%d), %.2fs",
				name, rep.Canaries, o.MuAnalytic, o.Mu.Mu, o.Mu.Lo, o.Mu.Hi, o.Mu.Sigma, o.Bound.Epsilon, o.Bound.Correct, o.Bound.Guesses, rep.Seconds)
			if !o.Contains {
				t.Errorf("%s: interval [%v, %v] misses the analytic mu %v", name, o.Mu.Lo, o.Mu.Hi, o.MuAnalytic)
			}
		}
		if rep.Violation {
			t.Errorf("%s: violation reported for a correct run", name)
		}
	}
}

// TestCanaryHalvedNoise: with the noise halved while the mechanism reports
// the calibrated std (a test-only hook), the interval lies above the
// claimed mu and the audit reports a violation.
func TestCanaryHalvedNoise(t *testing.T) {
	s := mustSetup(t, canaryPlan("optimal", 5, 12))
	rep, err := canary(context.Background(), s, CanaryOptions{}, &hooks{noiseScale: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	o := rep.AllIterates
	t.Logf("claimed mu %.4f, mu-hat %.4f [%.4f, %.4f]", rep.MuClaimed, o.Mu.Mu, o.Mu.Lo, o.Mu.Hi)
	if !(o.Mu.Lo > rep.MuClaimed) || !rep.Violation {
		t.Errorf("halved noise not flagged: interval [%v, %v], claimed %v, violation %v", o.Mu.Lo, o.Mu.Hi, rep.MuClaimed, rep.Violation)
	}
}

// TestCanaryFig4Long (DPMF_LONG=1): the paper's Fig. 4 setting (n = 10,
// R = 800, tau = 10) for the strategies of docs/audit.md at (5, 1e-3) and
// (1, 1e-3): the 99.9% interval holds the analytic mu for both observers
// (24 intervals, each failing with probability 0.1%: a false failure for at
// most 2.4% of seeds; the seed is fixed), and with the noise halved the
// audit reports a violation. (At 99% one of the 24 intervals of seed 1
// misses: banded at (1, 1e-3), z = -2.9; see docs/audit.md.)
func TestCanaryFig4Long(t *testing.T) {
	if !long() {
		t.Skip("DPMF_LONG=1 runs the Fig. 4 canary audits (minutes)")
	}
	ctx := context.Background()
	for _, eps := range []float64{5, 1} {
		for _, name := range []string{"identity", "tree", "banded", "blt", "semiseparable", "optimal"} {
			st, err := factorize.ParseStrategy(name)
			if err != nil {
				t.Fatal(err)
			}
			s := mustSetup(t, Plan{Strategy: st, Eps: eps, Seed: 1})
			rep, err := Canary(ctx, s, CanaryOptions{Level: 0.999})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []Observer{rep.AllIterates, rep.FinalModel} {
				if !o.Contains {
					t.Errorf("%s eps %g: [%v, %v] misses %v", name, eps, o.Mu.Lo, o.Mu.Hi, o.MuAnalytic)
				}
			}
			if rep.Violation {
				t.Errorf("%s eps %g: violation on a correct run", name, eps)
			}
			half, err := canary(ctx, s, CanaryOptions{}, &hooks{noiseScale: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			if !half.Violation || !(half.AllIterates.Mu.Lo > half.MuClaimed) {
				t.Errorf("%s eps %g: halved noise not flagged: [%v, %v], claimed %v", name, eps, half.AllIterates.Mu.Lo, half.AllIterates.Mu.Hi, half.MuClaimed)
			}
		}
	}
}

// TestCanaryPaperCalibration: the paper's calibration declares a
// sensitivity n times the exact one, so the canaries reach mu = claimed /
// n (closed form for the optimal factorization, whose columns all have
// norm gamma), the interval holds it, and nothing is a violation.
func TestCanaryPaperCalibration(t *testing.T) {
	p := canaryPlan("optimal", 5, 13)
	p.Calibration = plan.Paper
	rep, err := Canary(context.Background(), mustSetup(t, p), CanaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := rep.AllIterates
	want := rep.MuClaimed / float64(p.Learners)
	if math.Abs(o.MuAnalytic/want-1) > 1e-9 {
		t.Errorf("analytic mu %v, want claimed / n = %v", o.MuAnalytic, want)
	}
	if !o.Contains || rep.Violation {
		t.Errorf("interval [%v, %v] for %v, violation %v", o.Mu.Lo, o.Mu.Hi, want, rep.Violation)
	}
}
