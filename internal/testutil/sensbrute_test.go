package testutil

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestSensBruteHand pins the brute-force reference on values by hand:
// the maximal patterns of minsep:2 over 4 rounds; notes.md's published
// C = [[1,0,0,0],[2,1,0,0],[0,1,1,0],[0,0,1,-6]] (single 6, min-separation
// 2 sqrt(41), b = 1 sqrt(63) with the signs (1,1,1,-1)); the identity of
// size 16 with e epochs, sqrt(e).
func TestSensBruteHand(t *testing.T) {
	if got := fmt.Sprint(SensPatterns("minsep", 4, 2, 0)); got != "[[0 2] [0 3] [1 3]]" {
		t.Errorf("minsep:2 over 4 rounds: %s", got)
	}
	if got := fmt.Sprint(SensPatterns("minsep", 5, 2, 2)); got != "[[0 2] [0 3] [0 4] [1 3] [1 4] [2 4]]" {
		t.Errorf("minsep:2,2 over 5 rounds: %s", got)
	}
	if got := fmt.Sprint(SensPatterns("epochs", 6, 0, 2)); got != "[[0 3] [1 4] [2 5]]" {
		t.Errorf("epochs:2 over 6 rounds: %s", got)
	}
	if SensPatterns("epochs", 6, 0, 4) != nil || SensPatterns("minsep", 6, 0, 1) != nil {
		t.Error("bad counts gave patterns")
	}
	c := mat.NewDense(4, 4, []float64{1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, -6})
	for _, tc := range []struct {
		kind    string
		b, k    int
		lo, hi2 float64
	}{{"single", 0, 0, 6, 36}, {"minsep", 2, 0, math.Sqrt(41), 41}, {"minsep", 3, 2, math.Sqrt(41), 41}, {"minsep", 1, 0, math.Sqrt(63), 63}} {
		lo, hi := SensBracket(c, SensPatterns(tc.kind, 4, tc.b, tc.k))
		if math.Abs(lo-tc.lo) > 1e-12 || math.Abs(hi*hi-tc.hi2) > 1e-9 {
			t.Errorf("%s b %d k %d: [%v, %v], want %v and %v^2", tc.kind, tc.b, tc.k, lo, hi, tc.lo, math.Sqrt(tc.hi2))
		}
	}
	id := mat.NewDiagDense(16, nil)
	for i := range 16 {
		id.SetDiag(i, 1)
	}
	for _, e := range []int{1, 2, 4, 8, 16} {
		lo, hi := SensBracket(id, SensPatterns("epochs", 16, 0, e))
		if math.Abs(lo-math.Sqrt(float64(e))) > 1e-12 || lo != hi {
			t.Errorf("identity, %d epochs: [%v, %v], want sqrt(%d)", e, lo, hi, e)
		}
	}
}
