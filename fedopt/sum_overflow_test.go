package fedopt

import (
	"context"
	"math"
	"testing"

	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// TestReleaseSumOverflowNotDataDependent checks the server's aggregate
// where n tau B_g exceeds MaxFloat64 but the mean direction does not.
//
// Exact reference, by hand: n = 2, tau = 1, B_g = 2^1023, both learners
// send 2^1023 e_1 (within tau B_g). Without noise, x^1 = -eta eta_g tau
// (2^1023 + 2^1023) / 2 = -2^-3 2^1023 = -2^1020 at eta = 2^-3: the float64
// sum 2^1024 overflows, and the server refused the round as one whose
// model would be -Inf.
//
// Privacy: with a record calibrated for n = 10, tau = 1, B_g = 2^1022
// (identity factorization, one round), four learners sending 2^1022 e_1
// sum to 2^1024 (+Inf in float64), three to 3 2^1022 (finite). The two
// are neighbours (one sample of learner 3 replaced: its update moves by
// B_g), yet the first was refused every time and the second released:
// whether the round is released then depends on one sample with no
// noise in between, which no (eps, delta) covers. Both must be released,
// with the mean direction 4 2^1022 / 10 (resp. 3 2^1022 / 10) plus the
// noise, and x^1 = -(g + w) at eta = eta_g = tau = 1.
func TestReleaseSumOverflowNotDataDependent(t *testing.T) {
	cfg := Config{Algorithm: NonPrivate, Eta: 0x1p-3, EtaG: 1, Clip: 0x1p1023}
	srv, err := NewServer(cfg, Shape{Learners: 2, Rounds: 1, Tau: 1, Dim: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Release([][]float64{{0x1p1023}, {0x1p1023}}); err != nil {
		t.Fatalf("two updates of norm tau B_g = 2^1023: %v, want x^1 = -2^1020", err)
	}
	if got, want := srv.Model()[0], -0x1p1020; got != want {
		t.Errorf("x^1 = %v, want -eta (2^1023 + 2^1023) / 2 = %v", got, want)
	}

	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: "identity", Rounds: 1, Learners: 10, Tau: 1, Clip: 0x1p1022, Target: &plan.Target{Eps: 5, Delta: 1e-3}}
	if _, err := p.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	pr, err := PrivacyOf(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Factorize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, present := range []int{3, 4} {
		noise, err := mechanism.New(f, 1, pr.NoiseStd, mechanism.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		w := make([]float64, 1)
		ref, err := mechanism.New(f, 1, pr.NoiseStd, mechanism.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := ref.Next(w); err != nil {
			t.Fatal(err)
		}
		pc := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 0x1p1022, Privacy: pr}
		srv, err := NewServer(pc, Shape{Learners: 10, Rounds: 1, Tau: 1, Dim: 1}, noise)
		if err != nil {
			t.Fatal(err)
		}
		updates := make([][]float64, 10)
		for i := range present {
			updates[i] = []float64{0x1p1022}
		}
		if err := srv.Release(updates); err != nil {
			t.Errorf("%d learners at tau B_g = 2^1022 (a neighbour of %d): %v, want a release", present, 7-present, err)
			continue
		}
		g := float64(present) * 0x1p1022 / 10 // exact sum, one rounding
		if got, want := srv.Model()[0], -(g + w[0]); math.Abs(got-want) > 1e-15*math.Abs(want) {
			t.Errorf("%d learners: x^1 = %v, want -(%v + %v) = %v", present, got, g, w[0], want)
		}
	}
}
