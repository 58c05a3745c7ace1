package mechanism

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/dpmf/dpmf/factorize"
)

// blockLen is the number of coordinates of one counter-based block: noise
// row j, coordinates [b blockLen, (b+1) blockLen), is drawn from a ChaCha8
// stream keyed by (key, j, b) alone. Work is split between goroutines by
// whole blocks, so the output does not depend on how many there are.
const blockLen = 4096

// source is the counter-based Gaussian noise source: Z[j][i], the standard
// normal entry of noise row j at coordinate i, is a pure function of the
// 256-bit key, j and i. It can therefore be regenerated at any time and in
// any order.
type source struct {
	key [32]byte
}

// keyDomain separates the block keys of this package from any other use of
// the same 256-bit key.
const keyDomain = "dpmf/mechanism/noise-block/v1"

// DerivationFingerprint identifies the noise derivation of this build: how
// Z[j][i] is made from the key (the block keys' domain string, SHA-256,
// ChaCha8 and NormFloat64 of the Go release the binary was built with, and
// the floating point of the machine it runs on). It is the domain string,
// a colon and the hexadecimal SHA-256 of these entries of Z under the
// probe key 01 02 ... 20 (hexadecimal: 32 distinct bytes, none zero, so
// that a derivation that drops the key or moves its bytes draws other
// entries), drawn by the code every [Mechanism] of [New] draws with,
// each as its IEEE 754 bits in 8 little-endian bytes, in this order: row
// 0, coordinates [0, 4096) (one whole block, 2 of whose draws are in the
// ziggurat's tail, beyond 3.4426, and 65 of whose draws reject a wedge
// candidate and draw again); row 0, [4096, 4104); row 1, [0, 8); row
// 2^30 + 3, [20480, 20488); row 0, [12288, 12599) (the last of these is
// a tail draw whose first candidate is rejected, so that the tail's retry
// loop is exercised: the first block's two tail draws accept their first
// candidates). A change of any part of the derivation that moves one of
// these 4431 draws changes it. A resumed run must draw the Z it started
// with: package fednet records the fingerprint in run.json before the
// first release and refuses to resume under another.
func DerivationFingerprint() string { return derivationFingerprint() }

// fingerprintProbe is the probe of [DerivationFingerprint]: (row, first
// coordinate, entries), the first coordinate a multiple of blockLen.
var fingerprintProbe = []struct{ row, lo, n int }{
	{0, 0, blockLen}, {0, blockLen, 8}, {1, 0, 8}, {1<<30 + 3, 5 * blockLen, 8},
	{0, 3 * blockLen, 311},
}

// probeKey returns the probe key of [DerivationFingerprint].
func probeKey() *source {
	var probe source
	for i := range probe.key {
		probe.key[i] = byte(i + 1)
	}
	return &probe
}

var derivationFingerprint = sync.OnceValue(func() string {
	return fingerprintOf(newGen(probeKey()).Fill)
})

// fingerprintOf is [DerivationFingerprint] with the probe's entries drawn
// by fill (gen.Fill's contract), so that a test can draw them another way.
func fingerprintOf(fill func(row, lo int, dst []float64)) string {
	h := sha256.New()
	var buf [8]byte
	for _, p := range fingerprintProbe {
		z := make([]float64, p.n)
		fill(p.row, p.lo, z)
		for _, v := range z {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		}
	}
	return keyDomain + ":" + hex.EncodeToString(h.Sum(nil))
}

// SeedKey returns the 256-bit key that [WithSeed] makes of seed:
// WithKey(SeedKey(seed)) gives the same noise as WithSeed(seed). It is for
// code that passes keys around (a server that records which key a run
// uses); like a seed, it is for experiments and tests only. The key is
// SHA-256 of a domain string and the seed.
func SeedKey(seed uint64) [32]byte {
	var buf [len("dpmf/mechanism/seed/v1") + 8]byte
	n := copy(buf[:], "dpmf/mechanism/seed/v1")
	binary.LittleEndian.PutUint64(buf[n:], seed)
	return sha256.Sum256(buf[:])
}

// gen draws the blocks of a source. Each goroutine has its own.
type gen struct {
	src *source
	cc  *rand.ChaCha8
	rng *rand.Rand
	in  [len(keyDomain) + 32 + 16]byte
	// scratch, pastBuf and replay are blocks of workspace (Scratch, Past
	// when regenerating, and the output of a replayed round), allocated on
	// first use.
	scratch, pastBuf, replay []float64
	// past holds the stream's kept past rows (nil if it reads none).
	past *pastRows
}

// autoReason is why MemoryAuto made the stream regenerate (auto set):
// the machine's memory, or DefaultKeepLimit.
func (p *pastRows) autoReason() string {
	if p.overMachine {
		return fmt.Sprintf("keeping the past rows would take more than this machine's memory (%.3g GiB with swap)", p.machine/(1<<30))
	}
	return fmt.Sprintf("keeping the past rows would take more than %d GiB", DefaultKeepLimit>>30)
}

// pastRows are the past noise rows of a stream whose operator reads them
// (factorize.OperatorMemory.PastRows): kept once drawn, block by block, or
// regenerated when read. Both give the same bits.
type pastRows struct {
	keep, auto bool
	// overMachine is set when MemoryAuto regenerates because keeping the
	// rows would exceed the machine's memory, machine bytes.
	overMachine bool
	machine     float64
	// rows[j][b] is block b of noise row j, nil until first read (keep
	// mode). Each block is only ever touched by the goroutine that
	// computes that block of coordinates.
	rows [][][]float64
	held atomic.Int64
	// headers is the bytes of rows' slice headers (keep mode).
	headers int64
}

var _ factorize.NoiseSource = (*gen)(nil)

// Scratch implements factorize.NoiseSource.
func (g *gen) Scratch(n int) []float64 { return workspace(&g.scratch)[:n] }

// workspace returns *buf, one of a gen's blocks of workspace, allocating
// it on first use.
func workspace(buf *[]float64) []float64 {
	if *buf == nil {
		*buf = make([]float64, blockLen)
	}
	return *buf
}

// Past implements factorize.NoiseSource: the block is kept when first
// drawn in keep mode, and redrawn otherwise.
func (g *gen) Past(j, lo, n int) []float64 {
	p := g.past
	if p != nil && p.keep {
		blocks := p.rows[j]
		b := lo / blockLen
		if blocks[b] == nil {
			blocks[b] = make([]float64, n)
			g.Fill(j, lo, blocks[b])
			p.held.Add(int64(n) * 8)
		}
		return blocks[b]
	}
	buf := workspace(&g.pastBuf)[:n]
	g.Fill(j, lo, buf)
	return buf
}

func newGen(src *source) *gen {
	g := &gen{src: src, cc: rand.NewChaCha8([32]byte{})}
	g.rng = rand.New(g.cc)
	n := copy(g.in[:], keyDomain)
	copy(g.in[n:], src.key[:])
	return g
}

// Fill implements factorize.NoiseSource: it writes the standard normal
// entries of noise row `row` at coordinates [lo, lo+len(dst)) into dst. lo
// must be a multiple of blockLen and len(dst) at most blockLen. The
// block's ChaCha8 key is SHA-256(domain, key, row, block), so blocks are
// independent streams.
func (g *gen) Fill(row, lo int, dst []float64) {
	if lo%blockLen != 0 || len(dst) > blockLen {
		panic("mechanism: fill of a misaligned block")
	}
	n := len(keyDomain) + 32
	binary.LittleEndian.PutUint64(g.in[n:], uint64(row))
	binary.LittleEndian.PutUint64(g.in[n+8:], uint64(lo/blockLen))
	g.cc.Seed(sha256.Sum256(g.in[:]))
	for i := range dst {
		dst[i] = g.rng.NormFloat64()
	}
}
