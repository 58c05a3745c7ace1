package fedopt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// ratCmp compares sum_k g_k^2 with (tau b)^2 in exact rational arithmetic
// (math/big.Rat, independent of normWithin's float64 and big.Float paths).
func ratCmp(g []float64, b float64, tau int) int {
	ss := new(big.Rat)
	for _, v := range g {
		r := new(big.Rat).SetFloat64(v)
		ss.Add(ss, r.Mul(r, r))
	}
	t := new(big.Rat).SetFloat64(b)
	t.Mul(t, new(big.Rat).SetInt64(int64(tau)))
	return ss.Cmp(t.Mul(t, t))
}

// TestNormWithinExactTies checks normWithin at exact ties, whose sums of
// squares are perfect squares by hand ((3, 4) and 5, (1, 2, 2) and 3,
// (2, 3, 6) and 7, (1, 4, 8) and 9, d equal entries and sqrt(d)), shifted
// through every binade that keeps the entries exact, with tau in {1, 2, 3,
// 5, 2^20}, at the bound and one ulp either side, against ratCmp; and that
// Clip of those vectors ends within the bound by ratCmp.
func TestNormWithinExactTies(t *testing.T) {
	cases := []struct {
		v []float64
		n float64
	}{
		{[]float64{3, 4}, 5}, {[]float64{1, 2, 2}, 3}, {[]float64{2, 3, 6}, 7}, {[]float64{1, 4, 8}, 9},
		{[]float64{1, 1, 1, 1}, 2}, {[]float64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 3}, {[]float64{5}, 5}, {[]float64{-3, 0, 4}, 5},
	}
	step := 1
	if testing.Short() {
		step = 5
	}
	for _, c := range cases {
		for sh := -1130; sh <= 1030; sh += step {
			g := make([]float64, len(c.v))
			exact := true
			for k, v := range c.v {
				g[k] = math.Ldexp(v, sh)
				exact = exact && math.Ldexp(g[k], -sh) == v
			}
			if !exact {
				continue
			}
			for _, tau := range []int{1, 2, 3, 5, 1 << 20} {
				b0 := math.Ldexp(c.n, sh) / float64(tau)
				for _, b := range []float64{math.Nextafter(b0, 0), b0, math.Nextafter(b0, math.Inf(1))} {
					if !(b > 0) || math.IsInf(b, 0) {
						continue
					}
					want := ratCmp(g, b, tau) <= 0
					if got := normWithin(g, b, tau); got != want {
						t.Errorf("normWithin(%v, %v, %d) = %v, exact comparison says %v", g, b, tau, got, want)
					}
					if tau == 1 {
						h := append([]float64(nil), g...)
						Clip(h, b)
						if ratCmp(h, b, 1) > 0 {
							t.Errorf("Clip(%v, %v) = %v, exact norm above the bound", g, b, h)
						}
					}
				}
			}
		}
	}
}

// TestClipAdversarialExact clips adversarial vectors (many equal entries,
// one huge entry and many tiny ones, subnormal entries, entries near
// sqrt(MaxFloat64) and MaxFloat64, infinite entries, Gaussian and
// wide-exponent random entries; d from 1 to 100) to bounds from the
// smallest subnormal to MaxFloat64 and to the float64 norm times 1/2, 2
// and 1 +- 1e-15, and checks by ratCmp that the result's exact norm is at
// most the bound, that no entry changes sign or becomes nonzero from zero,
// and that a result is zero only for a bound below 1e-290.
func TestClipAdversarialExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(d int, f func(k int) float64) []float64 {
		g := make([]float64, d)
		for k := range g {
			g[k] = f(k)
		}
		return g
	}
	gens := []func(d int) []float64{
		func(d int) []float64 { return fill(d, func(int) float64 { return 1 }) },
		func(d int) []float64 { return fill(d, func(int) float64 { return 1e300 }) },
		func(d int) []float64 { return fill(d, func(int) float64 { return 1e-300 }) },
		func(d int) []float64 { return fill(d, func(k int) float64 { return 0x1p-1074 * float64(k+1) }) },
		func(d int) []float64 {
			return fill(d, func(k int) float64 { return map[bool]float64{true: 1e308, false: 1e-300 * float64(k)}[k == 0] })
		},
		func(d int) []float64 {
			return fill(d, func(k int) float64 { return math.Sqrt(math.MaxFloat64) * (1 - float64(k)*1e-16) })
		},
		func(d int) []float64 { return fill(d, func(int) float64 { return rng.NormFloat64() }) },
		func(d int) []float64 {
			return fill(d, func(int) float64 { return math.Ldexp(rng.Float64()-0.5, rng.IntN(2000)-1000) })
		},
		func(d int) []float64 {
			return fill(d, func(int) float64 { return math.MaxFloat64 * (2*rng.Float64() - 1) })
		},
		func(d int) []float64 {
			return fill(d, func(k int) float64 { return map[bool]float64{true: 3, false: math.Inf(1 - 2*(k%2))}[k == 0 && d > 1] })
		},
	}
	bounds := []float64{1, 5, 0.1, math.Nextafter(1, 0), math.Nextafter(1, 2), math.MaxFloat64, 0x1p-1074, 0x1p-1022,
		3e-310, 1e-300, 1e300, math.Sqrt(math.MaxFloat64)}
	for _, d := range []int{1, 2, 3, 4, 5, 7, 16, 100} {
		for gi, gen := range gens {
			for _, b0 := range bounds {
				for _, mul := range []float64{1, 0.5, 2, 1 + 1e-15, 1 - 1e-15} {
					g, b := gen(d), b0
					if n := updateNorm(g); mul != 1 && n > 0 && !math.IsInf(n, 0) {
						b = n * mul
					}
					if !(b > 0) || math.IsInf(b, 0) {
						continue
					}
					orig := append([]float64(nil), g...)
					Clip(g, b)
					if ratCmp(g, b, 1) > 0 {
						t.Errorf("d = %d, vector %d, bound %v: exact norm of the clipped vector above the bound", d, gi, b)
					}
					zero, was := true, false
					for k := range g {
						if g[k]*orig[k] < 0 || g[k] != 0 && orig[k] == 0 {
							t.Errorf("d = %d, vector %d, bound %v: entry %d went from %v to %v", d, gi, b, k, orig[k], g[k])
						}
						zero, was = zero && g[k] == 0, was || orig[k] != 0
					}
					if zero && was && b > 1e-290 {
						t.Errorf("d = %d, vector %d, bound %v: clipped to zero", d, gi, b)
					}
				}
			}
		}
	}
}
