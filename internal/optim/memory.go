package optim

import (
	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// Memory holds the curvature pairs of L-BFGS (Nocedal and Wright,
// Numerical Optimization, Algorithm 7.4), oldest first, and computes the
// two-loop recursion from them. It is the one L-BFGS recursion of dpmf:
// [LBFGS] drives it with its line search and stopping rules, and
// factorize's banded solver with its own (a certified-gap stop, a
// preconditioned initial Hessian and trial points outside the positive
// definite cone), which is why the two keep separate drivers.
type Memory struct {
	// S and Y are the pairs s = x' - x and y = grad' - grad, Rho[k] =
	// 1 / (S[k] . Y[k]).
	S, Y  [][]float64
	Rho   []float64
	size  int
	free  [][]float64
	fused bool
}

// NewMemory returns an empty memory of at most size pairs. With fused, the
// inner products and updates run in linalg's kernels ([linalg.Dot],
// [linalg.AxpyDot]: one pass over memory per pair and loop, fused
// multiply-adds where the CPU has them), for long vectors; without, in
// gonum's (floats.Dot, floats.AddScaled), whose rounding [LBFGS] keeps so
// that the local optima it finds do not move.
func NewMemory(size int, fused bool) *Memory { return &Memory{size: size, fused: fused} }

// dot returns a . b in the memory's kernels.
func (m *Memory) dot(a, b []float64) float64 {
	if m.fused {
		return linalg.Dot(a, b)
	}
	return floats.Dot(a, b)
}

// axpyDot sets y += a x and returns z . y in the memory's kernels.
func (m *Memory) axpyDot(a float64, x, y, z []float64) float64 {
	if m.fused {
		return linalg.AxpyDot(a, x, y, z)
	}
	floats.AddScaled(y, a, x)
	return floats.Dot(z, y)
}

// axpy sets y += a x in the memory's kernels.
func (m *Memory) axpy(a float64, x, y []float64) {
	if m.fused {
		// Element-wise, so the split into chunks changes no bits.
		par.Range(len(x), linalg.VectorChunk, 3, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y[i] += a * x[i]
			}
		})
		return
	}
	floats.AddScaled(y, a, x)
}

// Len returns the number of pairs held.
func (m *Memory) Len() int { return len(m.S) }

// Direction writes H grad into dir by the two-loop recursion, with
// scale applying the initial inverse Hessian; each update of dir is
// followed by the inner product that the next step needs (in one pass over
// memory with fused kernels). alpha is scratch of at least Len() entries.
func (m *Memory) Direction(grad, dir, alpha []float64, scale func(dir []float64)) {
	copy(dir, grad)
	k := len(m.S)
	if k > 0 {
		alpha[k-1] = m.Rho[k-1] * m.dot(m.S[k-1], dir)
	}
	for t := k - 1; t >= 0; t-- {
		if t > 0 {
			alpha[t-1] = m.Rho[t-1] * m.axpyDot(-alpha[t], m.Y[t], dir, m.S[t-1])
		} else {
			m.axpy(-alpha[t], m.Y[t], dir)
		}
	}
	scale(dir)
	if k == 0 {
		return
	}
	beta := m.Rho[0] * m.dot(m.Y[0], dir)
	for t := 0; t < k; t++ {
		if t+1 < k {
			beta = m.Rho[t+1] * m.axpyDot(alpha[t]-beta, m.S[t], dir, m.Y[t+1])
		} else {
			m.axpy(alpha[t]-beta, m.S[t], dir)
		}
	}
}

// Push adds the pair (s, y) if s^T y > 0, dropping the oldest when full.
// It keeps the slices; [Memory.Spare] hands back a dropped pair's.
func (m *Memory) Push(s, y []float64) {
	if sy := m.dot(s, y); sy > 1e-300 {
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
