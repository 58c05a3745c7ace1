package ddfloat

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// The references below are math/big.Float values: sums and products of a
// few float64s exactly (a precision of 4200 bits holds any sum of float64s
// exactly), quotients to 2000 bits (an error far below u^2).

const prec = 4200

func bf(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }

func sum(v ...float64) *big.Float {
	s := bf(0)
	for _, x := range v {
		s.Add(s, bf(x))
	}
	return s
}

func mul(a, b *big.Float) *big.Float { return new(big.Float).SetPrec(prec).Mul(a, b) }

// relErr returns |got - want| / |want| as a float64 (0 where both are 0,
// +Inf where only want is).
func relErr(got, want *big.Float) float64 {
	d := new(big.Float).SetPrec(prec).Sub(got, want)
	if d.Sign() == 0 {
		return 0
	}
	if want.Sign() == 0 {
		return math.Inf(1)
	}
	r, _ := new(big.Float).SetPrec(prec).Quo(d.Abs(d), new(big.Float).Abs(want)).Float64()
	return r
}

const u = 0x1p-53

// count returns n, or n / 10 under -short.
func count(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// word returns a random double-word: hi with a random exponent in
// [lo, hi], lo a random fraction of half an ulp of hi (sometimes 0).
func word(rng *rand.Rand, minExp, maxExp int) (float64, float64) {
	e := minExp + rng.IntN(maxExp-minExp+1)
	h := math.Ldexp(1+rng.Float64(), e)
	if rng.IntN(2) == 0 {
		h = -h
	}
	if rng.IntN(8) == 0 {
		return h, 0
	}
	ulp := math.Nextafter(math.Abs(h), math.Inf(1)) - math.Abs(h)
	l := (rng.Float64() - 0.5) * ulp
	return FastTwoSum(h, l)
}

// pairs returns inputs for the error-free transformations: random pairs of
// all magnitudes (subnormal to near overflow), nearly cancelling pairs,
// signed zeros, and pairs differing in exponent by more than 53.
func pairs(rng *rand.Rand, n int) [][2]float64 {
	out := [][2]float64{
		{0, 0}, {0, math.Copysign(0, -1)}, {math.Copysign(0, -1), math.Copysign(0, -1)},
		{math.Copysign(0, -1), 1}, {1, math.Copysign(0, -1)},
		{1, 0x1p-53}, {1, 0x1p-54}, {1, -0x1p-54}, {0x1p1023, 0x1p970}, {0x1p1023, -0x1p969},
		{0x1p-1074, 0x1p-1074}, {0x1p-1022, -0x1p-1074}, {math.MaxFloat64, -math.MaxFloat64},
		{0.1, 0.2}, {1e16, 1}, {1e16, -1}, {3, -3},
	}
	for range n {
		var a, b float64
		switch rng.IntN(4) {
		case 0: // any magnitudes
			a = math.Ldexp(rng.Float64(), rng.IntN(2090)-1074)
			b = math.Ldexp(rng.Float64(), rng.IntN(2090)-1074)
		case 1: // cancellation
			a = math.Ldexp(1+rng.Float64(), rng.IntN(200)-100)
			b = -a * (1 + float64(rng.IntN(64)-32)*u)
		case 2: // far apart
			a = math.Ldexp(1+rng.Float64(), rng.IntN(100))
			b = math.Ldexp(1+rng.Float64(), -rng.IntN(200))
		default: // subnormal
			a = math.Ldexp(rng.Float64(), -1022-rng.IntN(52))
			b = math.Ldexp(rng.Float64(), -1022+rng.IntN(60))
		}
		if rng.IntN(2) == 0 {
			a = -a
		}
		if rng.IntN(2) == 0 {
			b = -b
		}
		out = append(out, [2]float64{a, b})
	}
	return out
}

// TestTwoSumExact: s = fl(a + b) bit for bit (signed zeros included) and
// s + e = a + b exactly, for every finite pair whose sum does not
// overflow; FastTwoSum the same where |a| >= |b|.
func TestTwoSumExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, p := range pairs(rng, count(200000)) {
		a, b := p[0], p[1]
		s, e := TwoSum(a, b)
		if math.Float64bits(s) != math.Float64bits(a+b) || sum(s, e).Cmp(sum(a, b)) != 0 {
			t.Fatalf("TwoSum(%g, %g) = %g, %g: not fl(a+b) with an exact error", a, b, s, e)
		}
		if math.Abs(a) < math.Abs(b) {
			a, b = b, a
		}
		s, e = FastTwoSum(a, b)
		if math.Float64bits(s) != math.Float64bits(a+b) || sum(s, e).Cmp(sum(a, b)) != 0 {
			t.Fatalf("FastTwoSum(%g, %g) = %g, %g: not fl(a+b) with an exact error", a, b, s, e)
		}
	}
}

// TestTwoProdExact: p = fl(a b) and p + e = a b exactly wherever the
// exponents of a and b sum to at least -969 (and a b does not overflow),
// including signed zeros.
func TestTwoProdExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	cases := [][2]float64{{0, 5}, {math.Copysign(0, -1), 5}, {-3, 0}, {0x1p-484, 0x1p-485},
		{1 + u*2, 1 - u}, {math.MaxFloat64, 1 - u}, {0x1p511 * 1.5, 0x1p511 * 1.3}}
	for range count(200000) {
		ea := rng.IntN(1900) - 950
		eb := rng.IntN(1900) - 950
		if ea+eb < -968 || ea+eb > 1022 {
			continue
		}
		a, b := math.Ldexp(1+rng.Float64(), ea), math.Ldexp(1+rng.Float64(), eb)
		if rng.IntN(2) == 0 {
			a = -a
		}
		cases = append(cases, [2]float64{a, b})
	}
	for _, c := range cases {
		a, b := c[0], c[1]
		p, e := TwoProd(a, b)
		if math.Float64bits(p) != math.Float64bits(a*b) || sum(p, e).Cmp(mul(bf(a), bf(b))) != 0 {
			t.Fatalf("TwoProd(%g, %g) = %g, %g: not fl(ab) with an exact error", a, b, p, e)
		}
	}
}

// words returns pairs of double-words for the arithmetic: random
// magnitudes within [2^-400, 2^400], nearly cancelling pairs (for Add),
// pairs far apart in magnitude, and zeros.
func words(rng *rand.Rand, n int) [][4]float64 {
	out := [][4]float64{{0, 0, 0, 0}, {1, 0, -1, 0}, {1, 0x1p-60, -1, 0x1p-61},
		{math.Copysign(0, -1), 0, 1, 0x1p-55}, {1, u / 2, 1, u / 2}}
	for range n {
		xh, xl := word(rng, -400, 400)
		var yh, yl float64
		switch rng.IntN(3) {
		case 0:
			yh, yl = word(rng, -400, 400)
		case 1: // -x perturbed in its low part or last bits of hi
			yh, yl = -xh, -xl+math.Ldexp(rng.Float64()-0.5, math.Ilogb(xh)-100-rng.IntN(20))
			if rng.IntN(2) == 0 {
				yh = -xh * (1 + float64(rng.IntN(8)-4)*u)
			}
			yh, yl = FastTwoSum(yh, yl)
		default:
			yh, yl = word(rng, math.Ilogb(xh)-120, math.Ilogb(xh)-40)
		}
		out = append(out, [4]float64{xh, xl, yh, yl})
	}
	return out
}

// normalized reports whether hi = fl(hi + lo), as a double-word's parts
// must be.
func normalized(h, l float64) bool { return h+l == h }

// TestArithBounds: Add, Mul, MulFloat, DivFloat and Div are within the
// relative bounds of JMP (with Muller and Rideau's for Mul) of the exact
// results, and their results are normalized double-words.
func TestArithBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	addB, mulB, mulFB, divB, divDB, recB := 3*u*u/(1-4*u), 5*u*u, 3*u*u, 3*u*u, 15*u*u+56*u*u*u, 8*u*u
	var worst [6]float64
	for _, w := range words(rng, count(100000)) {
		xh, xl, yh, yl := w[0], w[1], w[2], w[3]
		x, y := sum(xh, xl), sum(yh, yl)
		zh, zl := Add(xh, xl, yh, yl)
		if r := relErr(sum(zh, zl), new(big.Float).SetPrec(prec).Add(x, y)); r > addB || !normalized(zh, zl) {
			t.Fatalf("Add(%g, %g, %g, %g) = %g, %g: relative error %g u^2 (bound 3/(1-4u)), normalized %v", xh, xl, yh, yl, zh, zl, r/u/u, normalized(zh, zl))
		} else {
			worst[0] = max(worst[0], r)
		}
		zh, zl = Mul(xh, xl, yh, yl)
		if r := relErr(sum(zh, zl), mul(x, y)); r > mulB || !normalized(zh, zl) {
			t.Fatalf("Mul(%g, %g, %g, %g) = %g, %g: relative error %g u^2 (bound 5)", xh, xl, yh, yl, zh, zl, r/u/u)
		} else {
			worst[1] = max(worst[1], r)
		}
		zh, zl = MulFloat(xh, xl, yh)
		if r := relErr(sum(zh, zl), mul(x, bf(yh))); r > mulFB || !normalized(zh, zl) {
			t.Fatalf("MulFloat(%g, %g, %g) = %g, %g: relative error %g u^2 (bound 3)", xh, xl, yh, zh, zl, r/u/u)
		} else {
			worst[2] = max(worst[2], r)
		}
		if yh == 0 {
			continue
		}
		zh, zl = DivFloat(xh, xl, yh)
		q := new(big.Float).SetPrec(2000).Quo(x, bf(yh))
		if r := relErr(sum(zh, zl), q); r > divB || !normalized(zh, zl) {
			t.Fatalf("DivFloat(%g, %g, %g) = %g, %g: relative error %g u^2 (bound 3)", xh, xl, yh, zh, zl, r/u/u)
		} else {
			worst[3] = max(worst[3], r)
		}
		zh, zl = Div(xh, xl, yh, yl)
		q = new(big.Float).SetPrec(2000).Quo(x, y)
		if r := relErr(sum(zh, zl), q); r > divDB || !normalized(zh, zl) {
			t.Fatalf("Div(%g, %g, %g, %g) = %g, %g: relative error %g u^2 (bound 15)", xh, xl, yh, yl, zh, zl, r/u/u)
		} else {
			worst[4] = max(worst[4], r)
		}
		zh, zl = Recip(yh, yl)
		q = new(big.Float).SetPrec(2000).Quo(bf(1), y)
		if r := relErr(sum(zh, zl), q); r > recB || !normalized(zh, zl) {
			t.Fatalf("Recip(%g, %g) = %g, %g: relative error %g u^2 (bound 8)", yh, yl, zh, zl, r/u/u)
		} else {
			worst[5] = max(worst[5], r)
		}
	}
	t.Logf("worst relative errors in u^2: Add %.3g, Mul %.3g, MulFloat %.3g, DivFloat %.3g, Div %.3g, Recip %.3g",
		worst[0]/u/u, worst[1]/u/u, worst[2]/u/u, worst[3]/u/u, worst[4]/u/u, worst[5]/u/u)
}

// TestAddSignedZero: sums that are exactly zero come out as a zero
// double-word, and a zero added to a double-word leaves its value.
func TestAddSignedZero(t *testing.T) {
	nz := math.Copysign(0, -1)
	for _, c := range [][4]float64{{0, 0, nz, nz}, {nz, nz, nz, nz}, {1, 0x1p-60, -1, -0x1p-60}, {0.1, 0, -0.1, 0}} {
		if zh, zl := Add(c[0], c[1], c[2], c[3]); zh != 0 || zl != 0 {
			t.Errorf("Add(%v) = %g, %g, want 0", c, zh, zl)
		}
	}
	if zh, zl := Add(0.1, 0x1p-58, nz, nz); zh != 0.1 || zl != 0x1p-58 {
		t.Errorf("Add(0.1, 2^-58, -0, -0) = %g, %g, want the first word", zh, zl)
	}
}

// TestAddProdBound: a dot product of m = 1 to 40 double-word products
// accumulated by AddProd from a double-word start and normalized once
// (TwoSum) is within (1.5 m (m + 1) + 12 m + 4) u^2 (|s0| + sum |t_p|) of
// the exact sum, on random terms and on sums that cancel to far below
// their terms (the case a factorization's pivots meet); the bound is
// componentwise, not relative to the result.
func TestAddProdBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	worst := 0.0
	for trial := range count(20000) {
		m := 1 + trial%40
		s0h, s0l := word(rng, -20, 20)
		xs := make([][4]float64, m)
		for p := range xs {
			xh, xl := word(rng, -20, 20)
			yh, yl := word(rng, -20, 20)
			xs[p] = [4]float64{xh, xl, yh, yl}
		}
		if trial%2 == 1 {
			// Cancel: the start is minus the sum of the terms, rounded
			// to a double-word, plus a tiny remainder.
			exact := new(big.Float).SetPrec(prec)
			for _, x := range xs {
				exact.Add(exact, mul(sum(x[0], x[1]), sum(x[2], x[3])))
			}
			h, _ := exact.Float64()
			l, _ := new(big.Float).SetPrec(prec).Sub(exact, bf(h)).Float64()
			s0h, s0l = FastTwoSum(-h, -l+math.Ldexp(rng.Float64(), math.Ilogb(h)-110))
		}
		sh, sl := s0h, s0l
		exact := sum(s0h, s0l)
		mag := new(big.Float).SetPrec(prec).Abs(sum(s0h, s0l))
		for _, x := range xs {
			sh, sl = AddProd(sh, sl, x[0], x[1], x[2], x[3])
			tp := mul(sum(x[0], x[1]), sum(x[2], x[3]))
			exact.Add(exact, tp)
			mag.Add(mag, new(big.Float).Abs(tp))
		}
		zh, zl := TwoSum(sh, sl)
		err := new(big.Float).SetPrec(prec).Sub(sum(zh, zl), exact)
		r, _ := new(big.Float).Quo(err.Abs(err), mag).Float64()
		mf := float64(m)
		if bound := (1.5*mf*(mf+1) + 12*mf + 4) * u * u; r > bound || !normalized(zh, zl) {
			t.Fatalf("m = %d: error %g u^2 of the magnitudes, bound %g u^2, normalized %v", m, r/u/u, bound/u/u, normalized(zh, zl))
		}
		worst = max(worst, r/(mf*u*u))
	}
	t.Logf("worst error / (m u^2 sum |terms|): %.3g", worst)
}
