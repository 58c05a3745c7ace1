package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// Reference values of Carlson's R_F from Carlson (1995), section 3, and of
// K(k) from Abramowitz and Stegun table 17.1 (K at k^2 = 1/2).
func TestCarlsonAndK(t *testing.T) {
	assert.InDelta(t, 1.3110287771461, carlsonRF(1, 2, 0), 1e-13)
	assert.InDelta(t, 0.58408284167715, carlsonRF(2, 3, 4), 1e-13)
	assert.InDelta(t, 1.8540746773013719, ellipK(math.Sqrt(0.5)), 1e-15)
	assert.InDelta(t, math.Pi/2, ellipK(1), 1e-15)
	// K(k) = R_F(0, k'^2, 1), a second formula.
	for _, kc := range []float64{0.9, 0.1, 1e-3, 1e-6} {
		assert.InDelta(t, carlsonRF(0, kc*kc, 1), ellipK(kc), 1e-13*ellipK(kc))
	}
}

// sc(u | k) is tan(u) for k = 0 and sinh(u) for k = 1; invSC must invert
// scArg to full relative accuracy.
func TestInvSC(t *testing.T) {
	for _, u := range []float64{1e-6, 0.3, 1, 1.5} {
		assert.InEpsilon(t, math.Tan(u), invSC(u, 1), 1e-13)
	}
	for _, kc := range []float64{0.5, 1e-3, 1e-7} {
		bigK := ellipK(kc)
		for _, frac := range []float64{1e-4, 0.25, 0.5, 0.9, 0.999} {
			u := frac * bigK
			y := invSC(u, kc)
			assert.InEpsilon(t, u, scArg(y, kc), 1e-14, "kc=%g frac=%g", kc, frac)
		}
	}
}

func TestInvSqrtRational(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []float64{1, 10, 1e4, 1e8, 1e12} {
		lo := 0.37
		q := NewInvSqrtRational(lo, lo*c, 1e-13)
		require.LessOrEqual(t, q.RelErr, 1e-13)
		for j := range q.Shifts {
			require.Greater(t, q.Shifts[j], 0.0)
			require.Greater(t, q.Weights[j], 0.0)
		}
		// Independent check at random points, against math.Sqrt.
		for i := 0; i < 2000; i++ {
			x := lo * math.Pow(c, rng.Float64())
			assert.InEpsilon(t, 1/math.Sqrt(x), q.Eval(x), q.RelErr+1e-15)
		}
		t.Logf("cond %g: %d nodes, error %.2g", c, len(q.Shifts), q.RelErr)
	}
	// Node count grows like log(cond): at most 60 nodes for cond 1e12.
	assert.LessOrEqual(t, len(NewInvSqrtRational(1, 1e12, 1e-14).Shifts), 60)
}

// randomBidiag returns a bidiagonal G with entries of both signs and
// magnitudes exp(N(0, spread^2)).
func randomBidiag(rng *rand.Rand, n int, spread float64) BidiagGram {
	b := BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
	for i := 0; i < n; i++ {
		b.Diag[i] = math.Exp(spread*rng.NormFloat64()) * float64(1-2*rng.IntN(2))
		if i > 0 {
			b.Sub[i] = math.Exp(spread*rng.NormFloat64()) * float64(1-2*rng.IntN(2))
		}
	}
	return b
}

// dense returns T = G G^T.
func (b BidiagGram) dense() *mat.SymDense {
	n := b.N()
	g := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		g.Set(i, i, b.Diag[i])
		if i > 0 {
			g.Set(i, i-1, b.Sub[i])
		}
	}
	t := mat.NewSymDense(n, nil)
	t.SymOuterK(1, g)
	return t
}

func denseShiftedInverse(t *testing.T, s mat.Symmetric, sigma float64) *mat.Dense {
	n := s.SymmetricDim()
	m := mat.NewDense(n, n, nil)
	m.Copy(s)
	for i := 0; i < n; i++ {
		m.Set(i, i, m.At(i, i)+sigma)
	}
	var inv mat.Dense
	require.NoError(t, inv.Inverse(m))
	return &inv
}

func TestBidiagShiftedInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 17, 60} {
		// The dense reference inverse (LU) is accurate only to cond * u,
		// so keep T + sigma I well conditioned here; the ill-conditioned
		// case is checked against a closed form below.
		b := randomBidiag(rng, n, 0.3)
		for _, sigma := range []float64{0, 0.1, 10} {
			want := denseShiftedInverse(t, b.dense(), sigma)
			diag := make([]float64, n)
			b.ShiftedInverseDiag(sigma, diag, make([]float64, n))
			full := make([]float64, n*n)
			b.AddShiftedInverse(full, n, sigma, 2, make([]float64, 2*n))
			for i := 0; i < n; i++ {
				assert.InEpsilon(t, want.At(i, i), diag[i], 1e-9, "n=%d sigma=%g i=%d", n, sigma, i)
				for j := i; j < n; j++ {
					assert.InDelta(t, 2*want.At(i, j), full[i*n+j], 1e-9*(math.Abs(want.At(i, i))+math.Abs(want.At(j, j))))
				}
			}
		}
	}
}

// For G = D^{-1} L with L the inverse of the prefix-sum matrix A, the
// inverse of T = G G^T is D A^T A D, whose diagonal is v_i (n - i): a closed
// form for a matrix whose condition number is 4e10 at n = 100,000. The
// twisted factorization must reproduce it to a relative 1e-12 (forming T and
// inverting it would lose about six digits).
func TestBidiagIllConditionedClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	n := 100000
	v := make([]float64, n)
	b := BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
	for i := range v {
		v[i] = math.Exp(rng.NormFloat64())
		b.Diag[i] = 1 / math.Sqrt(v[i])
		if i > 0 {
			b.Sub[i] = -1 / math.Sqrt(v[i])
		}
	}
	got := make([]float64, n)
	b.ShiftedInverseDiag(0, got, make([]float64, n))
	worst := 0.0
	for i := range got {
		worst = math.Max(worst, math.Abs(got[i]/(v[i]*float64(n-i))-1))
	}
	t.Logf("n = %d: worst relative error %.2g", n, worst)
	assert.Less(t, worst, 1e-12)
}

func TestBidiagCountAndBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b := randomBidiag(rng, 40, 1)
	var eig mat.EigenSym
	require.True(t, eig.Factorize(b.dense(), false))
	vals := eig.Values(nil) // ascending
	for k := 0; k < len(vals)-1; k++ {
		x := math.Sqrt(vals[k] * vals[k+1])
		if vals[k+1] > 1.001*vals[k] {
			assert.Equal(t, k+1, b.CountBelow(x))
		}
	}
	lo, hi := b.Bounds(0)
	assert.LessOrEqual(t, lo, vals[0])
	assert.GreaterOrEqual(t, lo, vals[0]/1.02)
	assert.GreaterOrEqual(t, hi, vals[len(vals)-1])
}

// The twisted count of CountBelow (used from bidiagParallelOrder on, here moved
// down to every order) against the eigenvalues of the formed T
// (gonum's EigenSym), at the geometric means of neighbouring eigenvalues,
// below the smallest and above the largest, for GOMAXPROCS 1 and 2; and
// Gershgorin's bound by halves against the one-pass bound.
func TestBidiagTwistedCount(t *testing.T) {
	defer func(o int) { bidiagParallelOrder = o }(bidiagParallelOrder)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{2, 3, 40, 41} {
		b := randomBidiag(rng, n, 1)
		var eig mat.EigenSym
		require.True(t, eig.Factorize(b.dense(), false))
		vals := eig.Values(nil) // ascending

		// One pass: never parallel.
		bidiagParallelOrder = 1 << (strconv.IntSize - 2)
		oneHi := b.Gershgorin()
		bidiagParallelOrder = 1
		for _, procs := range []int{1, 2} {
			old := runtime.GOMAXPROCS(procs)
			assert.Equal(t, 0, b.CountBelow(vals[0]/1.001), "n = %d", n)
			assert.Equal(t, n, b.CountBelow(vals[n-1]*1.001), "n = %d", n)
			for k := 0; k < n-1; k++ {
				if vals[k+1] > 1.001*vals[k] {
					assert.Equal(t, k+1, b.CountBelow(math.Sqrt(vals[k]*vals[k+1])), "n = %d, k = %d", n, k)
				}
			}
			assert.Equal(t, oneHi, b.Gershgorin(), "n = %d", n)
			runtime.GOMAXPROCS(old)
		}
	}
}

// The prefix-sum Gram matrix L L^T (L = A^{-1}) has eigenvalues
// 4 sin^2((2k-1) pi / (4R + 2)), k = 1..R: its smallest eigenvalue must be
// bracketed even at R = 100,000, where it is 2.5e-10.
func TestBidiagPrefixSmallestEigenvalue(t *testing.T) {
	for _, n := range []int{10, 1000, 100000} {
		b := BidiagGram{Diag: make([]float64, n), Sub: make([]float64, n)}
		for i := range b.Diag {
			b.Diag[i] = 1
			if i > 0 {
				b.Sub[i] = -1
			}
		}
		s := math.Sin(math.Pi / float64(4*n+2))
		want := 4 * s * s
		lo, hi := b.Bounds(0)
		assert.LessOrEqual(t, lo, want)
		assert.GreaterOrEqual(t, lo, want/1.02)
		assert.GreaterOrEqual(t, hi, 4.0)
	}
}

func TestInvSqrtDiag(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n := 50
	b := randomBidiag(rng, n, 0.3)
	lo, hi := b.Bounds(0)
	q := NewInvSqrtRational(lo, hi, 1e-14)
	got := make([]float64, n)
	b.InvSqrtDiag(q, got, make([]float64, 2*n))
	var eig mat.EigenSym
	require.True(t, eig.Factorize(b.dense(), true))
	vals := eig.Values(nil)
	var vec mat.Dense
	eig.VectorsTo(&vec)
	for i := 0; i < n; i++ {
		want := 0.0
		for k, l := range vals {
			want += vec.At(i, k) * vec.At(i, k) / math.Sqrt(l)
		}
		assert.InEpsilon(t, want, got[i], 1e-10)
	}
}

func TestSymBand(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range []int{1, 2, 4} {
		n := 30
		// A diagonally dominant band matrix is positive definite.
		s := NewSymBand(n, k)
		for i := 0; i < n; i++ {
			for j := max(0, i-k); j < i; j++ {
				s.Set(i, j, rng.NormFloat64())
			}
		}
		for i := 0; i < n; i++ {
			r := 0.0
			for j := max(0, i-k); j <= min(n-1, i+k); j++ {
				if j != i {
					r += math.Abs(s.At(i, j))
				}
			}
			s.Set(i, i, r+0.01+rng.Float64())
		}
		d := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				d.SetSym(i, j, s.At(i, j))
			}
		}
		for _, sigma := range []float64{0, 0.5} {
			want := denseShiftedInverse(t, d, sigma)
			diag := make([]float64, n)
			s.ShiftedInverseDiag(sigma, diag, make([]float64, 3*n*(k+1)))
			full := make([]float64, n*n)
			s.AddShiftedInverse(full, sigma, 1, make([]float64, n*(k+1)+2*n))
			for i := 0; i < n; i++ {
				assert.InEpsilon(t, want.At(i, i), diag[i], 1e-10)
				for j := i; j < n; j++ {
					assert.InDelta(t, want.At(i, j), full[i*n+j], 1e-10)
				}
			}
		}
		var eig mat.EigenSym
		require.True(t, eig.Factorize(d, false))
		vals := eig.Values(nil)
		lo, hi := s.Bounds(0, make([]float64, n*(k+1)+n))
		assert.LessOrEqual(t, lo, vals[0])
		assert.GreaterOrEqual(t, lo, vals[0]/1.02)
		assert.GreaterOrEqual(t, hi, vals[n-1])
	}
}

func TestPrefixSolveEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n := 25
	b := randomBidiag(rng, n, 0.3)
	rhs := make([]float64, n)
	for i := range rhs {
		rhs[i] = rng.NormFloat64()
	}
	sigma := 0.3
	zr, zr1 := make([]float64, n), make([]float64, n)
	b.PrefixSolveEnds(sigma, rhs, zr, zr1, make([]float64, 2*n))
	inv := denseShiftedInverse(t, b.dense(), sigma)
	for r := 0; r < n; r++ {
		trunc := make([]float64, n)
		copy(trunc, rhs[:r+1])
		var z mat.VecDense
		z.MulVec(inv, mat.NewVecDense(n, trunc))
		assert.InDelta(t, z.AtVec(r), zr[r], 1e-10)
		if r+1 < n {
			assert.InDelta(t, z.AtVec(r+1), zr1[r], 1e-10)
		} else {
			assert.Equal(t, 0.0, zr1[r])
		}
	}
}

// The band of M^{-1} and M^{-2} against dense inverses, below and above
// the order at which InverseBandSquaredRows splits the matrix at a
// separator (8 (K+1)), for K a multiple of four or not (the blocks of four
// of the kernels), K = 0 and N <= K, and the split's result the same bits
// on one core as on two.
func TestSymBandInverseSquared(t *testing.T) {
	for _, c := range []struct{ n, k int }{{30, 4}, {40, 4}, {41, 4}, {200, 4}, {97, 9}, {30, 1}, {10, 0}, {2, 1}, {3, 2}, {5, 3}, {8, 7}, {7, 9}, {90, 5}} {
		t.Run(fmt.Sprintf("n=%d/k=%d", c.n, c.k), func(t *testing.T) { testSymBandInverseSquared(t, c.n, c.k) })
	}
}

func testSymBandInverseSquared(t *testing.T, n, k int) {
	rng := rand.New(rand.NewPCG(3, uint64(n*100+k)))
	s := NewSymBand(n, k)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j < i; j++ {
			s.Set(i, j, rng.Float64()-0.5)
		}
		s.Set(i, i, 3+rng.Float64())
	}
	m := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			m.SetSym(i, j, s.At(i, j))
		}
	}
	var inv, inv2 mat.Dense
	require.NoError(t, inv.Inverse(m))
	inv2.Mul(&inv, &inv)
	w := k + 1
	{
		z, z2 := make([]float64, n*w), make([]float64, n*w)
		require.Equal(t, 0, s.InverseBandSquared(z, z2, make([]float64, InverseBandSquaredWork(n, k))))
		for i := 0; i < n; i++ {
			for d := 0; d <= k && d <= i; d++ {
				assert.InDelta(t, inv.At(i, i-d), z[i*w+d], 1e-13)
				assert.InDelta(t, inv2.At(i, i-d), z2[i*w+d], 1e-13)
			}
		}
	}
	// The same entries as full rows, on both sides of the diagonal.
	wr := 2*k + 1
	zr, z2r := make([]float64, n*wr), make([]float64, n*wr)
	require.Equal(t, 0, s.InverseBandSquaredRows(zr, z2r, make([]float64, InverseBandSquaredRowsWork(n, k))))
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j <= min(n-1, i+k); j++ {
			assert.InDelta(t, inv.At(i, j), zr[i*wr+k+j-i], 1e-13, "Z[%d][%d]", i, j)
			assert.InDelta(t, inv2.At(i, j), z2r[i*wr+k+j-i], 1e-13, "Z^2[%d][%d]", i, j)
		}
	}
	prev := runtime.GOMAXPROCS(1)
	zr1, z2r1 := make([]float64, n*wr), make([]float64, n*wr)
	s.InverseBandSquaredRows(zr1, z2r1, make([]float64, InverseBandSquaredRowsWork(n, k)))
	runtime.GOMAXPROCS(prev)
	assert.Equal(t, zr, zr1)
	assert.Equal(t, z2r, z2r1)
	// A matrix that is not positive definite reports its negative pivots,
	// wherever the negative entry lies (above, in or below the separator).
	for _, bad := range []int{1, n / 2, n - 2} {
		neg := NewSymBand(n, k)
		copy(neg.Data, s.Data)
		neg.Set(bad, bad, -1)
		z, z2 := make([]float64, n*w), make([]float64, n*w)
		assert.Positive(t, neg.InverseBandSquared(z, z2, make([]float64, InverseBandSquaredWork(n, k))), "M[%d][%d] < 0", bad, bad)
	}
}

// dualDot (AVX2 assembly where the CPU has it) against the two sums
// formed in Go, for every length up to 70 (all the loop tails) and
// random entries; the sums differ by rounding only.
func TestDualDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := 0; n <= 70; n++ {
		a, da, b, db := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		var sa, sd, absS, absD float64
		for i := 0; i < n; i++ {
			a[i], da[i], b[i], db[i] = rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
			sa += a[i] * b[i]
			sd += da[i]*b[i] + a[i]*db[i]
			absS += math.Abs(a[i] * b[i])
			absD += math.Abs(da[i]*b[i]) + math.Abs(a[i]*db[i])
		}
		s, ds := dualDot(a, da, b, db)
		assert.InDelta(t, sa, s, 1e-14*(absS+1), "n = %d", n)
		assert.InDelta(t, sd, ds, 1e-14*(absD+1), "n = %d", n)
	}
	// By hand: entries after len(a) in the other slices are not read.
	s, ds := dualDot([]float64{1, 2, 3, 4, 5}, []float64{0, 0, 0, 0, 0, 9}, []float64{1, 1, 1, 1, 1, 9}, []float64{1, 0, 0, 0, 0, 9})
	assert.Equal(t, 15.0, s)
	assert.Equal(t, 1.0, ds)
}

// BenchmarkInverseBandSquaredRows times the band of M^{-1} and M^{-2} at
// the banded solver's size (order 10,000, 64 off-diagonals), split at a
// separator: compare -cpu 1,2.
func BenchmarkInverseBandSquaredRows(b *testing.B) {
	n, k := 10000, 64
	rng := rand.New(rand.NewPCG(5, 6))
	s := NewSymBand(n, k)
	for i := 0; i < n; i++ {
		for j := max(0, i-k); j < i; j++ {
			s.Set(i, j, (rng.Float64()-0.5)/float64(k))
		}
		s.Set(i, i, 2)
	}
	wr := 2*k + 1
	zr, z2r := make([]float64, n*wr), make([]float64, n*wr)
	work := make([]float64, InverseBandSquaredRowsWork(n, k))
	for b.Loop() {
		if s.InverseBandSquaredRows(zr, z2r, work) != 0 {
			b.Fatal("not positive definite")
		}
	}
}
