package optim

import (
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// Memory holds the curvature pairs of L-BFGS (Nocedal and Wright,
// Numerical Optimization, Algorithm 7.4), oldest first, and computes the
// two-loop recursion from them in float64 with gonum's kernels
// (floats.Dot, floats.AddScaled), whose rounding [LBFGS] keeps so that the
// local optima it finds do not move. [Memory32] is the same recursion
// for long vectors, with the pairs in float32.
type Memory struct {
	// S and Y are the pairs s = x' - x and y = grad' - grad, Rho[k] =
	// 1 / (S[k] . Y[k]).
	S, Y [][]float64
	Rho  []float64
	size int
	free [][]float64
}

// NewMemory returns an empty memory of at most size pairs. A size of 0
// (or less) keeps no pair: [Memory.Direction] is then the scaled
// gradient, steepest descent.
func NewMemory(size int) *Memory { return &Memory{size: max(size, 0)} }

// Len returns the number of pairs held.
func (m *Memory) Len() int { return len(m.S) }

// Direction writes H grad into dir by the two-loop recursion, with
// scale applying the initial inverse Hessian. alpha is scratch of at least
// Len() entries.
func (m *Memory) Direction(grad, dir, alpha []float64, scale func(dir []float64)) {
	copy(dir, grad)
	k := len(m.S)
	for t := k - 1; t >= 0; t-- {
		alpha[t] = m.Rho[t] * floats.Dot(m.S[t], dir)
		floats.AddScaled(dir, -alpha[t], m.Y[t])
	}
	scale(dir)
	for t := 0; t < k; t++ {
		beta := m.Rho[t] * floats.Dot(m.Y[t], dir)
		floats.AddScaled(dir, alpha[t]-beta, m.S[t])
	}
}

// Push adds the pair (s, y) if s^T y > 0, dropping the oldest when full.
// It keeps the slices; [Memory.Spare] hands back a dropped pair's.
func (m *Memory) Push(s, y []float64) {
	if m.size == 0 {
		m.free = append(m.free, s, y)
		return
	}
	if sy := floats.Dot(s, y); sy > 1e-300 {
		if len(m.S) == m.size {
			m.free = append(m.free, m.S[0], m.Y[0])
			m.S, m.Y, m.Rho = m.S[1:], m.Y[1:], m.Rho[1:]
		}
		m.S, m.Y, m.Rho = append(m.S, s), append(m.Y, y), append(m.Rho, 1/sy)
		return
	}
	m.free = append(m.free, s, y)
}

// Spare returns a slice of length n for a new pair, reusing a dropped one.
func (m *Memory) Spare(n int) []float64 {
	if k := len(m.free); k > 0 {
		v := m.free[k-1]
		m.free = m.free[:k-1]
		return v
	}
	return make([]float64, n)
}

// Reset drops every pair.
func (m *Memory) Reset() {
	m.free = append(append(m.free, m.S...), m.Y...)
	m.S, m.Y, m.Rho = m.S[:0], m.Y[:0], m.Rho[:0]
}

// Memory32 is [Memory] for long vectors (the banded solver's 10^5 to 10^7
// entries), where the direction is bound by memory traffic: the pairs are
// float32 and every product and sum is float64. The direction is the
// two-loop recursion's in its compact form (Byrd, Nocedal and Schnabel,
// 1994): with the pairs' mutual products s_i . y_j (i < j) kept, it needs
// the inner products of the pairs with the gradient and with the scaled
// vector only, so it reads every pair twice per direction in four passes
// of fixed chunks (the same bits on any number of cores) and keeps its
// working vector in float64. Rounding the pairs to float32 changes the
// direction by about 1e-7 relatively; the line search accepts or rejects
// it anyway.
type Memory32 struct {
	// S and Y are the pairs rounded to float32; Rho[k] = 1 / (S[k] .
	// Y[k]) and YY[k] = Y[k] . Y[k], of the rounded pairs, in float64.
	S, Y    [][]float32
	Rho, YY []float64
	size    int
	free    [][]float32
	// sty[i*size+j] = S[i] . Y[j] for i < j < cross: the pairs' mutual
	// products, each column computed once in the first pass of the
	// direction that first needs it.
	sty   []float64
	cross int
	// part holds the sums by chunk; prod the inner products of a pass.
	part, prod []float64
}

// NewMemory32 returns an empty memory of at most size pairs. A size of 0
// (or less) keeps no pair: [Memory32.Direction] is then the scaled
// gradient, steepest descent.
func NewMemory32(size int) *Memory32 {
	size = max(size, 0)
	return &Memory32{size: size, sty: make([]float64, size*size), prod: make([]float64, 2*size)}
}

// Len returns the number of pairs held.
func (m *Memory32) Len() int { return len(m.S) }

// Direction writes H grad into dir, H the L-BFGS inverse Hessian of the
// float32 pairs, with scale applying the initial inverse Hessian (any
// symmetric matrix) to a float64 vector. It is the two-loop recursion's
// result by the compact form: with c = S^T grad and R the upper triangle
// of S^T Y (diagonal 1 / Rho), the first loop's coefficients are
// alpha = R^{-1} c, its vector r = grad - Y alpha; with z = scale(r) and
// e = Y^T z, the second loop's coefficients are
// gamma = alpha - diag(Rho) (e + L gamma), L the strict lower triangle of
// Y^T S, and dir = z + S gamma. alpha is scratch of at least Len()
// entries.
func (m *Memory32) Direction(grad, dir, alpha []float64, scale func(dir []float64)) {
	k := len(m.S)
	if k == 0 {
		copy(dir, grad)
		scale(dir)
		return
	}
	sz := m.size
	// Columns of S^T Y that two pushes without a direction between them
	// left unknown (the newest one is computed with c below).
	for j := max(m.cross, 1); j < k-1; j++ {
		col := m.prod[:j]
		chunkDots(col, m.Y[j], dot4x32Impl, nil, 0, m.S[:j], &m.part)
		for i, v := range col {
			m.sty[i*sz+j] = v
		}
	}
	// c = S^T grad and, if its column is unknown, S[:k-1]^T Y[k-1]: one
	// pass.
	var ynew []float32
	ny := 0
	if m.cross < k && k > 1 {
		// All k products, so that the pairs go by whole groups of four
		// to the kernel (the newest pair's own one is not used).
		ynew, ny = m.Y[k-1], k
	}
	c := m.prod[:k+ny]
	chunkDots(c, grad, dot4x64Impl, ynew, ny, m.S, &m.part)
	for i := 0; i+1 < ny; i++ {
		m.sty[i*sz+k-1] = c[k+i]
	}
	m.cross = k
	alpha = alpha[:k]
	for t := k - 1; t >= 0; t-- {
		v := c[t]
		for j := t + 1; j < k; j++ {
			v -= m.sty[t*sz+j] * alpha[j]
		}
		alpha[t] = m.Rho[t] * v
	}
	// r = grad - Y alpha, then z = scale(r), in dir.
	neg := m.prod[k : 2*k]
	for t, a := range alpha {
		neg[t] = -a
	}
	chunkAxpy(dir, grad, neg, m.Y)
	scale(dir)
	e := m.prod[:k]
	chunkDots(e, dir, dot4x64Impl, nil, 0, m.Y, &m.part)
	gamma := m.prod[k : 2*k]
	for t := 0; t < k; t++ {
		v := e[t]
		for j := 0; j < t; j++ {
			v += m.sty[j*sz+t] * gamma[j]
		}
		gamma[t] = alpha[t] - m.Rho[t]*v
	}
	chunkAxpy(dir, dir, gamma, m.S)
}

// Push adds the pair s = x1 - x0, y = g1 - g0, rounded to float32, if its
// s^T y > 0 and its entries are within float32's range, dropping the
// oldest when full. (A caller whose gradients may be near 1e38 or 1e-38
// scales its problem, as factorize.OptimalBanded balances the workload.)
func (m *Memory32) Push(x1, x0, g1, g0 []float64) {
	if m.size == 0 {
		return // no pair is kept
	}
	n := len(x1)
	var s, y []float32
	if k := len(m.free); k >= 2 {
		s, y = m.free[k-1], m.free[k-2]
		m.free = m.free[:k-2]
	} else {
		s, y = make([]float32, n), make([]float32, n)
	}
	// The differences and the two inner products of the rounded pair
	// that Push keeps (s.y, y.y, in float64) in one pass over memory:
	// the sums of fixed chunks of linalg.VectorChunk entries, added in
	// chunk order, so the same bits on any number of cores.
	chunks := (n + linalg.VectorChunk - 1) / linalg.VectorChunk
	if cap(m.part) < 2*chunks {
		m.part = make([]float64, 2*chunks)
	}
	part := m.part[:2*chunks]
	par.For(chunks, 3*float64(n), func(c int) {
		lo, hi := c*linalg.VectorChunk, min(n, (c+1)*linalg.VectorChunk)
		a, a0, d, d0 := x1[lo:hi], x0[lo:hi], g1[lo:hi], g0[lo:hi]
		sc, yc := s[lo:hi], y[lo:hi]
		a0, d, d0, sc, yc = a0[:len(a)], d[:len(a)], d0[:len(a)], sc[:len(a)], yc[:len(a)]
		var sy, yy float64
		for i, v := range a {
			si, yi := float32(v-a0[i]), float32(d[i]-d0[i])
			sc[i], yc[i] = si, yi
			sy += float64(si) * float64(yi)
			yy += float64(yi) * float64(yi)
		}
		part[2*c], part[2*c+1] = sy, yy
	})
	var sy, yy float64
	for c := 0; c < chunks; c++ {
		sy += part[2*c]
		yy += part[2*c+1]
	}
	// A pair whose rounding overflowed float32 (an infinite entry, so
	// that s.y is infinite or NaN) would turn the recursion into NaN:
	// refused.
	if !(sy > 1e-300) || math.IsInf(sy, 1) {
		m.free = append(m.free, s, y)
		return
	}
	if len(m.S) == m.size {
		m.free = append(m.free, m.S[0], m.Y[0])
		m.S, m.Y, m.Rho, m.YY = m.S[1:], m.Y[1:], m.Rho[1:], m.YY[1:]
		// The mutual products of the pairs kept move up and left by one.
		sz := m.size
		for i := 0; i+1 < sz; i++ {
			copy(m.sty[i*sz:i*sz+sz-1], m.sty[(i+1)*sz+1:(i+2)*sz])
		}
		m.cross = max(m.cross-1, 0)
	}
	m.S, m.Y = append(m.S, s), append(m.Y, y)
	m.Rho, m.YY = append(m.Rho, 1/sy), append(m.YY, yy)
}

// Gamma returns s^T y / y^T y of the newest pair, the usual scalar initial
// inverse Hessian; Len() must be positive.
func (m *Memory32) Gamma() float64 {
	k := len(m.S) - 1
	return 1 / (m.Rho[k] * m.YY[k])
}

// Reset drops every pair.
func (m *Memory32) Reset() {
	m.free = append(append(m.free, m.S...), m.Y...)
	m.S, m.Y, m.Rho, m.YY = m.S[:0], m.Y[:0], m.Rho[:0], m.YY[:0]
	m.cross = 0
}
