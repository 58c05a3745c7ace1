package secagg

import (
	"crypto/ed25519"
	"math/big"
	"strings"
	"testing"
)

// Edwards25519 in affine coordinates with math/big, independent of
// checkEd25519Key: -x^2 + y^2 = 1 + d x^2 y^2 over GF(p), p = 2^255 - 19,
// d = -121665/121666 (RFC 8032, section 5.1).
var (
	edP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	edD = func() *big.Int {
		d := new(big.Int).ModInverse(big.NewInt(121666), edP)
		d.Mul(d, big.NewInt(-121665))
		return d.Mod(d, edP)
	}()
)

type edPoint struct{ x, y *big.Int }

func edMod(v *big.Int) *big.Int { return v.Mod(v, edP) }

// edSqrt returns a square root of a mod p, or nil if a is no square
// (p = 5 mod 8: RFC 8032, section 5.1.3).
func edSqrt(a *big.Int) *big.Int {
	a = edMod(new(big.Int).Set(a))
	x := new(big.Int).Exp(a, new(big.Int).Rsh(new(big.Int).Add(edP, big.NewInt(3)), 3), edP)
	if edMod(new(big.Int).Mul(x, x)).Cmp(a) != 0 {
		i := new(big.Int).Exp(big.NewInt(2), new(big.Int).Rsh(new(big.Int).Sub(edP, big.NewInt(1)), 2), edP)
		x = edMod(x.Mul(x, i))
	}
	if edMod(new(big.Int).Mul(x, x)).Cmp(a) != 0 {
		return nil
	}
	return x
}

// add is the complete twisted Edwards addition law (a = -1).
func (p edPoint) add(q edPoint) edPoint {
	t := edMod(new(big.Int).Mul(edD, edMod(new(big.Int).Mul(new(big.Int).Mul(p.x, q.x), new(big.Int).Mul(p.y, q.y)))))
	xn := new(big.Int).Add(new(big.Int).Mul(p.x, q.y), new(big.Int).Mul(p.y, q.x))
	yn := new(big.Int).Add(new(big.Int).Mul(p.y, q.y), new(big.Int).Mul(p.x, q.x))
	xd := new(big.Int).ModInverse(edMod(new(big.Int).Add(big.NewInt(1), t)), edP)
	yd := new(big.Int).ModInverse(edMod(new(big.Int).Sub(big.NewInt(1), t)), edP)
	return edPoint{edMod(xn.Mul(xn, xd)), edMod(yn.Mul(yn, yd))}
}

func (p edPoint) onCurve() bool {
	x2, y2 := edMod(new(big.Int).Mul(p.x, p.x)), edMod(new(big.Int).Mul(p.y, p.y))
	l := edMod(new(big.Int).Sub(y2, x2))
	r := edMod(new(big.Int).Add(big.NewInt(1), new(big.Int).Mul(edD, new(big.Int).Mul(x2, y2))))
	return l.Cmp(r) == 0
}

func (p edPoint) isIdentity() bool { return p.x.Sign() == 0 && p.y.Cmp(big.NewInt(1)) == 0 }

// order returns the order of p if it divides 8, else 0.
func (p edPoint) order() int {
	q := p
	for n := 1; n <= 8; n *= 2 {
		if q.isIdentity() {
			return n
		}
		q = q.add(q)
	}
	return 0
}

// encode is RFC 8032's encoding: y little-endian, the top bit x's parity.
func (p edPoint) encode() []byte {
	b := make([]byte, KeySize)
	p.y.FillBytes(b)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	b[31] |= byte(p.x.Bit(0) << 7)
	return b
}

// smallOrderPoints derives the eight points of order dividing 8: the
// identity (0, 1), (0, -1) of order 2, (+-sqrt(-1), 0) of order 4, and
// the four of order 8, whose doubles have y = 0, so x = +-sqrt(-1) y: on
// the curve, d y^4 + 2 y^2 - 1 = 0, y^2 = (-1 +- sqrt(1 + d)) / d.
func smallOrderPoints(t *testing.T) []edPoint {
	t.Helper()
	i := edSqrt(big.NewInt(-1))
	neg := func(v *big.Int) *big.Int { return edMod(new(big.Int).Neg(v)) }
	pts := []edPoint{{big.NewInt(0), big.NewInt(1)}, {big.NewInt(0), neg(big.NewInt(1))}, {i, big.NewInt(0)}, {neg(i), big.NewInt(0)}}
	s := edSqrt(new(big.Int).Add(big.NewInt(1), edD))
	dInv := new(big.Int).ModInverse(edD, edP)
	for _, r := range []*big.Int{s, neg(s)} {
		y := edSqrt(edMod(new(big.Int).Mul(new(big.Int).Sub(r, big.NewInt(1)), dInv)))
		if y == nil {
			continue // y^2 is no square: no point
		}
		for _, yy := range []*big.Int{y, neg(y)} {
			x := edMod(new(big.Int).Mul(i, yy))
			pts = append(pts, edPoint{x, yy}, edPoint{neg(x), yy})
		}
	}
	count := map[int]int{}
	for _, p := range pts {
		if !p.onCurve() {
			t.Fatalf("derived point (%v, %v) is not on the curve", p.x, p.y)
		}
		count[p.order()]++
	}
	if want := map[int]int{1: 1, 2: 1, 4: 2, 8: 4}; len(count) != len(want) || count[1] != 1 || count[2] != 1 || count[4] != 2 || count[8] != 4 {
		t.Fatalf("orders of the derived points %v, want %v", count, want)
	}
	return pts
}

// TestEd25519KeySmallOrder: every encoding of a point of order 1, 2, 4 or
// 8 (both sign bits: for x = 0 the set bit is a second, non-canonical
// encoding), non-canonical encodings (y + p for y < 19), and a y with no
// point are refused; genuine keys are accepted.
func TestEd25519KeySmallOrder(t *testing.T) {
	identity := make([]byte, KeySize)
	identity[0] = 1
	if err := checkEd25519Key(identity); err == nil || !strings.Contains(err.Error(), "small order") {
		t.Errorf("identity 01 00...00: %v, want an error about small order", err)
	}
	for _, p := range smallOrderPoints(t) {
		for _, flip := range []byte{0, 0x80} {
			k := p.encode()
			k[31] ^= flip
			if err := checkEd25519Key(k); err == nil {
				t.Errorf("small-order point encoded %x accepted", k)
			}
		}
	}
	for y := int64(0); y < 19; y++ {
		k := edPoint{big.NewInt(0), new(big.Int).Add(edP, big.NewInt(y))}.encode()
		if err := checkEd25519Key(k); err == nil || !strings.Contains(err.Error(), "canonical") {
			t.Errorf("y = p + %d (%x): %v, want an error about the canonical encoding", y, k, err)
		}
	}
	// The smallest y with no point: (y^2 - 1) / (d y^2 + 1) is no square.
	for y := int64(2); ; y++ {
		yy := big.NewInt(y * y)
		num := new(big.Int).Sub(yy, big.NewInt(1))
		den := new(big.Int).ModInverse(edMod(new(big.Int).Add(new(big.Int).Mul(edD, yy), big.NewInt(1))), edP)
		if edSqrt(edMod(num.Mul(num, den))) != nil {
			continue
		}
		k := edPoint{big.NewInt(0), big.NewInt(y)}.encode()
		if err := checkEd25519Key(k); err == nil || !strings.Contains(err.Error(), "not a point") {
			t.Errorf("y = %d, no point: %v, want an error about no point", y, err)
		}
		break
	}
	for seed := range 64 {
		s := make([]byte, ed25519.SeedSize)
		s[0] = byte(seed)
		pub := ed25519.NewKeyFromSeed(s).Public().(ed25519.PublicKey)
		if err := checkEd25519Key(pub); err != nil {
			t.Errorf("genuine key %x: %v", []byte(pub), err)
		}
	}
}

// TestSmallOrderSigPubRefused: the aggregator refuses an advertisement,
// and a learner a roster entry, whose Ed25519 key has small order: with
// the identity as key, one signature verifies for every message
// (S B = R + k A = R), so a learner could sign any survivor set.
func TestSmallOrderSigPubRefused(t *testing.T) {
	ctx := testContext(3, 2, 4)
	s := newSession(t, ctx, 7)
	identity := make([]byte, KeySize)
	identity[0] = 1
	adv, err := s.clients[1].Advertise()
	must(t, err)
	bad := adv
	bad.SigPub = identity
	refused(t, "Advertise with the identity as Ed25519 key", s.agg.Advertised(bad), "small order")
	var roster []Advertise
	for _, c := range s.clients {
		m, err := c.Advertise()
		must(t, err)
		roster = append(roster, m)
	}
	roster[2].SigPub = identity
	_, err = s.clients[0].ShareKeys(roster)
	refused(t, "roster entry with the identity as Ed25519 key", err, "small order")
}

// edL is the order of Edwards25519's prime-order subgroup, 2^252 +
// 27742317777372353535851937790883648493 (RFC 8032, section 5.1).
var edL = func() *big.Int {
	l, ok := new(big.Int).SetString("27742317777372353535851937790883648493", 10)
	if !ok {
		panic("edL")
	}
	return l.Add(l, new(big.Int).Lsh(big.NewInt(1), 252))
}()

// edProj is a point in projective coordinates (X : Y : Z), x = X/Z,
// y = Y/Z, for scalar multiplication without an inversion per step.
type edProj struct{ x, y, z *big.Int }

// addProj is the unified projective addition of twisted Edwards curves
// (Bernstein, Birkner, Joye, Lange, Peters 2008, "add-2008-bbjlp"), a =
// -1, complete on Edwards25519 (a a square, d not), so it doubles too.
func addProj(p, q edProj) edProj {
	mul := func(a, b *big.Int) *big.Int { return edMod(new(big.Int).Mul(a, b)) }
	a := mul(p.z, q.z)
	b := mul(a, a)
	c := mul(p.x, q.x)
	d := mul(p.y, q.y)
	e := mul(edD, mul(c, d))
	f := edMod(new(big.Int).Sub(b, e))
	g := edMod(new(big.Int).Add(b, e))
	h := mul(new(big.Int).Add(p.x, p.y), new(big.Int).Add(q.x, q.y))
	h = edMod(h.Sub(h, new(big.Int).Add(c, d)))
	return edProj{mul(a, mul(f, h)), mul(a, mul(g, new(big.Int).Add(d, c))), mul(f, g)}
}

// mul returns [k]p, by double-and-add in projective coordinates.
func (p edPoint) mul(k *big.Int) edProj {
	r := edProj{big.NewInt(0), big.NewInt(1), big.NewInt(1)}
	q := edProj{p.x, p.y, big.NewInt(1)}
	for i := k.BitLen() - 1; i >= 0; i-- {
		r = addProj(r, r)
		if k.Bit(i) == 1 {
			r = addProj(r, q)
		}
	}
	return r
}

// inPrimeOrderSubgroup reports whether [L]p is the identity (X = 0,
// Y = Z).
func (p edPoint) inPrimeOrderSubgroup() bool {
	r := p.mul(edL)
	return r.x.Sign() == 0 && r.y.Cmp(r.z) == 0
}

// TestEd25519KeyMixedOrder: a key of crypto/ed25519.GenerateKey is
// accepted; the same key plus any of the seven small-order points other
// than the identity (a point of mixed order, outside the prime-order
// subgroup: [L]P != 0, checked here by the group law in math/big) is
// refused. Before, only the small-order points themselves were.
func TestEd25519KeyMixedOrder(t *testing.T) {
	small := smallOrderPoints(t)
	for range 4 {
		pub, _, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkEd25519Key(pub); err != nil {
			t.Errorf("crypto/ed25519 key %x: %v", []byte(pub), err)
		}
		a, ok := rfc8032Decode(pub)
		if !ok || !a.inPrimeOrderSubgroup() {
			t.Fatalf("crypto/ed25519 key %x: decoded %v, in the prime-order subgroup %v", []byte(pub), ok, ok && a.inPrimeOrderSubgroup())
		}
		for _, s := range small {
			m := a.add(s)
			k := m.encode()
			if s.isIdentity() {
				if err := checkEd25519Key(k); err != nil {
					t.Errorf("key + identity %x: %v", k, err)
				}
				continue
			}
			if m.inPrimeOrderSubgroup() {
				t.Fatalf("key + small-order point (order %d) %x is in the prime-order subgroup", s.order(), k)
			}
			if err := checkEd25519Key(k); err == nil || !strings.Contains(err.Error(), "prime-order subgroup") {
				t.Errorf("key + small-order point (order %d) %x: %v, want an error about the prime-order subgroup", s.order(), k, err)
			}
		}
	}
}
