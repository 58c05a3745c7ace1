// Package ddfloat holds the error-free transformations of float64 sums and
// products and the double-word ("double-double") arithmetic built on them:
// a double-word is an unevaluated sum hi + lo of two float64s with
// hi = fl(hi + lo), about 106 significant bits.
//
// With u = 2^-53 the unit roundoff, and no overflow and no intermediate
// below the normal range (|results| >= 2^-969 or so), Add, Mul and
// MulFloat err relatively by at most the bounds that Joldes, Muller and
// Popescu prove in "Tight and rigorous error bounds for basic building
// blocks of double-word arithmetic" (ACM TOMS 44(2), 2017; JMP below),
// with Muller and Rideau's correction of the product's ("Formalization of
// double-word arithmetic, and comments on ...", ACM TOMS 48(1), 2022):
//
//	Add        3u^2 / (1 - 4u)   (JMP Algorithm 6, AccurateDWPlusDW)
//	Mul        5u^2              (JMP Algorithm 12, DWTimesDW3)
//	MulFloat   3u^2              (JMP Algorithm 8, DWTimesFP2)
//	DivFloat   3u^2 measured     (JMP Algorithm 15's steps, reordered: see DivFloat)
//
// Every product that is rounded is rounded explicitly (a float64
// conversion), so that the compiler may not fuse it into a following
// addition on the architectures where it fuses x*y + z (arm64, ppc64le,
// s390x, riscv64, loong64, amd64 at GOAMD64=v3): each function gives the
// same bits on every architecture. All but Add are small enough for the
// compiler to inline into inner loops.
package ddfloat

import "math"

// TwoSum returns s = fl(a + b) and e = a + b - s exactly (Knuth, The Art
// of Computer Programming vol. 2, section 4.2.2, after Møller 1965): six
// additions and no branch, exact for any finite a and b whose sum does
// not overflow, whatever their magnitudes (a sum of float64s that is
// subnormal is exact).
func TwoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

// FastTwoSum returns s = fl(a + b) and e = a + b - s exactly, as TwoSum
// does, in three additions, provided a's exponent is at least b's (in
// particular |a| >= |b|, or a = 0) and a + b does not overflow (Dekker,
// "A floating-point technique for extending the available precision",
// Numer. Math. 18, 1971).
func FastTwoSum(a, b float64) (s, e float64) {
	s = a + b
	e = b - (s - a)
	return s, e
}

// TwoProd returns p = fl(a b) and e = a b - p by one fused multiply-add
// (math.FMA, exact on every architecture): e is exact where a b does not
// overflow and its error is not below the normal range (the exponents of
// a and b sum to at least -969); Ogita, Rump and Oishi, "Accurate sum and
// dot product" (SIAM J. Sci. Comput. 26(6), 2005), write it TwoProduct,
// after Dekker's FMA-free version (1971).
func TwoProd(a, b float64) (p, e float64) {
	p = float64(a * b)
	e = math.FMA(a, b, -p)
	return p, e
}

// The double-word operations below write their TwoSum, TwoProd and
// FastTwoSum steps out rather than calling them: the same operations at a
// lower inlining cost (Add's is still above the compiler's budget).

// Add returns the double-word sum of the double-words xh + xl and yh + yl
// (JMP Algorithm 6, AccurateDWPlusDW): within 3u^2 / (1 - 4u) of the
// exact sum relatively, whatever the signs.
func Add(xh, xl, yh, yl float64) (zh, zl float64) {
	// (sh, sl) = TwoSum(xh, yh), (th, tl) = TwoSum(xl, yl).
	sh := xh + yh
	sb := sh - xh
	sl := (xh - (sh - sb)) + (yh - sb)
	th := xl + yl
	tb := th - xl
	tl := (xl - (th - tb)) + (yl - tb)
	// (vh, vl) = FastTwoSum(sh, sl + th), then FastTwoSum(vh, tl + vl).
	c := sl + th
	vh := sh + c
	vl := c - (vh - sh)
	w := tl + vl
	zh = vh + w
	zl = w - (zh - vh)
	return zh, zl
}

// Mul returns the double-word product of the double-words xh + xl and
// yh + yl (JMP Algorithm 12, DWTimesDW3, with fused multiply-adds):
// within 5u^2 of the exact product relatively (JMP state 4u^2; Muller and
// Rideau 2022 correct it).
func Mul(xh, xl, yh, yl float64) (zh, zl float64) {
	ch := float64(xh * yh) // (ch, cl1) = TwoProd(xh, yh)
	cl1 := math.FMA(xh, yh, -ch)
	cl := cl1 + math.FMA(xl, yh, math.FMA(xh, yl, float64(xl*yl)))
	zh = ch + cl // FastTwoSum(ch, cl)
	zl = cl - (zh - ch)
	return zh, zl
}

// MulFloat returns the double-word product of the double-word xh + xl and
// the float64 y (JMP Algorithm 8, DWTimesFP2): within 3u^2 of the exact
// product relatively.
func MulFloat(xh, xl, y float64) (zh, zl float64) {
	ch := float64(xh * y) // (ch, cl1) = TwoProd(xh, y)
	cl := math.FMA(xh, y, -ch) + float64(xl*y)
	zh = ch + cl // FastTwoSum(ch, cl)
	zl = cl - (zh - ch)
	return zh, zl
}

// DivFloat returns the double-word quotient of the double-word xh + xl by
// the float64 y, by the steps of JMP Algorithm 15 (DWDivFP3) with its
// correction term formed as ((xh - ph) - pl) + xl where Algorithm 15 forms
// (xh - ph) + (xl - pl), ph + pl = th y exactly. The remainder xh - th y of
// a correctly rounded quotient th is a float64, so here the first two
// subtractions are exact and the correction rounds once where Algorithm
// 15's rounds twice. The 3u^2 bound is proved for Algorithm 15's order, not
// this one; TestArithBounds measures at most about 2.5u^2 on random and
// adversarial inputs.
func DivFloat(xh, xl, y float64) (zh, zl float64) {
	th := xh / y
	ph := float64(th * y) // (ph, pl) = TwoProd(th, y)
	pl := math.FMA(th, y, -ph)
	tl := ((xh - ph - pl) + xl) / y
	zh = th + tl // FastTwoSum(th, tl)
	zl = tl - (zh - th)
	return zh, zl
}

// Div returns the double-word quotient of the double-words xh + xl and
// yh + yl (JMP Algorithm 17, DWDivDW2, with [MulFloat] for the product
// y th): within 15u^2 + 56u^3 of the exact quotient relatively, as JMP
// prove for that algorithm; TestArithBounds measures it. y must not be
// zero.
func Div(xh, xl, yh, yl float64) (zh, zl float64) {
	th := xh / yh
	rh, rl := MulFloat(yh, yl, th)
	d := (xh - rh) + (xl - rl)
	tl := d / yh
	zh = th + tl // FastTwoSum(th, tl)
	zl = tl - (zh - th)
	return zh, zl
}

// Recip returns the double-word reciprocal of the double-word yh + yl
// (y not zero) by one division where [Div] (x = 1) takes two: th = 1/yh,
// the residual r = 1 - y th as (1 - fl(yh th)) - (the product's exact
// error + fl(yl th)), where 1 - fl(yh th) is exact (Sterbenz) and r is of
// order u, and the correction r th, its division by yh replaced by the
// product with th (relatively within u of it, on a term itself within
// about u of the result). TestArithBounds measures at most about 4u^2
// (bound checked 8u^2, against Div's 15u^2 + 56u^3).
func Recip(yh, yl float64) (zh, zl float64) {
	th := 1 / yh
	ch := float64(yh * th)
	cl := math.FMA(yh, th, -ch) + float64(yl*th)
	tl := float64(((1 - ch) - cl) * th)
	zh = th + tl // FastTwoSum(th, tl)
	zl = tl - (zh - th)
	return zh, zl
}

// AddProd adds the product of the double-words xh + xl and yh + yl to the
// unnormalized sum sh + sl of a dot product, for a sum that is
// normalized once at its end (TwoSum(sh, sl)) instead of after every
// term: the high parts are summed by TwoSum, exactly, and everything
// else (TwoSum's errors, the error of xh yh and the cross terms
// xh yl + xl yh, xl yl dropped) in sl in float64. Starting from a
// double-word s0, the normalized result of m terms t_p is within
// (1.5 m (m + 1) + 12 m + 4) u^2 (|s0| + sum_p |t_p|) of s0 + sum_p t_p
// (first order; docs/solver.md, "The double-word kernel's cost"): the
// componentwise bound of a compensated dot product (Ogita, Rump and
// Oishi's Dot2, with double-word inputs), not a relative one, which is
// what the backward error of a factorization needs. TestAddProdBound
// checks it.
func AddProd(sh, sl, xh, xl, yh, yl float64) (float64, float64) {
	ph := float64(xh * yh)
	pe := math.FMA(xh, yh, -ph)
	c := math.FMA(xh, yl, float64(xl*yh))
	s := sh + ph // TwoSum(sh, ph)
	bb := s - sh
	e := (sh - (s - bb)) + (ph - bb)
	return s, sl + (e + (pe + c))
}
