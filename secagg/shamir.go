package secagg

import (
	"encoding/binary"
	"fmt"
	"io"
)

// SecretSize is the size of every shared secret (an X25519 private key, a
// self-mask seed); ShareSize the size of one share of it.
const (
	SecretSize = 32
	ShareSize  = SecretSize
)

// gfMul multiplies in GF(2^8) with the AES polynomial x^8+x^4+x^3+x+1
// (FIPS-197 section 4.2), in constant time.
func gfMul(a, b byte) byte {
	var p byte
	for i := 0; i < 8; i++ {
		p ^= a & -(b & 1)
		hi := a >> 7
		a = a<<1 ^ 0x1b&-hi
		b >>= 1
	}
	return p
}

// gfInv returns the multiplicative inverse of a (0 for 0): a^254.
func gfInv(a byte) byte {
	a2 := gfMul(a, a)     // a^2
	a3 := gfMul(a2, a)    // a^3
	a6 := gfMul(a3, a3)   // a^6
	a12 := gfMul(a6, a6)  // a^12
	a15 := gfMul(a12, a3) // a^15
	a30 := gfMul(a15, a15)
	a60 := gfMul(a30, a30)
	a120 := gfMul(a60, a60)
	a126 := gfMul(a120, a6)
	a252 := gfMul(a126, a126)
	return gfMul(a252, a2) // a^254
}

// mulWord multiplies each of the 8 bytes of w by the public constant x in
// GF(2^8): a shift-and-add over x's bits (public, so the branches leak
// nothing), doubling all 8 bytes at once. It runs in time independent of w.
func mulWord(w uint64, x byte) uint64 {
	var p uint64
	for ; x != 0; x >>= 1 {
		if x&1 == 1 {
			p ^= w
		}
		hi := w & 0x8080808080808080
		w = (w&0x7f7f7f7f7f7f7f7f)<<1 ^ (hi>>7)*0x1b
	}
	return p
}

// split returns n shares of secret (a multiple of 8 bytes long), any t of
// which determine it: share i (x-coordinate i+1) is f(i+1) byte-wise, f of
// degree t-1 with f(0) the secret and the other coefficients read from
// rand.
func split(secret []byte, t, n int, rand io.Reader) ([][]byte, error) {
	if t < 1 || t > n || n > MaxLearners || len(secret)%8 != 0 {
		return nil, fmt.Errorf("secagg: shamir threshold %d of %d shares of %d bytes, want 1 <= t <= n <= %d and a multiple of 8 bytes", t, n, len(secret), MaxLearners)
	}
	words := len(secret) / 8
	raw := make([]byte, (t-1)*len(secret))
	if _, err := io.ReadFull(rand, raw); err != nil {
		return nil, fmt.Errorf("secagg: reading randomness: %w", err)
	}
	// Bytes are independent, so any packing of 8 of them in a word works;
	// little-endian it is.
	coef := make([]uint64, len(raw)/8)
	for i := range coef {
		coef[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	clear(raw)
	shares := make([][]byte, n)
	for i := range shares {
		x := byte(i + 1)
		s := make([]byte, len(secret))
		for k := 0; k < words; k++ {
			// Horner from the top coefficient down to the secret.
			var y uint64
			for j := t - 2; j >= 0; j-- {
				y = mulWord(y, x) ^ coef[j*words+k]
			}
			binary.LittleEndian.PutUint64(s[8*k:], mulWord(y, x)^binary.LittleEndian.Uint64(secret[8*k:]))
		}
		shares[i] = s
	}
	clear(coef)
	return shares, nil
}

// interp interpolates at one point x from shares at fixed x-coordinates
// xs: entry i is the table of multiplication by the Lagrange basis value
// l_i(x), so that f(x) = XOR_i interp[i][f(xs[i])] byte by byte. Building it
// costs 256 products per share; applying it is a table look-up per byte,
// which keeps the aggregator's reconstruction of N secrets from N shares
// each fast at N = 255.
type interp [][256]byte

// newInterp returns the interpolator at x for the distinct nonzero
// x-coordinates xs (x = 0 gives the secret).
func newInterp(xs []byte, x byte) interp {
	p := make(interp, len(xs))
	for i, xi := range xs {
		num, den := byte(1), byte(1)
		for j, xj := range xs {
			if j != i {
				num = gfMul(num, x^xj)
				den = gfMul(den, xi^xj)
			}
		}
		l := gfMul(num, gfInv(den))
		for b := range 256 {
			p[i][b] = gfMul(l, byte(b))
		}
	}
	return p
}

// eval writes f(x) to out, from the shares at xs (each len(out) bytes).
func (p interp) eval(shares [][]byte, out []byte) {
	clear(out)
	for i, s := range shares {
		tab := &p[i]
		for k, b := range s[:len(out)] {
			out[k] ^= tab[b]
		}
	}
}
