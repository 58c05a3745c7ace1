package accountant

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

const bigPrec = 240

// bigSinCos returns sin x and cos x by their Taylor series in 240-bit
// arithmetic (an evaluation independent of the double-word one).
func bigSinCos(x *big.Float) (s, c *big.Float) {
	s = new(big.Float).SetPrec(bigPrec)
	c = new(big.Float).SetPrec(bigPrec)
	term := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	for n := 0; n < 120; n++ {
		if n%2 == 0 {
			if (n/2)%2 == 0 {
				c.Add(c, term)
			} else {
				c.Sub(c, term)
			}
		} else {
			if (n/2)%2 == 0 {
				s.Add(s, term)
			} else {
				s.Sub(s, term)
			}
		}
		term.Mul(term, x)
		term.Quo(term, new(big.Float).SetPrec(bigPrec).SetInt64(int64(n+1)))
	}
	return s, c
}

func ddErr(h, l float64, want *big.Float) float64 {
	v := new(big.Float).SetPrec(bigPrec).SetFloat64(h)
	v.Add(v, new(big.Float).SetPrec(bigPrec).SetFloat64(l))
	v.Sub(v, want)
	f, _ := v.Float64()
	return math.Abs(f)
}

// bigRoot returns cos and -sin of 2 pi m / n in 240-bit arithmetic.
func bigRoot(pi *big.Float, m, n int) (re, im *big.Float) {
	x := new(big.Float).SetPrec(bigPrec).Mul(pi, big.NewFloat(float64(2*m)).SetPrec(bigPrec))
	x.Quo(x, new(big.Float).SetPrec(bigPrec).SetInt64(int64(n)))
	s, c := bigSinCos(x)
	return c, s.Neg(s)
}

// TestDDRoot: ddRoot against a 240-bit Taylor evaluation (of the unreduced
// angle, an independent route), within the 24 u^2 per part it claims, for
// lengths that are and are not powers of 2 and indices in every octant.
func TestDDRoot(t *testing.T) {
	t.Parallel()
	pi := bigPi(bigPrec)
	u2 := unitRound * unitRound
	worst := 0.0
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 7, 8, 64, 1000, 995328, 1 << 20, 16777213} {
		for range 60 {
			m := rng.IntN(n)
			w := ddRoot(m+n*rng.IntN(3), n)
			re, im := bigRoot(pi, m, n)
			worst = math.Max(worst, math.Max(ddErr(w.rh, w.rl, re), ddErr(w.ih, w.il, im))/u2)
		}
	}
	t.Logf("worst root error %.3g u^2", worst)
	if !(worst <= 24) {
		t.Errorf("root error %.3g u^2 > 24 u^2", worst)
	}
}

// TestHornerDFT: hornerDFT against a direct 240-bit sum of random
// non-negative terms spanning 30 orders of magnitude, within
// hornerErrorConst times their l1 norm.
func TestHornerDFT(t *testing.T) {
	t.Parallel()
	pi := bigPi(bigPrec)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, s0, len int }{{64, 0, 64}, {1000, 17, 200}, {995328, 4000, 300}} {
		x := make([]float64, c.len)
		l1 := 0.0
		for i := range x {
			x[i] = math.Exp(-70 * rng.Float64())
			l1 += x[i]
		}
		worst := 0.0
		for range 8 {
			j := rng.IntN(c.n)
			z := hornerDFT(x, c.s0, j, c.n)
			re := new(big.Float).SetPrec(bigPrec)
			im := new(big.Float).SetPrec(bigPrec)
			for i, v := range x {
				cr, ci := bigRoot(pi, int((int64(j)*int64(c.s0+i))%int64(c.n)), c.n)
				bv := new(big.Float).SetPrec(bigPrec).SetFloat64(v)
				re.Add(re, cr.Mul(cr, bv))
				im.Add(im, ci.Mul(ci, bv))
			}
			worst = math.Max(worst, math.Hypot(ddErr(z.rh, z.rl, re), ddErr(z.ih, z.il, im)))
		}
		bound := hornerErrorConst(c.len) * l1
		t.Logf("n=%d len=%d: worst error %.3g, bound %.3g", c.n, c.len, worst, bound)
		if !(worst <= bound) {
			t.Errorf("n=%d: error %.3g above the bound %.3g", c.n, worst, bound)
		}
	}
}
