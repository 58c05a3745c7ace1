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

// NewMemory returns an empty memory of at most size pairs.
func NewMemory(size int) *Memory { return &Memory{size: size} }

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
// entries), where the recursion is bound by memory traffic: the pairs and
// the recursion's working vector are float32, every product and sum is
// float64 ([linalg.Dot32], [linalg.AxpyDot32]: one pass over memory per
// pair and loop, by fixed chunks, so the same bits on any number of
// cores). That halves the traffic of the recursion, which reads 2 Len()
// vectors twice per direction. The direction is an approximation of the
// inverse Hessian's product anyway, and a line search accepts or rejects
// it; rounding the pairs to float32 changes it by about 1e-7 relatively
// (at R = 10^4 with 64 bands, 534 iterations to a certified 1e-8 against
// 528 with float64 pairs).
type Memory32 struct {
	// S and Y are the pairs rounded to float32; Rho[k] = 1 / (S[k] .
	// Y[k]) and YY[k] = Y[k] . Y[k], of the rounded pairs, in float64.
	S, Y    [][]float32
	Rho, YY []float64
	size    int
	free    [][]float32
	q       []float32
	// part holds Push's sums by chunk.
	part []float64
}

// NewMemory32 returns an empty memory of at most size pairs.
func NewMemory32(size int) *Memory32 { return &Memory32{size: size} }

// Len returns the number of pairs held.
func (m *Memory32) Len() int { return len(m.S) }

// convert copies src into dst, element by element, by chunks.
func convert[D, S float32 | float64](dst []D, src []S) {
	par.Range(len(src), linalg.VectorChunk, 1.5, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = D(src[i])
		}
	})
}

// Direction writes H grad into dir by the two-loop recursion over the
// float32 pairs, with scale applying the initial inverse Hessian (to a
// float64 vector), each update of the working vector followed by the inner
// product that the next step needs, in one pass over memory. alpha is
// scratch of at least Len() entries.
func (m *Memory32) Direction(grad, dir, alpha []float64, scale func(dir []float64)) {
	k := len(m.S)
	if k == 0 {
		copy(dir, grad)
		scale(dir)
		return
	}
	n := len(grad)
	if len(m.q) < n {
		m.q = make([]float32, n)
	}
	q := m.q[:n]
	convert(q, grad)
	alpha[k-1] = m.Rho[k-1] * linalg.Dot32(m.S[k-1], q)
	for t := k - 1; t > 0; t-- {
		alpha[t-1] = m.Rho[t-1] * linalg.AxpyDot32(-alpha[t], m.Y[t], q, m.S[t-1])
	}
	// The last update of each loop writes the float64 direction.
	axpyTo(dir, q, -alpha[0], m.Y[0])
	scale(dir)
	convert(q, dir)
	beta := m.Rho[0] * linalg.Dot32(m.Y[0], q)
	for t := 0; t+1 < k; t++ {
		beta = m.Rho[t+1] * linalg.AxpyDot32(alpha[t]-beta, m.S[t], q, m.Y[t+1])
	}
	axpyTo(dir, q, alpha[k-1]-beta, m.S[k-1])
}

// axpyTo sets dst = q + a x in float64, by chunks.
func axpyTo(dst []float64, q []float32, a float64, x []float32) {
	par.Range(len(q), linalg.VectorChunk, 2.5, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = float64(q[i]) + a*float64(x[i])
		}
	})
}

// Push adds the pair s = x1 - x0, y = g1 - g0, rounded to float32, if its
// s^T y > 0 and its entries are within float32's range, dropping the
// oldest when full. (A caller whose gradients may be near 1e38 or 1e-38
// scales its problem, as factorize.OptimalBanded balances the workload.)
func (m *Memory32) Push(x1, x0, g1, g0 []float64) {
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
}
