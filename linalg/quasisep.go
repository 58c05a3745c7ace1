package linalg

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/internal/par"
)

// QuasiSep is an n x n lower-triangular matrix in quasiseparable form of
// order K with diagonal transitions:
//
//	M[i][j] = sum_k P[i][k] (prod_{l=j+1}^{i-1} A[l][k]) Q[j][k]   (i > j),
//	M[i][i] = Diag[i],
//
// with P, A and Q held row-major as n x K slices (row i at [i*K, i*K+K]).
// The strictly lower part is a sum of K rank-structured terms, each a
// semiseparable matrix of rank one: the inverse of a tridiagonal matrix has
// this form with K = 1 (see [BidiagGram.AddShiftedInverse]), and a sum of K
// such inverses has it with order K. Products over A are never formed
// explicitly, so entries far from the diagonal that decay to nothing do not
// underflow the generators.
//
// The same value describes a symmetric matrix by its lower triangle
// (see [QuasiSep.ReverseCholesky]). Vandebril, Van Barel and Mastronardi,
// "Matrix Computations and Semiseparable Matrices" (Johns Hopkins, 2008),
// and Eidelman and Gohberg, "On a new class of structured matrices" (Integr.
// Equ. Oper. Theory 34, 1999), treat these representations.
type QuasiSep struct {
	N, K    int
	P, A, Q []float64
	Diag    []float64
}

// NewQuasiSep returns a zero QuasiSep of order n and rank k. It panics if
// n or k is negative (a programmer error, see the package doc).
func NewQuasiSep(n, k int) QuasiSep {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("linalg: quasiseparable matrix of negative order %d or rank %d", n, k))
	}
	return QuasiSep{N: n, K: k, P: make([]float64, n*k), A: make([]float64, n*k), Q: make([]float64, n*k), Diag: make([]float64, n)}
}

func (m QuasiSep) check() {
	if m.N < 0 || m.K < 0 || len(m.P) != m.N*m.K || len(m.A) != m.N*m.K || len(m.Q) != m.N*m.K || len(m.Diag) != m.N {
		panic(fmt.Sprintf("linalg: quasiseparable matrix of order %d and rank %d with %d, %d, %d generator and %d diagonal entries", m.N, m.K, len(m.P), len(m.A), len(m.Q), len(m.Diag)))
	}
}

// At returns M[i][j] (0 above the diagonal), in O((i - j) K).
func (m QuasiSep) At(i, j int) float64 {
	switch {
	case i < j:
		return 0
	case i == j:
		return m.Diag[i]
	}
	k := m.K
	s := 0.0
	for t := 0; t < k; t++ {
		x := m.P[i*k+t] * m.Q[j*k+t]
		for l := j + 1; l < i; l++ {
			x *= m.A[l*k+t]
		}
		s += x
	}
	return s
}

// ReverseCholesky returns the lower-triangular C with C^T C = X for the
// symmetric positive definite X whose lower triangle is m: the Cholesky
// factor taken from the last row upwards (C = E chol(E X E)^T E with E the
// exchange matrix), which is the causal factor of the matrix mechanism. C
// has m's transitions A and column generators Q; its row generators and
// diagonal are new. The cost is O(n K^2).
//
// Writing C[i][j] = G_i^T A_{ij} q_j for i > j, the entries of C^T C give
//
//	c_i = sqrt(X_ii - q_i^T W_i q_i),  G_i = (p_i - a_i W_i q_i) / c_i,
//	W_{i-1} = G_i G_i^T + a_i W_i a_i,  W_{n-1} = 0,
//
// with W_i = sum_{k > i} A_{ki} G_k G_k^T A_{ki}. It returns an error when a
// pivot is not positive (X not numerically positive definite). (Package
// factorize's bandedCholesky is the same factor for banded X; the
// structures differ, so the two stay separate.)
func (m QuasiSep) ReverseCholesky() (QuasiSep, error) {
	m.check()
	n, k := m.N, m.K
	c := QuasiSep{N: n, K: k, P: make([]float64, n*k), A: m.A, Q: m.Q, Diag: make([]float64, n)}
	w := make([]float64, k*k)
	t := make([]float64, k)
	for i := n - 1; i >= 0; i-- {
		q := m.Q[i*k : i*k+k]
		a := m.A[i*k : i*k+k]
		piv := m.Diag[i] - quadForm(w, q, t) // t = W_i q_i
		if !(piv > 0) {
			return QuasiSep{}, fmt.Errorf("linalg: reverse Cholesky factorization: pivot %d is %v, the matrix is not numerically positive definite", i, piv)
		}
		ci := math.Sqrt(piv)
		c.Diag[i] = ci
		g := c.P[i*k : i*k+k]
		p := m.P[i*k : i*k+k]
		for r := range g {
			g[r] = (p[r] - a[r]*t[r]) / ci
		}
		decayUpdate(w, g, a)
	}
	return c, nil
}

// ColNormsSq writes the squared Euclidean norms of M's columns into dst
// (length n), by the backward recursion W_{j-1} = p_j p_j^T + a_j W_j a_j:
// ||M e_j||^2 = Diag[j]^2 + q_j^T W_j q_j. The cost is O(n K^2).
func (m QuasiSep) ColNormsSq(dst []float64) {
	m.check()
	n, k := m.N, m.K
	if len(dst) < n {
		panic(fmt.Sprintf("linalg: slice of length %d, want at least %d", len(dst), n))
	}
	w, wq := make([]float64, k*k), make([]float64, k)
	for j := n - 1; j >= 0; j-- {
		dst[j] = m.Diag[j]*m.Diag[j] + quadForm(w, m.Q[j*k:j*k+k], wq)
		decayUpdate(w, m.P[j*k:j*k+k], m.A[j*k:j*k+k])
	}
}

// decayUpdate sets W = g g^T + a W a for the len(g) x len(g) row-major W
// and the diagonal a: the backward step of the recursions of
// [QuasiSep.ReverseCholesky] and [QuasiSep.ColNormsSq].
func decayUpdate(w, g, a []float64) {
	k := len(g)
	for r := 0; r < k; r++ {
		decayRow(w[r*k:r*k+k], g, a, g[r], a[r])
	}
}

// decayRowGo sets w[u] = gr g[u] + ar w[u] a[u] (products left to right)
// for the len(w) entries of w; g and a have at least len(w) entries. It
// is a row of [decayUpdate].
func decayRowGo(w, g, a []float64, gr, ar float64) {
	g, a = g[:len(w)], a[:len(w)]
	for u, v := range w {
		w[u] = gr*g[u] + ar*v*a[u]
	}
}

// transformRowGo sets, for the len(w) entries of the row w of
// [QuasiSep.BidiagSolveNormsSq]'s transform, with c = (d_a, p1, p2,
// za_a, zb_a, q1, q2, x_a),
//
//	w[b] = d_a w[b] d_b + p1 za[b] + p2 zb[b] + (za_a wy1[b] + zb_a wy2[b]) d_b
//	       + q1 za[b] + q2 zb[b] + x_a x[b]
//
// with d = delta, the sum formed left to right and every product rounded
// on its own (no fused multiply-add); the other slices have at least
// len(w) entries.
func transformRowGo(w, delta, za, zb, wy1, wy2, x []float64, c *[8]float64) {
	n := len(w)
	delta, za, zb, wy1, wy2, x = delta[:n], za[:n], zb[:n], wy1[:n], wy2[:n], x[:n]
	da, p1, p2, zaa, zba, q1, q2, xa := c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
	for b, db := range delta {
		val := da*w[b]*db + p1*za[b] + p2*zb[b] + (zaa*wy1[b]+zba*wy2[b])*db + q1*za[b] + q2*zb[b]
		w[b] = val + xa*x[b]
	}
}

// quadForm returns x^T W x for the len(x) x len(x) row-major W and
// writes W x into wx (length at least len(x)). Each (W x)_a is summed over
// b in order (see rowDots) and x^T W x over a in order.
func quadForm(w, x, wx []float64) float64 {
	wx = wx[:len(x)]
	rowDots(w, x, wx)
	t := 0.0
	for a, r := range wx {
		t += x[a] * r
	}
	return t
}

// rowDot returns sum_b W[a][b] x[b] for the len(x) x len(x) row-major W,
// summed over b in order.
func rowDot(w, x []float64, a int) float64 {
	s := len(x)
	wa := w[a*s : a*s+s]
	r := 0.0
	for b, xb := range x {
		r += wa[b] * xb
	}
	return r
}

// rowDots sets out[a] = rowDot(w, x, a) for every row a of W. Eight rows
// are summed at a time (the rest one by one): the sums are independent,
// so they give the bits of one row at a time, and together they hide the
// latency of the additions (each sum is a chain of dependent additions).
func rowDots(w, x, out []float64) {
	s := len(x)
	a := 0
	for ; a+8 <= s; a += 8 {
		r := rowDots8(w, x, a)
		copy(out[a:a+8], r[:])
	}
	for ; a < s; a++ {
		out[a] = rowDot(w, x, a)
	}
}

// rowDots8 returns rowDot for the rows a, ..., a+7 of W, each summed as
// rowDot sums it.
func rowDots8(w, x []float64, a int) [8]float64 {
	s := len(x)
	w0, w1, w2, w3 := w[a*s:a*s+s], w[(a+1)*s:(a+1)*s+s], w[(a+2)*s:(a+2)*s+s], w[(a+3)*s:(a+3)*s+s]
	w4, w5, w6, w7 := w[(a+4)*s:(a+4)*s+s], w[(a+5)*s:(a+5)*s+s], w[(a+6)*s:(a+6)*s+s], w[(a+7)*s:(a+7)*s+s]
	var r0, r1, r2, r3, r4, r5, r6, r7 float64
	for b, xb := range x {
		r0 += w0[b] * xb
		r1 += w1[b] * xb
		r2 += w2[b] * xb
		r3 += w3[b] * xb
		r4 += w4[b] * xb
		r5 += w5[b] * xb
		r6 += w6[b] * xb
		r7 += w7[b] * xb
	}
	return [8]float64{r0, r1, r2, r3, r4, r5, r6, r7}
}

// tinyGen is the magnitude below which [QuasiSep.Dense] drops a decayed
// term of an entry: it is far below any entry that matters and keeps the
// products out of the (slow) subnormal range.
const tinyGen = 1e-280

// Dense writes M into the n x n row-major slice dst (zeros above the
// diagonal), in O(n^2 K) operations over blocks of columns
// ([ColumnBlocks]) on at most workers goroutines (at least 1). The result
// does not depend on workers. Terms of term t that
// can no longer exceed 1e-280 in magnitude (the products over A[.][t]
// having decayed, with every |A[i][t]| <= 1) are dropped: an absolute
// error below 1e-280 per term.
func (m QuasiSep) Dense(dst []float64, workers int) {
	m.check()
	n, k := m.N, m.K
	if len(dst) < n*n {
		panic(fmt.Sprintf("linalg: slice of length %d, want at least %d", len(dst), n*n))
	}
	// Row i: M[i][j] = sum_t P[i][t] F_t[j], with F_t[j] = A_{ij}[t] Q[j][t]
	// kept for j < i and updated by F_t[j] *= A[i][t] after row i. Each
	// block of columns is swept on its own; lo[t] skips the leading columns whose
	// F_t has decayed below skip[t]: tinyGen / max(1, max_i |P[i][t]|)
	// where every |A[i][t]| <= 1, so that the terms P F A... of the rows
	// below stay under tinyGen, and 0 (no skipping) otherwise, NaN
	// included.
	skip := make([]float64, k)
	for t := 0; t < k; t++ {
		pmax, decays := 1.0, true
		for i := 0; i < n && decays; i++ {
			decays = math.Abs(m.A[i*k+t]) <= 1
			if p := math.Abs(m.P[i*k+t]); !(p <= pmax) {
				pmax = p
			}
		}
		if decays && pmax <= math.MaxFloat64 {
			skip[t] = tinyGen / pmax
		}
	}
	ColumnBlocks(n, workers, func(c0, c1 int) {
		f := make([]float64, k*(c1-c0))
		lo := make([]int, k)
		width := c1 - c0
		for i := 0; i < c0; i++ {
			clear(dst[i*n+c0 : i*n+c1])
		}
		for i := c0; i < n; i++ {
			row := dst[i*n : i*n+n]
			clear(row[c0:c1])
			end := min(i, c1) - c0 // columns c0 .. c0+end-1 are below the diagonal
			p := m.P[i*k : i*k+k]
			a := m.A[i*k : i*k+k]
			// Four terms at a time: a decayed entry that one of them
			// skips is set to zero, so that it adds exactly nothing where
			// another of the four still runs over it.
			advance := func(t int) int {
				ft := f[t*width : t*width+end]
				l := lo[t]
				for l < end && math.Abs(ft[l]) < skip[t] {
					ft[l] = 0
					l++
				}
				lo[t] = l
				return l
			}
			t := 0
			for ; t+4 <= k; t += 4 {
				l := min(advance(t), advance(t+1), advance(t+2), advance(t+3))
				if l < end {
					accScale4(row[c0+l:c0+end], f[t*width+l:t*width+end], f[(t+1)*width+l:(t+1)*width+end],
						f[(t+2)*width+l:(t+2)*width+end], f[(t+3)*width+l:(t+3)*width+end], (*[4]float64)(p[t:t+4]), (*[4]float64)(a[t:t+4]))
				}
			}
			for ; t < k; t++ {
				ft := f[t*width : t*width+end]
				out := row[c0 : c0+end]
				pt, at := p[t], a[t]
				for j := advance(t); j < end; j++ {
					out[j] += pt * ft[j]
					ft[j] *= at
				}
			}
			if i >= c0 && i < c1 {
				row[i] = m.Diag[i]
				for t := 0; t < k; t++ {
					f[t*width+i-c0] = m.Q[i*k+t]
				}
			}
			for j := max(i+1, c0); j < c1; j++ {
				row[j] = 0
			}
		}
	})
}

// InverseRows computes the rows of M^{-1} restricted to the columns
// [c0, c1) by forward substitution on the identity, and passes row i (its
// entries c0 .. min(i, c1-1); the rest of the row is zero) to emit in
// increasing order of i, with i running from c0 to n-1. The cost is
// O(n (c1 - c0) K) and O((c1 - c0) K) memory. emit must not keep row.
// Every row sweeps the state of all the columns twice, so a narrow range
// (see [ColumnBlocks]) keeps it in cache. Each column's arithmetic is the
// same whatever range it is computed in.
//
// Forward substitution: x_i = (b_i - P_i^T h_i) / Diag[i] and
// h_{i+1} = a_i h_i + q_i x_i, h_0 = 0 ([QuasiSep.SolveStep] on one
// right-hand side per column; the columns beyond the diagonal stay exact
// zeros until their unit arrives).
func (m QuasiSep) InverseRows(c0, c1 int, emit func(i int, row []float64)) {
	m.check()
	n, k := m.N, m.K
	width := c1 - c0
	if width <= 0 {
		return
	}
	h := make([]float64, k*width)
	x := make([]float64, width)
	z := make([]float64, width)
	for i := c0; i < n; i++ {
		if i > c0 && i-1 < c1 {
			z[i-1-c0] = 0
		}
		if i < c1 {
			z[i-c0] = 1
		}
		m.SolveStep(i, z, h, x)
		emit(i, x[:min(i+1, c1)-c0])
	}
}

// SolveStep advances the forward substitution M x = z by one row, for d
// right-hand sides at once: given row i of Z (z, length d) and the state h
// (K x d row-major, zero before row 0), it writes row i of X = M^{-1} Z into
// x and updates h. The cost is 3 K d multiply-adds; x and z may be the same
// slice. Coordinates are independent, so callers may pass any contiguous
// range of them (with the matching rows of h).
func (m QuasiSep) SolveStep(i int, z, h, x []float64) {
	k := m.K
	d := len(z)
	if len(x) != d || len(h) != k*d {
		panic(fmt.Sprintf("linalg: SolveStep with %d right-hand side entries, %d outputs and a state of %d, want %d, %d and %d", d, len(x), len(h), d, d, k*d))
	}
	p := m.P[i*k : i*k+k]
	a := m.A[i*k : i*k+k]
	q := m.Q[i*k : i*k+k]
	inv := 1 / m.Diag[i]
	// Sub-blocks of solveSub coordinates keep x and the K state rows in
	// the first-level cache between the two sweeps; four state rows are
	// combined per pass over x.
	for lo := 0; lo < d; lo += solveSub {
		hi := min(lo+solveSub, d)
		xs := x[lo:hi]
		copy(xs, z[lo:hi])
		t := 0
		for ; t+4 <= k; t += 4 {
			subDot4(xs, h[t*d+lo:t*d+hi], h[(t+1)*d+lo:(t+1)*d+hi], h[(t+2)*d+lo:(t+2)*d+hi], h[(t+3)*d+lo:(t+3)*d+hi], (*[4]float64)(p[t:t+4]))
		}
		for ; t < k; t++ {
			ht := h[t*d+lo : t*d+hi]
			pt := p[t]
			for j, v := range ht[:len(xs)] {
				xs[j] -= pt * v
			}
		}
		for j := range xs {
			xs[j] *= inv
		}
		t = 0
		for ; t+4 <= k; t += 4 {
			update4(h[t*d+lo:t*d+hi], h[(t+1)*d+lo:(t+1)*d+hi], h[(t+2)*d+lo:(t+2)*d+hi], h[(t+3)*d+lo:(t+3)*d+hi], xs, (*[4]float64)(a[t:t+4]), (*[4]float64)(q[t:t+4]))
		}
		for ; t < k; t++ {
			update(h[t*d+lo:t*d+hi], xs, a[t], q[t])
		}
	}
}

// subDot4 and update are SolveStep's two sweeps over the state: in AVX2
// assembly with fused multiply-adds where the CPU has them
// (solvestep_amd64.s), else in Go.
var (
	subDot4   = subDot4Go
	update    = updateGo
	update4   = update4Go
	accScale4 = accScale4Go

	// decayRow and transformRow: see decayRowGo and transformRowGo.
	decayRow     = decayRowGo
	transformRow = transformRowGo
)

// subDot4Go sets x[j] -= p0 h0[j] + p1 h1[j] + p2 h2[j] + p3 h3[j]; every h
// has at least len(x) entries.
func subDot4Go(x, h0, h1, h2, h3 []float64, p *[4]float64) {
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	h0, h1, h2, h3 = h0[:len(x)], h1[:len(x)], h2[:len(x)], h3[:len(x)]
	for j, v := range h0 {
		x[j] -= p0*v + p1*h1[j] + p2*h2[j] + p3*h3[j]
	}
}

// updateGo sets h[j] = a h[j] + q x[j]; x has at least len(h) entries.
func updateGo(h, x []float64, a, q float64) {
	x = x[:len(h)]
	for j, v := range x {
		h[j] = a*h[j] + q*v
	}
}

// update4Go sets h_t[j] = a_t h_t[j] + q_t x[j] for t = 0..3 and the
// len(x) entries of x, each as updateGo computes it; every h has at least
// len(x) entries.
func update4Go(h0, h1, h2, h3, x []float64, a, q *[4]float64) {
	updateGo(h0[:len(x)], x, a[0], q[0])
	updateGo(h1[:len(x)], x, a[1], q[1])
	updateGo(h2[:len(x)], x, a[2], q[2])
	updateGo(h3[:len(x)], x, a[3], q[3])
}

// accScale4Go sets out[j] += p0 f0[j] + p1 f1[j] + p2 f2[j] + p3 f3[j]
// (the sum formed left to right) and f_t[j] *= a_t, for the len(out)
// entries of out; every f has at least len(out) entries, and none
// overlaps out or another f. It is the four-term step of [QuasiSep.Dense].
func accScale4Go(out, f0, f1, f2, f3 []float64, p, a *[4]float64) {
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	f0, f1, f2, f3 = f0[:len(out)], f1[:len(out)], f2[:len(out)], f3[:len(out)]
	for j, v := range f0 {
		w1, w2, w3 := f1[j], f2[j], f3[j]
		out[j] += p0*v + p1*w1 + p2*w2 + p3*w3
		f0[j], f1[j], f2[j], f3[j] = v*a0, w1*a1, w2*a2, w3*a3
	}
}

// solveSub is the number of coordinates SolveStep treats at a time.
const solveSub = 256

// ColumnBlock is the largest number of columns in a block of
// [ColumnBlocks]: the state of a quasiseparable sweep over one block (K
// rows of ColumnBlock values, 192 KiB at K = 48) stays in the second-level
// cache for the orders the optimal factorization takes. Forming B and C at
// R = 10^4 (K = 48) on one core took 2.7 s in C^{-1}'s rows and 1.1 s in C
// with each worker sweeping its whole range of columns (the state of 10^4
// columns streamed from memory twice a row), and 0.72 s and 0.41 s with
// blocks of 512 columns.
const ColumnBlock = 512

// columnBlock is the block width of ColumnBlocks for n columns: n/16
// rounded up to a multiple of 8, between 64 and ColumnBlock, so that
// orders below 8192 still have 16 blocks to share. It depends on n alone.
func columnBlock(n int) int {
	return min(ColumnBlock, max(64, (n/16+7)&^7))
}

// ColumnBlocks runs a lower-triangular sweep over the columns [0, n) in
// blocks: it calls f(c0, c1) for every block [b w, min(n, (b+1) w)), w
// between 64 and [ColumnBlock] as n requires (a function of n alone), on
// at most workers goroutines (at least 1, the caller's among them) that
// take the blocks from left to right as they become free, so the longest
// columns start first. The blocks do not depend on workers: a caller whose
// f computes each column of a block the same way gets the same bits on any
// number of cores. ColumnBlocks returns when every call has returned.
func ColumnBlocks(n, workers int, f func(c0, c1 int)) {
	w := columnBlock(n)
	blocks := (n + w - 1) / w
	par.Pool(blocks, max(1, min(workers, blocks)), func(_, b int) bool {
		f(b*w, min(n, (b+1)*w))
		return true
	})
}

// BidiagSolveNormsSq writes the squared column norms (colSq) and row norms
// (rowSq) of B = L^{-1} M^{-1} into the slices given (length n each), where
// M is this lower-triangular quasiseparable matrix and L the lower
// bidiagonal matrix with diagonal ldiag and subdiagonal lsub (lsub[0] is
// ignored). For the matrix mechanism with workload A = L^{-1} and causal
// factor C = M this is B = A C^{-1}, whose squared Frobenius norm is the
// sum of either slice. The cost is O(n K^2) time and O(K^2) memory: B is
// never formed.
//
// Column j of M^{-1} follows the forward substitution x_j = 1 / c_j,
// h_{j+1} = q_j / c_j, and for i > j, x_i = -G_i^T h_i / c_i,
// h_{i+1} = a_i h_i + q_i x_i; then b_i = (x_i - lsub_i b_{i-1}) / ldiag_i.
// With the state z_i = (h_i, b_{i-1}), b_i = u_i^T z_i and z_{i+1} = N_i z_i
// for a matrix N_i = Delta_i + Y_i Z_i^T (diagonal plus rank two), so
// ||B e_j||^2 = b_j^2 + z_{j+1}^T V_{j+1} z_{j+1} with the backward recursion
// V_i = u_i u_i^T + N_i^T V_{i+1} N_i, and ||e_i^T B||^2 = b_ii^2 +
// u_i^T P_i u_i with the forward recursion P_{i+1} = N_i P_i N_i^T +
// z^{(i)} z^{(i)T}, z^{(i)} the state that column i starts from.
func (m QuasiSep) BidiagSolveNormsSq(ldiag, lsub, colSq, rowSq []float64) {
	m.check()
	n, k := m.N, m.K
	if len(ldiag) < n || len(lsub) < n || len(colSq) < n || len(rowSq) < n {
		panic(fmt.Sprintf("linalg: BidiagSolveNormsSq with slices shorter than %d", n))
	}
	s := k + 1 // state size
	// scratch makes the work space and the steps of one recursion: the
	// columns' and the rows' run on two goroutines where GOMAXPROCS allows,
	// each with its own (the same bits either way).
	type recursion struct {
		step      func(i int)
		start     func(j int) float64
		transform func(w []float64, transpose bool, x []float64)
		u, z0, v  []float64
		// wx receives quadForm's W x: in the rows' recursion W u, which
		// the transposed transform then reads (see transform).
		wx []float64
	}
	scratch := func() recursion {
		// step returns, for row i > 0, the pieces of N_i and u_i:
		// N_i = diag(delta) + y1 z1^T + y2 z2^T with y1 = (-q_i, 0),
		// z1 = (G_i / c_i, 0), y2 = e_K, z2 = u_i.
		delta := make([]float64, s)
		y1, z1, u := make([]float64, s), make([]float64, s), make([]float64, s)
		step := func(i int) {
			c := m.Diag[i]
			for t := 0; t < k; t++ {
				delta[t] = m.A[i*k+t]
				y1[t] = -m.Q[i*k+t]
				z1[t] = m.P[i*k+t] / c
				u[t] = -m.P[i*k+t] / (c * ldiag[i])
			}
			delta[k], y1[k], z1[k] = 0, 0, 0
			u[k] = -lsub[i] / ldiag[i]
		}
		// start writes z^{(j)} = (q_j / c_j, 1 / (c_j ldiag_j)), the state in
		// which column j enters row j+1, and returns b_jj.
		z0 := make([]float64, s)
		start := func(j int) float64 {
			c := m.Diag[j]
			for t := 0; t < k; t++ {
				z0[t] = m.Q[j*k+t] / c
			}
			bjj := 1 / (c * ldiag[j])
			z0[k] = bjj
			return bjj
		}
		v := make([]float64, s*s)
		vy := make([]float64, 2*s) // V y1, V y2
		eK := make([]float64, s)
		eK[k] = 1
		var c [8]float64 // a row's coefficients, for transformRow
		// transform sets w <- F^T w F (transpose false) or F w F^T (true) for
		// F = diag(delta) + y1 z1^T + e_K u^T, plus x x^T; with the roles of
		// (y, z) swapped for the transpose. The cost is O(s^2). Transposed,
		// it takes W u from vy[s:], where the rows' recursion has just put
		// it (its quadForm with u).
		transform := func(w []float64, transpose bool, x []float64) {
			// F^T W F = D W D + D W Y Z^T + Z Y^T W D + Z (Y^T W Y) Z^T with
			// Y = [y1 e_K], Z = [z1 u]; for F W F^T swap Y and Z.
			ya, yb, za, zb := y1, []float64(nil), z1, u
			if transpose {
				ya, za = z1, y1
			}
			// W y for y = ya and y = yb (yb = e_K, or u when transposed).
			wy1, wy2 := vy[:s], vy[s:]
			rowDots(w, ya, wy1)
			if !transpose {
				for a := 0; a < s; a++ {
					wy2[a] = w[a*s+k]
				}
			}
			if transpose {
				zb, yb = eK, u
			} else {
				yb = nil // e_K
			}
			// Y^T W Y (2 x 2).
			var g11, g12, g22 float64
			for a := 0; a < s; a++ {
				g11 += ya[a] * wy1[a]
				g12 += ya[a] * wy2[a]
			}
			if transpose {
				for a := 0; a < s; a++ {
					g22 += yb[a] * wy2[a]
				}
			} else {
				g22 = wy2[k]
			}
			// Every entry is computed as it always was (the losses of
			// small problems keep their bits, TestGuardSmallKernelBits),
			// and x x^T is added to it in the same pass.
			for a := 0; a < s; a++ {
				da := delta[a]
				// (D W Y Z^T)_ab = d_a (wy1_a za_b + wy2_a zb_b)
				p1, p2 := da*wy1[a], da*wy2[a]
				// (Z Y^T W D)_ab = (za_a wy1_b + zb_a wy2_b) d_b
				// (Z G Z^T)_ab = za_a (g11 za_b + g12 zb_b) + zb_a (g12 za_b + g22 zb_b)
				q1 := g11*za[a] + g12*zb[a]
				q2 := g12*za[a] + g22*zb[a]
				c = [8]float64{da, p1, p2, za[a], zb[a], q1, q2, x[a]}
				transformRow(w[a*s:a*s+s], delta, za, zb, wy1, wy2, x, &c)
			}
		}
		return recursion{step, start, transform, u, z0, v, vy[s:]}
	}
	// Columns: backward.
	cols := func() {
		r := scratch()
		u, z0, v := r.u, r.z0, r.v
		for j := n - 1; j >= 0; j-- {
			bjj := r.start(j)
			colSq[j] = bjj*bjj + quadForm(v, z0, r.wx)
			if j == 0 {
				break
			}
			// V_j = u_j u_j^T + N_j^T V_{j+1} N_j.
			r.step(j)
			r.transform(v, false, u)
		}
	}
	// Rows: forward. P_1 = z^{(0)} z^{(0)T}.
	rows := func() {
		r := scratch()
		u, z0, v := r.u, r.z0, r.v
		for i := 0; i < n; i++ {
			bii := 1 / (m.Diag[i] * ldiag[i])
			if i == 0 {
				rowSq[0] = bii * bii
				r.start(0)
				for a := 0; a < s; a++ {
					for b := 0; b < s; b++ {
						v[a*s+b] += z0[a] * z0[b]
					}
				}
				continue
			}
			r.step(i)
			rowSq[i] = bii*bii + quadForm(v, u, r.wx)
			// P_{i+1} = N_i P_i N_i^T + z^{(i)} z^{(i)T}.
			r.start(i)
			r.transform(v, true, z0)
		}
	}
	par.Both(math.Inf(1), cols, rows)
}
