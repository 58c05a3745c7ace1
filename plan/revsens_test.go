package plan

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/testutil"
)

// TestRevsensCalibrationBruteForce builds the plan of every registered
// strategy at R = 8 under single participation, 2 and 4 epochs and
// min-separations (with as many participations as fit, a limit, and a
// separation beyond R), replace-one, clip 0.5, 4 learners, (1, 1e-5)-DP
// exact, and checks the record against values obtained without dpmf's
// rules: the unit sensitivity is not below the brute force
// (internal/testutil) over every pattern of the plan's factorization's C,
// and not above its upper bound where the record says exact; the release
// sensitivity is 2 clip / n times it; the noise multiplier is the
// published sigma(1, 1e-5) = 3.73063163 (notes.md, section 4), on the safe
// side.
func TestRevsensCalibrationBruteForce(t *testing.T) {
	const (
		r       = 8
		clip    = 0.5
		n       = 4
		sigma15 = 3.73063163 // published, 9 significant digits
	)
	parts := []struct {
		spec string
		kind string
		b, k int
	}{
		{"single", "single", 0, 0}, {"epochs:2", "epochs", 0, 2}, {"epochs:4", "epochs", 0, 4},
		{"minsep:3", "minsep", 3, 0}, {"minsep:2,2", "minsep", 2, 2}, {"minsep:1", "minsep", 1, 0}, {"minsep:11", "minsep", 11, 0},
	}
	built := 0
	for _, name := range factorize.Strategies() {
		for _, pc := range parts {
			p := &Plan{Rounds: r, Participation: pc.spec, Strategy: name, Algorithm: AlgoCorrelated,
				Learners: n, Tau: 1, Clip: clip, Target: &Target{Eps: 1, Delta: 1e-5}}
			what := fmt.Sprintf("%s under %s", name, pc.spec)
			f, err := p.Build(t.Context())
			if err != nil {
				t.Logf("%s: %v", what, err)
				continue
			}
			built++
			_, c, err := f.Factors()
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			lo, hi := testutil.SensBracket(c, testutil.SensPatterns(pc.kind, r, pc.b, pc.k))
			rec := p.Privacy
			tol := 1e-12 * (1 + hi)
			if rec.UnitSensitivity < lo-tol {
				t.Errorf("%s: PRIVACY: record's unit sensitivity %v, brute force %.17g", what, rec.UnitSensitivity, lo)
			}
			if rec.UnitExact && rec.UnitSensitivity > hi+tol {
				t.Errorf("%s: record's unit sensitivity %v exact, brute force at most %.17g", what, rec.UnitSensitivity, hi)
			}
			if want := 2 * clip / n * rec.UnitSensitivity; math.Abs(rec.Sensitivity-want) > 1e-15*want {
				t.Errorf("%s: release sensitivity %v, want 2 clip / n x %v = %v", what, rec.Sensitivity, rec.UnitSensitivity, want)
			}
			if s := rec.NoiseStd / rec.Sensitivity; s < sigma15-5e-9 || s > sigma15*(1+1e-7) {
				t.Errorf("%s: noise multiplier %v, published sigma(1, 1e-5) = %v", what, s, sigma15)
			}
		}
	}
	if built < 50 {
		t.Errorf("only %d plans built", built)
	}
}

// TestRevsensParticipationCheckedForEveryWorkload pins that Validate
// refuses a participation that is not valid over the plan's rounds
// whatever the workload: a plan mfsolve prints for momentum, weighted
// prefix sums or a matrix has Rounds = the workload's R too, but Validate
// checked the pattern against the rounds only for the prefix sums, so
// epochs:3 over 10 rounds passed for the others.
func TestRevsensParticipationCheckedForEveryWorkload(t *testing.T) {
	for _, wl := range []string{"", WorkloadPrefix, "momentum", "weighted", "matrix"} {
		for _, part := range []string{"epochs:3", "epochs:20"} {
			p := &Plan{Workload: wl, Rounds: 10, Participation: part, Strategy: "optimal"}
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), "participation") || strings.Contains(err.Error(), "\n") {
				t.Errorf("workload %q, %s over 10 rounds: %v, want a one-line error naming the participation", wl, part, err)
			}
		}
		p := &Plan{Workload: wl, Rounds: 10, Participation: "epochs:5", Strategy: "optimal"}
		if err := p.Validate(); err != nil {
			t.Errorf("workload %q, epochs:5 over 10 rounds: %v", wl, err)
		}
	}
}
