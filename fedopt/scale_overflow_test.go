package fedopt

import (
	"math"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// TestServerScaleWithoutIntOverflow checks that the server divides the
// aggregate by n tau as a real number where the integer product n tau
// wraps around: n = 2^10 and tau = 2^54 + 4 make n tau = 2^64 + 2^12,
// which as an int is 4096. Dividing by 4096 instead of n tau would
// multiply the direction (and its sensitivity, 2 B_g / n in the privacy
// record) by about 2^52. On a 32-bit platform the product wraps already
// at n = 1000, tau = 2^22.
//
// Reference, by hand: one learner sends u = (tau B_g) e_1 with B_g = 1
// (norm tau B_g, within the bound); without noise x^1 = -eta eta_g tau
// u / (n tau) = -eta eta_g tau / n, here with eta = 2^-60, eta_g = 1:
// -2^-60 (2^54 + 4) / 2^10 = -(2^-16 + 2^-68), exact in float64.
func TestServerScaleWithoutIntOverflow(t *testing.T) {
	if math.MaxInt < 1<<62 {
		t.Skip("64-bit int needed for tau = 2^54 + 4")
	}
	// tau as a variable: the constant does not fit the int of a 32-bit
	// platform, where the test does not run but must compile.
	const n = 1 << 10
	var tau64 int64 = 1<<54 + 4
	tau := int(tau64)
	cfg := Config{Algorithm: NonPrivate, Eta: 0x1p-60, EtaG: 1, Clip: 1}
	srv, err := NewServer(cfg, Shape{Learners: n, Rounds: 1, Tau: tau, Dim: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	updates := make([][]float64, n)
	updates[0] = []float64{float64(tau)}
	if err := srv.Release(updates); err != nil {
		t.Fatal(err)
	}
	want := -(0x1p-16 + 0x1p-68)
	if got := srv.Model()[0]; got != want {
		t.Errorf("x^1 = %v, want -eta eta_g tau / n = %v (the aggregate divided by n tau = 2^64 + 2^12, not by the wrapped int product)", got, want)
	}
}

// TestCheckEpochsCountWithoutOverflow checks CheckEpochs' count of a
// client's rounds where rounds + period - 1 exceeds MaxInt. By hand: with
// R = MaxInt rounds and data of 2 epochs of period MaxInt - 1, the client
// at offset 0 takes part in rounds 0 and MaxInt - 1, both below R: two
// rounds, which minsep:(MaxInt-1),1 (at most one round) does not allow,
// and minsep:(MaxInt-1),2 does. The ceiling (R + period - 1) / period
// wrapped to a negative sum, counted 0 rounds and accepted the first.
func TestCheckEpochsCountWithoutOverflow(t *testing.T) {
	const R, period = math.MaxInt, math.MaxInt - 1
	if err := CheckEpochs(factorize.MinSeparation(period, 1), R, 2, period); err == nil {
		t.Error("data of 2 epochs, both in the run, accepted under minsep with at most 1 participation")
	}
	if err := CheckEpochs(factorize.MinSeparation(period, 2), R, 2, period); err != nil {
		t.Errorf("data of 2 epochs under minsep with at most 2 participations: %v", err)
	}
}
