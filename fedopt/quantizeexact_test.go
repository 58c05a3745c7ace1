package fedopt

import (
	"math"
	"math/rand"
	"testing"

	"github.com/dpmf/dpmf/secagg"
)

// TestQuantizeUpdateExactNorm checks QuantizeUpdate after the revsecagg
// merge, whose conflict with clipfast's clearlyWithin was resolved by
// hand, on 3000 random updates (1 to 50 entries, some zero; clip from
// e^-9 to e^9, tau 1 to 5) scaled to norms within about 1e-14 of tau clip,
// of UpdateBound and in between, and up to 1e-6 below: an update whose
// measured norm exceeds UpdateBound is refused; one whose exact norm
// (math/big) is at most tau clip is quantized bit for bit as
// Quantize quantizes it; one above tau clip in exact arithmetic is
// quantized as its scaling by scaleInto, whose exact norm is at most tau
// clip. Each of the three cases occurs hundreds of times.
func TestQuantizeUpdateExactNorm(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var refused, within, above int
	for range 3000 {
		d, tau := 1+rng.Intn(50), 1+rng.Intn(5)
		clip := math.Exp(rng.NormFloat64() * 3)
		q, err := secagg.NewQuantizer(2+rng.Intn(10), tau, clip)
		if err != nil {
			t.Fatal(err)
		}
		u := make([]float64, d)
		for k := range u {
			if rng.Intn(5) > 0 {
				u[k] = rng.NormFloat64()
			}
		}
		n := updateNorm(u)
		if n == 0 {
			continue
		}
		f := []float64{
			1 + (rng.Float64()-0.5)*1e-14,
			1 + 1e-9 + (rng.Float64()-0.5)*1e-14,
			1 + rng.Float64()*2e-9,
			1 - rng.Float64()*1e-6,
		}[rng.Intn(4)]
		c := float64(tau) * clip * f / n
		for k := range u {
			u[k] *= c
		}
		bound := UpdateBound(clip, tau)
		dst := make([]uint64, d)
		err = QuantizeUpdate(q, dst, u, clip, tau)
		if updateNorm(u) > bound {
			if err == nil {
				t.Fatalf("an update of norm %v > UpdateBound %v (tau %d, clip %v) was quantized", updateNorm(u), bound, tau, clip)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("an update of norm %v <= UpdateBound %v (tau %d, clip %v): %v", updateNorm(u), bound, tau, clip, err)
		}
		v := u
		if squaresCmp(u, tau, clip) > 0 {
			above++
			v = make([]float64, d)
			scaleInto(v, u, clip, tau)
			if squaresCmp(v, tau, clip) > 0 {
				t.Fatalf("the scaled update's exact norm exceeds tau clip (tau %d, clip %v)", tau, clip)
			}
		} else {
			within++
		}
		want := make([]uint64, d)
		if err := q.Quantize(want, v, bound); err != nil {
			t.Fatal(err)
		}
		for k := range dst {
			if dst[k] != want[k] {
				t.Fatalf("tau %d, clip %v, exact norm above tau clip %v: entry %d quantized to %d, want %d", tau, clip, &v[0] != &u[0], k, dst[k], want[k])
			}
		}
	}
	if refused < 100 || within < 100 || above < 100 {
		t.Errorf("refused %d, within %d, above %d: want each case at least 100 times", refused, within, above)
	}
}
