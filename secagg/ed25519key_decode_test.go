package secagg

import (
	"crypto/ed25519"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// rfc8032Decode decodes a 32-byte point encoding as RFC 8032, section
// 5.1.3, does: y below p, x = (u / v)^((p + 3) / 8) with u = y^2 - 1 and
// v = d y^2 + 1, times sqrt(-1) where v x^2 = -u, no point where neither
// holds, and none for x = 0 with the sign bit set. It shares nothing with
// checkEd25519Key (which tests a square by Jacobi's symbol and never
// forms x).
func rfc8032Decode(b []byte) (edPoint, bool) {
	le := make([]byte, len(b))
	for i := range b {
		le[len(b)-1-i] = b[i]
	}
	sign := le[0] >> 7
	le[0] &^= 0x80
	y := new(big.Int).SetBytes(le)
	if y.Cmp(edP) >= 0 {
		return edPoint{}, false
	}
	yy := edMod(new(big.Int).Mul(y, y))
	u := edMod(new(big.Int).Sub(yy, big.NewInt(1)))
	v := edMod(new(big.Int).Add(new(big.Int).Mul(edD, yy), big.NewInt(1)))
	// x = u v^3 (u v^7)^((p - 5) / 8)
	v3 := edMod(new(big.Int).Exp(v, big.NewInt(3), edP))
	v7 := edMod(new(big.Int).Exp(v, big.NewInt(7), edP))
	e := new(big.Int).Rsh(new(big.Int).Sub(edP, big.NewInt(5)), 3)
	x := new(big.Int).Exp(edMod(new(big.Int).Mul(u, v7)), e, edP)
	x = edMod(x.Mul(x, edMod(new(big.Int).Mul(u, v3))))
	vxx := edMod(new(big.Int).Mul(v, new(big.Int).Mul(x, x)))
	switch negU := edMod(new(big.Int).Neg(u)); {
	case vxx.Cmp(u) == 0:
	case vxx.Cmp(negU) == 0:
		sqrtM1 := new(big.Int).Exp(big.NewInt(2), new(big.Int).Rsh(new(big.Int).Sub(edP, big.NewInt(1)), 2), edP)
		x = edMod(x.Mul(x, sqrtM1))
	default:
		return edPoint{}, false
	}
	if x.Sign() == 0 && sign == 1 {
		return edPoint{}, false
	}
	if uint(x.Bit(0)) != uint(sign) {
		x = edMod(x.Neg(x))
	}
	return edPoint{x, y}, true
}

// TestEd25519KeyAgainstRFC8032: checkEd25519Key accepts exactly the
// encodings that RFC 8032's decoding accepts and whose point P has 8 P !=
// 0 and L P = 0 (by the group law: in the prime-order subgroup), over 4000
// random 32-byte strings (600 with -short; about half of them points, an
// eighth of those in the subgroup), the same strings with y set at or
// above p, and 2000 keys of crypto/ed25519 (all accepted: no valid key is
// refused; the reference's subgroup check, slow in math/big, is made for
// the first 50).
func TestEd25519KeyAgainstRFC8032(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 4000
	if testing.Short() {
		n = 600
	}
	subgroup := 0
	check := func(what string, b []byte) {
		t.Helper()
		p, ok := rfc8032Decode(b)
		if ok && !p.onCurve() {
			t.Fatalf("%s %x: the reference decoder's point is not on the curve", what, b)
		}
		want := ok && p.order() == 0 && p.inPrimeOrderSubgroup()
		if want {
			subgroup++
		}
		if got := checkEd25519Key(b) == nil; got != want {
			t.Errorf("%s %x: accepted %v, want %v (RFC 8032 decodes it: %v)", what, b, got, want, ok)
		}
	}
	points := 0
	for range n {
		b := make([]byte, KeySize)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		if _, ok := rfc8032Decode(b); ok {
			points++
		}
		check("random", b)
		// y in [p, 2^255): p + (low byte mod 19), the sign bit kept.
		hi := make([]byte, KeySize)
		copy(hi, b)
		for i := 1; i < 31; i++ {
			hi[i] = 0xff
		}
		hi[31] = 0x7f | b[31]&0x80
		hi[0] = 0xed + b[0]%19
		check("y >= p", hi)
	}
	// Binomial(n, 1/2) points, of which Binomial(., 1/8) in the
	// subgroup: the bounds are over 6 standard deviations away.
	if sd := math.Sqrt(float64(n) / 4); math.Abs(float64(points)-float64(n)/2) > 6*sd {
		t.Errorf("%d of %d random strings decode, want about half", points, n)
	}
	if sd := math.Sqrt(float64(points) * 7 / 64); math.Abs(float64(subgroup)-float64(points)/8) > 6*sd {
		t.Errorf("%d of %d points in the prime-order subgroup, want about an eighth", subgroup, points)
	}
	for i := range 2000 {
		seed := make([]byte, ed25519.SeedSize)
		seed[0], seed[1] = byte(i), byte(i>>8)
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		if err := checkEd25519Key(pub); err != nil {
			t.Fatalf("crypto/ed25519 key %d (%x) refused: %v", i, []byte(pub), err)
		}
		if i < 50 {
			check("crypto/ed25519", pub)
		}
	}
}
