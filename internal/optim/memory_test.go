package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// The recursion against the dense BFGS update for one pair:
// H = (I - rho s y^T) gamma I (I - rho y s^T) + rho s s^T.
func TestMemoryDirectionOnePairDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, gamma := 6, 0.7
	s, y, g := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range s {
		s[i], y[i], g[i] = rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
	}
	if floats.Dot(s, y) < 0 {
		floats.Scale(-1, y)
	}
	m := NewMemory(3)
	m.Push(append([]float64(nil), s...), append([]float64(nil), y...))
	dir := make([]float64, n)
	m.Direction(g, dir, make([]float64, 3), func(d []float64) { floats.Scale(gamma, d) })

	rho := 1 / floats.Dot(s, y)
	sv, yv := mat.NewVecDense(n, s), mat.NewVecDense(n, y)
	var left, right, h, ss mat.Dense
	eye := mat.NewDiagDense(n, nil)
	for i := 0; i < n; i++ {
		eye.SetDiag(i, 1)
	}
	left.Outer(-rho, sv, yv)
	left.Add(&left, eye)
	right.Outer(-rho, yv, sv)
	right.Add(&right, eye)
	h.Mul(&left, &right)
	h.Scale(gamma, &h)
	ss.Outer(rho, sv, sv)
	h.Add(&h, &ss)
	var want mat.VecDense
	want.MulVec(&h, mat.NewVecDense(n, g))
	for i := range dir {
		if math.Abs(dir[i]-want.AtVec(i)) > 1e-12*(1+math.Abs(want.AtVec(i))) {
			t.Fatalf("H g = %v, want %v", dir, want.RawVector().Data)
		}
	}
}

// Every BFGS inverse Hessian satisfies the secant equation of its newest
// pair, H y = s, whatever the older pairs and the initial scaling: for
// Memory, and for Memory32 with its pair rounded to float32 (the
// recursion's float32 working vector leaves a relative error of about
// 1e-7 times the recursion's amplification).
func TestMemorySecant(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 9
	m, m32 := NewMemory(4), NewMemory32(4)
	zero := make([]float64, n)
	var s, y []float64
	for k := 0; k < 7; k++ { // more pairs than the memory holds
		s, y = m.Spare(n), m.Spare(n)
		for i := range s {
			s[i] = rng.NormFloat64()
			y[i] = s[i]*(1+float64(i)) + 0.1*rng.NormFloat64() // s.y > 0
		}
		m.Push(s, y)
		m32.Push(s, zero, y, zero)
	}
	if m.Len() != 4 || m32.Len() != 4 {
		t.Fatalf("Len() = %d and %d, want 4", m.Len(), m32.Len())
	}
	dir := make([]float64, n)
	m.Direction(y, dir, make([]float64, 4), func(d []float64) { floats.Scale(0.3, d) })
	for i := range dir {
		if math.Abs(dir[i]-s[i]) > 1e-10*(1+math.Abs(s[i])) {
			t.Fatalf("H y = %v, want s = %v", dir, s)
		}
	}
	y32, s32 := make([]float64, n), make([]float64, n)
	for i := range y {
		y32[i], s32[i] = float64(float32(y[i])), float64(float32(s[i]))
	}
	m32.Direction(y32, dir, make([]float64, 4), func(d []float64) { floats.Scale(0.3, d) })
	for i := range dir {
		if math.Abs(dir[i]-s32[i]) > 1e-5*(1+math.Abs(s32[i])) {
			t.Fatalf("Memory32: H y = %v, want s = %v", dir, s32)
		}
	}
	// A pair with s.y <= 0 is refused; Reset empties the memory.
	m.Push([]float64{1, 0}, []float64{-1, 0})
	m32.Push([]float64{1, 0}, []float64{0, 0}, []float64{-1, 0}, []float64{0, 0})
	if m.Len() != 4 || m32.Len() != 4 {
		t.Errorf("a pair with s.y < 0 was kept: Len() = %d and %d", m.Len(), m32.Len())
	}
	m.Reset()
	m32.Reset()
	if m.Len() != 0 || m32.Len() != 0 {
		t.Errorf("Len() after Reset = %d and %d", m.Len(), m32.Len())
	}
}

// Memory32 against Memory holding the same pairs rounded to float32, with
// a diagonal initial matrix, at a length where the kernels run by chunks:
// the directions agree to rounding (both are float64 throughout), and
// Gamma is s.y / y.y of the newest rounded pair.
func TestMemory32AgainstMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n, k := 1<<17+1000, 5
	m, m32 := NewMemory(k), NewMemory32(k)
	x0, g0 := make([]float64, n), make([]float64, n)
	h := make([]float64, n)
	for i := range h {
		h[i] = 0.5 + rng.Float64()
	}
	var sr, yr []float64
	for range k + 2 {
		x1, g1 := make([]float64, n), make([]float64, n)
		sr, yr = m.Spare(n), m.Spare(n)
		for i := range x1 {
			x1[i] = x0[i] + rng.NormFloat64()
			g1[i] = g0[i] + (x1[i]-x0[i])*(1+float64(i%7)) + 0.1*rng.NormFloat64()
			sr[i], yr[i] = float64(float32(x1[i]-x0[i])), float64(float32(g1[i]-g0[i]))
		}
		m.Push(sr, yr)
		m32.Push(x1, x0, g1, g0)
		x0, g0 = x1, g1
	}
	assert.InDelta(t, floats.Dot(sr, yr)/floats.Dot(yr, yr), m32.Gamma(), 1e-12)
	grad := make([]float64, n)
	for i := range grad {
		grad[i] = rng.NormFloat64()
	}
	scale := func(d []float64) { floats.Mul(d, h) }
	want, got := make([]float64, n), make([]float64, n)
	m.Direction(grad, want, make([]float64, k), scale)
	m32.Direction(grad, got, make([]float64, k), scale)
	floats.Sub(got, want)
	assert.Less(t, floats.Norm(got, 2), 1e-10*floats.Norm(want, 2))
}

// denseBFGS returns H g for the BFGS inverse Hessian of the pairs (s_j,
// y_j), oldest first, from the diagonal H_0 = diag(h0): H_{j+1} = V_j^T
// H_j V_j + rho_j s_j s_j^T, V_j = I - rho_j y_j s_j^T, formed densely.
func denseBFGS(s, y [][]float64, h0, g []float64) []float64 {
	n := len(g)
	h := mat.NewDense(n, n, nil)
	for i, v := range h0 {
		h.Set(i, i, v)
	}
	for j := range s {
		sv, yv := mat.NewVecDense(n, s[j]), mat.NewVecDense(n, y[j])
		rho := 1 / mat.Dot(sv, yv)
		v := mat.NewDense(n, n, nil)
		v.Outer(-rho, yv, sv)
		for i := 0; i < n; i++ {
			v.Set(i, i, v.At(i, i)+1)
		}
		var vh, next, ss mat.Dense
		vh.Mul(v.T(), h)
		next.Mul(&vh, v)
		ss.Outer(rho, sv, sv)
		next.Add(&next, &ss)
		h = &next
	}
	var out mat.VecDense
	out.MulVec(h, mat.NewVecDense(n, g))
	return out.RawVector().Data
}

// Memory32.Direction against the dense BFGS product of its pairs rounded
// to float32, for lengths around the assembly's 8-entry blocks, with 1
// pair, 2, a full memory (3), and more pushes than it holds (the oldest
// dropped), pairs refused (s.y <= 0, NaN, an entry beyond float32) in between, and after Reset
// (whose slices the next pairs reuse). Both are float64 throughout, so
// they agree to rounding.
func TestMemory32DirectionDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 7, 8, 9, 17} {
		h0 := make([]float64, n)
		for i := range h0 {
			h0[i] = 0.5 + rng.Float64()
		}
		scale := func(d []float64) { floats.Mul(d, h0) }
		m := NewMemory32(3)
		var ss, ys [][]float64 // the pairs held, rounded to float32
		zero := make([]float64, n)
		push := func(s, y []float64) {
			m.Push(s, zero, y, zero)
			sr, yr := make([]float64, n), make([]float64, n)
			for i := range s {
				sr[i], yr[i] = float64(float32(s[i])), float64(float32(y[i]))
			}
			ss, ys = append(ss, sr), append(ys, yr)
			if len(ss) > 3 {
				ss, ys = ss[1:], ys[1:]
			}
		}
		check := func(what string) {
			t.Helper()
			if m.Len() != len(ss) {
				t.Fatalf("n = %d, %s: Len() = %d, want %d", n, what, m.Len(), len(ss))
			}
			g := make([]float64, n)
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			dir := make([]float64, n)
			m.Direction(g, dir, make([]float64, 3), scale)
			want := denseBFGS(ss, ys, h0, g)
			if d := floats.Distance(dir, want, 2); !(d <= 1e-10*floats.Norm(want, 2)) {
				t.Fatalf("n = %d, %s: H g = %v, want %v", n, what, dir, want)
			}
		}
		check("no pairs")
		for k := 1; k <= 5; k++ {
			s, y := make([]float64, n), make([]float64, n)
			for i := range s {
				s[i] = rng.NormFloat64()
				y[i] = s[i]*(1+float64(i%5)) + 0.2*rng.NormFloat64()
			}
			if floats.Dot(s, y) <= 0 {
				floats.Scale(-1, y)
			}
			push(s, y)
			check(fmt.Sprintf("%d pushes", k))
			// Refused: s.y < 0, s.y = 0, NaN.
			neg := append([]float64(nil), y...)
			floats.Scale(-1, neg)
			nan := append([]float64(nil), y...)
			nan[0] = math.NaN()
			// Beyond float32 (s.y = +Inf once rounded).
			big := append([]float64(nil), y...)
			big[0] = math.Copysign(1e39, s[0])
			for _, bad := range [][]float64{neg, zero, nan, big} {
				m.Push(s, zero, bad, zero)
			}
			check(fmt.Sprintf("%d pushes and refusals", k))
		}
		m.Reset()
		ss, ys = nil, nil
		check("Reset")
		for range 2 {
			s, y := make([]float64, n), make([]float64, n)
			for i := range s {
				s[i] = rng.NormFloat64()
				y[i] = 2*s[i] + 0.1*rng.NormFloat64()
			}
			push(s, y)
		}
		check("Reset and two pushes")
		if got, want := m.Gamma(), floats.Dot(ss[1], ys[1])/floats.Dot(ys[1], ys[1]); math.Abs(got-want) > 1e-12*want {
			t.Errorf("n = %d: Gamma() = %v, want %v", n, got, want)
		}
	}
}

// BenchmarkMemory32Push times Push at the banded solver's length at R =
// 10^4 with 64 bands (640,000 entries) with a full memory, so that each
// push reuses a dropped pair's slices.
// go test -run '^$' -bench Memory32Push ./internal/optim/
func BenchmarkMemory32Push(b *testing.B) {
	const n = 640000
	rng := rand.New(rand.NewPCG(7, 8))
	x0, x1, g0, g1 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range x1 {
		x1[i] = rng.NormFloat64()
		g1[i] = x1[i] * (1 + rng.Float64())
	}
	m := NewMemory32(12)
	for range 13 {
		m.Push(x1, x0, g1, g0)
	}
	for b.Loop() {
		m.Push(x1, x0, g1, g0)
	}
}

// Memory32 gives the same bits for GOMAXPROCS 1, 2 and 4 at a length
// where its loops (the float32 rounding of the pairs and of the working
// vector, the inner products and updates of the two-loop recursion, the
// float64 direction) run on as many goroutines as there are procs: the
// banded solver's pairs at R = 10^4 with 64 bands have 640,000 entries,
// while the factorize SameBits tests keep below linalg.LongVector, where
// the recursion runs on one goroutine. Pushes beyond the memory's size
// drop the oldest pairs, so the recycled slices and the shifted mutual
// products of the compact form are exercised too.
func TestMemory32SameBitsAnyGOMAXPROCS(t *testing.T) {
	const n, k = 1<<20 + 1000, 3
	chunks := (n + linalg.VectorChunk - 1) / linalg.VectorChunk
	rng := rand.New(rand.NewPCG(9, 10))
	xs, gs := make([][]float64, k+3), make([][]float64, k+3)
	for j := range xs {
		xs[j], gs[j] = make([]float64, n), make([]float64, n)
		for i := range xs[j] {
			xs[j][i] = rng.NormFloat64()
			gs[j][i] = xs[j][i]*(1+float64(i%5)) + 0.01*rng.NormFloat64()
		}
	}
	h := make([]float64, n)
	for i := range h {
		h[i] = 0.5 + rng.Float64()
	}
	run := func(procs int) [][]float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		// The shortest loop, an inner product of float32 vectors (one unit
		// of work per entry), runs on procs goroutines.
		require.Equal(t, procs, par.Workers(chunks, n), "GOMAXPROCS %d", procs)
		m := NewMemory32(k)
		var out [][]float64
		dir, alpha := make([]float64, n), make([]float64, k)
		for j := 1; j < len(xs); j++ {
			m.Push(xs[j], xs[j-1], gs[j], gs[j-1])
			if j == 2 {
				// Two pushes without a direction: the compact form's
				// separate pass for a column of S^T Y.
				continue
			}
			m.Direction(gs[j], dir, alpha, func(d []float64) { floats.Mul(d, h) })
			out = append(out, append([]float64(nil), dir...), append([]float64(nil), m.Rho...), append([]float64(nil), m.YY...))
		}
		for j := range m.S {
			s, y := make([]float64, n), make([]float64, n)
			for i := range s {
				s[i], y[i] = float64(m.S[j][i]), float64(m.Y[j][i])
			}
			out = append(out, s, y)
		}
		return out
	}
	one := run(1)
	for _, procs := range []int{2, 4} {
		got := run(procs)
		require.Len(t, got, len(one))
		for j := range one {
			for i := range one[j] {
				if math.Float64bits(one[j][i]) != math.Float64bits(got[j][i]) {
					t.Errorf("GOMAXPROCS %d: result %d, entry %d: %v, against %v on one", procs, j, i, got[j][i], one[j][i])
					break
				}
			}
		}
	}
}

// Memory32's compact direction against the two-loop recursion of Memory
// (float64, gonum's kernels) holding the same pairs rounded to float32, at
// a length where the passes run by chunks and blocks (with a partial
// last chunk and block), with a symmetric banded, not diagonal, initial
// matrix (as the banded solver's), for every number of pairs up to a
// full memory of 5 and beyond it (the oldest dropped, the mutual products
// shifted), two and three pushes with no direction between them (the
// columns of S^T Y computed in separate passes), and after Reset: the
// directions agree to 1e-10 relatively (both are float64 throughout;
// they differ only by the order of the rounding).
func TestMemory32CompactAgainstTwoLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const n, size = 1<<17 + 3*linalg.VectorChunk/2 + 5, 5
	h := make([]float64, n)
	for i := range h {
		h[i] = 1 + rng.Float64()
	}
	// H0 d: h_i d_i + 0.3 (d_{i-1} + d_{i+1}), symmetric positive definite.
	scale := func(d []float64) {
		prev := 0.0
		for i := range d {
			next := 0.0
			if i+1 < len(d) {
				next = d[i+1]
			}
			cur := d[i]
			d[i] = h[i]*cur + 0.3*(prev+next)
			prev = cur
		}
	}
	m, m32 := NewMemory(size), NewMemory32(size)
	x0, g0 := make([]float64, n), make([]float64, n)
	push := func() {
		x1, g1 := make([]float64, n), make([]float64, n)
		sr, yr := m.Spare(n), m.Spare(n)
		c := 1 + rng.Float64()
		for i := range x1 {
			x1[i] = x0[i] + rng.NormFloat64()
			g1[i] = g0[i] + (x1[i]-x0[i])*(c+float64(i%7)) + 0.1*rng.NormFloat64()
			sr[i], yr[i] = float64(float32(x1[i]-x0[i])), float64(float32(g1[i]-g0[i]))
		}
		m.Push(sr, yr)
		m32.Push(x1, x0, g1, g0)
		x0, g0 = x1, g1
	}
	check := func(what string) {
		t.Helper()
		require.Equal(t, m.Len(), m32.Len(), what)
		grad := make([]float64, n)
		for i := range grad {
			grad[i] = rng.NormFloat64()
		}
		want, got := make([]float64, n), make([]float64, n)
		m.Direction(grad, want, make([]float64, size), scale)
		m32.Direction(grad, got, make([]float64, size), scale)
		floats.Sub(got, want)
		if d, w := floats.Norm(got, 2), floats.Norm(want, 2); !(d <= 1e-10*w) {
			t.Errorf("%s (%d pairs): |compact - two-loop| = %.3g of %.3g", what, m.Len(), d, w)
		}
	}
	check("no pairs")
	for p := 1; p <= size+3; p++ {
		push()
		check(fmt.Sprintf("%d pushes", p))
	}
	push()
	push()
	check("two pushes without a direction")
	m.Reset()
	m32.Reset()
	check("Reset")
	for range 3 {
		push()
	}
	check("Reset and three pushes without a direction")
}

// TestMemoryNoPairs: a memory of size 0 (or less) keeps no pair, so its
// direction is the scaled gradient, steepest descent: with scale doubling
// its argument, dir = 2 grad exactly (by hand). NewMemory32(0).Push and
// NewMemory(0).Push indexed the oldest pair of an empty memory and
// panicked.
func TestMemoryNoPairs(t *testing.T) {
	x0, x1 := []float64{0, 0, 0}, []float64{1, 2, 3}
	g0, g1 := []float64{0, 0, 0}, []float64{2, 1, 4} // s.y = 16 > 0: a pair a memory would keep
	grad := []float64{1, -2, 0.5}
	double := func(v []float64) {
		for i := range v {
			v[i] *= 2
		}
	}
	want := []float64{2, -4, 1}
	for _, size := range []int{0, -1} {
		m32 := NewMemory32(size)
		m32.Push(x1, x0, g1, g0)
		m32.Push(x0, x1, g0, g1)
		m := NewMemory(size)
		m.Push([]float64{1, 2, 3}, []float64{2, 1, 4})
		for name, d := range map[string]func(grad, dir, alpha []float64, scale func([]float64)){"Memory32": m32.Direction, "Memory": m.Direction} {
			dir := make([]float64, 3)
			d(grad, dir, nil, double)
			if !slices.Equal(dir, want) {
				t.Errorf("%s(%d): direction %v, want 2 grad = %v", name, size, dir, want)
			}
		}
		if m32.Len() != 0 || m.Len() != 0 {
			t.Errorf("size %d: %d and %d pairs held, want none", size, m32.Len(), m.Len())
		}
	}
}
