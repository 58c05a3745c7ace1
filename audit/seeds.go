package audit

import (
	"crypto/sha256"
	"encoding/binary"
)

// Seeds. Every random stream of an audit is derived from Plan.Seed and a
// purpose (streamPurposes), by SHA-256 with a domain of its own:
//
//	key(purpose, seed)          = SHA-256(seedDomain 0x00 'k' len(purpose) purpose seed)
//	value(purpose, seed, index) = first 8 bytes of SHA-256(seedDomain 0x00 'v' len(purpose) purpose seed index)
//
// (seed and index as 8 little-endian bytes). The encoding is injective, so
// two streams of different purposes, seeds or indices never share a key
// or a value's input, and no audit key equals a key of package experiment
// (repetition k of an experiment with seed s draws its noise under
// mechanism.SeedKey(experiment.RepSeed(s, k)): SHA-256 of another domain,
// "dpmf/mechanism/seed/v1", and 8 bytes) short of a SHA-256 collision.
// Before, the replay's noise key was mechanism.SeedKey(RepSeed(seed, 2^20))
// and the canary audit's RepSeed(seed, 2^21): the noise of repetition 2^20
// (2^21) of an experiment with the same seed, and the seed number of the
// replay's background pick at step 2^20. The data's PCG streams are
// seeded (Seed, a constant per audit), apart from these.
const seedDomain = "dpmf/audit/stream/v1"

// The purposes of the audits' streams.
const (
	purposeReplayNoise      = "replay/noise"      // the replay's noise key, both worlds
	purposeCanaryNoise      = "canary/noise"      // the canary audit's noise key
	purposeReplayBackground = "replay/background" // a background sample per local step
	purposeDropout          = "dropout"           // a learner's presence per round
)

// streamPurposes lists every purpose, for the tests.
var streamPurposes = []string{purposeReplayNoise, purposeCanaryNoise, purposeReplayBackground, purposeDropout}

// streamInput returns the bytes hashed for a stream (see the scheme
// above): kind 'k' for a key, 'v' for a value with its index.
func streamInput(kind byte, purpose string, seed uint64, index uint64) []byte {
	b := make([]byte, 0, len(seedDomain)+3+len(purpose)+16)
	b = append(b, seedDomain...)
	b = append(b, 0, kind, byte(len(purpose)))
	b = append(b, purpose...)
	b = binary.LittleEndian.AppendUint64(b, seed)
	if kind == 'v' {
		b = binary.LittleEndian.AppendUint64(b, index)
	}
	return b
}

// streamKey returns the 256-bit noise key of the stream purpose under
// seed.
func streamKey(purpose string, seed uint64) [32]byte {
	return sha256.Sum256(streamInput('k', purpose, seed, 0))
}

// streamValue returns value index of the stream purpose under seed, a
// uniform 64-bit number.
func streamValue(purpose string, seed uint64, index uint64) uint64 {
	h := sha256.Sum256(streamInput('v', purpose, seed, index))
	return binary.LittleEndian.Uint64(h[:8])
}
