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
