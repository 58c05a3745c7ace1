package secagg

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/big"
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

// edwardsP and edwardsD are Edwards25519's p = 2^255 - 19 and
// d = -121665/121666 mod p.
var (
	edwardsP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	edwardsD = func() *big.Int {
		d := new(big.Int).ModInverse(big.NewInt(121666), edwardsP)
		d.Mul(d, big.NewInt(-121665))
		return d.Mod(d, edwardsP)
	}()
)

// checkEd25519Key returns an error unless k is an Ed25519 public key that
// a learner may use: 32 bytes, the canonical encoding (y below p) of a
// point of the curve, and not of small order (a point P with 8P = 0).
// crypto/ed25519 accepts a small-order key, and with one a signature
// verifies for many messages (with the identity as key, S B = R + k A =
// R for every message): a learner could sign survivor sets it never saw,
// which the consistency check exists to prevent.
//
// Points of mixed order (a key plus a small-order point) are not refused:
// that would take a scalar multiplication by the group order, and such a
// key verifies only signatures its owner could make anyway (cofactorless
// verification with the owner's secret scalar).
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
	// x^2 = (y^2 - 1) / (d y^2 + 1) must be a square (RFC 8032, section
	// 5.1.3); d y^2 + 1 is never 0, d being no square.
	for i, j := 0, len(y)-1; i < j; i, j = i+1, j-1 {
		y[i], y[j] = y[j], y[i]
	}
	yy := new(big.Int).SetBytes(y)
	yy.Mul(yy, yy)
	num := new(big.Int).Sub(yy, big.NewInt(1))
	den := new(big.Int).Mul(edwardsD, yy)
	den.Add(den, big.NewInt(1))
	den.ModInverse(den.Mod(den, edwardsP), edwardsP)
	num.Mul(num, den)
	num.Mod(num, edwardsP)
	if big.Jacobi(num, edwardsP) < 0 {
		return errors.New("not a point of the Ed25519 curve")
	}
	return nil
}
