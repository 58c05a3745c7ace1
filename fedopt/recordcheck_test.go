package fedopt

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/mechanism"
)

// TestServerRefusesInconsistentPrivacy: NewServer compared a Privacy's
// learners, rounds, tau, clip and noise std with the run's, and its digest
// with the mechanism's factorization, but not its fields with one another:
// a record made by PrivacyOf and then edited (its learners or clip set to
// the run's, its eps or delta lowered, its sensitivity or C's sensitivity
// lowered) was accepted, and Server.Record then stated a guarantee the run
// does not have. By hand, for the identity over R = 4 rounds (C = I, unit
// sensitivity 1) with n = 10 learners and B_g = 1, the record's release
// sensitivity is 2 B_g / n = 0.2 at (1, 1e-5)-DP; each edit below makes
// the true release sensitivity exceed what the noise covers, or claims a
// smaller (eps, delta) than the noise gives, and must be refused. The
// record as made, and one that claims less (a larger eps), are accepted.
func TestServerRefusesInconsistentPrivacy(t *testing.T) {
	p := buildPlan(t, "identity", 4, 1, 10)
	if got := p.Privacy.Sensitivity; math.Abs(got-0.2) > 1e-15 {
		t.Fatalf("record sensitivity %v, want 2 B_g / n = 0.2", got)
	}
	f, err := p.Factorize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ok   bool
		edit func(pr *Privacy, cfg *Config, sh *Shape)
	}{
		{"as made", true, func(*Privacy, *Config, *Shape) {}},
		{"a larger eps", true, func(pr *Privacy, _ *Config, _ *Shape) { pr.Eps = 2 }},
		// One learner: 2 B_g / 1 = 2, ten times the record's 0.2.
		{"learners 10 -> 1", false, func(pr *Privacy, _ *Config, sh *Shape) { pr.Learners, sh.Learners = 1, 1 }},
		// B_g = 100: 2 x 100 / 10 = 20, a hundred times 0.2.
		{"clip 1 -> 100", false, func(pr *Privacy, cfg *Config, _ *Shape) { pr.Clip, cfg.Clip = 100, 100 }},
		{"eps 1 -> 0.1", false, func(pr *Privacy, _ *Config, _ *Shape) { pr.Eps = 0.1 }},
		{"delta 1e-5 -> 1e-10", false, func(pr *Privacy, _ *Config, _ *Shape) { pr.Delta = 1e-10 }},
		{"sensitivity / 10", false, func(pr *Privacy, _ *Config, _ *Shape) { pr.Sensitivity /= 10 }},
		{"C's sensitivity and the release's / 10", false, func(pr *Privacy, _ *Config, _ *Shape) {
			pr.UnitSensitivity.Value /= 10
			pr.Sensitivity /= 10
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, err := PrivacyOf(p)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1}
			sh := Shape{Learners: 10, Rounds: 4, Tau: 1, Dim: 3}
			c.edit(pr, &cfg, &sh)
			cfg.Privacy = pr
			noise, err := mechanism.New(f, 3, pr.NoiseStd, mechanism.WithSeed(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewServer(cfg, sh, noise)
			if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "privacy record") {
				t.Errorf("NewServer: error %v, want accepted %v (a refusal naming the privacy record)", err, c.ok)
			}
		})
	}
}
