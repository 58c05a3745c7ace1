package optim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
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
// the directions agree to the float32 working vector's rounding, and
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
	assert.Less(t, floats.Norm(got, 2), 1e-6*floats.Norm(want, 2))
}
