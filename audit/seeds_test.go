package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/mechanism"
)

// TestStreamSeedsDistinct checks the derivation of the audits' streams
// (seeds.go) against SHA-256 computed here from the documented bytes, and
// that the streams do not collide: the two noise keys differ from each
// other and from the noise key of every repetition k < 2^22 of an
// experiment with the same seed (mechanism.SeedKey(experiment.RepSeed(seed,
// k)), 2^20 and 2^21 included, which the replay and canary keys were
// before), for a few seeds; and the values of different purposes, seeds
// and indices differ over a range of indices.
func TestStreamSeedsDistinct(t *testing.T) {
	// The documented encoding, written out.
	want := func(kind byte, purpose string, seed, index uint64) [32]byte {
		b := []byte("dpmf/audit/stream/v1\x00")
		b = append(b, kind, byte(len(purpose)))
		b = append(b, purpose...)
		b = binary.LittleEndian.AppendUint64(b, seed)
		if kind == 'v' {
			b = binary.LittleEndian.AppendUint64(b, index)
		}
		return sha256.Sum256(b)
	}
	if got, w := streamKey(purposeReplayNoise, 7), want('k', "replay/noise", 7, 0); got != w {
		t.Errorf("replay key %x, want %x", got, w)
	}
	if w := want('v', "dropout", 7, 12345); streamValue(purposeDropout, 7, 12345) != binary.LittleEndian.Uint64(w[:8]) {
		t.Error("dropout value is not the documented hash")
	}

	for _, seed := range []uint64{0, 1, 42, 1 << 63} {
		keys := map[[32]byte]string{}
		for _, p := range []string{purposeReplayNoise, purposeCanaryNoise} {
			keys[streamKey(p, seed)] = p
		}
		if len(keys) != 2 {
			t.Fatalf("seed %d: the replay and canary keys are equal", seed)
		}
		n := 1 << 22
		if testing.Short() {
			n = 1<<21 + 2 // past both old collisions
		}
		for k := 0; k < n; k++ {
			if p, ok := keys[mechanism.SeedKey(experiment.RepSeed(seed, k))]; ok {
				t.Fatalf("seed %d: the %s key is repetition %d's noise key", seed, p, k)
			}
		}
	}

	seen := map[uint64]string{}
	for _, p := range streamPurposes {
		for _, seed := range []uint64{1, 2} {
			for i := uint64(0); i < 1<<12; i++ {
				v := streamValue(p, seed, i)
				if prev, ok := seen[v]; ok {
					t.Fatalf("%s seed %d index %d repeats %s", p, seed, i, prev)
				}
				seen[v] = p
			}
		}
	}
}
