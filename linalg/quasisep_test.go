package linalg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// randomQuasiSepSPD returns a symmetric positive definite X = sum_t w_t
// (T + s_t I)^{-1} + I as the lower triangle of a QuasiSep of order k, and
// the same matrix formed densely by gonum's inverse (an independent route).
func randomQuasiSepSPD(t *testing.T, rng *rand.Rand, n, k int) (QuasiSep, *mat.SymDense) {
	t.Helper()
	x, b, sigmas, weights := shiftedInverseSum(rng, n, k)
	dense := mat.NewSymDense(n, nil)
	tm := mat.NewSymDense(n, nil)
	for s, sigma := range sigmas {
		for i := 0; i < n; i++ {
			tm.SetSym(i, i, b.Diag[i]*b.Diag[i]+b.Sub[i]*b.Sub[i]+sigma)
			if i > 0 {
				tm.SetSym(i, i-1, b.Sub[i]*b.Diag[i-1])
			}
		}
		var inv mat.Dense
		require.NoError(t, inv.Inverse(tm))
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				dense.SetSym(i, j, dense.At(i, j)+weights[s]*inv.At(i, j))
			}
		}
	}
	for i := 0; i < n; i++ {
		dense.SetSym(i, i, dense.At(i, i)+1)
	}
	return x, dense
}

// shiftedInverseSum returns the generators of X = sum_t w_t (T + s_t I)^{-1}
// + I of order k for a random bidiagonal Gram matrix T = B^T B (returned
// with the shifts s_t and weights w_t): k shifts from 10^-2 to 10, weights
// from 0.1 to 1.1.
func shiftedInverseSum(rng *rand.Rand, n, k int) (x QuasiSep, b BidiagGram, sigmas, weights []float64) {
	b = BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
	for i := range b.Diag {
		b.Diag[i] = 0.5 + rng.Float64()
		b.Sub[i] = -(0.5 + rng.Float64())
	}
	b.Sub[0] = 0 // ignored by BidiagGram
	x = NewQuasiSep(n, k)
	diag, rho := make([]float64, n), make([]float64, n)
	for s := 0; s < k; s++ {
		sigma := math.Pow(10, 3*rng.Float64()-2)
		w := 0.1 + rng.Float64()
		sigmas, weights = append(sigmas, sigma), append(weights, w)
		b.ShiftedInverseGen(sigma, diag, rho)
		for i := 0; i < n; i++ {
			x.P[i*k+s] = rho[i]
			x.A[i*k+s] = rho[i]
			x.Q[i*k+s] = w * diag[i]
			x.Diag[i] += w * diag[i]
		}
	}
	for i := range x.Diag {
		x.Diag[i]++
	}
	return x, b, sigmas, weights
}

func maxAbsDiff(a, b mat.Matrix) (diff, scale float64) {
	r, c := a.Dims()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			diff = math.Max(diff, math.Abs(a.At(i, j)-b.At(i, j)))
			scale = math.Max(scale, math.Abs(b.At(i, j)))
		}
	}
	return diff, scale
}

// The quasiseparable generators reproduce the dense sum of shifted
// inverses; the reverse Cholesky factor is lower-triangular with
// C^T C = X and agrees with the dense factor E chol(E X E)^T E; Dense,
// InverseRows, SolveStep and ColNormsSq agree with dense computations.
func TestQuasiSepReverseCholesky(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, k int }{{1, 1}, {2, 3}, {17, 1}, {60, 5}} {
		n, k := c.n, c.k
		x, dense := randomQuasiSepSPD(t, rng, n, k)
		xd := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				xd.Set(i, j, x.At(i, j))
			}
		}
		lower := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				lower.Set(i, j, dense.At(i, j))
			}
		}
		d, s := maxAbsDiff(xd, lower)
		assert.LessOrEqual(t, d, 1e-13*s, "n=%d k=%d: generators", n, k)

		cf, err := x.ReverseCholesky()
		require.NoError(t, err)
		for _, workers := range []int{1, 2, 3} {
			cd := make([]float64, n*n)
			for i := range cd {
				cd[i] = math.NaN() // Dense must overwrite everything
			}
			cf.Dense(cd, workers)
			cm := mat.NewDense(n, n, cd)
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					require.Equal(t, 0.0, cm.At(i, j))
				}
			}
			var ctc mat.Dense
			ctc.Mul(cm.T(), cm)
			d, s := maxAbsDiff(&ctc, dense)
			assert.LessOrEqual(t, d, 1e-13*s, "n=%d k=%d workers=%d: C^T C != X", n, k, workers)
			// The dense reverse Cholesky factor.
			rev := mat.NewSymDense(n, nil)
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					rev.SetSym(n-1-i, n-1-j, dense.At(i, j))
				}
			}
			var ch mat.Cholesky
			require.True(t, ch.Factorize(rev))
			var u mat.TriDense
			ch.UTo(&u)
			want := mat.NewDense(n, n, nil)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					want.Set(i, j, u.At(n-1-i, n-1-j))
				}
			}
			d, s = maxAbsDiff(cm, want)
			assert.LessOrEqual(t, d, 1e-12*s, "n=%d k=%d: C against the dense factor", n, k)

			// Inverse rows over column ranges, against gonum's inverse.
			var inv mat.Dense
			require.NoError(t, inv.Inverse(cm))
			got := mat.NewDense(n, n, nil)
			ColumnBlocks(n, workers, func(c0, c1 int) {
				cf.InverseRows(c0, c1, func(i int, row []float64) {
					for j, v := range row {
						got.Set(i, c0+j, v)
					}
				})
			})
			d, s = maxAbsDiff(got, &inv)
			assert.LessOrEqual(t, d, 1e-11*s, "n=%d k=%d: inverse rows", n, k)
		}
		// Column norms: C's columns have the norms of X's diagonal.
		cn := make([]float64, n)
		cf.ColNormsSq(cn)
		for j := 0; j < n; j++ {
			assert.InEpsilon(t, dense.At(j, j), cn[j], 1e-12)
		}
		// Streaming solve of C x = z for d = 3 right-hand sides.
		const dim = 3
		z := mat.NewDense(n, dim, nil)
		for i := 0; i < n; i++ {
			for j := 0; j < dim; j++ {
				z.Set(i, j, rng.NormFloat64())
			}
		}
		h := make([]float64, k*dim)
		got := mat.NewDense(n, dim, nil)
		for i := 0; i < n; i++ {
			cf.SolveStep(i, z.RawRowView(i), h, got.RawRowView(i))
		}
		var cm mat.Dense
		cd := make([]float64, n*n)
		cf.Dense(cd, 1)
		cm.CloneFrom(mat.NewDense(n, n, cd))
		var want mat.Dense
		require.NoError(t, want.Solve(&cm, z))
		d, s = maxAbsDiff(got, &want)
		assert.LessOrEqual(t, d, 1e-11*s, "n=%d k=%d: SolveStep", n, k)
	}
}

func TestQuasiSepNotPositiveDefinite(t *testing.T) {
	x := NewQuasiSep(2, 1)
	x.Diag[0], x.Diag[1] = 1, 1
	x.P[1], x.Q[0], x.A[0], x.A[1] = 2, 1, 1, 1 // X = [[1, 2], [2, 1]]
	_, err := x.ReverseCholesky()
	assert.ErrorContains(t, err, "not numerically positive definite")
}

// The O(n K^2) norms of B = L^{-1} C^{-1} agree with B formed densely.
func TestQuasiSepBidiagSolveNorms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ n, k int }{{1, 1}, {2, 2}, {30, 1}, {80, 6}} {
		n, k := c.n, c.k
		x, _ := randomQuasiSepSPD(t, rng, n, k)
		cf, err := x.ReverseCholesky()
		require.NoError(t, err)
		ldiag, lsub := make([]float64, n), make([]float64, n)
		l := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			ldiag[i] = 0.5 + rng.Float64()
			l.Set(i, i, ldiag[i])
			if i > 0 {
				lsub[i] = rng.NormFloat64()
				l.Set(i, i-1, lsub[i])
			}
		}
		cd := make([]float64, n*n)
		cf.Dense(cd, 1)
		var lc mat.Dense
		lc.Mul(mat.NewDense(n, n, cd), l) // B = L^{-1} C^{-1} = (C L)^{-1}
		var b mat.Dense
		require.NoError(t, b.Inverse(&lc))
		colSq, rowSq := make([]float64, n), make([]float64, n)
		cf.BidiagSolveNormsSq(ldiag, lsub, colSq, rowSq)
		for j := 0; j < n; j++ {
			col := mat.Norm(b.ColView(j), 2)
			row := mat.Norm(b.RowView(j), 2)
			assert.InEpsilon(t, col*col, colSq[j], 1e-10, "n=%d k=%d column %d", n, k, j)
			assert.InEpsilon(t, row*row, rowSq[j], 1e-10, "n=%d k=%d row %d", n, k, j)
		}
	}
}

// TestNegativeOrdersPanicWithPackageMessage: negative sizes are programmer
// errors (the package doc's policy) and panic with a "linalg:" message,
// not a runtime makeslice error.
func TestNegativeOrdersPanicWithPackageMessage(t *testing.T) {
	for name, f := range map[string]func(){
		"NewQuasiSep(-1, 2)":      func() { NewQuasiSep(-1, 2) },
		"NewQuasiSep(2, -1)":      func() { NewQuasiSep(2, -1) },
		"NewInvSqrtWorkspace(-1)": func() { NewInvSqrtWorkspace(-1) },
	} {
		func() {
			defer func() {
				r := recover()
				s, ok := r.(string)
				if !ok || len(s) < 7 || s[:7] != "linalg:" {
					t.Errorf("%s: panic %v, want a string starting with linalg:", name, r)
				}
			}()
			f()
		}()
	}
}

// The assembly sweeps of SolveStep agree with the Go ones (fused
// multiply-adds round differently) at every length, tails included.
func TestSolveStepKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 4, 5, 8, 13, 256} {
		v := func() []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			return x
		}
		x, h0, h1, h2, h3 := v(), v(), v(), v(), v()
		p := [4]float64{0.3, -1.2, 0.7, 2.1}
		want := append([]float64(nil), x...)
		subDot4Go(want, h0, h1, h2, h3, &p)
		got := append([]float64(nil), x...)
		subDot4(got, h0, h1, h2, h3, &p)
		for i := range want {
			assert.InDelta(t, want[i], got[i], 1e-14, "subDot4 n=%d i=%d", n, i)
		}
		want = append([]float64(nil), h0...)
		updateGo(want, x, 0.9, -0.4)
		got = append([]float64(nil), h0...)
		update(got, x, 0.9, -0.4)
		for i := range want {
			assert.InDelta(t, want[i], got[i], 1e-14, "update n=%d i=%d", n, i)
		}
	}
}

// Dense against At (the defining sum, formed entry by entry) for
// generators that are valid but unbalanced or growing: P = 1e290 with
// Q = 1e-290 (entries 0.5^(i-j-1)), and |A| = 2 from a Q of 1e-290
// (entries 2^(i-j-1) 1e-290 P). Dense treated every generator product
// below 1e-280 as zero from then on, which holds only where the later
// factors cannot raise it, and wrote zeros below the diagonal.
func TestQuasiSepDenseUnbalancedGenerators(t *testing.T) {
	const n, k = 12, 2
	for _, c := range []struct{ p, a, q float64 }{{1e290, 0.5, 1e-290}, {1, 2, 1e-290}, {1e-10, -3, 1e-285}} {
		m := NewQuasiSep(n, k)
		for i := 0; i < n; i++ {
			m.Diag[i] = 1
			for t := 0; t < k; t++ {
				m.P[i*k+t], m.A[i*k+t], m.Q[i*k+t] = c.p*float64(t+1), c.a, c.q*float64(2-t)
			}
		}
		for _, workers := range []int{1, 3} {
			d := make([]float64, n*n)
			m.Dense(d, workers)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					want := m.At(i, j)
					assert.InDelta(t, want, d[i*n+j], 1e-14*math.Abs(want), "%+v workers %d: M[%d][%d]", c, workers, i, j)
				}
			}
		}
	}
}

// Dense and InverseRows over many blocks of columns
// (ColumnBlocks): the bits do not depend on the number of workers, Dense
// agrees with At (the defining sum, entry by entry) on sampled rows,
// including terms that decay below 1e-280 at different rates within one
// group of four (the entries Dense drops), and the rows of the inverse
// times M give the identity.
func TestQuasiSepColumnBlocks(t *testing.T) {
	const n, k = 2*ColumnBlock + 77, 6 // 16 blocks of 72 columns
	rng := rand.New(rand.NewPCG(41, 42))
	m := NewQuasiSep(n, k)
	decay := []float64{0.25, 0.9, 0.5, 0.999, 0.3, 0.7}
	for i := 0; i < n; i++ {
		m.Diag[i] = 1 + rng.Float64()
		for s := 0; s < k; s++ {
			m.P[i*k+s] = rng.NormFloat64()
			m.A[i*k+s] = decay[s] * (0.9 + 0.1*rng.Float64())
			m.Q[i*k+s] = rng.NormFloat64() * 0.1
		}
	}
	dense := make([][]float64, 3)
	for w := range dense {
		dense[w] = make([]float64, n*n)
		for i := range dense[w] {
			dense[w][i] = math.NaN() // Dense must overwrite everything
		}
		m.Dense(dense[w], w+1)
	}
	for w := 1; w < len(dense); w++ {
		for i, v := range dense[0] {
			if math.Float64bits(v) != math.Float64bits(dense[w][i]) {
				t.Fatalf("Dense with %d workers: entry (%d, %d) is %v, with one %v", w+1, i/n, i%n, dense[w][i], v)
			}
		}
	}
	for i := 0; i < n; i += 37 {
		for j := 0; j < n; j++ {
			want, got := m.At(i, j), dense[0][i*n+j]
			bound := 0.0
			if j < i {
				for s := 0; s < k; s++ {
					bound += math.Abs(m.P[i*k+s] * m.Q[j*k+s])
				}
			}
			require.InDelta(t, want, got, 1e-13*bound+k*1e-280, "M[%d][%d]", i, j)
		}
	}
	// Rows of the inverse, on 1 and 3 workers, the same bits; row i
	// times M is e_i.
	inv := make([][]float64, 2)
	for w, workers := range []int{1, 3} {
		inv[w] = make([]float64, n*n)
		ColumnBlocks(n, workers, func(c0, c1 int) {
			m.InverseRows(c0, c1, func(i int, row []float64) {
				copy(inv[w][i*n+c0:], row)
			})
		})
	}
	for i, v := range inv[0] {
		if math.Float64bits(v) != math.Float64bits(inv[1][i]) {
			t.Fatalf("InverseRows on 3 workers: entry (%d, %d) is %v, on one %v", i/n, i%n, inv[1][i], v)
		}
	}
	md := mat.NewDense(n, n, dense[0])
	for i := 0; i < n; i += 53 {
		var prod mat.VecDense
		prod.MulVec(md.T(), mat.NewVecDense(n, inv[0][i*n:i*n+n]))
		for j := 0; j < n; j++ {
			want := 0.0
			if j == i {
				want = 1
			}
			require.InDelta(t, want, prod.AtVec(j), 1e-11, "(M^{-1} M)[%d][%d]", i, j)
		}
	}
}
