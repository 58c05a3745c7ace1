package fedopt

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
	"github.com/dpmf/dpmf/secagg"
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

// TestServerKeepsItsRecord: NewServer checked the Privacy and the
// Quantizer it was given, and kept the caller's pointers: a change of the
// caller's record after NewServer (its eps lowered ten times) changed the
// guarantee Server.Record states, and a change of the caller's quantizer
// (its scale bits) the quantization the record's term was checked
// against, with no check. The server must keep what it checked: its
// record is the one made by PrivacyOf, (1, 1e-5) here, whatever the
// caller does with its copy afterwards, and Config returns copies.
func TestServerKeepsItsRecord(t *testing.T) {
	pr, noise := planRun(t, buildPlan(t, "identity", 4, 1, 10), 3)
	srv, err := NewServer(Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}, Shape{Learners: 10, Rounds: 4, Tau: 1, Dim: 3}, noise)
	if err != nil {
		t.Fatal(err)
	}
	pr.Eps, pr.Delta = 0.1, 1e-10
	if rec, _ := srv.Record(); rec.Eps != 1 || rec.Delta != 1e-5 {
		t.Errorf("after the caller's record was changed: the server states (%v, %v)-DP, want the (1, 1e-5) it checked", rec.Eps, rec.Delta)
	}
	srv.Config().Privacy.Eps = 0.1
	if rec, _ := srv.Record(); rec.Eps != 1 {
		t.Errorf("after Config().Privacy was changed: the server states eps = %v, want 1", rec.Eps)
	}
}

// TestServerKeepsItsQuantizer: as TestServerKeepsItsRecord, for the
// quantizer of secure aggregation: the caller's Quantizer changed after
// NewServer (scale bits 0, so that every update quantizes to 0) must not
// change what the server releases. With the server's own copy, a round of
// one update u = (0.5, 0, 0) from x^0 = 0 with no noise (NonPrivate) and
// eta~ = 1 releases x^1 = -u / (n tau) = -0.25 in its first entry (n = 2,
// tau = 1: by hand), within the quantization step 2^-k.
func TestServerKeepsItsQuantizer(t *testing.T) {
	q, err := secagg.NewQuantizer(2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Algorithm: NonPrivate, Eta: 1, EtaG: 1, Clip: 1, Quantizer: &q}
	srv, err := NewServer(cfg, Shape{Learners: 2, Rounds: 1, Tau: 1, Dim: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := q.ScaleBits
	q.ScaleBits = 0
	if err := srv.Release([][]float64{{0.5, 0, 0}, nil}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Model()[0]; math.Abs(got+0.25) > math.Ldexp(1, -k) {
		t.Errorf("x^1[0] = %v after the caller's quantizer was changed, want -0.25 (the quantizer the server checked)", got)
	}
}

// TestServerRefusesRecordOfAnotherParticipation: a plan's record does not
// name the participation its sensitivity of C is under, and for the
// strategies whose C does not depend on it (identity, tree, banded) the
// operator's digest is the same under every participation. A plan
// calibrated under single participation whose participation was then
// set to epochs:2 passed PrivacyOf, and NewServer accepted it with the
// mechanism of the calibrated factorization: the record then allowed data
// replayed twice (fedopt.CheckEpochs reads the record's participation)
// at the single-participation sensitivity. By hand, over R = 4 rounds with
// a sample in rounds i and i + 2: the identity's sensitivity is sqrt(2)
// against 1, the tree's sqrt(8) (its two leaves and pairs, and the root
// twice: 1 + 1 + 1 + 1 + 2^2) against sqrt(3), the banded (2 bands,
// unit columns, C's columns i and i + 2 disjoint) sqrt(2) against 1. The
// server must refuse each: C's sensitivity under the record's
// participation, computed from the operator it streams, exceeds the
// record's.
func TestServerRefusesRecordOfAnotherParticipation(t *testing.T) {
	for _, c := range []struct {
		strategy    string
		single, two float64
	}{{"identity", 1, math.Sqrt2}, {"tree", math.Sqrt(3), math.Sqrt(8)}, {"banded:bands=2", 1, math.Sqrt2}} {
		t.Run(c.strategy, func(t *testing.T) {
			p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: c.strategy, Rounds: 4, Learners: 2, Tau: 1, Clip: 1, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
			f, err := p.Build(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Privacy.UnitSensitivity; math.Abs(got-c.single) > 1e-12 {
				t.Fatalf("record's sensitivity of C %v under single participation, want %v (by hand)", got, c.single)
			}
			g, err := factorize.Prefix(4)
			if err != nil {
				t.Fatal(err)
			}
			_, two, err := factorize.StreamedSensitivity(&factorize.Factorization{Strategy: f.Strategy, Workload: g, Operator: f.Operator}, factorize.FixedEpochs(2))
			if err != nil || math.Abs(two.Value-c.two) > 1e-12 {
				t.Fatalf("sensitivity of C under epochs:2: %v (%v), want %v (by hand)", two.Value, err, c.two)
			}
			p.Participation = "epochs:2"
			pr, err := PrivacyOf(p)
			if err != nil {
				return // refused by PrivacyOf: as good
			}
			noise, err := mechanism.New(f, 3, pr.NoiseStd, mechanism.WithSeed(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewServer(Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}, Shape{Learners: 2, Rounds: 4, Tau: 1, Dim: 3}, noise)
			if err == nil || !strings.Contains(err.Error(), "privacy record") {
				t.Errorf("a record of single participation relabelled epochs:2: error %v, want a refusal naming the privacy record", err)
			}
		})
	}
}

// TestServerRecordNamesItsParticipation: the participation a record
// states (Record.Participation, which Server.Record reports with the
// guarantee) must be the pattern its sensitivity of C is under
// (ParticipationPattern, which the server checks against C and the
// learners' data against): a record of single participation labelled
// epochs:2 claims (eps, delta) for a sample that takes part twice, which
// its noise does not give (the identity's sensitivity is sqrt(2) under
// epochs:2, by hand, against the record's 1). NewServer accepted it.
func TestServerRecordNamesItsParticipation(t *testing.T) {
	pr, noise := planRun(t, buildPlan(t, "identity", 4, 1, 10), 3)
	if pr.Participation != "single" {
		t.Fatalf("record participation %q, want single", pr.Participation)
	}
	pr.Participation = "epochs:2"
	_, err := NewServer(Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}, Shape{Learners: 10, Rounds: 4, Tau: 1, Dim: 3}, noise)
	if err == nil || !strings.Contains(err.Error(), "privacy record") {
		t.Errorf("a record of single participation labelled epochs:2: error %v, want a refusal naming the privacy record", err)
	}
}
