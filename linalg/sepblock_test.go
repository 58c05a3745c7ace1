package linalg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mulRowsT is a b^T summed in increasing e, as the plain triple loop over
// columns of b^T sums it: the same bits, for sizes with and without a tail
// of fewer than four columns, and written transposed on request.
func TestMulRowsT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 2, 3, 4, 5, 7, 8, 13, 64} {
		a, bt := make([]float64, k*k), make([]float64, k*k)
		for i := range a {
			a[i], bt[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		want := make([]float64, k*k)
		for i := 0; i < k; i++ {
			for c := 0; c < k; c++ {
				v := 0.0
				for e := 0; e < k; e++ {
					v += a[i*k+e] * bt[c*k+e]
				}
				want[i*k+c] = v
			}
		}
		got, gotT := make([]float64, k*k), make([]float64, k*k)
		mulRowsT(got, a, bt, k, false)
		mulRowsT(gotT, a, bt, k, true)
		for i := 0; i < k; i++ {
			for c := 0; c < k; c++ {
				require.Equal(t, want[i*k+c], got[i*k+c], "k %d, (%d, %d)", k, i, c)
				require.Equal(t, want[i*k+c], gotT[c*k+i], "k %d, (%d, %d) transposed", k, i, c)
			}
		}
	}
}

// denseSPDInverse of a random symmetric positive definite matrix times
// the matrix is the identity to rounding (cond 1e3 or less here), the
// inverse is stored exactly symmetric, and a matrix with a negative or NaN
// pivot is refused.
func TestDenseSPDInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 2, 5, 64} {
		// a = G G^T / k + I/2: eigenvalues in [1/2, about 5].
		g := make([]float64, k*k)
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		a := make([]float64, k*k)
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				v := 0.0
				for e := 0; e < k; e++ {
					v += g[i*k+e] * g[j*k+e]
				}
				a[i*k+j] = v / float64(k)
			}
			a[i*k+i] += 0.5
		}
		inv, tmp := make([]float64, k*k), make([]float64, 2*k*k)
		require.Equal(t, 0, denseSPDInverse(a, inv, tmp, k), "k %d", k)
		for i := 0; i < k; i++ {
			for c := 0; c < k; c++ {
				assert.Equal(t, inv[i*k+c], inv[c*k+i], "k %d: symmetric at (%d, %d)", k, i, c)
				v := 0.0
				for e := 0; e < k; e++ {
					v += inv[i*k+e] * a[e*k+c]
				}
				want := 0.0
				if i == c {
					want = 1
				}
				assert.InDelta(t, want, v, 1e-12, "k %d: (inv a)[%d][%d]", k, i, c)
			}
		}
	}
	for _, bad := range [][]float64{
		{1, 2, 2, 1},          // eigenvalues 3 and -1: second pivot -3
		{-1, 0, 0, 1},         // first pivot negative
		{math.NaN(), 0, 0, 1}, // NaN pivot
		{1, 0, 0, 0x1p-1030},  // subnormal pivot
	} {
		assert.Equal(t, 1, denseSPDInverse(bad, make([]float64, 4), make([]float64, 8), 2), "%v", bad)
	}
}
