package factorize

import (
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// diagCorrection returns the diagonal d that minimises tr(W X W^T) for
// W = M (R + diag(d)), M = L^T X from the last [bandedProblem.formM] and
// R the off-diagonal band of G by rows in rf ([bandedProblem.mr]'s
// layout, its diagonal positions zero), or nil where it cannot be formed.
//
// Any d gives a dual point (docs/solver.md, "A diagonal correction of the
// dual point"): Z = G - R - diag(d) is zero on the band's off-diagonal and
// tr(Z Y) = tr Z for every feasible Y (unit diagonal), and it is positive
// semidefinite when lambda_max(M (R + diag(d)) M^T) <= 1. So d needs no
// accuracy: the certificate is computed for the d it is given. The
// minimiser solves the band system (G^{-1} o X) d = -diag(G^{-1} R X)
// (o the entrywise product, positive definite by Schur's product theorem),
// with G^{-1} = M^T M: H_ij = sum_k M_ki M_kj X_ij on X's band and the
// right-hand side -sum_k M_ki (W X)_ki, W = M R, each a pass over the rows
// k of M and W in O(R b^2), and the solve by [bandedCholesky] in O(R b^2).
// The passes run on chunks of rows of at least 2b + p - 2, the even
// chunks and then the odd ones, so that chunks that run at once never
// write the same entries and the result is the same bits on any number
// of cores.
func (bp *bandedProblem) diagCorrection(x linalg.SymBand, rf []float64) []float64 {
	n, b, p := bp.n, bp.b, bp.p
	if b < 2 {
		return nil
	}
	wm, wa := 2*b+p-1, 4*b+p-3
	xd := x.Data
	h := linalg.NewSymBand(n, b-1)
	rhs := make([]float64, n)
	size := max(bandRowChunk, 2*b+p)
	chunks := (n + size - 1) / size
	pass := func(parity int) {
		par.For((chunks+1-parity)/2, float64(n)*float64(4*b*b)/2, func(c2 int) {
			c := 2*c2 + parity
			lo, hi := c*size, min(n, (c+1)*size)
			acc, rev := make([]float64, wa), make([]float64, wa)
			// yr[top - j] = (W X)_kj for j in [top - (wa + b - 2), top],
			// top = l0 + wa - 1 (reversed, so that both halves below run
			// forwards through X's rows).
			yr := make([]float64, wa+b-1)
			mrev := make([]float64, wm)
			for k := lo; k < hi; k++ {
				bp.wRow(k, rf, acc) // W[k][l] at acc[l-l0]
				l0 := k - 2*b + 2
				top := l0 + wa - 1
				for a, v := range acc {
					rev[wa-1-a] = v
				}
				clear(yr)
				// The half above X's diagonal, l > j: X[l][j] from row l,
				// yr[top - l + d] += W[k][l] X[l][l-d], d in [1, b).
				for l := max(0, l0); l <= min(n-1, top); l++ {
					if w := acc[l-l0]; w != 0 {
						if m := min(b-1, l); m > 0 {
							floats.AddScaled(yr[top-l+1:top-l+1+m], w, xd[l*b+1:l*b+1+m])
						}
					}
				}
				mrow := bp.m[k*wm : k*wm+wm]
				for t, v := range mrow {
					mrev[wm-1-t] = v
				}
				for t, mt := range mrow {
					j := k - b + 1 + t
					if j < 0 || j >= n || mt == 0 {
						continue
					}
					// The half on and below the diagonal, l <= j: X[j][j-d]
					// from row j, W[k][j-d] = rev[top - j + d].
					m := min(b, j+1)
					y := yr[top-j] + linalg.Dot(xd[j*b:j*b+m], rev[top-j:])
					rhs[j] -= mt * y
					// G^{-1}'s band: K[j][j-d] += M_kj M_k,j-d, d <= t.
					m = min(m, t+1)
					floats.AddScaled(h.Data[j*b:j*b+m], mt, mrev[wm-1-t:wm-1-t+m])
				}
			}
		})
	}
	pass(0)
	pass(1)
	// H = G^{-1} o X on the band (not the unused places before the first
	// column in the first rows).
	for i := range n {
		for d := 0; d < b && d <= i; d++ {
			h.Data[i*b+d] *= xd[i*b+d]
		}
	}
	c, ok := bandedCholesky(h)
	if !ok {
		return nil
	}
	// C^T C d = rhs: C^T y = rhs from the last row, then C d = y.
	for j := n - 1; j >= 0; j-- {
		s := rhs[j]
		for t := j + 1; t <= min(n-1, j+b-1); t++ {
			s -= c[j*b+t-j] * rhs[t]
		}
		rhs[j] = s / c[j*b]
	}
	for i := 0; i < n; i++ {
		s := rhs[i]
		for j := max(0, i-b+1); j < i; j++ {
			s -= c[j*b+i-j] * rhs[j]
		}
		rhs[i] = s / c[i*b]
	}
	for _, v := range rhs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
	}
	return rhs
}
