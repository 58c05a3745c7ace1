package secagg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/dpmf/dpmf/internal/par"
)

// Sizes of the protocol's fixed-size fields, in bytes.
const (
	KeySize    = 32                             // an X25519 or Ed25519 public key
	SigSize    = 64                             // an Ed25519 signature
	CommitSize = 2 * sha256.Size                // the SHA-256 commitments to a pair of shares
	BoxSize    = nonceSize + plainSize + gcmTag // a sealed pair of shares: nonce, ciphertext, tag
)

const (
	plainSize     = 4 + 2*ShareSize // dealer, holder, share of s, share of b
	nonceSize     = 12              // GCM's standard nonce
	gcmTag        = 16
	domain        = "dpmf/secagg/v1"
	prgBufferSize = 64 << 10
)

// encodeContext is the byte string every derivation, associated data and
// signature covers.
func encodeContext(c Context) []byte {
	b := make([]byte, 0, len(domain)+16+8+4+2+2+8)
	b = append(b, domain...)
	b = append(b, c.Run[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Round))
	b = binary.BigEndian.AppendUint32(b, c.Attempt)
	b = binary.BigEndian.AppendUint16(b, uint16(c.N))
	b = binary.BigEndian.AppendUint16(b, uint16(c.T))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Dim))
	return b
}

func appendIDs(b []byte, ids ...int) []byte {
	for _, id := range ids {
		b = binary.BigEndian.AppendUint16(b, uint16(id))
	}
	return b
}

// deriveKey is HKDF-SHA256 of secret with info ctx || label || ids.
func deriveKey(secret, ctx []byte, label string, ids ...int) []byte {
	info := append(append(append([]byte(nil), ctx...), label...), appendIDs(nil, ids...)...)
	k, err := hkdf.Key(sha256.New, secret, nil, string(info), 32)
	if err != nil { // only for lengths beyond HKDF's limit, never 32
		panic(err)
	}
	return k
}

// canonicalX25519 reports whether k is the canonical encoding of an
// X25519 public key: 32 bytes, little-endian, below p = 2^255 - 19 (its
// top bit clear). X25519 reads any 32 bytes as a key, ignoring the top bit
// and reducing modulo p (RFC 7748, section 5), so k with the top bit set,
// and u + p for u < 19, name the same key as u's canonical bytes, which
// crypto/ecdh's PublicKey.Bytes always gives: among canonical encodings
// alone, two keys are equal exactly when their bytes are, which the
// checks of "no key twice" rely on.
func canonicalX25519(k []byte) bool {
	if len(k) != KeySize {
		return false
	}
	// Compare with p's bytes (0xed, 0xff x 30, 0x7f) from the top down.
	for i := KeySize - 1; i >= 0; i-- {
		p := byte(0xff)
		switch i {
		case KeySize - 1:
			p = 0x7f
		case 0:
			p = 0xed
		}
		if k[i] != p {
			return k[i] < p
		}
	}
	return false // k is p itself
}

// agree is X25519(priv, pub) for a peer's public key bytes.
func agree(priv *ecdh.PrivateKey, pub []byte) ([]byte, error) {
	p, err := ecdh.X25519().NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return priv.ECDH(p)
}

// maskKey is the pairwise mask seed s_uv of u and v.
func maskKey(priv *ecdh.PrivateKey, peer []byte, ctx []byte, u, v int) ([]byte, error) {
	s, err := agree(priv, peer)
	if err != nil {
		return nil, err
	}
	return deriveKey(s, ctx, "mask", min(u, v), max(u, v)), nil
}

// selfKey is the AES key of u's self mask, from its seed b_u.
func selfKey(b, ctx []byte, u int) []byte { return deriveKey(b, ctx, "self", u) }

func gcm(key []byte) cipher.AEAD {
	blk, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // keys are always 32 bytes
	}
	g, err := cipher.NewGCM(blk)
	if err != nil {
		panic(err)
	}
	return g
}

// commit is the SHA-256 commitment to dealer's share of the secret kind
// ('s' or 'b') held by holder.
func commit(ctx []byte, kind byte, dealer, holder int, share []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(domain + " commit"))
	h.Write(ctx)
	h.Write([]byte{kind})
	h.Write(appendIDs(nil, dealer, holder))
	h.Write(share)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

var zeros [prgBufferSize]byte

var prgBuffers = sync.Pool{New: func() any { return new([prgBufferSize]byte) }}

// mask is one term of a masked vector: the AES-256-CTR keystream of key
// (zero IV), read as little-endian uint64, added (neg false) or
// subtracted (neg true) in Z_{2^64}.
type mask struct {
	key []byte
	neg bool
}

// maskChunk is the number of entries one call of applyMasks's loop takes
// at a time: even (whole AES blocks), large enough that starting a stream
// is negligible.
const maskChunk = 1 << 16

// applyMasks adds every mask of ms to dst. It splits dst into chunks of
// maskChunk entries spread over up to GOMAXPROCS goroutines ([par.Range]),
// each applying every mask to its chunk from the keystream's block at the
// chunk's offset (the CTR counter is the block index). Addition in
// Z_{2^64} is exact, so the result does not depend on the split.
func applyMasks(dst []uint64, ms []mask) {
	if len(ms) == 0 || len(dst) == 0 {
		return
	}
	blocks := make([]cipher.Block, len(ms))
	for i, m := range ms {
		b, err := aes.NewCipher(m.key)
		if err != nil {
			panic(err) // keys are always 32 bytes
		}
		blocks[i] = b
	}
	// Work in par's units: about one per entry and mask (AES-CTR and the
	// addition stream the chunk).
	par.Range(len(dst), maskChunk, float64(len(ms)), func(lo, hi int) {
		buf := prgBuffers.Get().(*[prgBufferSize]byte)
		defer prgBuffers.Put(buf)
		var iv [aes.BlockSize]byte
		binary.BigEndian.PutUint64(iv[8:], uint64(lo/2))
		for i, m := range ms {
			stream := cipher.NewCTR(blocks[i], iv[:])
			sign := uint64(1)
			if m.neg {
				sign = math.MaxUint64 // -1 in Z_{2^64}
			}
			for d := dst[lo:hi]; len(d) > 0; {
				n := min(len(d), prgBufferSize/8)
				b := buf[:8*n]
				stream.XORKeyStream(b, zeros[:8*n])
				addLE(d[:n], b, sign)
				d = d[n:]
			}
		}
	})
}

func checkID(what string, id, n int) error {
	if id < 0 || id >= n {
		return fmt.Errorf("secagg: %s is %d, want a learner id in 0..%d", what, id, n-1)
	}
	return nil
}

// addLE adds sign times b, read as little-endian uint64, to d
// (len(b) = 8 len(d)) in Z_{2^64}: sign 1 adds, sign 2^64 - 1 (-1)
// subtracts. Four entries a step: twice the speed of the plain loop.
func addLE(d []uint64, b []byte, sign uint64) {
	for len(d) >= 4 && len(b) >= 32 {
		d[0] += sign * binary.LittleEndian.Uint64(b[0:])
		d[1] += sign * binary.LittleEndian.Uint64(b[8:])
		d[2] += sign * binary.LittleEndian.Uint64(b[16:])
		d[3] += sign * binary.LittleEndian.Uint64(b[24:])
		d, b = d[4:], b[32:]
	}
	for i := range d {
		d[i] += sign * binary.LittleEndian.Uint64(b[8*i:])
	}
}
