package accountant

import (
	"math"
	"math/big"
	"testing"
)

// This file is an independent, high-precision implementation of the exact
// privacy curve in math/big, used as the reference for the float64 code.
// It shares no code with the package: pi comes from Machin's formula, exp
// from a Taylor series with argument halving, erf from its everywhere
// positive series
//
//	erf(y) = 2/sqrt(pi) exp(-y^2) sum_n 2^n y^(2n+1) / (1*3*...*(2n+1)),
//
// and delta(eps) = Phi(-a) - e^eps Phi(-b) is formed by plain subtraction at
// a precision (hundreds to thousands of bits) where the cancellation that
// float64 must avoid is harmless.

func newBig(prec uint) *big.Float { return new(big.Float).SetPrec(prec) }

// bigArctanInv returns arctan(1/n) = sum_k (-1)^k / ((2k+1) n^(2k+1)).
func bigArctanInv(n int64, prec uint) *big.Float {
	sum := newBig(prec)
	pow := newBig(prec).Quo(newBig(prec).SetInt64(1), newBig(prec).SetInt64(n)) // 1/n^(2k+1)
	n2 := newBig(prec).SetInt64(n * n)
	eps := newBig(prec).SetMantExp(big.NewFloat(1), -int(prec)-8)
	for k := int64(0); ; k++ {
		term := newBig(prec).Quo(pow, newBig(prec).SetInt64(2*k+1))
		if k%2 == 0 {
			sum.Add(sum, term)
		} else {
			sum.Sub(sum, term)
		}
		if term.Cmp(eps) < 0 {
			return sum
		}
		pow.Quo(pow, n2)
	}
}

// bigPi returns pi = 16 arctan(1/5) - 4 arctan(1/239) (Machin).
func bigPi(prec uint) *big.Float {
	p := prec + 32
	a := newBig(p).Mul(newBig(p).SetInt64(16), bigArctanInv(5, p))
	b := newBig(p).Mul(newBig(p).SetInt64(4), bigArctanInv(239, p))
	return newBig(prec).Sub(a, b)
}

// bigExp returns exp(x): x is halved m times to below 2^-20, the Taylor
// series summed, and the result squared m times, with m+64 guard bits.
func bigExp(x *big.Float, prec uint) *big.Float {
	m := max(x.MantExp(nil)+20, 0)
	p := prec + uint(m) + 64
	r := newBig(p).SetMantExp(newBig(p).Set(x), -m)
	sum := newBig(p).SetInt64(1)
	term := newBig(p).SetInt64(1)
	tiny := newBig(p).SetMantExp(big.NewFloat(1), -int(p))
	for k := int64(1); ; k++ {
		term.Mul(term, r)
		term.Quo(term, newBig(p).SetInt64(k))
		sum.Add(sum, term)
		if newBig(p).Abs(term).Cmp(tiny) < 0 {
			break
		}
	}
	for range m {
		sum.Mul(sum, sum)
	}
	return newBig(prec).Set(sum)
}

// bigErf returns erf(y) for y >= 0 by the positive series above.
func bigErf(y *big.Float, prec uint, pi *big.Float) *big.Float {
	if y.Sign() == 0 {
		return newBig(prec)
	}
	y2 := newBig(prec).Mul(y, y)
	twoY2 := newBig(prec).Mul(y2, newBig(prec).SetInt64(2))
	term := newBig(prec).Set(y)
	sum := newBig(prec).Set(y)
	yf, _ := y2.Float64()
	for n := int64(1); ; n++ {
		term.Mul(term, twoY2)
		term.Quo(term, newBig(prec).SetInt64(2*n+1))
		sum.Add(sum, term)
		if float64(n) > yf && term.MantExp(nil) < sum.MantExp(nil)-int(prec)-8 {
			break
		}
	}
	f := bigExp(newBig(prec).Neg(y2), prec)
	sum.Mul(sum, f)
	sum.Mul(sum, newBig(prec).SetInt64(2))
	return sum.Quo(sum, newBig(prec).Sqrt(pi))
}

// bigPhiNeg returns Phi(-x) = (1 - erf(x/sqrt 2))/2 for x >= 0 and
// (1 + erf(|x|/sqrt 2))/2 for x < 0.
func bigPhiNeg(x *big.Float, prec uint, pi *big.Float) *big.Float {
	y := newBig(prec).Abs(x)
	y.Quo(y, newBig(prec).Sqrt(newBig(prec).SetInt64(2)))
	e := bigErf(y, prec, pi)
	one := newBig(prec).SetInt64(1)
	if x.Sign() >= 0 {
		e.Sub(one, e)
	} else {
		e.Add(one, e)
	}
	return e.Quo(e, newBig(prec).SetInt64(2))
}

// refPrec returns a working precision for refDelta: enough for the
// exp(-y^2) cancellation in 1 - erf(y) and for delta's own cancellation.
func refPrec(eps, mu float64) uint {
	b := eps/mu + mu/2
	return uint(256 + 1.5*b*b + 2*math.Abs(math.Log2(mu)) + 2*math.Abs(math.Log2(eps+1e-300)))
}

// refDelta returns delta(eps) of mu-GDP, Phi(-a) - e^eps Phi(-b), in big
// arithmetic from the exact float64 inputs.
func refDelta(eps, mu float64) *big.Float {
	prec := refPrec(eps, mu)
	pi := bigPi(prec)
	e, m := newBig(prec).SetFloat64(eps), newBig(prec).SetFloat64(mu)
	r := newBig(prec).Quo(e, m)
	h := newBig(prec).Quo(m, newBig(prec).SetInt64(2))
	a := newBig(prec).Sub(r, h)
	b := newBig(prec).Add(r, h)
	t1 := bigPhiNeg(a, prec, pi)
	t2 := bigPhiNeg(b, prec, pi)
	t2.Mul(t2, bigExp(e, prec))
	return t1.Sub(t1, t2)
}

// bigRatio returns exp(logX)/ref as a float64, exact enough to see a
// relative error of 1e-16 even when ref is far below the float64 range.
func bigRatio(logX float64, ref *big.Float) float64 {
	prec := uint(200)
	x := bigExp(newBig(prec).SetFloat64(logX), prec)
	r, _ := x.Quo(x, ref).Float64()
	return r
}

func TestBigReferenceConstants(t *testing.T) {
	// Digits of pi and e (OEIS A000796, A001113) and of erfc(1), erfc(5)
	// (mpmath 1.3 at 60 significant digits).
	const prec = 256
	check := func(name string, got *big.Float, want string) {
		w, _, err := big.ParseFloat(want, 10, prec, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		d := newBig(prec).Sub(got, w)
		d.Quo(d, w)
		if f, _ := d.Float64(); math.Abs(f) > 1e-45 {
			t.Errorf("%s = %s, want %s (rel err %g)", name, got.Text('g', 50), want, f)
		}
	}
	pi := bigPi(prec)
	check("pi", pi, "3.14159265358979323846264338327950288419716939937510582097494")
	check("e", bigExp(newBig(prec).SetInt64(1), prec), "2.71828182845904523536028747135266249775724709369995957496697")
	erfc := func(y float64) *big.Float {
		e := bigErf(newBig(prec).SetFloat64(y), prec, pi)
		return e.Sub(newBig(prec).SetInt64(1), e)
	}
	check("erfc(1)", erfc(1), "0.157299207050285130658779364917390740703933002034")
	// erfc(5) = 1 - erf(5) cancels 5^2/ln 2 = 36 bits, which prec absorbs.
	check("erfc(5)", erfc(5), "1.53745979442803485018834348538337889011805031472337993e-12")
}
