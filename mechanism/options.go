package mechanism

import (
	"crypto/rand"
	"fmt"
	"runtime"
)

// Memory selects how the dense and Toeplitz mechanisms, whose noise
// operator has no short recurrence, get the past noise rows they combine.
type Memory int

const (
	// MemoryAuto keeps past rows when they and their index (two slice
	// headers per row at least, see [Mechanism.StateBytes]) fit in
	// [DefaultKeepLimit] bytes and in the machine's memory, and
	// regenerates them otherwise;
	// that choice is visible in the mechanism's String and in [MemoryOf].
	MemoryAuto Memory = iota
	// MemoryKeep stores every noise row once drawn: O(R d) memory and
	// O(r d) multiply-adds in round r.
	MemoryKeep
	// MemoryRegenerate redraws past rows from the counter-based stream
	// when needed: O(d / goroutines) memory but O(r d) Gaussian draws in
	// round r.
	MemoryRegenerate
)

// memoryNames are the memory modes' names, by value.
var memoryNames = []string{MemoryAuto: "auto", MemoryKeep: "keep", MemoryRegenerate: "regenerate"}

// String returns "auto", "keep" or "regenerate".
func (m Memory) String() string {
	if m >= 0 && int(m) < len(memoryNames) {
		return memoryNames[m]
	}
	return fmt.Sprintf("Memory(%d)", int(m))
}

// DefaultKeepLimit is the largest state, in bytes, that [MemoryAuto]
// keeps (the past rows and the slice headers that index them): 1 GiB.
const DefaultKeepLimit = 1 << 30

// Option configures [New].
type Option func(*config)

type config struct {
	key     [32]byte
	seeded  bool
	workers int
	memory  Memory
	dense   bool
	start   int
	errs    []error
}

// WithSeed makes the noise reproducible: the stream's 256-bit key is
// SHA-256 of a domain string and seed. A 64-bit seed is for experiments and
// tests; a private release should use the default (a key from crypto/rand)
// or [WithKey] with a secret key.
func WithSeed(seed uint64) Option {
	return func(c *config) { c.key, c.seeded = SeedKey(seed), true }
}

// WithKey sets the stream's 256-bit key. With a secret, uniformly random
// key the noise is as unpredictable as ChaCha8 allows, and the stream can
// still be resumed ([WithStartRound]) by whoever holds the key. The noise
// rows depend on the key alone, not on the factorization or the
// dimension: use a key for one release only (see the package
// documentation, Randomness). The all-zero key is refused: it is what an
// unset [32]byte holds, and its noise is public (anyone can draw it
// again), so it is far more likely a key that was never filled in than
// one drawn at random.
func WithKey(key [32]byte) Option {
	if key == ([32]byte{}) {
		return invalid(&ParamError{Param: "key", Value: "all zero", Want: "a secret 256-bit key (the all-zero key is what an unset key holds, and its noise is public)"})
	}
	return func(c *config) { c.key, c.seeded = key, true }
}

// maxWorkers is the most goroutines a stream uses (see [WithWorkers]).
const maxWorkers = 1024

// WithWorkers sets the number of goroutines that fill a round's vector
// (default GOMAXPROCS), of which at most one per block of 4096 coordinates
// and at most 1024 are used (each holds a noise generator and, once it
// runs, a buffer of 32 KiB, or two for a BLT or banded-inverse stream
// resumed by [WithStartRound]). The output does not depend on it.
func WithWorkers(n int) Option {
	if n < 1 {
		return invalid(&ParamError{Param: "workers", Value: n, Want: ">= 1"})
	}
	return func(c *config) { c.workers = n }
}

// WithMemory selects keeping or regenerating past noise rows for the dense
// and Toeplitz mechanisms; the others ignore it. Both give the same bits.
func WithMemory(m Memory) Option {
	if m < MemoryAuto || m > MemoryRegenerate {
		return invalid(&ParamError{Param: "memory", Value: m, Want: "auto, keep or regenerate"})
	}
	return func(c *config) { c.memory = m }
}

// WithDense uses the dense mechanism (see [New]) whatever the strategy:
// slower and bigger than the structured ones, and useful to compare them.
func WithDense() Option {
	return func(c *config) { c.dense = true }
}

// WithStartRound starts the stream at round r, 0 <= r <= R, as if rounds
// 0..r-1 had been drawn: round r's vector is the same as in an uninterrupted
// stream with the same key. It is for resuming after a checkpoint, at the
// first round not yet released: the stream cannot tell, and a round's
// noise drawn again for other updates makes the difference of the two
// releases free of noise (package fednet's state directory refuses such a
// rewind; a caller of fedopt.NewServerAt must too). It costs
// nothing for the independent and regenerating mechanisms, O(log R) vectors
// for the tree, and replays (or redraws) r rounds for the others.
func WithStartRound(r int) Option {
	if r < 0 {
		return invalid(&ParamError{Param: "start round", Value: r, Want: ">= 0"})
	}
	return func(c *config) { c.start = r }
}

// invalid is the option of an invalid argument: it records err, which
// New returns.
func invalid(err error) Option {
	return func(c *config) { c.errs = append(c.errs, err) }
}

// newConfig applies opts over the defaults.
func newConfig(opts []Option) (*config, error) {
	c := &config{workers: runtime.GOMAXPROCS(0)}
	for _, o := range opts {
		if o == nil {
			return nil, &ParamError{Param: "option", Want: "an Option from a With function"}
		}
		o(c)
	}
	if len(c.errs) > 0 {
		return nil, c.errs[0]
	}
	if !c.seeded {
		rand.Read(c.key[:]) // never fails (crypto/rand, Go 1.24+)
	}
	return c, nil
}
