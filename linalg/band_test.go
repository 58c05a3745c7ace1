package linalg

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/par"
)

// Above the size at which the two halves of InverseBandSquaredRows run on
// two goroutines (two grains of work), and the copy of the lower half's
// rows that ends it runs by chunks on several, the result is the same bits
// for GOMAXPROCS 1, 2 and 16, and the diagonal of Z M, which needs only
// the band of Z, is 1 to rounding.
func TestSymBandInverseSquaredCores(t *testing.T) {
	const n, k = 20000, 14
	require.GreaterOrEqual(t, float64(n*k*k), float64(2*par.Grain), "the halves must be worth two goroutines")
	require.GreaterOrEqual(t, float64(n/2*2*(2*k+1)), float64(2*par.Grain), "the copy must be worth two goroutines")
	rng := rand.New(rand.NewPCG(5, 6))
	s := NewSymBand(n, k)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j < i; j++ {
			s.Set(i, j, rng.Float64()-0.5)
		}
		s.Set(i, i, 6+rng.Float64())
	}
	wr := 2*k + 1
	run := func(procs int) ([]float64, []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		zr, z2r := make([]float64, n*wr), make([]float64, n*wr)
		require.Equal(t, 0, s.InverseBandSquaredRows(zr, z2r, make([]float64, InverseBandSquaredRowsWork(n, k))))
		return zr, z2r
	}
	z1, w1 := run(1)
	for _, procs := range []int{2, 16} {
		z, w := run(procs)
		assert.Equal(t, z1, z, "Z, GOMAXPROCS %d", procs)
		assert.Equal(t, w1, w, "Z^2, GOMAXPROCS %d", procs)
	}
	for i := 0; i < n; i++ {
		v := 0.0
		for l := max(0, i-k); l <= min(n-1, i+k); l++ {
			v += z1[i*wr+k+l-i] * s.At(l, i)
		}
		assert.InDelta(t, 1, v, 1e-12, "(Z M)[%d][%d]", i, i)
	}
}

// The band kernel with its inner products in Go (as on CPUs without AVX2
// and FMA, or with -tags purego) against the default (the assembly where
// the CPU has them), split at a separator or not, with K not a multiple of
// four (rows after the blocks of four, partial chunks): the same entries
// of Z and Z^2 to rounding, relative to sqrt(Z_ii Z_jj).
func TestSymBandInverseSquaredGoKernels(t *testing.T) {
	for _, c := range []struct{ n, k int }{{50, 7}, {300, 9}, {400, 16}} {
		rng := rand.New(rand.NewPCG(7, uint64(c.n)))
		s := NewSymBand(c.n, c.k)
		for i := 0; i < c.n; i++ {
			for j := max(0, i-c.k); j < i; j++ {
				s.Set(i, j, rng.Float64()-0.5)
			}
			s.Set(i, i, float64(c.k)/2+rng.Float64())
		}
		wr := 2*c.k + 1
		run := func() ([]float64, []float64) {
			zr, z2r := make([]float64, c.n*wr), make([]float64, c.n*wr)
			require.Equal(t, 0, s.InverseBandSquaredRows(zr, z2r, make([]float64, InverseBandSquaredRowsWork(c.n, c.k))))
			return zr, z2r
		}
		z, z2 := run()
		d, b, r := dualDotImpl, dualBlocksImpl, dualRows4Impl
		dualDotImpl, dualBlocksImpl, dualRows4Impl = dualDotGo, dualBlocksGo, dualRows4Go
		gz, gz2 := run()
		dualDotImpl, dualBlocksImpl, dualRows4Impl = d, b, r
		for i := 0; i < c.n; i++ {
			for j := max(0, i-c.k); j <= min(c.n-1, i+c.k); j++ {
				o := i*wr + c.k + j - i
				sc := math.Sqrt(z[i*wr+c.k] * z[j*wr+c.k])
				sc2 := math.Sqrt(z2[i*wr+c.k] * z2[j*wr+c.k])
				assert.InDelta(t, z[o], gz[o], 1e-13*sc, "n %d k %d Z[%d][%d]", c.n, c.k, i, j)
				assert.InDelta(t, z2[o], gz2[o], 1e-13*sc2, "n %d k %d Z^2[%d][%d]", c.n, c.k, i, j)
			}
		}
	}
}

// A positive semidefinite but singular matrix (the path graph's Laplacian,
// whose exact LDL^T has the pivots 1, ..., 1, 0 in floating point too), a
// matrix with a zero diagonal entry and one with a NaN entry are not
// positive definite: ShiftedInverseBand, InverseBandSquared and
// InverseBandSquaredRows report a pivot that is not positive, split at a
// separator or not, rather than 0 and entries of 1/tiny or NaN.
// CountBelow keeps counting negative eigenvalues only (the Laplacian's
// are 2 - 2 cos(pi j / n) >= 0, one of them 0).
func TestSymBandSingularReported(t *testing.T) {
	for _, c := range []struct{ n, k int }{{2, 1}, {6, 1}, {7, 3}, {20, 1}, {40, 3}, {5, 0}} {
		laplacian := NewSymBand(c.n, c.k)
		for i := 0; i < c.n; i++ {
			if c.k > 0 && i > 0 {
				laplacian.Set(i, i-1, -1)
			}
			deg := 0.0
			if c.k > 0 {
				deg = 2
				if i == 0 || i == c.n-1 {
					deg = 1
				}
			}
			laplacian.Set(i, i, deg)
		}
		if c.k == 0 { // the zero matrix but for one entry
			laplacian.Set(0, 0, 1)
		}
		nanEntry := NewSymBand(c.n, c.k)
		for i := 0; i < c.n; i++ {
			nanEntry.Set(i, i, 4)
		}
		nanEntry.Set(c.n-1, c.n-1, math.NaN())
		for name, s := range map[string]SymBand{"singular": laplacian, "NaN": nanEntry} {
			n, k := c.n, c.k
			w, wr := k+1, 2*k+1
			msg := fmt.Sprintf("%s n=%d k=%d (split %v)", name, n, k, splitBand(n, k))
			assert.Positive(t, s.ShiftedInverseBand(0, make([]float64, n*w), make([]float64, 2*n*w)), "ShiftedInverseBand "+msg)
			assert.Positive(t, s.InverseBandSquared(make([]float64, n*w), make([]float64, n*w), make([]float64, InverseBandSquaredWork(n, k))), "InverseBandSquared "+msg)
			assert.Positive(t, s.InverseBandSquaredRows(make([]float64, n*wr), make([]float64, n*wr), make([]float64, InverseBandSquaredRowsWork(n, k))), "InverseBandSquaredRows "+msg)
		}
		work := make([]float64, c.n*(c.k+1)+c.n)
		assert.Equal(t, 0, laplacian.CountBelow(0, work), "n=%d k=%d: eigenvalues below 0", c.n, c.k)
		if c.k > 0 {
			// The smallest nonzero eigenvalue is 2 - 2 cos(pi/n).
			assert.Equal(t, 1, laplacian.CountBelow((1-math.Cos(math.Pi/float64(c.n)))/2, work), "n=%d k=%d", c.n, c.k)
		}
	}
}

// Every SymBand method against dense gonum computations on random
// symmetric positive definite band matrices that are not diagonally
// dominant (a random symmetric band matrix shifted so that its condition
// number is kappa), for K = 0, 1, 2, 5 and N-1, below and above the order
// 8 (K+1) at which InverseBandSquaredRows splits at a separator: the band
// of (M + sigma I)^{-1} and M^{-2} (mat.SymDense inverse) within
// 64 N (K+1) u kappa ||Z|| (||Z^2|| for M^{-2}), the standard
// forward-error form c_N u kappa ||Z|| of an inverse from a Cholesky-type
// factorization with a generous constant; CountBelow against the number
// of dense eigenvalues (mat.EigenSym) below points between them, and
// Bounds around them. AddShiftedInverse leaves the strict lower triangle
// of dst alone.
func TestSymBandAgainstDense(t *testing.T) {
	const u = 0x1p-53
	rng := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{0, 1, 2, 9, 24, 60} {
		for _, k := range []int{0, 1, 2, 5, n - 1} {
			if k < 0 || (k >= n && k > 0) {
				continue
			}
			for _, kappa := range []float64{10, 1e4} {
				msg := fmt.Sprintf("n=%d k=%d kappa=%g split=%v", n, k, kappa, splitBand(n, k))
				s := NewSymBand(n, k)
				r := mat.NewSymDense(max(n, 1), nil)
				for i := 0; i < n; i++ {
					for j := max(0, i-k); j <= i; j++ {
						v := rng.NormFloat64()
						s.Set(i, j, v)
						r.SetSym(i, j, v)
					}
				}
				w, wr := k+1, 2*k+1
				if n == 0 {
					// Nothing to compare; the routines must not fail.
					s.ShiftedInverseDiag(0, nil, nil)
					assert.Equal(t, 0, s.InverseBandSquaredRows(nil, nil, make([]float64, InverseBandSquaredRowsWork(0, k))), msg)
					assert.Equal(t, 0, s.CountBelow(1, nil), msg)
					continue
				}
				var eig mat.EigenSym
				require.True(t, eig.Factorize(r, false))
				ev := eig.Values(nil)
				// Shift so that the eigenvalues run from c to c kappa.
				spread := ev[n-1] - ev[0]
				if spread == 0 {
					spread = 1
				}
				c := spread / (kappa - 1)
				shift := c - ev[0]
				for i := 0; i < n; i++ {
					s.Data[i*w] += shift
					r.SetSym(i, i, r.At(i, i)+shift)
				}
				for i := range ev {
					ev[i] += shift
				}
				kap := ev[n-1] / ev[0]
				for _, sigma := range []float64{0, 0.3 * ev[0]} {
					shifted := mat.NewSymDense(n, nil)
					shifted.CopySym(r)
					for i := 0; i < n; i++ {
						shifted.SetSym(i, i, shifted.At(i, i)+sigma)
					}
					var z mat.Dense
					require.NoError(t, z.Inverse(shifted))
					lmin := ev[0] + sigma
					normZ := 1 / lmin
					tol := 64 * float64(n*(k+1)) * u * (ev[n-1] + sigma) / lmin * normZ
					diag := make([]float64, n)
					s.ShiftedInverseDiag(sigma, diag, make([]float64, 3*n*w))
					band := make([]float64, n*w)
					require.Equal(t, 0, s.ShiftedInverseBand(sigma, band, make([]float64, 2*n*w)), msg)
					full := make([]float64, n*n)
					for i := range full {
						full[i] = 7
					}
					const weight = 0.75
					s.AddShiftedInverse(full, sigma, weight, make([]float64, n*w+2*n))
					for i := 0; i < n; i++ {
						assert.InDelta(t, z.At(i, i), diag[i], tol, "%s sigma=%g diag %d", msg, sigma, i)
						for d := 0; d <= k && d <= i; d++ {
							assert.InDelta(t, z.At(i, i-d), band[i*w+d], tol, "%s sigma=%g band (%d,%d)", msg, sigma, i, i-d)
						}
						for j := 0; j < n; j++ {
							if j < i {
								assert.Equal(t, 7.0, full[i*n+j], "%s: AddShiftedInverse wrote below the diagonal at (%d,%d)", msg, i, j)
							} else {
								assert.InDelta(t, 7+weight*z.At(i, j), full[i*n+j], weight*tol+1e-14, "%s sigma=%g full (%d,%d)", msg, sigma, i, j)
							}
						}
					}
				}
				var z, z2 mat.Dense
				require.NoError(t, z.Inverse(r))
				z2.Mul(&z, &z)
				normZ := 1 / ev[0]
				tol := 64 * float64(n*(k+1)) * u * kap * normZ
				zb, z2b := make([]float64, n*w), make([]float64, n*w)
				require.Equal(t, 0, s.InverseBandSquared(zb, z2b, make([]float64, InverseBandSquaredWork(n, k))), msg)
				zr, z2r := make([]float64, n*wr), make([]float64, n*wr)
				require.Equal(t, 0, s.InverseBandSquaredRows(zr, z2r, make([]float64, InverseBandSquaredRowsWork(n, k))), msg)
				for i := 0; i < n; i++ {
					for j := max(0, i-k); j <= min(n-1, i+k); j++ {
						assert.InDelta(t, z.At(i, j), zr[i*wr+k+j-i], tol, "%s Z(%d,%d)", msg, i, j)
						assert.InDelta(t, z2.At(i, j), z2r[i*wr+k+j-i], tol*normZ, "%s Z^2(%d,%d)", msg, i, j)
						if j <= i {
							assert.InDelta(t, z.At(i, j), zb[i*w+i-j], tol, "%s Z(%d,%d)", msg, i, j)
							assert.InDelta(t, z2.At(i, j), z2b[i*w+i-j], tol*normZ, "%s Z^2(%d,%d)", msg, i, j)
						}
					}
				}
				// Inertia: points between the eigenvalues (where they are
				// apart by more than 1e-9 of the spread), below and above.
				work := make([]float64, n*w+n)
				assert.Equal(t, 0, s.CountBelow(ev[0]-1, work), msg)
				assert.Equal(t, n, s.CountBelow(ev[n-1]+1, work), msg)
				for i := 1; i < n; i++ {
					if ev[i]-ev[i-1] > 1e-9*(ev[n-1]-ev[0]) {
						assert.Equal(t, i, s.CountBelow((ev[i-1]+ev[i])/2, work), "%s: eigenvalues below %g", msg, (ev[i-1]+ev[i])/2)
					}
				}
				lo, hi := s.Bounds(0, work)
				assert.LessOrEqual(t, lo, ev[0], msg)
				assert.GreaterOrEqual(t, lo, ev[0]/1.02, msg)
				assert.GreaterOrEqual(t, hi, ev[n-1], msg)
			}
		}
	}
}

// A positive pivot below the smallest normal number has an infinite
// reciprocal: M = 1e-310 I is positive definite, but its inverse (1e310 I)
// is not representable, and the inverses returned 0 (definite) with +Inf
// entries. They now report it, split at a separator or not.
func TestSymBandSubnormalPivotReported(t *testing.T) {
	for _, c := range []struct{ n, k int }{{3, 1}, {16, 1}, {5, 0}, {40, 3}} {
		n, k := c.n, c.k
		w, wr := k+1, 2*k+1
		s := NewSymBand(n, k)
		for i := 0; i < n; i++ {
			s.Set(i, i, 1e-310)
		}
		msg := fmt.Sprintf("n=%d k=%d (split %v)", n, k, splitBand(n, k))
		assert.Positive(t, s.ShiftedInverseBand(0, make([]float64, n*w), make([]float64, 2*n*w)), "ShiftedInverseBand "+msg)
		assert.Positive(t, s.InverseBandSquared(make([]float64, n*w), make([]float64, n*w), make([]float64, InverseBandSquaredWork(n, k))), "InverseBandSquared "+msg)
		assert.Positive(t, s.InverseBandSquaredRows(make([]float64, n*wr), make([]float64, n*wr), make([]float64, InverseBandSquaredRowsWork(n, k))), "InverseBandSquaredRows "+msg)
		// The smallest normal number itself is fine: 1/2^-1022 = 2^1022.
		for i := 0; i < n; i++ {
			s.Set(i, i, 0x1p-1022)
		}
		z := make([]float64, n*w)
		require.Equal(t, 0, s.ShiftedInverseBand(0, z, make([]float64, 2*n*w)), msg)
		assert.Equal(t, 0x1p1022, z[0], msg)
	}
}

// ldlResidual bounds ||M + shift I - L D L^T||_inf for the factors that
// ldl computes: against the residual in exact rational arithmetic
// (math/big), it is never below it and exceeds it by no more than its
// own error allowance (8 (K+3) u^2 of the entries' magnitudes), on
// random band matrices, positive definite and shifted near their
// smallest eigenvalue.
func TestLDLResidualExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct{ n, k int }{{1, 0}, {6, 1}, {40, 3}, {25, 7}} {
		s := NewSymBand(c.n, c.k)
		for i := 0; i < c.n; i++ {
			for j := max(0, i-c.k); j < i; j++ {
				s.Set(i, j, rng.Float64()-0.5)
			}
			s.Set(i, i, float64(c.k)+rng.Float64())
		}
		work := make([]float64, c.n*(c.k+1)+c.n)
		lo, _ := s.Bounds(0, work)
		require.Positive(t, lo, "n %d, k %d", c.n, c.k)
		for _, shift := range []float64{0, -0.5 * lo, -0.999 * lo} {
			bound, ok := s.ldlResidual(shift, work)
			require.True(t, ok, "n %d, k %d, shift %g", c.n, c.k, shift)
			w := c.k + 1
			l, d := work[:c.n*w], work[c.n*w:c.n*w+c.n]
			lAt := func(i, p int) *big.Rat {
				if i == p {
					return new(big.Rat).SetInt64(1)
				}
				return new(big.Rat).SetFloat64(l[i*w+i-p])
			}
			exact, scale := 0.0, 0.0
			for i := 0; i < c.n; i++ {
				row := new(big.Rat)
				for j := max(0, i-c.k); j <= min(c.n-1, i+c.k); j++ {
					a, b := max(i, j), min(i, j)
					r := new(big.Rat).SetFloat64(s.At(a, b))
					if a == b {
						r.Add(r, new(big.Rat).SetFloat64(shift))
					}
					for p := max(0, a-c.k); p <= b; p++ {
						t := new(big.Rat).Mul(lAt(a, p), new(big.Rat).SetFloat64(d[p]))
						r.Sub(r, t.Mul(t, lAt(b, p)))
					}
					row.Add(row, r.Abs(r))
				}
				v, _ := row.Float64()
				exact = math.Max(exact, v)
				scale = math.Max(scale, math.Abs(s.At(i, i))+1)
			}
			assert.GreaterOrEqual(t, bound, exact, "n %d, k %d, shift %g: the bound is below the exact residual", c.n, c.k, shift)
			allow := 8 * float64(c.k+3) * 0x1p-106 * float64(2*c.k+1) * scale * float64(c.k+2) * 4
			assert.LessOrEqual(t, bound, exact*(1+2e-6)+allow, "n %d, k %d, shift %g: the bound is not tight", c.n, c.k, shift)
		}
	}
}

// ProvenAbove against eigenvalues in closed form: the path graph's
// Laplacian plus c I has lambda_min = c exactly (c = 0: singular). Well
// below c it is proven, above c it is not; on the singular Laplacian no
// positive x is proven, even where the inertia count alone (the covering
// check of the structured solver before, at x / (1 - 1e-8)) finds no
// negative pivot and would claim it.
func TestSymBandProvenAbove(t *testing.T) {
	const n, k = 64, 3
	work := make([]float64, n*(k+1)+n)
	for _, c := range []float64{1, 1e-3} {
		s := pathLaplacian(n, k, c)
		assert.True(t, s.ProvenAbove(c/2, work), "c %g: lambda_min >= c/2", c)
		assert.True(t, s.ProvenAbove(c*0.99, work), "c %g: lambda_min >= 0.99 c", c)
		assert.False(t, s.ProvenAbove(c*1.01, work), "c %g: an eigenvalue lies below 1.01 c", c)
	}
	s := pathLaplacian(n, k, 0)
	claimed := 0
	for _, x := range []float64{1e-30, 1e-20, 1e-17, 1e-16, 1e-14} {
		assert.False(t, s.ProvenAbove(x, work), "singular: lambda_min = 0 < %g", x)
		if s.CountBelow(x/(1-1e-8), work) == 0 {
			claimed++
		}
	}
	t.Logf("the inertia count alone claimed lambda_min >= x at %d of 5 points", claimed)
}
