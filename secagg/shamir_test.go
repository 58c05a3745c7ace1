package secagg

import (
	"bytes"
	mrand "math/rand/v2"
	"testing"
)

// slowMul multiplies in GF(2^8) the schoolbook way: a carry-less product of
// the two polynomials, then long division by x^8+x^4+x^3+x+1 (0x11b).
func slowMul(a, b byte) byte {
	var p uint16
	for i := 0; i < 8; i++ {
		if b>>i&1 == 1 {
			p ^= uint16(a) << i
		}
	}
	for deg := 14; deg >= 8; deg-- {
		if p>>deg&1 == 1 {
			p ^= 0x11b << (deg - 8)
		}
	}
	return byte(p)
}

func TestGFMulFIPS197(t *testing.T) {
	// FIPS-197 section 4.2 and 4.2.1: {57}*{83} = {c1}, {57}*{13} = {fe},
	// and the xtime chain {57}*{02} = {ae}, *{04} = {47}, *{08} = {8e},
	// *{10} = {07}.
	for _, c := range []struct{ a, b, want byte }{
		{0x57, 0x83, 0xc1}, {0x57, 0x13, 0xfe}, {0x57, 0x02, 0xae},
		{0x57, 0x04, 0x47}, {0x57, 0x08, 0x8e}, {0x57, 0x10, 0x07},
	} {
		if got := gfMul(c.a, c.b); got != c.want {
			t.Errorf("{%02x}*{%02x} = {%02x}, want {%02x}", c.a, c.b, got, c.want)
		}
	}
	// Every product against the schoolbook algorithm.
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			if got, want := gfMul(byte(a), byte(b)), slowMul(byte(a), byte(b)); got != want {
				t.Fatalf("{%02x}*{%02x} = {%02x}, schoolbook {%02x}", a, b, got, want)
			}
		}
	}
	// The 8-bytes-at-once product of split against the schoolbook one.
	rng := testRand(8)
	for x := 0; x < 256; x++ {
		for trial := 0; trial < 64; trial++ {
			w := rng.Uint64()
			p := mulWord(w, byte(x))
			for k := 0; k < 8; k++ {
				if got, want := byte(p>>(8*k)), slowMul(byte(w>>(8*k)), byte(x)); got != want {
					t.Fatalf("mulWord byte %d: {%02x}*{%02x} = {%02x}, schoolbook {%02x}", k, byte(w>>(8*k)), x, got, want)
				}
			}
		}
	}
}

// sbox is FIPS-197's S-box from the inverse: the affine map of section 5.1.1.
func sbox(x byte) byte {
	b := gfInv(x)
	rot := func(v byte, k uint) byte { return v<<k | v>>(8-k) }
	return b ^ rot(b, 1) ^ rot(b, 2) ^ rot(b, 3) ^ rot(b, 4) ^ 0x63
}

func TestGFInverse(t *testing.T) {
	// {53}^{-1} = {ca} (the textbook example of the S-box's derivation),
	// and the S-box values of FIPS-197 Figure 7 built from the inverse.
	if got := gfInv(0x53); got != 0xca {
		t.Errorf("{53}^-1 = {%02x}, want {ca}", got)
	}
	for _, c := range []struct{ x, s byte }{
		{0x00, 0x63}, {0x01, 0x7c}, {0x53, 0xed}, {0x10, 0xca}, {0xff, 0x16}, {0xc9, 0xdd}, {0x8d, 0x5d},
	} {
		if got := sbox(c.x); got != c.s {
			t.Errorf("S-box({%02x}) = {%02x}, FIPS-197 says {%02x}", c.x, got, c.s)
		}
	}
	for a := 1; a < 256; a++ {
		if p := slowMul(byte(a), gfInv(byte(a))); p != 1 {
			t.Fatalf("{%02x} * inverse = {%02x}, want {01}", a, p)
		}
	}
}

func testRand(seed uint64) *mrand.ChaCha8 {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	return mrand.NewChaCha8(s)
}

func TestShamirBruteForce(t *testing.T) {
	// t = 2: every line (c0, c1) through two shares, found by trying all
	// 65536; its value at 0 is the secret, and it is unique.
	rng := testRand(1)
	secret := make([]byte, SecretSize)
	rng.Read(secret)
	shares, err := split(secret, 2, 7, rng)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < SecretSize; k += 5 {
		found := -1
		for c0 := 0; c0 < 256; c0++ {
			for c1 := 0; c1 < 256; c1++ {
				ok := true
				for _, i := range []int{2, 5} { // shares of learners 2 and 5: x = 3, 6
					if byte(c0)^slowMul(byte(c1), byte(i+1)) != shares[i][k] {
						ok = false
					}
				}
				if ok {
					if found >= 0 {
						t.Fatalf("byte %d: two lines through the shares", k)
					}
					found = c0
				}
			}
		}
		if found != int(secret[k]) {
			t.Errorf("byte %d: brute-force line gives %02x, secret %02x", k, found, secret[k])
		}
	}
}

// gaussSolve recovers the coefficients of the degree t-1 polynomial through
// t points by Gaussian elimination on the Vandermonde system, a second
// algorithm beside Lagrange interpolation.
func gaussSolve(xs []byte, ys []byte) []byte {
	t := len(xs)
	m := make([][]byte, t)
	for i := range m {
		m[i] = make([]byte, t+1)
		p := byte(1)
		for j := 0; j < t; j++ {
			m[i][j] = p
			p = slowMul(p, xs[i])
		}
		m[i][t] = ys[i]
	}
	for c := 0; c < t; c++ {
		piv := c
		for m[piv][c] == 0 {
			piv++
		}
		m[c], m[piv] = m[piv], m[c]
		inv := gfInv(m[c][c])
		for j := range m[c] {
			m[c][j] = slowMul(m[c][j], inv)
		}
		for i := range m {
			if i != c && m[i][c] != 0 {
				f := m[i][c]
				for j := range m[i] {
					m[i][j] ^= slowMul(f, m[c][j])
				}
			}
		}
	}
	out := make([]byte, t)
	for i := range out {
		out[i] = m[i][t]
	}
	return out
}

func TestShamirInterpolation(t *testing.T) {
	rng := testRand(2)
	for _, c := range []struct{ t, n int }{{1, 1}, {2, 3}, {3, 5}, {6, 10}, {128, 255}, {255, 255}} {
		secret := make([]byte, SecretSize)
		rng.Read(secret)
		shares, err := split(secret, c.t, c.n, rng)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 3; trial++ {
			idx := rng.Uint64() // a random t-subset
			perm := mrand.New(mrand.NewPCG(idx, 1)).Perm(c.n)[:c.t]
			xs := make([]byte, c.t)
			ys := make([][]byte, c.t)
			for i, p := range perm {
				xs[i], ys[i] = byte(p+1), shares[p]
			}
			got, err := combine(xs, ys)
			if err != nil || !bytes.Equal(got, secret) {
				t.Fatalf("t=%d n=%d: combine = %x, %v; want the secret %x", c.t, c.n, got, err, secret)
			}
			if c.t <= 16 {
				col := make([]byte, c.t)
				for k := range secret {
					for i := range ys {
						col[i] = ys[i][k]
					}
					if f0 := gaussSolve(xs, col)[0]; f0 != secret[k] {
						t.Fatalf("t=%d n=%d byte %d: Gaussian elimination gives %02x, secret %02x", c.t, c.n, k, f0, secret[k])
					}
				}
			}
			// Every other share lies on the same polynomial.
			for v := 0; v < c.n && c.t <= 16; v++ {
				at := make([]byte, SecretSize)
				newInterp(xs, byte(v+1)).eval(ys, at)
				if !bytes.Equal(at, shares[v]) {
					t.Fatalf("t=%d n=%d: share %d off the polynomial", c.t, c.n, v)
				}
			}
		}
	}
	if _, err := split(make([]byte, 32), 3, 2, rng); err == nil {
		t.Error("split with t > n: no error")
	}
	if _, err := combine([]byte{1, 1}, [][]byte{{1}, {2}}); err == nil {
		t.Error("combine with a repeated x: no error")
	}
}
