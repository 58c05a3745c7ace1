package fedopt

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/plan"
)

// TestPrivacyOfRefusesRelabelledPlan: PrivacyOf copied a plan's record and
// took the participation from the plan, so a plan calibrated under one
// participation and then relabelled gave a Privacy whose accountant.Record
// claimed the guarantee under the new participation at the old
// sensitivity: by hand, over R = 4 rounds the identity's sensitivity under
// epochs:2 is sqrt(2) against the record's 1, the tree's sqrt(8) against
// sqrt(3) (TestServerRefusesRecordOfAnotherParticipation); over R = 8 a
// banded C of 2 unit-norm bands under minsep:2 with k participations has
// sensitivity sqrt(k), so k = 2 -> 4 is sqrt(4) = 2 against sqrt(2). A
// server with the mechanism refuses it (it recomputes C's sensitivity),
// but PrivacyOf's Privacy is also what a trace, ofl evaluate and fednet's
// run description report. PrivacyOf must refuse it, in one line naming the
// participation and both values.
func TestPrivacyOfRefusesRelabelledPlan(t *testing.T) {
	for _, c := range []struct {
		strategy string
		rounds   int
		was, now string
		recorded string  // the record's participation as written
		unit     float64 // C's sensitivity under it, by hand
	}{
		{"identity", 4, "", "epochs:2", "single", 1},
		{"tree", 4, "single", "epochs:2", "single", math.Sqrt(3)},
		{"banded:bands=2", 4, "single", "epochs:2", "single", 1},
		{"banded:bands=2", 8, "minsep:2,2", "minsep:2,4", "minsep:2,2", math.Sqrt2},
	} {
		t.Run(c.strategy+" "+c.recorded+" -> "+c.now, func(t *testing.T) {
			p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: c.strategy, Rounds: c.rounds, Participation: c.was, Learners: 2, Tau: 1, Clip: 1,
				Target: &plan.Target{Eps: 1, Delta: 1e-5}}
			if _, err := p.Build(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := p.Privacy.UnitSensitivity; math.Abs(got-c.unit) > 1e-12 {
				t.Fatalf("C's sensitivity %v under %s, want %v (by hand)", got, c.recorded, c.unit)
			}
			if _, err := PrivacyOf(p); err != nil {
				t.Fatalf("the calibrated plan: %v", err)
			}
			p.Participation = c.now
			pr, err := PrivacyOf(p)
			if err == nil {
				t.Fatalf("a record calibrated under %s relabelled %s: Privacy claims %v under %s", c.recorded, c.now, pr.Sensitivity, pr.Participation)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "participation") ||
				!strings.Contains(msg, `"`+c.recorded+`"`) || !strings.Contains(msg, `"`+c.now+`"`) {
				t.Errorf("error %q, want one line naming the participation, %q and %q", msg, c.recorded, c.now)
			}
		})
	}
}
