package audit

import (
	"context"
	"math"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// TestDefaultCanaries: under exact calibration mu = 1 / sigma(eps, delta)
// whatever the strategy, so at (5, 1e-3) with the published sigma
// 0.68984233 and z = 2.5758293035489 (Phi(z) = 0.995) the default is
// ceil(400 z^2 (1 + mu^2 / 8) / mu^2) = ceil(1594.7) = 1595 (docs/audit.md).
// Where mu is tiny (eps = 1e-9, delta = 1e-12: mu about 4e-10, so 400 z^2
// / mu^2 is about 1.6e22, beyond int64) the default is all the slots,
// n R = 2000; the float-to-int conversion overflowed there and gave 1000
// on amd64 (a test that fails before the fix). A level outside (0, 1) is
// an error.
func TestDefaultCanaries(t *testing.T) {
	mu := 1 / 0.68984233
	z := 2.5758293035489
	want := int(math.Ceil(400 * z * z * (1 + mu*mu/8) / (mu * mu)))
	if want != 1595 {
		t.Fatalf("closed form %d, want 1595", want)
	}
	s := mustSetup(t, Plan{Strategy: factorize.IdentityStrategy{}, Learners: 10, Rounds: 800, Tau: 1, Dim: 3, Eps: 5, Delta: 1e-3, Seed: 1})
	if got, err := DefaultCanaries(s, 0); err != nil || got != want {
		t.Errorf("(5, 1e-3): %d canaries (%v), want %d", got, err, want)
	}
	if _, err := DefaultCanaries(s, 1); err == nil {
		t.Error("level 1 accepted")
	}
	tiny := mustSetup(t, Plan{Strategy: factorize.IdentityStrategy{}, Learners: 10, Rounds: 200, Tau: 1, Dim: 3, Eps: 1e-9, Delta: 1e-12, Seed: 1})
	if got, err := DefaultCanaries(tiny, 0); err != nil || got != 2000 {
		t.Errorf("mu %v: %d canaries (%v), want the 2000 slots", tiny.Privacy.Sensitivity/tiny.Privacy.NoiseStd, got, err)
	}
	rep, err := Canary(context.Background(), tiny, CanaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Canaries != 2000 {
		t.Errorf("Canary planted %d canaries at mu %v, want the 2000 slots", rep.Canaries, rep.MuClaimed)
	}
}
