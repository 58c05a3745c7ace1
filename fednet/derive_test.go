package fednet

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/dpmf/dpmf/mechanism"
)

// TestKeyDerivationsSeparated pins the two values fednet derives from a
// run's noise key K to their documented inputs (docs/privacy.md,
// "Randomness: keys, seeds and streams"), recomputed here with SHA-256
// alone: the public fingerprint SHA-256("dpmf/fednet/noise-key/v1" || K)
// and the witness tags' key SHA-256("dpmf/fednet/witness/v1" || K). The
// docs' argument that no use of K shares an input with another (nor with
// the noise blocks' SHA-256("dpmf/mechanism/noise-block/v1" || K || row ||
// block), pinned by mechanism.TestSourceMatchesDocumentedDerivation, nor
// SeedKey's SHA-256("dpmf/mechanism/seed/v1" || seed)) rests on these
// inputs having distinct lengths; a derivation changed to another input
// fails here, and the docs' argument must then be made again.
func TestKeyDerivationsSeparated(t *testing.T) {
	for _, key := range [][32]byte{{}, mechanism.SeedKey(1), {1, 2, 3, 31: 0xff}} {
		fp := sha256.Sum256(append([]byte("dpmf/fednet/noise-key/v1"), key[:]...))
		if got, want := keyFingerprint(key), hex.EncodeToString(fp[:]); got != want {
			t.Errorf("keyFingerprint(%x) = %s, want %s", key, got, want)
		}
		if got, want := witnessKey(key), sha256.Sum256(append([]byte("dpmf/fednet/witness/v1"), key[:]...)); got != want {
			t.Errorf("witnessKey(%x) = %x, want %x", key, got, want)
		}
	}
	lens := map[int]string{}
	for name, n := range map[string]int{
		"noise block": len("dpmf/mechanism/noise-block/v1") + 32 + 16,
		"seed key":    len("dpmf/mechanism/seed/v1") + 8,
		"fingerprint": len("dpmf/fednet/noise-key/v1") + 32,
		"witness key": len("dpmf/fednet/witness/v1") + 32,
	} {
		if other, dup := lens[n]; dup {
			t.Errorf("the inputs of %s and %s have the same length %d", name, other, n)
		}
		lens[n] = name
	}
}
