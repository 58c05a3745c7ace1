package accountant

import "github.com/dpmf/dpmf/internal/ddfloat"

// This file holds complex double-word arithmetic (each part an unevaluated
// sum hi + lo of two float64s, about 106 bits) for the few spectral
// coefficients of a self-composition whose float64 rounding bound, raised
// to the k-th power, is not small against delta (see kthPower). The real
// operations are ddfloat's, with the error bounds of Joldes, Muller &
// Popescu (ACM TOMS 44, 2017) and Muller & Rideau's correction of the
// product's (ACM TOMS 48, 2022): a sum of two double-words is within
// 3u^2 / (1 - 4u) of the exact sum relatively, a product within 5u^2, a
// quotient by a float64 within 3u^2 (u = 2^-53).

// ddc is a complex number whose parts are double-words: rh + rl and
// ih + il.
type ddc struct{ rh, rl, ih, il float64 }

// ddcMul returns the complex product x y. Each part errs by at most
// 5u^2 (|ac| + |bd|) from the products and 3u^2 (1 + 4u) of the result
// from the sum, so the product errs by at most 11.5 u^2 |x| |y| (the
// parts' errors 8.01 u^2 (|ac| + |bd|) <= 8.01 u^2 |x| |y| each).
func ddcMul(x, y ddc) ddc {
	ah, al := ddfloat.Mul(x.rh, x.rl, y.rh, y.rl)
	bh, bl := ddfloat.Mul(x.ih, x.il, y.ih, y.il)
	ch, cl := ddfloat.Mul(x.rh, x.rl, y.ih, y.il)
	dh, dl := ddfloat.Mul(x.ih, x.il, y.rh, y.rl)
	var z ddc
	z.rh, z.rl = ddfloat.Add(ah, al, -bh, -bl)
	z.ih, z.il = ddfloat.Add(ch, cl, dh, dl)
	return z
}

// ddcPow returns z^k by repeated squaring: a relative error of at most
// powRound(k, 11.5 u^2).
func ddcPow(z ddc, k int) ddc {
	p := ddc{rh: 1}
	for k > 0 {
		if k&1 == 1 {
			p = ddcMul(p, z)
		}
		z = ddcMul(z, z)
		k >>= 1
	}
	return p
}

// ddTwoPi is 2 pi as a double-word (error below 1e-32).
var ddTwoPi = [2]float64{6.283185307179586, 2.4492935982947064e-16}

// ddSinCosSmall returns sin x and cos x for the double-word x = xh + xl,
// |x| <= pi/4, by their Taylor series to the term x^31 / 31! (the
// remainder below 2e-36) evaluated by Horner's rule: each of the 15 steps
// errs by at most about 10 u^2 of terms at most 1, so both err by at most
// 16 u^2 (TestDDRoot checks ddRoot, which takes its sine and cosine from
// here, against a 240-bit evaluation).
func ddSinCosSmall(xh, xl float64) (sh, sl, ch, cl float64) {
	x2h, x2l := ddfloat.Mul(xh, xl, xh, xl)
	// series returns 1 - x^2/((1+o)(2+o)) (1 - x^2/((3+o)(4+o)) (1 - ...
	// (1 - x^2/((29+o)(30+o))))): cos x for o = 0, sin(x)/x for o = 1.
	series := func(o int) (h, l float64) {
		h, l = 1, 0
		for i := 15; i >= 1; i-- {
			th, tl := ddfloat.Mul(x2h, x2l, h, l)
			th, tl = ddfloat.DivFloat(th, tl, float64((2*i-1+o)*(2*i+o)))
			h, l = ddfloat.Add(1, 0, -th, -tl)
		}
		return h, l
	}
	ch, cl = series(0)
	sh, sl = series(1)
	sh, sl = ddfloat.Mul(sh, sl, xh, xl)
	return sh, sl, ch, cl
}

// ddRoot returns e^(-2 pi i m / n) for any integer m and n >= 1, each
// part within 24 u^2 (the modulus of the error within 34 u^2): the angle is
// reduced exactly, in integers, to an octant, 8 m' = o n + r with
// 0 <= r < n; the remaining angle 2 pi r / (8 n) (or 2 pi (n - r) / (8 n)
// in odd octants), at most pi/4, is formed in double-words (within 8.2 u^2
// relatively) and ddSinCosSmall's Taylor series takes its sine and cosine;
// the octant maps them by exact swaps and sign changes. TestDDRoot checks
// the bound against a 240-bit evaluation.
func ddRoot(m, n int) ddc {
	m %= n
	if m < 0 {
		m += n
	}
	o := int((int64(m) * 8) / int64(n))
	r := int64(m)*8 - int64(o)*int64(n)
	num, base, sgn := r, o/2, 1.0
	if o%2 == 1 {
		num, base, sgn = int64(n)-r, (o+1)/2, -1
	}
	xh, xl := ddfloat.Mul(ddTwoPi[0], ddTwoPi[1], float64(num), 0)
	xh, xl = ddfloat.DivFloat(xh, xl, 8*float64(n))
	sh, sl, ch, cl := ddSinCosSmall(xh, xl)
	sh, sl = sgn*sh, sgn*sl
	// cos and sin of base pi/2 + (sgn x): each quarter turn maps (c, s)
	// to (-s, c).
	c, s := [2]float64{ch, cl}, [2]float64{sh, sl}
	for range base % 4 {
		c, s = [2]float64{-s[0], -s[1]}, c
	}
	return ddc{rh: c[0], rl: c[1], ih: -s[0], il: -s[1]}
}

// hornerDFT returns sum_i x_i e^(-2 pi i j (s0 + i) / n) in double-words,
// by Horner's rule in w = e^(-2 pi i j / n) and a final factor
// e^(-2 pi i j s0 / n). With mu = 34 u^2 the error of a root, each step
// p <- p w + x_i adds at most (mu + 11.5 u^2 + 3.01 u^2) (1 + mu) times the
// l1 norm M of x to the error (|p| <= M), and the last product mu + 11.5
// u^2: the result errs by at most 64 u^2 (len(x) + 1) M.
func hornerDFT(x []float64, s0, j, n int) ddc {
	w := ddRoot(j, n)
	var p ddc
	for i := len(x) - 1; i >= 0; i-- {
		p = ddcMul(p, w)
		p.rh, p.rl = ddfloat.Add(p.rh, p.rl, x[i], 0)
	}
	return ddcMul(p, ddRoot(int((int64(j)*int64(s0))%int64(n)), n))
}

// hornerErrorConst returns c with hornerDFT's result within c M of the
// exact sum (M the l1 norm of its len terms).
func hornerErrorConst(len int) float64 {
	return 64 * float64(len+1) * unitRound * unitRound
}
