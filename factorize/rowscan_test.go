package factorize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// gammaByColumns is Gamma's definition read column by column with
// math.Max and math.Abs (the way Gamma read C before it read rows): the
// largest column norm, over C scaled by a power of two when its entries
// are far from 1.
func gammaByColumns(c mat.Matrix) float64 {
	m, n := c.Dims()
	maxAbs := 0.0
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			maxAbs = math.Max(maxAbs, math.Abs(c.At(i, j)))
		}
	}
	if math.IsNaN(maxAbs) || math.IsInf(maxAbs, 1) {
		return maxAbs
	}
	e := scaleExponent(maxAbs)
	scale := math.Ldexp(1, -e)
	g2 := 0.0
	for j := 0; j < n; j++ {
		s := 0.0
		for i := 0; i < m; i++ {
			v := c.At(i, j) * scale
			s += v * v
		}
		g2 = math.Max(g2, s)
	}
	return ldexpUp(math.Sqrt(g2), e)
}

// Gamma and checkFinite read C row by row with the magnitudes compared as
// integers: the same bits as the column-by-column definition, for dense
// and triangular matrices (At), entries of every magnitude (subnormal,
// -0, near the float64 maximum) and NaN or infinities anywhere, and
// checkFinite names the first non-finite entry in row order and returns
// the largest magnitude; maxAbsBits against math.Abs on every tail length.
func TestGammaReadsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	special := []float64{0, math.Copysign(0, -1), 5e-324, -2.2e-308, 1e300, -1.7e308, 1e-200, 3}
	for trial := 0; trial < 300; trial++ {
		m, n := 1+rng.IntN(9), 1+rng.IntN(9)
		d := mat.NewDense(m, n, nil)
		scale := []float64{1, 1e-170, 1e170, 1e-310}[rng.IntN(4)]
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				v := rng.NormFloat64() * scale
				if rng.IntN(4) == 0 {
					v = special[rng.IntN(len(special))]
				}
				d.Set(i, j, v)
			}
		}
		var bad [2]int
		hasBad := trial%5 == 0
		if hasBad {
			bad = [2]int{rng.IntN(m), rng.IntN(n)}
			d.Set(bad[0], bad[1], []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)])
		}
		mats := []mat.Matrix{d, d.T()}
		if m == n {
			mats = append(mats, mat.NewTriDense(n, mat.Lower, nil))
			tri := mats[2].(*mat.TriDense)
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					tri.SetTri(i, j, d.At(i, j))
				}
			}
		}
		for k, c := range mats {
			msg := fmt.Sprintf("trial %d, matrix %d", trial, k)
			want, got := gammaByColumns(c), Gamma(c)
			if math.IsNaN(want) {
				require.True(t, math.IsNaN(got), "%s: Gamma %v, want NaN", msg, got)
			} else {
				require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%s: Gamma %v, want %v", msg, got, want)
			}
			maxAbs, err := checkFinite("C", c)
			rows, cols := c.Dims()
			first := ""
			wantMax := 0.0
			for i := 0; i < rows && first == ""; i++ {
				for j := 0; j < cols; j++ {
					v := c.At(i, j)
					if math.IsNaN(v) || math.IsInf(v, 0) {
						first = fmt.Sprintf("C[%d][%d]", i, j)
						break
					}
					wantMax = math.Max(wantMax, math.Abs(v))
				}
			}
			if first != "" {
				requireParamError(t, err, first)
				continue
			}
			require.NoError(t, err, msg)
			require.Equal(t, math.Float64bits(wantMax), math.Float64bits(maxAbs), "%s: largest magnitude", msg)
		}
	}
	for n := 0; n < 12; n++ {
		r := make([]float64, n)
		for i := range r {
			r[i] = special[rng.IntN(len(special))]
		}
		want := 0.0
		for _, v := range r {
			want = math.Max(want, math.Abs(v))
		}
		require.Equal(t, math.Float64bits(want), maxAbsBits(r), "length %d", n)
		if n > 0 {
			r[rng.IntN(n)] = math.NaN()
			require.Greater(t, maxAbsBits(r), uint64(infBits), "NaN above +Inf, length %d", n)
			r[rng.IntN(n)] = math.Inf(-1)
			require.GreaterOrEqual(t, maxAbsBits(r), uint64(infBits), "length %d", n)
		}
	}
}

// denseFromInverseBand (rows formed from the rows above) inverts random
// lower band matrices: A L = I to rounding, against gonum's product.
func TestDenseFromInverseBandInverts(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for _, c := range []struct{ n, k int }{{1, 0}, {6, 1}, {40, 2}, {40, 5}, {70, 1}} {
		l := mat.NewTriBandDense(c.n, c.k, mat.Lower, nil)
		for i := 0; i < c.n; i++ {
			for j := max(0, i-c.k); j <= i; j++ {
				v := 0.3 * rng.NormFloat64() / float64(c.k+1)
				if i == j {
					v = 1 + rng.Float64()
				}
				l.SetTriBand(i, j, v)
			}
		}
		a := denseFromInverseBand(l)
		var prod mat.Dense
		prod.Mul(a, l)
		for i := 0; i < c.n; i++ {
			for j := 0; j < c.n; j++ {
				want := 0.0
				if i == j {
					want = 1
				}
				require.InDelta(t, want, prod.At(i, j), 1e-12, "n=%d k=%d: (A L)[%d][%d]", c.n, c.k, i, j)
				if j > i {
					require.Zero(t, a.At(i, j))
				}
			}
		}
	}
}
