package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/par"
)

// Above the size at which the two halves of InverseBandSquaredRows run on
// two goroutines (two grains of work), the result is the same bits for
// GOMAXPROCS 1, 2 and 16, and the diagonal of Z M, which needs only the
// band of Z, is 1 to rounding.
func TestSymBandInverseSquaredCores(t *testing.T) {
	const n, k = 3000, 14
	require.GreaterOrEqual(t, float64(n*k*k), float64(2*par.Grain), "the halves must be worth two goroutines")
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
