package fedopt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// foldRef is foldRing's definition evaluated in math/big: v itself within
// [-most, most], else most - floor((v - most) s) or -most + floor((-most -
// v) s), s = 2 most / (2^64 - 2 most).
func foldRef(v, most int64) int64 {
	if v >= -most && v <= most {
		return v
	}
	if most == 0 {
		return 0
	}
	den := new(big.Int).Lsh(big.NewInt(1), 64)
	den.Sub(den, big.NewInt(2*most))
	t := big.NewInt(v)
	if v > most {
		t.Sub(t, big.NewInt(most))
	} else {
		t.Neg(t).Sub(t, big.NewInt(most))
	}
	t.Mul(t, big.NewInt(2*most))
	t.Quo(t, den) // t >= 0: truncation is the floor
	if v > most {
		return most - t.Int64()
	}
	return -most + t.Int64()
}

// TestFoldRingLipschitz checks foldRing against its definition in math/big
// and, by brute force around every place where its formula changes (the
// range's edges, the wrap point 2^63 - 1 to -2^63) and at random points,
// that one step along the ring moves it by at most 1 (so it is 1-Lipschitz
// in the ring's circular distance) and that it stays in [-most, most]. The
// most values are 0, 1, 2^53 and values between.
func TestFoldRingLipschitz(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, most := range []int64{0, 1, 2, 1000, 1<<40 + 12345, 1<<53 - 1, 1 << 53} {
		var starts []int64
		for _, c := range []int64{-most, most, math.MaxInt64, math.MinInt64, 0} {
			starts = append(starts, c-40)
		}
		for range 200 {
			starts = append(starts, int64(rng.Uint64()))
		}
		for _, a := range starts {
			prev := foldRing(a, most)
			for i := int64(0); i <= 80; i++ {
				v := a + i // wraps at 2^63 - 1, as the ring does
				got := foldRing(v, most)
				if want := foldRef(v, most); got != want {
					t.Fatalf("foldRing(%d, %d) = %d, want %d", v, most, got, want)
				}
				if got < -most || got > most {
					t.Fatalf("foldRing(%d, %d) = %d, outside [-most, most]", v, most, got)
				}
				if i > 0 && (got-prev > 1 || prev-got > 1) {
					t.Fatalf("foldRing(%d, %d) = %d and foldRing(%d) = %d: one step moved it by more than 1", v-1, most, prev, v, got)
				}
				prev = got
			}
		}
	}
	// By hand: the wrap point's two sides at most = 2^53.
	if a, b := foldRing(math.MaxInt64, 1<<53), foldRing(math.MinInt64, 1<<53); a != 1 || b != 0 {
		t.Errorf("foldRing at 2^63 - 1 and -2^63 = %d, %d, want 1, 0", a, b)
	}
}
