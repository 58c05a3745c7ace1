package secagg

import (
	"bytes"
	"encoding/hex"
	"errors"

	"filippo.io/edwards25519"
)

// smallOrderY are the y-coordinates, little-endian, of the eight points of
// Edwards25519 whose order divides 8 (RFC 8032's curve -x^2 + y^2 =
// 1 + d x^2 y^2): y = 1 (the identity), y = -1 (order 2), y = 0 (order
// 4, x = +-sqrt(-1)), and the two roots of y^2 = (-1 - sqrt(1 + d)) / d
// with x = +-sqrt(-1) y (order 8: their doubles have y = 0). Every
// encoding of these points has one of these y, whatever its sign bit.
// TestEd25519KeySmallOrder derives the points again, by the group law.
var smallOrderY = func() [][]byte {
	var ys [][]byte
	for _, h := range []string{
		"0100000000000000000000000000000000000000000000000000000000000000",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"0000000000000000000000000000000000000000000000000000000000000000",
		"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
		"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
	} {
		y, err := hex.DecodeString(h)
		if err != nil {
			panic(err)
		}
		ys = append(ys, y)
	}
	return ys
}()

// minusOne is the scalar L - 1 (-1 mod L, L the order of the prime-order
// subgroup), so that [L]P = [L - 1]P + P: a Scalar holds values below L
// only.
var minusOne = func() *edwards25519.Scalar {
	one := make([]byte, 32)
	one[0] = 1
	s, err := edwards25519.NewScalar().SetCanonicalBytes(one)
	if err != nil {
		panic(err)
	}
	return s.Negate(s)
}()

// checkEd25519Key returns an error unless k is an Ed25519 public key that
// a learner may use: 32 bytes, the canonical encoding (y below p) of a
// point of the curve, not of small order (a point P with 8P = 0), and in
// the prime-order subgroup ([L]P = 0, L = 2^252 +
// 27742317777372353535851937790883648493), as every key of
// crypto/ed25519.GenerateKey is.
//
// crypto/ed25519 accepts a small-order key, and with one a signature
// verifies for many messages (with the identity as key, S B = R + k A =
// R for every message): a learner could sign survivor sets it never saw,
// which the consistency check exists to prevent. A key of mixed order,
// A + T with A a key and T of small order, is refused too: with it a
// signature verifies under crypto/ed25519's cofactorless equation only for
// the messages whose hash k has k T = 0, and under a cofactored verifier
// for all, so two learners verifying the same signature could disagree.
// No genuine key is of mixed order; refusing it costs one scalar
// multiplication per key (filippo.io/edwards25519, whose
// Point.SetBytes also checks that k is a point of the curve).
func checkEd25519Key(k []byte) error {
	if len(k) != KeySize {
		return errors.New("not 32 bytes long, as an Ed25519 public key is")
	}
	y := bytes.Clone(k)
	y[31] &^= 0x80 // the sign of x
	if !canonicalX25519(y) {
		return errors.New("not the canonical encoding of an Ed25519 public key (its y at or above 2^255 - 19)")
	}
	for _, s := range smallOrderY {
		if bytes.Equal(y, s) {
			return errors.New("an Ed25519 point of small order (8 P = 0), with which one signature verifies for many messages")
		}
	}
	// RFC 8032's decoding, section 5.1.3: x^2 = (y^2 - 1) / (d y^2 + 1)
	// must be a square. (SetBytes also takes y >= p, refused above.)
	p, err := new(edwards25519.Point).SetBytes(k)
	if err != nil {
		return errors.New("not a point of the Ed25519 curve")
	}
	q := new(edwards25519.Point).ScalarMult(minusOne, p)
	if q.Add(q, p).Equal(edwards25519.NewIdentityPoint()) != 1 {
		return errors.New("an Ed25519 point outside the prime-order subgroup (a key plus a point of small order), which no genuine key is")
	}
	return nil
}
