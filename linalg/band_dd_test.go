package linalg

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigScaledInverseDiag returns v_i Y_ii, Y = (L L^T + sigma diag(v))^{-1},
// in 400-bit arithmetic (Gauss-Jordan elimination on the dense matrix, the
// products of float64 entries exact): an independent reference for
// SymBandDD.AddScaledInverseDiag.
func bigScaledInverseDiag(n, k int, at func(i, p int) float64, sigma float64, v []float64) []*big.Float {
	const prec = 400
	nf := func() *big.Float { return new(big.Float).SetPrec(prec) }
	a := make([][]*big.Float, n)
	for i := range a {
		a[i] = make([]*big.Float, 2*n)
		for j := range a[i] {
			a[i][j] = nf()
		}
		a[i][n+i].SetInt64(1)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p <= min(i, j); p++ {
				if i-p > k || j-p > k {
					continue
				}
				a[i][j].Add(a[i][j], nf().Mul(nf().SetFloat64(at(i, p)), nf().SetFloat64(at(j, p))))
			}
		}
		a[i][i].Add(a[i][i], nf().Mul(nf().SetFloat64(sigma), nf().SetFloat64(v[i])))
	}
	for c := 0; c < n; c++ { // positive definite: no pivoting needed
		piv := nf().Set(a[c][c])
		for j := range a[c] {
			a[c][j].Quo(a[c][j], piv)
		}
		for r := 0; r < n; r++ {
			if r == c || a[r][c].Sign() == 0 {
				continue
			}
			f := nf().Set(a[r][c])
			for j := range a[r] {
				a[r][j].Sub(a[r][j], nf().Mul(f, a[c][j]))
			}
		}
	}
	out := make([]*big.Float, n)
	for i := range out {
		out[i] = nf().Mul(a[i][n+i], nf().SetFloat64(v[i]))
	}
	return out
}

// The double-word band kernel against a 400-bit dense inverse, on L L^T of
// the momentum workloads' inverse (1, -(1 + beta), beta on three
// diagonals: cond(L L^T) up to about 1e9 at n = 60, beta = 0.99), graded
// multipliers v and small shifts: relative error at most 1e-24 times
// cond (a few u^2 cond), where the float64 kernel on the formed, scaled
// matrix errs by about u cond. The inertia check agrees with a value
// just below and just above lambda_min's reference bracket.
func TestSymBandDDScaledInverseDiag(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	for _, beta := range []float64{0.5, 0.99} {
		for _, n := range []int{7, 60} {
			k := 2
			at := momentumInv(beta)
			g := GramBandDD(n, k, at)
			v := make([]float64, n)
			for i := range v {
				v[i] = math.Exp(rng.Float64()*math.Log(100)) / 2
			}
			for _, sigma := range []float64{1e-9, 1e-3, 1} {
				work := make([]float64, ScaledInverseDiagWork(n, k))
				ah, al := make([]float64, n), make([]float64, n)
				require.Zero(t, g.AddScaledInverseDiag(sigma, v, 1, ah, al, work))
				ref := bigScaledInverseDiag(n, k, at, sigma, v)
				// The float64 kernel on the scaled matrix, for comparison.
				sb := NewSymBand(n, k)
				for i := 0; i < n; i++ {
					for j := max(0, i-k); j <= i; j++ {
						sb.Set(i, j, (g.Hi[i*(k+1)+i-j]+g.Lo[i*(k+1)+i-j])/math.Sqrt(v[i]*v[j]))
					}
				}
				st := make([]float64, n)
				sb.ShiftedInverseDiag(sigma, st, make([]float64, 3*n*(k+1)))
				worst, worst64 := 0.0, 0.0
				for i := range ref {
					worst = math.Max(worst, relTo(ref[i], ah[i], al[i]))
					worst64 = math.Max(worst64, relTo(ref[i], st[i], 0))
				}
				assert.LessOrEqual(t, worst, 1e-22, "beta=%g n=%d sigma=%g: double-word kernel", beta, n, sigma)
				t.Logf("beta=%g n=%d sigma=%g: relative error %.2g (float64 kernel %.2g)", beta, n, sigma, worst, worst64)
			}
			// Weighted accumulation: two shifts' terms add.
			work := make([]float64, ScaledInverseDiagWork(n, k))
			ah, al := make([]float64, n), make([]float64, n)
			require.Zero(t, g.AddScaledInverseDiag(1e-3, v, 0.25, ah, al, work))
			require.Zero(t, g.AddScaledInverseDiag(1, v, 3, ah, al, work))
			r1, r2 := bigScaledInverseDiag(n, k, at, 1e-3, v), bigScaledInverseDiag(n, k, at, 1, v)
			for i := range ah {
				want := new(big.Float).SetPrec(400).Mul(r1[i], big.NewFloat(0.25))
				want.Add(want, new(big.Float).SetPrec(400).Mul(r2[i], big.NewFloat(3)))
				assert.LessOrEqual(t, relTo(want, ah[i], al[i]), 1e-22, "beta=%g n=%d entry %d", beta, n, i)
			}
			// lambda_min of L L^T: positive definite above x exactly when
			// x is below it (here far from it either way).
			ones := make([]float64, n)
			for i := range ones {
				ones[i] = 1
			}
			y := bigScaledInverseDiag(n, k, at, 0, ones) // diag(M^{-1})
			maxY := 0.0
			for _, x := range y {
				f, _ := x.Float64()
				maxY = math.Max(maxY, f)
			}
			// lambda_min <= 1 / max_i (M^{-1})_ii.
			assert.False(t, g.PositiveDefiniteAbove(1.01/maxY, nil, work), "beta=%g n=%d: above lambda_min", beta, n)
			assert.True(t, g.PositiveDefiniteAbove(0, nil, work), "beta=%g n=%d: M is positive definite", beta, n)
		}
	}
}

// relTo returns |hi + lo - ref| / ref.
func relTo(ref *big.Float, hi, lo float64) float64 {
	d := new(big.Float).SetPrec(400).SetFloat64(hi)
	d.Add(d, new(big.Float).SetPrec(400).SetFloat64(lo))
	d.Sub(d, ref)
	d.Quo(d, ref)
	f, _ := d.Float64()
	return math.Abs(f)
}

// BenchmarkSymBandDDScaledInverseDiag times one shift of the double-word
// band kernel on L L^T of momentum 0.9 (K = 2) at N = 10^5, its
// factorization alone (PositiveDefiniteAbove) and, for comparison, one
// shift of the float64 kernel on the formed matrix (ShiftedInverseDiag).
func BenchmarkSymBandDDScaledInverseDiag(b *testing.B) {
	const n, k, beta = 100000, 2, 0.9
	at := momentumInv(beta)
	g := GramBandDD(n, k, at)
	rng := rand.New(rand.NewPCG(3, 1))
	v := make([]float64, n)
	for i := range v {
		v[i] = 1 + rng.Float64()
	}
	work := make([]float64, ScaledInverseDiagWork(n, k))
	ah, al := make([]float64, n), make([]float64, n)
	b.Run("shift", func(b *testing.B) {
		for range b.N {
			if g.AddScaledInverseDiag(1e-3, v, 0.5, ah, al, work) > 0 {
				b.Fatal("not positive definite")
			}
		}
	})
	b.Run("ldl", func(b *testing.B) {
		for range b.N {
			if !g.PositiveDefiniteAbove(0, v, work) {
				b.Fatal("not positive definite")
			}
		}
	})
	sb := SymBand{N: n, K: k, Data: g.Hi}
	dst, work64 := make([]float64, n), make([]float64, 3*n*(k+1))
	b.Run("float64", func(b *testing.B) {
		for range b.N {
			sb.ShiftedInverseDiag(1e-3, dst, work64)
		}
	})
}

// bigInverse returns the inverse of the symmetric positive definite n x n
// matrix a (row-major, entries exact) in 400-bit arithmetic, by
// Gauss-Jordan elimination.
func bigInverse(n int, a []*big.Float) []*big.Float {
	const prec = 400
	nf := func() *big.Float { return new(big.Float).SetPrec(prec) }
	m := make([][]*big.Float, n)
	for i := range m {
		m[i] = make([]*big.Float, 2*n)
		for j := range m[i] {
			m[i][j] = nf()
		}
		for j := 0; j < n; j++ {
			m[i][j].Set(a[i*n+j])
		}
		m[i][n+i].SetInt64(1)
	}
	for c := 0; c < n; c++ {
		piv := nf().Set(m[c][c])
		for j := range m[c] {
			m[c][j].Quo(m[c][j], piv)
		}
		for r := 0; r < n; r++ {
			if r == c || m[r][c].Sign() == 0 {
				continue
			}
			f := nf().Set(m[r][c])
			for j := range m[r] {
				m[r][j].Sub(m[r][j], nf().Mul(f, m[c][j]))
			}
		}
	}
	out := make([]*big.Float, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			out[i*n+j] = m[i][n+j]
		}
	}
	return out
}

// ShiftedInverseBlocks against a 400-bit dense inverse: alpha L L^T +
// B for momentum 0.99's L (cond(L L^T) about 1e9 at n = 60) held with
// K = 4 off-diagonals (two of them zero) and B block-diagonal with
// positive definite blocks of order 3 (the fixed-epoch solver's shape),
// also scaled by 2^-30 (then as ill-conditioned as L L^T), at small and
// large alpha: every entry within the blocks is within
// 1e-22 of the reference relatively to the block's diagonal (the
// off-diagonal entries are not small), and B = I (Data nil) gives the
// identity's blocks.
func TestSymBandDDShiftedInverseBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	const n, k, kk, blk, beta = 60, 2, 4, 3, 0.99
	at := momentumInv(beta)
	g := GramBandDD(n, k, at)
	wide := SymBandDD{N: n, K: kk, Hi: make([]float64, n*(kk+1)), Lo: make([]float64, n*(kk+1))}
	for i := 0; i < n; i++ {
		for d := 0; d <= k; d++ {
			wide.Hi[i*(kk+1)+d], wide.Lo[i*(kk+1)+d] = g.Hi[i*(k+1)+d], g.Lo[i*(k+1)+d]
		}
	}
	bm := NewSymBand(n, blk-1)
	for q := 0; q < n/blk; q++ {
		// A random positive definite block: R R^T + I/2, R with entries
		// in [-1, 1).
		var r [blk][blk]float64
		for a := range r {
			for c := range r[a] {
				r[a][c] = 2*rng.Float64() - 1
			}
		}
		for a := 0; a < blk; a++ {
			for c := 0; c <= a; c++ {
				v := 0.0
				for m := 0; m < blk; m++ {
					v += r[a][m] * r[c][m]
				}
				if a == c {
					v += 0.5
				}
				bm.Set(q*blk+a, q*blk+c, v)
			}
		}
	}
	// B scaled by 2^-30: alpha L L^T + B as ill-conditioned as L L^T
	// (about 1e9) at alpha = 1.
	small := NewSymBand(n, blk-1)
	for i, v := range bm.Data {
		small.Data[i] = v * 0x1p-30
	}
	nf := func() *big.Float { return new(big.Float).SetPrec(400) }
	for _, alpha := range []float64{1e-9, 1e-3, 1, 3} {
		for _, b := range []SymBand{bm, small, {N: n}} {
			dense := make([]*big.Float, n*n)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					s := nf()
					for p := 0; p <= min(i, j); p++ {
						if i-p <= k && j-p <= k {
							s.Add(s, nf().Mul(nf().SetFloat64(at(i, p)), nf().SetFloat64(at(j, p))))
						}
					}
					s.Mul(s, nf().SetFloat64(alpha))
					bij := 0.0
					if b.Data != nil {
						bij = b.At(i, j)
					} else if i == j {
						bij = 1
					}
					dense[i*n+j] = s.Add(s, nf().SetFloat64(bij))
				}
			}
			ref := bigInverse(n, dense)
			zh, zl := make([]float64, n*blk), make([]float64, n*blk)
			work := make([]float64, ScaledInverseDiagWork(n, kk))
			require.Zero(t, wide.ShiftedInverseBlocks(alpha, 1, b, blk, zh, zl, work))
			worst := 0.0
			for i := 0; i < n; i++ {
				for j := (i / blk) * blk; j <= i; j++ {
					d := nf().SetFloat64(zh[i*blk+i-j])
					d.Add(d, nf().SetFloat64(zl[i*blk+i-j]))
					d.Sub(d, ref[i*n+j])
					scale := nf().Mul(ref[i*n+i], ref[j*n+j])
					scale.Sqrt(scale)
					e, _ := d.Quo(d, scale).Float64()
					worst = math.Max(worst, math.Abs(e))
				}
			}
			b00 := 1.0
			if b.Data != nil {
				b00 = b.At(0, 0)
			}
			assert.LessOrEqual(t, worst, 1e-22, "alpha=%g B[0][0] = %g", alpha, b00)
			t.Logf("alpha=%g B[0][0] = %g: worst relative error %.2g", alpha, b00, worst)
		}
	}
	assert.Panics(t, func() {
		wide.ShiftedInverseBlocks(1, 1, bm, kk+2, make([]float64, n*(kk+2)), make([]float64, n*(kk+2)), make([]float64, ScaledInverseDiagWork(n, kk)))
	}, "blocks wider than the band")
}

// momentumInv returns the entries of the momentum workloads' inverse L
// (1, -(1 + beta), beta on its diagonal and two subdiagonals) by row i and
// column p.
func momentumInv(beta float64) func(i, p int) float64 {
	return func(i, p int) float64 {
		switch i - p {
		case 0:
			return 1
		case 1:
			return -(1 + beta)
		case 2:
			return beta
		}
		return 0
	}
}

// TestSymBandDDInverseBandSquaredRows checks the double-word band of
// Z = M^{-1} and Z^2 against a 400-bit dense inverse and its square, for
// M = L L^T with L the second-difference-like bidiagonal (1, -1) plus a
// random band (condition numbers of about 10^3 to 10^5), stored with more
// off-diagonals than it has: at every visit, every entry of the rows the
// visit promises, in the columns it promises, is within 1e-24 of the
// reference relatively to the geometric mean of its diagonal entries (the
// float64 kernel's error is about 1e-13 here).
func TestSymBandDDInverseBandSquaredRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	nf := func() *big.Float { return new(big.Float).SetPrec(400) }
	for _, c := range []struct{ n, k, kk int }{{40, 1, 1}, {45, 2, 5}, {30, 3, 3}, {9, 2, 12}} {
		n, k, kk := c.n, c.k, c.kk
		lv := make([]float64, n*(k+1))
		for i := 0; i < n; i++ {
			lv[i*(k+1)] = 1 + 0.1*rng.Float64()
			if i > 0 {
				lv[i*(k+1)+1] = -1 + 0.1*rng.Float64()
			}
			for d := 2; d <= k && d <= i; d++ {
				lv[i*(k+1)+d] = 0.3 * (2*rng.Float64() - 1)
			}
		}
		at := func(i, p int) float64 {
			if i-p < 0 || i-p > k {
				return 0
			}
			return lv[i*(k+1)+i-p]
		}
		g := GramBandDD(n, k, at)
		kw := min(kk, n-1)
		m := SymBandDD{N: n, K: kw, Hi: make([]float64, n*(kw+1)), Lo: make([]float64, n*(kw+1))}
		dense := make([]*big.Float, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				dense[i*n+j] = nf()
			}
			for d := 0; d <= k && d <= i; d++ {
				m.Hi[i*(kw+1)+d], m.Lo[i*(kw+1)+d] = g.Hi[i*(k+1)+d], g.Lo[i*(k+1)+d]
				v := nf().SetFloat64(g.Hi[i*(k+1)+d])
				v.Add(v, nf().SetFloat64(g.Lo[i*(k+1)+d]))
				dense[i*n+i-d].Set(v)
				dense[(i-d)*n+i].Set(v)
			}
		}
		z := bigInverse(n, dense)
		z2 := make([]*big.Float, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				s := nf()
				for q := 0; q < n; q++ {
					s.Add(s, nf().Mul(z[i*n+q], z[q*n+j]))
				}
				z2[i*n+j] = s
			}
		}
		rel := func(h, l float64, ref []*big.Float, i, j int) float64 {
			d := nf().SetFloat64(h)
			d.Add(d, nf().SetFloat64(l))
			d.Sub(d, ref[i*n+j])
			scale := nf().Mul(ref[i*n+i], ref[j*n+j])
			scale.Sqrt(scale)
			e, _ := d.Quo(d, scale).Float64()
			return math.Abs(e)
		}
		worst, checked := 0.0, 0
		visited := make([]bool, n)
		work := make([]float64, InverseBandSquaredDDWork(n, kw))
		bad := m.InverseBandSquaredRows(func(col int, row func(r int) (zh, zl, z2h, z2l []float64)) {
			require.False(t, visited[col], "column %d visited twice", col)
			if col < n-1 {
				require.True(t, visited[col+1], "column %d before %d", col, col+1)
			}
			visited[col] = true
			for r := col; r <= min(n-1, col+kw+1); r++ {
				zh, zl, z2h, z2l := row(r)
				for q := max(col, r-kw); q <= min(n-1, r+kw); q++ {
					o := kw + q - r
					worst = math.Max(worst, rel(zh[o], zl[o], z, r, q))
					worst = math.Max(worst, rel(z2h[o], z2l[o], z2, r, q))
					checked++
				}
			}
		}, work)
		require.Zero(t, bad)
		for i, v := range visited {
			require.True(t, v, "column %d not visited", i)
		}
		assert.LessOrEqual(t, worst, 1e-24, "n=%d k=%d K=%d", n, k, kw)
		t.Logf("n=%d k=%d K=%d: %d entries, worst relative error %.2g", n, k, kw, checked, worst)
	}
	// An indefinite matrix is reported and nothing is visited.
	ind := SymBandDD{N: 3, K: 1, Hi: []float64{1, 0, 1, 2, 1, 0}, Lo: make([]float64, 6)}
	calls := 0
	assert.Positive(t, ind.InverseBandSquaredRows(func(int, func(int) ([]float64, []float64, []float64, []float64)) { calls++ }, make([]float64, InverseBandSquaredDDWork(3, 1))))
	assert.Zero(t, calls)
	assert.Panics(t, func() { ind.InverseBandSquaredRows(nil, make([]float64, 3)) }, "short work")
}

// BenchmarkSymBandDDInverseBandSquaredRows times the double-word band of
// Z and Z^2 against the float64 kernel on the same matrix (the banded
// solver's Q for prefix sums at a feasible X: L^T L with L bidiagonal plus
// a band), at N = 10^4 with K = 64.
func BenchmarkSymBandDDInverseBandSquaredRows(b *testing.B) {
	const n, k = 10000, 64
	rng := rand.New(rand.NewPCG(3, 5))
	m := SymBandDD{N: n, K: k, Hi: make([]float64, n*(k+1)), Lo: make([]float64, n*(k+1))}
	for i := 0; i < n; i++ {
		m.Hi[i*(k+1)] = 2 + 2*float64(k)
		for d := 1; d <= k && d <= i; d++ {
			m.Hi[i*(k+1)+d] = 2*rng.Float64() - 1
		}
	}
	work := make([]float64, InverseBandSquaredDDWork(n, k))
	b.Run("double-word", func(b *testing.B) {
		for range b.N {
			if m.InverseBandSquaredRows(func(int, func(int) ([]float64, []float64, []float64, []float64)) {}, work) > 0 {
				b.Fatal("not positive definite")
			}
		}
	})
	sb := SymBand{N: n, K: k, Data: m.Hi}
	zr, z2r := make([]float64, n*(2*k+1)), make([]float64, n*(2*k+1))
	w64 := make([]float64, InverseBandSquaredRowsWork(n, k))
	b.Run("float64", func(b *testing.B) {
		for range b.N {
			if sb.InverseBandSquaredRows(zr, z2r, w64) > 0 {
				b.Fatal("not positive definite")
			}
		}
	})
}
