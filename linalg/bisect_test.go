package linalg

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// The eigenvalue search ends for every count function and bound, including
// the ones that used to loop forever: a zero or non-finite bound, and a
// count that reports eigenvalues below every positive x but none below 0.
func TestBisectLowestTerminates(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name      string
		count     func(float64) int
		guess, hi float64
		want      float64 // 0 for "no bound"; otherwise lo within 1.01 below want
	}{
		{"zero matrix", func(float64) int { return 0 }, 0, 0, 0},
		{"infinite bound", func(float64) int { return 0 }, 0, inf, 0},
		{"NaN bound", func(float64) int { return 0 }, 0, math.NaN(), 0},
		{"no positive eigenvalue", func(x float64) int {
			if x > 0 {
				return 1
			}
			return 0
		}, 1, 1, 0},
		{"eigenvalue 1e-300", func(x float64) int {
			if x > 1e-300 {
				return 1
			}
			return 0
		}, 0, 1e300, 1e-300},
		{"subnormal eigenvalue", func(x float64) int {
			if x > 1e-320 {
				return 1
			}
			return 0
		}, 0.5, 1, 1e-320},
		{"eigenvalue 7", func(x float64) int {
			if x > 7 {
				return 1
			}
			return 0
		}, 0, 10, 7},
	} {
		lo := bisectLowest(c.count, c.guess, c.hi)
		if c.want == 0 {
			if lo != 0 {
				t.Errorf("%s: lo = %v, want 0", c.name, lo)
			}
			continue
		}
		if !(lo <= c.want && lo >= c.want/1.02) {
			t.Errorf("%s: lo = %v, want in [%v/1.02, %v]", c.name, lo, c.want, c.want)
		}
	}
	// The matrices' Bounds: a zero band matrix and a bidiagonal Gram
	// matrix with an infinite entry give lo = 0 instead of hanging.
	if lo, _ := NewSymBand(3, 1).Bounds(0, make([]float64, 3*2+3)); lo != 0 {
		t.Errorf("zero SymBand: lo = %v, want 0", lo)
	}
	if lo, _ := (BidiagGram{Diag: []float64{1, inf}, Sub: []float64{0, 1}}).Bounds(0); lo != 0 {
		t.Errorf("BidiagGram with an Inf entry: lo = %v, want 0", lo)
	}
	if lo, _ := (SymTridiag{Diag: []float64{1, math.NaN()}, Off: []float64{0, 0}}).Bounds(0); lo != 0 {
		t.Errorf("SymTridiag with a NaN entry: lo = %v, want 0", lo)
	}
}

// A negative order or width is a programmer error: NewSymBand panics with
// a "linalg: " message, as the package doc says.
func TestNewSymBandNegative(t *testing.T) {
	for _, c := range [][2]int{{-1, 0}, {3, -1}} {
		func() {
			defer func() {
				r := recover()
				s, ok := r.(string)
				if !ok || len(s) < 8 || s[:8] != "linalg: " {
					t.Errorf("NewSymBand(%d, %d) panicked with %v, want a linalg: message", c[0], c[1], r)
				}
			}()
			NewSymBand(c[0], c[1])
		}()
	}
	if b := NewSymBand(0, 0); b.N != 0 || len(b.Data) != 0 {
		t.Errorf("NewSymBand(0, 0) = %+v, want an empty matrix", b)
	}
}

// A pivot that is zero or too small to divide by is counted on the side it
// is moved to: SymTridiag counted an exact zero pivot as nonnegative but
// went on with -tiny, so [[1,1],[1,1]] (eigenvalues 0 and 2) had no
// eigenvalue below 1; SymBand counted a negative subnormal pivot but went
// on with +tiny, so [[0,1],[1,0]] (eigenvalues -1 and 1) had two below
// 5e-324. The counts against the closed forms: 1 + 2 cos(pi j / (n+1)) for
// the tridiagonal matrix with ones on its three diagonals.
func TestCountBelowTinyPivots(t *testing.T) {
	ones := func(n int) (SymTridiag, SymBand) {
		tr := SymTridiag{Diag: make([]float64, n), Off: make([]float64, n)}
		b := NewSymBand(n, 1)
		for i := 0; i < n; i++ {
			tr.Diag[i], tr.Off[i] = 1, 1
			b.Set(i, i, 1)
			if i > 0 {
				b.Set(i, i-1, 1)
			}
		}
		return tr, b
	}
	for _, n := range []int{2, 4, 6, 10} {
		tr, b := ones(n)
		work := make([]float64, 3*n)
		for _, x := range []float64{-2, 0.5, 1, 1.5, 3.5} {
			want := 0
			for j := 1; j <= n; j++ {
				if 1+2*math.Cos(math.Pi*float64(j)/float64(n+1)) < x {
					want++
				}
			}
			assert.Equal(t, want, tr.CountBelow(x), "SymTridiag n=%d x=%g", n, x)
			assert.Equal(t, want, b.CountBelow(x, work), "SymBand n=%d x=%g", n, x)
		}
	}
	b := NewSymBand(2, 1)
	b.Set(1, 0, 1)
	tr := SymTridiag{Diag: []float64{0, 0}, Off: []float64{0, 1}}
	for _, x := range []float64{-0x1p-1074, 0x1p-1074, 0x1p-1070} {
		assert.Equal(t, 1, b.CountBelow(x, make([]float64, 6)), "SymBand [[0,1],[1,0]] x=%g", x)
		assert.Equal(t, 1, tr.CountBelow(x), "SymTridiag [[0,1],[1,0]] x=%g", x)
	}
}

// BidiagGram's counts (top-down, and twisted with the order threshold
// moved) on integer bidiagonal factors at shifts that make a pivot exactly
// zero (x = Diag[0]^2 and small integers), against the number of dense
// eigenvalues (mat.EigenSym) below x, where no eigenvalue is within 1e-9
// of x. A zero pivot replaced by 4 * 2^-1074 made t / d overflow and the
// rest of the count NaN.
func TestBidiagCountBelowZeroPivots(t *testing.T) {
	defer func(o int) { bidiagParallelOrder = o }(bidiagParallelOrder)
	for _, order := range []int{bidiagParallelOrder, 2} {
		bidiagParallelOrder = order
		for n := 2; n <= 8; n++ {
			for trial := 0; trial < 12; trial++ {
				g, h := make([]float64, n), make([]float64, n)
				for i := range g {
					g[i] = float64(1 + (trial*7+i*3)%3)
					h[i] = float64(1 + (trial*5+i)%2)
				}
				b := BidiagGram{Diag: g, Sub: h}
				var e mat.EigenSym
				require.True(t, e.Factorize(b.dense(), false))
				ev := e.Values(nil)
				for _, x := range []float64{g[0] * g[0], 1, 2, 4, 5} {
					want, near := 0, false
					for _, v := range ev {
						near = near || math.Abs(v-x) < 1e-9
						if v < x {
							want++
						}
					}
					if !near {
						assert.Equal(t, want, b.CountBelow(x), "order threshold %d: g=%v h=%v x=%g eigenvalues %v", order, g, h, x, ev)
					}
				}
			}
		}
	}
}

// A diagonal entry so small that the square of its multiplier overflows
// (1e-160: L[1][0] = 1e160), in the path graph's adjacency matrix, whose
// eigenvalues 2 cos(pi j / 7) (j = 1..6) are three negative: SymBand's
// count below 0 went NaN after the overflow and gave 1; SymTridiag (ratio
// form) and mat.EigenSym give 3.
func TestSymBandCountBelowHugeMultiplier(t *testing.T) {
	const n = 6
	for _, eps := range []float64{1e-160, 1e-300, 0x1p-1060} {
		s := NewSymBand(n, 1)
		tr := SymTridiag{Diag: make([]float64, n), Off: make([]float64, n)}
		d := mat.NewSymDense(n, nil)
		for i := 1; i < n; i++ {
			s.Set(i, i-1, 1)
			tr.Off[i] = 1
			d.SetSym(i, i-1, 1)
		}
		s.Set(0, 0, eps)
		tr.Diag[0] = eps
		d.SetSym(0, 0, eps)
		var e mat.EigenSym
		require.True(t, e.Factorize(d, false))
		for _, x := range []float64{0, 1e-310, -0.5, 0.5} {
			want := 0
			for _, v := range e.Values(nil) {
				if v < x {
					want++
				}
			}
			assert.Equal(t, want, s.CountBelow(x, make([]float64, 3*n)), "SymBand eps=%g x=%g", eps, x)
			assert.Equal(t, want, tr.CountBelow(x), "SymTridiag eps=%g x=%g", eps, x)
		}
	}
}

// pathLaplacian returns the Laplacian of the path graph on n vertices in
// band storage with k >= 1 off-diagonals (the ones beyond the first zero):
// its eigenvalues are 2 - 2 cos(pi j / n), j = 0..n-1, so it is singular
// (the constant vector), plus c on the diagonal.
func pathLaplacian(n, k int, c float64) SymBand {
	s := NewSymBand(n, k)
	for i := 0; i < n; i++ {
		d := 2.0
		if i == 0 || i == n-1 {
			d = 1
		}
		s.Set(i, i, d+c)
		if i > 0 {
			s.Set(i, i-1, -1)
		}
	}
	return s
}

// SymBand.Bounds and SymTridiag.Bounds on singular matrices: lambda_min = 0 exactly (a path
// graph's Laplacian, a rank-one 2 x 2 [a^2 a; a 1], all ones), where the
// inertia count's rounding (u ||M||) once gave lo about 5.5e-17 > 0, a
// wrong bound. lo must be 0 there, the breakdown value callers check. On
// the Laplacian plus c I (lambda_min = c up to the rounding of the
// diagonal, 2u) lo stays a bound within a factor 1.02.
func TestSymBandBoundsSingular(t *testing.T) {
	work := func(n, k int) []float64 { return make([]float64, n*(k+1)+n) }
	for _, c := range []struct{ n, k int }{{2, 1}, {50, 1}, {30, 2}, {64, 5}} {
		s := pathLaplacian(c.n, c.k, 0)
		if lo, _ := s.Bounds(0, work(c.n, c.k)); lo != 0 {
			t.Errorf("path Laplacian n=%d k=%d (singular): lo = %g, want 0", c.n, c.k, lo)
		}
		for _, shift := range []float64{1e-6, 1e-3} {
			s := pathLaplacian(c.n, c.k, shift)
			lo, hi := s.Bounds(0, work(c.n, c.k))
			if want := shift - 4*0x1p-53; !(lo <= want && lo >= shift/1.02) {
				t.Errorf("path Laplacian n=%d k=%d + %g I: lo = %g, want in [%g/1.02, %g]", c.n, c.k, shift, lo, shift, want)
			}
			if top := 2 - 2*math.Cos(math.Pi*float64(c.n-1)/float64(c.n)) + shift; !(hi >= top) {
				t.Errorf("path Laplacian n=%d k=%d + %g I: hi = %g below %g", c.n, c.k, shift, hi, top)
			}
		}
	}
	for _, a := range []float64{0.1, 1.0 / 3, 0.7, 1e-5, 1e5} {
		s := NewSymBand(2, 1)
		a2 := a * a
		s.Set(0, 0, a2)
		s.Set(1, 0, a)
		s.Set(1, 1, 1)
		// fl(a^2) rounds, so the stored matrix is singular, definite or
		// slightly indefinite: its determinant is fl(a^2) - a^2 exactly
		// (the FMA), and lambda_min = det / lambda_max <= 2 det / trace.
		det := -math.FMA(a, a, -a2)
		lo, _ := s.Bounds(0, work(2, 1))
		if bound := math.Max(0, 2*det/(1+a2)); lo > bound {
			t.Errorf("rank one a=%g: lo = %g above %g", a, lo, bound)
		}
	}
	// SymTridiag.Bounds had the same fault: the path Laplacian as a
	// tridiagonal matrix.
	for _, n := range []int{2, 50} {
		d, o := make([]float64, n), make([]float64, n)
		for i := range d {
			d[i], o[i] = 2, -1
		}
		d[0], d[n-1] = 1, 1
		if lo, _ := (SymTridiag{Diag: d, Off: o}).Bounds(0); lo != 0 {
			t.Errorf("tridiagonal path Laplacian n=%d (singular): lo = %g, want 0", n, lo)
		}
		for i := range d {
			d[i] += 1e-6
		}
		if lo, _ := (SymTridiag{Diag: d, Off: o}).Bounds(0); !(lo <= 1e-6-4*0x1p-53 && lo >= 1e-6/1.02) {
			t.Errorf("tridiagonal path Laplacian n=%d + 1e-6 I: lo = %g, want in [1e-6/1.02, 1e-6]", n, lo)
		}
	}
	ones := NewSymBand(2, 1)
	ones.Set(0, 0, 1)
	ones.Set(1, 0, 1)
	ones.Set(1, 1, 1)
	if lo, _ := ones.Bounds(0, work(2, 1)); lo != 0 {
		t.Errorf("[1 1; 1 1]: lo = %g, want 0", lo)
	}
}
