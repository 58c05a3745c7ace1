package accountant

import (
	"math"
	"testing"
)

// TestSpliceTiltedWindowCutBelowJoin checks splice where the tilted
// computation's window ends below the join index k, its upper tail cut
// into inf, while the untilted one holds masses up to k - 1: the masses
// above the tilted window's last index are then in high.inf, and taking
// the untilted ones there too counts them twice. The exact distribution
// is the binomial(10, 1/2) on indices 0..10 (total mass 1); both inputs
// are exact, so the joined distribution's finite masses plus its
// infinite mass must be 1 to rounding, and each finite mass must be the
// exact one or 0 (moved into inf), never both.
func TestSpliceTiltedWindowCutBelowJoin(t *testing.T) {
	exact := make([]float64, 11)
	for i := range exact {
		exact[i] = float64(binom(10, i)) / 1024
	}
	low := &lossDist{lo: 0, mass: append([]float64(nil), exact...), logErr: math.Log(1e-12)}
	// The tilted computation keeps indices 0..5 and cuts 6..10 into inf;
	// its bound is set so that the join index (where e^(lt - t k) falls
	// to C0) is 9, above its window.
	cut := 0.0
	for _, m := range exact[6:] {
		cut += m
	}
	tau := 0.5
	high := &lossDist{lo: 0, mass: append([]float64(nil), exact[:6]...), inf: cut, tau: tau, logErr: math.Log(1e-12) + tau*9}
	r, ok := splice(low, high)
	if !ok {
		t.Fatal("splice refused two qualifying computations")
	}
	total := r.inf
	for _, m := range r.mass {
		total += m
	}
	if math.Abs(total-1) > 1e-14 {
		t.Errorf("joined total mass %.17g (inf %.6g over %d finite masses from index %d), want 1: a mass is counted twice", total, r.inf, len(r.mass), r.lo)
	}
}

func binom(n, k int) int {
	c := 1
	for i := 0; i < k; i++ {
		c = c * (n - i) / (i + 1)
	}
	return c
}
