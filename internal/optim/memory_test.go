package optim

import (
	"math"
	"math/rand/v2"
	"testing"

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
	m := NewMemory(3, false)
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
// pair, H y = s, whatever the older pairs and the initial scaling.
func TestMemorySecant(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 9
	m := NewMemory(4, true)
	var s, y []float64
	for k := 0; k < 7; k++ { // more pairs than the memory holds
		s, y = m.Spare(n), m.Spare(n)
		for i := range s {
			s[i] = rng.NormFloat64()
			y[i] = s[i]*(1+float64(i)) + 0.1*rng.NormFloat64() // s.y > 0
		}
		m.Push(s, y)
	}
	if m.Len() != 4 {
		t.Fatalf("Len() = %d, want 4", m.Len())
	}
	dir := make([]float64, n)
	m.Direction(y, dir, make([]float64, 4), func(d []float64) { floats.Scale(0.3, d) })
	for i := range dir {
		if math.Abs(dir[i]-s[i]) > 1e-10*(1+math.Abs(s[i])) {
			t.Fatalf("H y = %v, want s = %v", dir, s)
		}
	}
	// A pair with s.y <= 0 is refused; Reset empties the memory.
	m.Push([]float64{1, 0}, []float64{-1, 0})
	if m.Len() != 4 {
		t.Errorf("a pair with s.y < 0 was kept: Len() = %d", m.Len())
	}
	m.Reset()
	if m.Len() != 0 {
		t.Errorf("Len() after Reset = %d", m.Len())
	}
}
