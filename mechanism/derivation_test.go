package mechanism_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpmf/dpmf/mechanism"
)

// TestDerivationFingerprint recomputes the fingerprint from its
// documentation alone, without the package's code: the SHA-256 of the
// IEEE 754 bits (8 little-endian bytes each) of Z under the probe key
// 01 02 ... 20 (hexadecimal) at row 0, coordinates [0, 4104), row 1,
// [0, 8), row 2^30 + 3, [20480, 20488), and row 0, [12288, 12599), in that
// order, each entry drawn as the
// documented derivation says (NormFloat64 over ChaCha8 seeded with
// SHA-256 of the domain string, the key, the row and the block, 64-bit
// little-endian), prefixed with the domain string and a colon. It also
// checks that the probe reaches the ziggurat's tail (|z| > 3.442619855899),
// so that a change of the tail's sampler moves the fingerprint
// (TestFingerprintSeesTailRetry checks that its retry loop is reached
// too). The key's
// 32 bytes all differ and none is zero, so a derivation that drops the
// key, moves it or reorders its bytes moves the fingerprint too (under
// the all-zero key none of them would).
func TestDerivationFingerprint(t *testing.T) {
	const domain = "dpmf/mechanism/noise-block/v1"
	var key [32]byte
	for i := range key {
		key[i] = byte(i + 1)
	}
	h := sha256.New()
	tails := 0
	draw := func(row, lo, n int) {
		in := append([]byte(domain), key[:]...)
		in = binary.LittleEndian.AppendUint64(in, uint64(row))
		in = binary.LittleEndian.AppendUint64(in, uint64(lo/4096))
		g := rand.New(rand.NewChaCha8(sha256.Sum256(in)))
		for i := lo - lo%4096; i < lo+n; i++ {
			z := g.NormFloat64()
			if i < lo {
				continue
			}
			if math.Abs(z) > 3.442619855899 {
				tails++
			}
			h.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(z)))
		}
	}
	draw(0, 0, 4096)
	draw(0, 4096, 8)
	draw(1, 0, 8)
	draw(1<<30+3, 20480, 8)
	draw(0, 12288, 311)
	want := domain + ":" + hex.EncodeToString(h.Sum(nil))
	if got := mechanism.DerivationFingerprint(); got != want {
		t.Errorf("DerivationFingerprint() = %s, want %s (recomputed from the documented derivation)", got, want)
	}
	if tails == 0 {
		t.Errorf("no draw of the probe is in the ziggurat's tail: a change of the tail's sampler would not move the fingerprint")
	}
	t.Logf("fingerprint %s; %d of the 4431 draws in the tail", want, tails)
}
