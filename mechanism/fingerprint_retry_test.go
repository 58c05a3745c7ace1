package mechanism

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// recordingSource is a rand.Source that records the words it hands out.
type recordingSource struct {
	src  rand.Source
	seen []uint64
}

func (s *recordingSource) Uint64() uint64 {
	u := s.src.Uint64()
	s.seen = append(s.seen, u)
	return u
}

// zigguratR is the start of the ziggurat's tail in math/rand/v2.
const zigguratR = 3.442619855899

// tailCandidates reads the words one NormFloat64 call consumed (seen)
// and, for a draw z in the tail (|z| > zigguratR), returns the tail's
// candidates x_1, ..., x_k of its retry loop and whether each was
// accepted, recomputed from the published algorithm (Marsaglia and Tsang
// 2000, as math/rand/v2 writes it): each try takes one word u whose bits
// 32..38 pick the strip i; a try of strip i != 0 that ends in a wedge
// rejection takes one more word (a Float64); the try of strip 0 that
// reaches the tail is the last, and takes two words (Float64s u1, u2) per
// candidate: x = -log(u1) / r, y = -log(u2), accepted when 2y >= x^2.
// ok is false when z is not in the tail or the words do not fit.
func tailCandidates(seen []uint64, z float64) (xs []float64, accepted []bool, neg, ok bool) {
	if !(math.Abs(z) > zigguratR) {
		return nil, nil, false, false
	}
	pos := 0
	for pos < len(seen) && (seen[pos]>>32)&0x7f != 0 {
		pos += 2 // a wedge rejection: the try's word and its Float64
	}
	if pos >= len(seen) || (len(seen)-pos-1)%2 != 0 {
		return nil, nil, false, false
	}
	neg = int32(seen[pos]) <= 0
	f := func(u uint64) float64 { return float64(u<<11>>11) / (1 << 53) }
	for k := pos + 1; k < len(seen); k += 2 {
		x := -math.Log(f(seen[k])) * (1.0 / zigguratR)
		y := -math.Log(f(seen[k+1]))
		xs, accepted = append(xs, x), append(accepted, y+y >= x*x)
	}
	return xs, accepted, neg, true
}

// TestFingerprintSeesTailRetry checks that the fingerprint's probe
// exercises the retry loop of NormFloat64's tail sampler, so that a build
// whose loop differs (here: one that returns its first candidate instead
// of drawing again) draws another fingerprint. Each tail draw of the probe
// is first recomputed, bit for bit, from the words it consumed by the
// published algorithm (tailCandidates): only the last candidate is
// accepted, and the draw is +-(r + x_k). Before the probe's fifth entry
// (row 0, [12288, 12599)) no draw of the probe retried: its two tail draws
// accept their first candidates, and the altered loop had the same
// fingerprint.
func TestFingerprintSeesTailRetry(t *testing.T) {
	g := newGen(probeKey())
	if got := fingerprintOf(g.Fill); got != DerivationFingerprint() {
		t.Fatalf("fingerprintOf(Fill) = %s, DerivationFingerprint() = %s", got, DerivationFingerprint())
	}
	tails, retries := 0, 0
	firstCandidate := func(row, lo int, dst []float64) {
		n := len(keyDomain) + 32
		binary.LittleEndian.PutUint64(g.in[n:], uint64(row))
		binary.LittleEndian.PutUint64(g.in[n+8:], uint64(lo/blockLen))
		rs := &recordingSource{src: rand.NewChaCha8(sha256.Sum256(g.in[:]))}
		rng := rand.New(rs)
		for i := range dst {
			rs.seen = rs.seen[:0]
			z := rng.NormFloat64()
			dst[i] = z
			if !(math.Abs(z) > zigguratR) {
				continue
			}
			tails++
			xs, acc, neg, ok := tailCandidates(rs.seen, z)
			if !ok {
				t.Fatalf("row %d, coordinate %d: tail draw %v from %d words, which the published algorithm does not consume", row, lo+i, z, len(rs.seen))
			}
			last := len(xs) - 1
			want := zigguratR + xs[last]
			if neg {
				want = -want
			}
			if z != want || !acc[last] {
				t.Fatalf("row %d, coordinate %d: tail draw %v, the published algorithm gives %v (accepted %v)", row, lo+i, z, want, acc[last])
			}
			for k := range last {
				if acc[k] {
					t.Fatalf("row %d, coordinate %d: candidate %d of %d was accepted, yet drawn again", row, lo+i, k+1, len(xs))
				}
			}
			if last > 0 {
				retries++
				dst[i] = zigguratR + xs[0]
				if neg {
					dst[i] = -dst[i]
				}
			}
		}
	}
	altered := fingerprintOf(firstCandidate)
	t.Logf("%d tail draws in the probe, %d of them retried", tails, retries)
	if retries == 0 {
		t.Errorf("no tail draw of the fingerprint's probe rejects a candidate: a change of the tail's retry loop would not move the fingerprint")
	}
	if altered == DerivationFingerprint() {
		t.Errorf("a tail sampler that returns its first candidate has this build's fingerprint %s", altered)
	}
}
