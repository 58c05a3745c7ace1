package fedopt

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpmf/dpmf/secagg"
)

// TestCheckUpdateExactAtBound checks that the server's check decides the
// norm in exact arithmetic at the bound: with clip chosen so that
// U = UpdateBound(clip, 1) is just below a power of two (an ulp of U is a
// relative 2^-53 there), random vectors of d = 4 to 64 entries scaled to
// norm U include some whose float64 norm rounds above U while their exact
// norm, by math/big.Rat (ratCmp), is at most U: CheckUpdate and
// QuantizeUpdate must accept them (before, the float64 norm refused them;
// the same rounding, a relative (1.01 d + 2) 2^-53, refuses a Clip output
// of exact norm B_g from d of about 10^7), and Release must aggregate
// them. Vectors whose exact and float64 norms both exceed U must still be
// refused (one whose float64 norm is within U is accepted, as before, and
// aggregated scaled to exact norm tau B_g: TestReleaseHoldsUpdateToBound).
func TestCheckUpdateExactAtBound(t *testing.T) {
	const clip = 1.99999999
	U := UpdateBound(clip, 1)
	rng := rand.New(rand.NewPCG(7, 11))
	q, err := secagg.NewQuantizer(1, 1, clip)
	if err != nil {
		t.Fatal(err)
	}
	roundedOut, over := 0, 0
	for _, d := range []int{4, 8, 16, 64} {
		srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: clip}, Shape{Learners: 1, Rounds: 1 << 20, Tau: 1, Dim: d}, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]uint64, d)
		for try := 0; try < 1500; try++ {
			u := make([]float64, d)
			ss := 0.0
			for k := range u {
				u[k] = rng.NormFloat64()
				ss += u[k] * u[k]
			}
			n := math.Sqrt(ss)
			for k := range u {
				u[k] = u[k] / n * U
			}
			within := ratCmp(u, U, 1) <= 0
			if within && updateNorm(u) > U {
				roundedOut++
			}
			err := srv.CheckUpdate(u)
			switch {
			case within && err != nil:
				t.Errorf("d = %d: CheckUpdate refused an update of exact norm at most UpdateBound = %v (float64 norm %v): %v", d, U, updateNorm(u), err)
			case !within && updateNorm(u) > U:
				over++
				if err == nil {
					t.Errorf("d = %d: CheckUpdate accepted an update whose exact and float64 norms (%v) are above UpdateBound = %v", d, updateNorm(u), U)
				}
			}
			qerr := QuantizeUpdate(q, dst, u, clip, 1)
			if within && qerr != nil || !within && updateNorm(u) > U && qerr == nil {
				t.Errorf("d = %d: QuantizeUpdate: %v, exact norm within UpdateBound: %v, float64 norm %v", d, qerr, within, updateNorm(u))
			}
			if within && updateNorm(u) > U && srv.Round() < 3 {
				if err := srv.Release([][]float64{u}); err != nil {
					t.Errorf("d = %d: Release of an update of exact norm within UpdateBound: %v", d, err)
				}
			}
		}
	}
	if over == 0 {
		t.Errorf("no vector above the bound was drawn: the test checks nothing on that side")
	}
	if roundedOut == 0 {
		t.Errorf("no vector of exact norm within the bound had a float64 norm above it: the test checks nothing at the boundary")
	}
}
