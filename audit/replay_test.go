package audit

import (
	"context"
	"math"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/plan"
)

func smallPlan(strategy string, seed uint64) Plan {
	s, err := factorize.ParseStrategy(strategy)
	if err != nil {
		panic(err)
	}
	return Plan{Strategy: s, Learners: 4, Rounds: 16, Tau: 3, Dim: 3, Seed: seed}
}

func mustSetup(t testing.TB, p Plan) *Setup {
	t.Helper()
	s, err := NewSetup(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A correct run under single participation with an exact rule: the
// adversarial sample attains the declared sensitivity 2 gamma B_g / n (a
// closed form), so the ratio is 1 to rounding.
func TestReplayCleanIsTight(t *testing.T) {
	for _, name := range factorize.Strategies() {
		p := smallPlan(name, 7)
		rep, err := Replay(context.Background(), mustSetup(t, p))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !rep.OK {
			t.Fatalf("%s: false alarm: %+v", name, rep.Violations())
		}
		for _, c := range rep.Checks {
			if c.Name == "noise rows independent" && c.Detail != "whitened noise rows pairwise distinct: true" {
				t.Errorf("%s: %s: %q, want no coincidence named (there is none)", name, c.Name, c.Detail)
			}
		}
		s := mustSetup(t, p)
		gamma := 0.0 // the largest column norm of C, from its entries
		m, R := s.Factorization.C.Dims()
		for r := 0; r < R; r++ {
			ss := 0.0
			for a := 0; a < m; a++ {
				ss += s.Factorization.C.At(a, r) * s.Factorization.C.At(a, r)
			}
			gamma = math.Max(gamma, math.Sqrt(ss))
		}
		want := 2 * gamma * 5 / float64(p.Learners)
		if d := rep.Measured/want - 1; d > 1e-12 || d < -1e-9 {
			t.Errorf("%s: measured %v, closed form 2 gamma B_g / n = %v", name, rep.Measured, want)
		}
		t.Logf("%s: ratio %.15f", name, rep.Ratio)
	}
}

// The paper's calibration declares 2 gamma B_g, n times the attained
// 2 gamma B_g / n: the replay passes with ratio 1/n.
func TestReplayPaperCalibration(t *testing.T) {
	p := smallPlan("optimal", 3)
	p.Calibration = plan.Paper
	rep, err := Replay(context.Background(), mustSetup(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || math.Abs(rep.Ratio*float64(p.Learners)-1) > 1e-12 {
		t.Errorf("ok %v, ratio %v, want 1/n = %v", rep.OK, rep.Ratio, 1/float64(p.Learners))
	}
}

// TestReplayReleasedNoise: a server that releases other noise than its
// mechanism drew (here scaled by 1/n, as a server that scales the noisy sum
// to a mean would) is refused by the check "noise released", which
// compares the noise in each released model, (x^r - x^{r+1}) / eta~ - g^r,
// with the recorded vector; the same plans without the defect pass it.
// Before the check the replay passed this run (every check ok) although
// its release is n times less noisy than calibrated.
func TestReplayReleasedNoise(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"optimal", "tree"} {
		s := mustSetup(t, smallPlan(name, 3))
		clean, err := Replay(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !clean.OK {
			t.Fatalf("%s: false alarm: %+v", name, clean.Violations())
		}
		rep, err := replayWith(ctx, s, &hooks{releaseScale: 1 / float64(s.Plan.Learners)}, false)
		if err != nil {
			t.Fatal(err)
		}
		failed := false
		for _, c := range rep.Violations() {
			failed = failed || c.Name == "noise released"
		}
		if rep.OK || !failed {
			t.Errorf("%s: noise released at 1/n of the drawn noise not caught: violations %v", name, names(rep.Violations()))
		}
	}
}
