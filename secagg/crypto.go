package secagg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
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

// addMask adds (neg false) or subtracts (neg true) the AES-256-CTR keystream
// of key, zero IV, read as little-endian uint64, to dst in Z_{2^64}.
func addMask(dst []uint64, key []byte, neg bool) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // keys are always 32 bytes
	}
	stream := cipher.NewCTR(blk, make([]byte, aes.BlockSize))
	buf := prgBuffers.Get().(*[prgBufferSize]byte)
	defer prgBuffers.Put(buf)
	for len(dst) > 0 {
		m := min(len(dst), prgBufferSize/8)
		b := buf[:8*m]
		stream.XORKeyStream(b, zeros[:8*m])
		if neg {
			subLE(dst[:m], b)
		} else {
			addLE(dst[:m], b)
		}
		dst = dst[m:]
	}
}

func checkID(what string, id, n int) error {
	if id < 0 || id >= n {
		return fmt.Errorf("secagg: %s is %d, want a learner id in 0..%d", what, id, n-1)
	}
	return nil
}

// addLE adds b, read as little-endian uint64, to d (len(b) = 8 len(d)),
// four entries a step: twice the speed of the plain loop.
func addLE(d []uint64, b []byte) {
	for len(d) >= 4 && len(b) >= 32 {
		d[0] += binary.LittleEndian.Uint64(b[0:])
		d[1] += binary.LittleEndian.Uint64(b[8:])
		d[2] += binary.LittleEndian.Uint64(b[16:])
		d[3] += binary.LittleEndian.Uint64(b[24:])
		d, b = d[4:], b[32:]
	}
	for i := range d {
		d[i] += binary.LittleEndian.Uint64(b[8*i:])
	}
}

// subLE subtracts b, read as little-endian uint64, from d.
func subLE(d []uint64, b []byte) {
	for len(d) >= 4 && len(b) >= 32 {
		d[0] -= binary.LittleEndian.Uint64(b[0:])
		d[1] -= binary.LittleEndian.Uint64(b[8:])
		d[2] -= binary.LittleEndian.Uint64(b[16:])
		d[3] -= binary.LittleEndian.Uint64(b[24:])
		d, b = d[4:], b[32:]
	}
	for i := range d {
		d[i] -= binary.LittleEndian.Uint64(b[8*i:])
	}
}
