package linalg

import (
	"fmt"

	"github.com/dpmf/dpmf/internal/par"
)

// ApplyRationalRows writes, for every row x of the m x n row-major matrix
// src, the row r(T) x into dst, where r(T) = sum_j Weights[j] (T +
// Shifts[j] I)^{-1} is the rational function q of the n x n tridiagonal T
// (T + Shifts[j] I positive definite for every j). It returns false, writing
// nothing useful, when a pivot is not positive.
//
// Each shifted matrix is factorized once (LDL^T, O(n)); each row then costs
// two sweeps of O(n) per shift, O(m n K) in all for K shifts, and the rows
// are split over workers goroutines (at least 1). Four rows are solved
// together so that their independent recurrences overlap; the arithmetic of
// each row is the same whatever the split. This replaces forming r(T)
// densely (O(n^2 K)) and multiplying by it (2 m n^2) when m n K is the
// smaller cost.
func (t SymTridiag) ApplyRationalRows(q InvSqrtRational, src, dst []float64, m, workers int) bool {
	n := t.N()
	t.check(n)
	if len(src) < m*n || len(dst) < m*n {
		panic(fmt.Sprintf("linalg: SymTridiag.ApplyRationalRows: slices of %d and %d, want %d", len(src), len(dst), m*n))
	}
	if n == 0 || m == 0 {
		return true
	}
	k := len(q.Shifts)
	// LDL^T of T + s I: pivots d_i, multipliers l_i = T[i][i-1] / d_{i-1};
	// kept as 1 / d_i and l_i, shift after shift.
	inv := make([]float64, k*n)
	mul := make([]float64, k*n)
	for j, s := range q.Shifts {
		id, l := inv[j*n:j*n+n], mul[j*n:j*n+n]
		d := t.Diag[0] + s
		if !(d > 0) {
			return false
		}
		id[0] = 1 / d
		for i := 1; i < n; i++ {
			l[i] = t.Off[i] * id[i-1]
			d = t.Diag[i] + s - l[i]*t.Off[i]
			if !(d > 0) {
				return false
			}
			id[i] = 1 / d
		}
	}
	// Groups of four rows, taken in order by the workers ([par.Pool]),
	// each with its own scratch.
	groups := (m + 3) / 4
	workers = max(1, min(workers, groups))
	bufs := make([][]float64, workers)
	par.Pool(groups, workers, func(w, g int) bool {
		if bufs[w] == nil {
			bufs[w] = make([]float64, 12*n)
		}
		r := 4 * g
		t.rationalRows(q, inv, mul, src[r*n:], dst[r*n:], bufs[w], min(4, m-r))
		return true
	})
	return true
}

// rationalRows applies r(T) to rows (1 to 4) consecutive rows of src,
// writing dst. buf is scratch of 12 n: the rows interleaved (x[4 i + p] is
// entry i of row p, missing rows zero), the forward sweep and the sum.
func (t SymTridiag) rationalRows(q InvSqrtRational, inv, mul, src, dst, buf []float64, rows int) {
	n := t.N()
	x, y, acc := buf[:4*n], buf[4*n:8*n], buf[8*n:12*n]
	clear(x)
	clear(acc)
	for p := 0; p < rows; p++ {
		for i, v := range src[p*n : p*n+n] {
			x[4*i+p] = v
		}
	}
	for j := range q.Shifts {
		w := q.Weights[j]
		id, l := inv[j*n:j*n+n], mul[j*n:j*n+n]
		// Forward: L z = x.
		z0, z1, z2, z3 := x[0], x[1], x[2], x[3]
		y[0], y[1], y[2], y[3] = z0, z1, z2, z3
		for i := 1; i < n; i++ {
			li := l[i]
			xi := x[4*i : 4*i+4 : 4*i+4]
			z0 = xi[0] - li*z0
			z1 = xi[1] - li*z1
			z2 = xi[2] - li*z2
			z3 = xi[3] - li*z3
			yi := y[4*i : 4*i+4 : 4*i+4]
			yi[0], yi[1], yi[2], yi[3] = z0, z1, z2, z3
		}
		// Backward: D L^T v = z, v_i = z_i / d_i - l_{i+1} v_{i+1}.
		v0, v1, v2, v3 := 0.0, 0.0, 0.0, 0.0
		ln := 0.0
		for i := n - 1; i >= 0; i-- {
			di := id[i]
			yi := y[4*i : 4*i+4 : 4*i+4]
			v0 = yi[0]*di - ln*v0
			v1 = yi[1]*di - ln*v1
			v2 = yi[2]*di - ln*v2
			v3 = yi[3]*di - ln*v3
			ai := acc[4*i : 4*i+4 : 4*i+4]
			ai[0] += w * v0
			ai[1] += w * v1
			ai[2] += w * v2
			ai[3] += w * v3
			ln = l[i]
		}
	}
	for p := 0; p < rows; p++ {
		out := dst[p*n : p*n+n]
		for i := range out {
			out[i] = acc[4*i+p]
		}
	}
}
