package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/optim"
	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// DefaultBandedTol is the default certified relative duality gap of
// [OptimalBanded].
const DefaultBandedTol = 1e-8

// OptimalBanded returns the optimal factorization of w whose C is lower
// triangular with b bands (C[i][j] = 0 for i - j >= b) and unit column
// norms, the strategy of banded matrix factorization for b-min-separation
// (Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke, Thakurta 2023,
// "(Amplified) Banded Matrix Factorization: A unified approach to private
// training"; McKenna 2024, "Scaling up the banded matrix factorization
// mechanism for differentially private ML"). X = C^T C is then banded
// within b with unit diagonal, so under b-min-separation with at most k
// participations the sensitivity is exactly sqrt(k') with
// k' = min(k, ceil(R / b)) (k = 0: as many as fit), and the loss is
// k' ||B||_F^2.
//
// # Certificate
//
// In X the problem is convex: minimise f(X) = tr(S X^{-1}), S = A^T A, over
// positive definite X banded within b with unit diagonal. For any such X,
// with G = X^{-1} S X^{-1} (the negative gradient) and R its off-diagonal
// band, two lower bounds hold: the Lagrangian bound of the multipliers
// alpha G and |X_ij| <= 1 for every feasible X,
//
//	f* >= f(X)^2 / (f(X) + P),   P = sum_{0 < |i-j| < b} (|G_ij| - G_ij X_ij),
//
// first order in R, and a second-order bound from the exact expansion of f
// about X: with delta >= ||X* - X||_2 (2b - 1, tightened by f(X*) <= f(X))
// and W = M R, M = L^T X banded (G^{-1} = M^T M),
//
//	f* >= f(X) - (tr(W X W^T) + delta ||W||_F^2) / 4
//
// (docs/solver.md derives it: the inverse of the band block of
// (X + delta I)^{-1} (x) G is at most the band block of its inverse).
//
// The relative gap is the smaller of the two. The solver minimises f by
// L-BFGS (Nocedal and Wright, Numerical Optimization, Algorithm 7.5) from
// the banded square root, first in the entries of C (X = C^T C with unit
// columns, which keeps every step positive definite) until the gap is
// 1e-1, then in the entries of X preconditioned with the inverse of each
// row's Hessian in the row's entries, kept within a band of 3 offsets
// and applied through its Cholesky factor, and stops when the gap, plus rounding terms for f and G
// (a-priori estimates, raised to the scatter measured near the iterate), is
// at most opt.Tol ([DefaultBandedTol] if 0); a run whose gap stops
// shrinking ends with a [*NotConvergedError] that reports the stall. For
// a Toeplitz workload (prefix sums, momentum) with at least 32 bands and
// R >= 128 b the start is multilevel: the same problem at order R/2 is
// solved to a gap of 1e-1 (recursively), its factor stretched to order R
// ([stretchBands]), and both phases run from there; Iterations and
// Evaluations count every level (a coarse level that fails too) and
// opt.MaxIter bounds them together. A workload whose scale (as for
// [Optimal]) is outside [2^-16, 2^16] is solved as t A, t a power of two,
// and the result scaled back: the L-BFGS pairs are float32. See
// docs/solver.md.
//
// # Structure
//
// With L = A^{-1} banded (p subdiagonals), f(X) = tr(Q^{-1}) for the band
// matrix Q = L^T X L (b - 1 + p off-diagonals), and the band of G is
// L Q^{-2} L^T, with the band of Q^{-2} the shift derivative of the band
// selected inversion ([linalg.SymBand.InverseBandSquaredRows]): every
// evaluation costs O(R (b + p)^2) time and O(R (b + p)) memory. Workloads
// without a banded inverse are an error. The band kernel runs its two
// halves (split at a separator of b + p rows) on two cores, and the row
// loops of the evaluation, the certificate and the L-BFGS iteration run
// in fixed chunks on as many cores as their work pays for (at most
// GOMAXPROCS; see internal/par); every sum has a fixed order, so the
// result is the same bits whatever GOMAXPROCS is.
//
// # Output
//
// C = P chol(P X P)^T P is banded (the Cholesky factor of a band matrix
// keeps its band; O(R b^2)); B = A C^{-1} is formed densely, from the rows
// of C^{-1} by back substitution (O(R^2 b), on two cores where available;
// a few seconds at R = 10,000), unless opt.LossOnly is set. The metrics
// are those under [MinSeparation](b, k): Metrics.Loss is k' f(X) (with
// LossOnly, MaxSE is 0, not computed), and Participation records the
// pattern.
func OptimalBanded(ctx context.Context, w *Workload, b, k int, opt Options) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if opt.Tol == 0 {
		opt.Tol = DefaultBandedTol
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	n := w.R()
	if b < 1 {
		return nil, &ParamError{Param: "bands", Value: b, Want: ">= 1"}
	}
	part := MinSeparation(b, k)
	if err := part.Validate(n); err != nil {
		return nil, err
	}
	if !opt.LossOnly {
		if err := checkDenseFits(n); err != nil {
			return nil, err
		}
	}
	inv, ok := w.InverseBand()
	if !ok {
		return nil, fmt.Errorf("factorize: optimal banded factorization needs a workload with a banded inverse (prefix, weighted, momentum), not %q", w.Name())
	}
	_, p, _ := inv.TriBand()
	if err := checkBandFits(n, min(b, n), p); err != nil {
		return nil, err
	}
	// The L-BFGS pairs are float32 ([optim.Memory32]) and the gradient
	// scales with A^2: a workload far from unit scale (weights of 1e20 or
	// 1e-20) is solved as t A, t a power of two, so that they stay well
	// inside float32's range (the solution does not depend on the scale).
	return balancedBy(w, w.balanceWithin(bandedBalanceExp), opt, func(w *Workload, opt Options) (*Factorization, error) {
		return optimalBanded(ctx, w, min(b, n), part, opt)
	})
}

// bandedBalanceExp bounds the exponent of the workload's scale that
// [OptimalBanded] solves at as given: 2^16 squared times R^2 (the size of
// the gradient) is far inside float32's range up to 2^127.
const bandedBalanceExp = 16

// optimalBanded is [OptimalBanded] for a checked workload of moderate
// scale and b <= R.
func optimalBanded(ctx context.Context, w *Workload, b int, part Participation, opt Options) (*Factorization, error) {
	n := w.R()
	inv, _ := w.InverseBand()
	sol, err := newBandedProblem(inv, b).run(ctx, opt)
	if err != nil {
		return nil, err
	}
	kk := float64(part.Participations(n))
	f := &Factorization{
		Strategy:    StrategyBanded,
		Workload:    w,
		Available:   squareAvailable(n),
		Iterations:  sol.iter,
		Evaluations: sol.evals,
		Gap:         sol.gap,
	}
	if opt.LossOnly {
		// gamma = 1 (unit columns); MaxSE is not computed. The noise
		// streams from the band of C, O(R b).
		c, ok := bandedCholesky(sol.x)
		if !ok {
			return nil, fmt.Errorf("factorize: Cholesky factorization of X failed (R = %d): the matrix is not numerically positive definite", n)
		}
		f.Operator = bandedOpOfBand(c, n, sol.x.K+1)
		f.Metrics = metricsFrom(n, 1, part, Sensitivity{Value: math.Sqrt(kk), Exact: true, Rule: RuleMinSepBanded}, sol.f, 0)
		return f, nil
	}
	bm, cm, err := bandedFactors(ctx, w, sol.x)
	if err != nil {
		return nil, err
	}
	f.B, f.C, f.Operator = bm, cm, bandedOpOf(cm, b)
	if f.Metrics, err = ComputeMetrics(bm, cm, part); err != nil {
		return nil, err
	}
	return f, nil
}

// bandedProblem evaluates f(X) = tr(S X^{-1}) and its gradient for X banded
// within b with unit diagonal.
type bandedProblem struct {
	n, b, p int
	inv     *mat.TriBandDense
	// lb[a*(p+1) + a-i] = L[a][i], L = A^{-1}.
	lb   []float64
	q    linalg.SymBand // Q = L^T X L
	work []float64
	hx   []float64 // band of X^{-1}
	// zf and z2f hold full rows of Z and Z^2 for [bandedProblem.eval];
	// ld the subdiagonals of L with pad zeros on each side, ldr the same
	// reversed within each diagonal.
	zf, z2f []float64
	ld, ldr []float64
	pad     int
	// m holds L^T X by rows ([bandedProblem.formM]); colSums, pv, pu
	// and pw are scratch for it and [bandedProblem.refineLambda].
	m                   []float64
	colSums, pv, pu, pw []float64
	// rf holds R by rows for [bandedProblem.mr].
	rf    []float64
	pvSet bool
	// lastQuad is what gapOf kept of its last quadratic bound; it only
	// decides when to compute the next.
	lastQuad lastQuad
	// gapCalls counts the calls of gapOf, and dd times its evaluations
	// of G in double-word arithmetic.
	gapCalls int
	dd       struct {
		// next is the tr(W X W^T) (without rounding allowances) at which
		// the next is tried (0 before the first), at the call of the
		// last; used counts those that lowered the bound.
		next     float64
		at, used int
	}
	// levelMinBands is the fewest bands for which [bandedProblem.run]
	// starts from a coarse level (bandedLevelMinBands; tests lower it to
	// reach the multilevel path at small sizes).
	levelMinBands int
}

func newBandedProblem(inv *mat.TriBandDense, b int) *bandedProblem {
	n, p, _ := inv.TriBand()
	kq := b - 1 + p
	lb := make([]float64, n*(p+1))
	for a := 0; a < n; a++ {
		for i := max(0, a-p); i <= a; i++ {
			lb[a*(p+1)+a-i] = inv.At(a, i)
		}
	}
	// The subdiagonals of L, padded with zeros on both sides for eval.
	pad := 2*b + 2*p
	nl := n + 2*pad
	ld, ldr := make([]float64, (p+1)*nl), make([]float64, (p+1)*nl)
	for t := 0; t <= p; t++ {
		for c := t; c < n; c++ {
			ld[t*nl+pad+c] = lb[c*(p+1)+t]
			ldr[t*nl+pad+n-1-c] = lb[c*(p+1)+t]
		}
	}
	return &bandedProblem{
		n: n, b: b, p: p, inv: inv, lb: lb,
		q:    linalg.NewSymBand(n, kq),
		work: make([]float64, linalg.InverseBandSquaredRowsWork(n, kq)),
		hx:   make([]float64, n*b),
		zf:   make([]float64, n*(2*kq+1)), z2f: make([]float64, n*(2*kq+1)),
		ld: ld, ldr: ldr, pad: pad,
		levelMinBands: bandedLevelMinBands,
		m:             make([]float64, n*(2*b+p-1)),
		colSums:       make([]float64, n), pv: make([]float64, n), pu: make([]float64, n), pw: make([]float64, n),
	}
}

// toeplitzColumn returns the first column of A^{-1} (its first p+1
// entries, the rest zero) and whether A^{-1}, and so A, is Toeplitz.
func (bp *bandedProblem) toeplitzColumn() ([]float64, bool) {
	n := bp.n
	col := make([]float64, n)
	for i := 0; i <= bp.p && i < n; i++ {
		col[i] = bp.inv.At(i, 0)
	}
	for i := 1; i < n; i++ {
		for j := 1; j <= i && j <= bp.p; j++ {
			if bp.inv.At(i, i-j) != col[j] || bp.inv.At(i, i) != col[0] {
				return nil, false
			}
		}
	}
	return col, true
}

// start returns the banded square root of the workload's Toeplitz part
// with unit columns as a starting X (the identity for workloads that are
// not Toeplitz).
func (bp *bandedProblem) start() (linalg.SymBand, error) {
	n, b := bp.n, bp.b
	x := linalg.NewSymBand(n, b-1)
	for i := 0; i < n; i++ {
		x.Set(i, i, 1)
	}
	if b == 1 {
		return x, nil
	}
	// Toeplitz: A^{-1}'s first column defines the series; take the square
	// root coefficients of A from the inverse series.
	col, ok := bp.toeplitzColumn()
	if !ok {
		return x, nil
	}
	a := linalg.SeriesInverse(col[:bp.p+1], n)
	tw := toeplitzWorkload{a: a}
	s := tw.sqrt(b)
	// Columns of the banded Toeplitz C: column j has entries s_0..s_m,
	// m = min(b, n - j) - 1; X_ij = sum_r C_ri C_rj / (norm_i norm_j).
	norm := columnNorms(padded(s, n))
	for i := 0; i < n; i++ {
		for d := 1; d < b && d <= i; d++ {
			j := i - d
			// Rows r >= i with r - i < b: sum_t s[t] s[t + d], r = i + t <= n-1.
			v := 0.0
			for t := 0; t+d < b && i+t < n; t++ {
				v += s[t] * s[t+d]
			}
			x.Set(i, j, v/(norm[i]*norm[j]))
		}
	}
	return x, nil
}

// eval returns f(X) and writes the gradient with respect to the entries
// X_ij = X_ji (i > j) into grad (layout of x.Data; diagonal entries 0), the
// band of G = X^{-1} S X^{-1} into g (same layout) and the band of
// H = X^{-1} = L Q^{-1} L^T into bp.hx. ok is false when X
// is not positive definite.
func (bp *bandedProblem) eval(x linalg.SymBand, grad, g []float64) (f float64, ok bool) {
	n, b, p := bp.n, bp.b, bp.p
	kq := bp.q.K
	wq := kq + 1
	// Q = L^T X L by rows, Q[i][i-d] = qrow[d] for d <= kq:
	//
	//	Q[i][i-d] = sum_{s,t <= p} L[i+s][i] X[i+s][i-d+t] L[i-d+t][i-d],
	//
	// where X[i+s][i-d+t] is in row i+s of X's lower band at offset
	// o = d+s-t when 0 <= o < b, and is X[i+s+e][i+s] at offset
	// e = t-s-d (above the diagonal, zero unless e < b) when o < 0.
	// ld[t*(n+2*pad) + pad + c] = L[c][c-t], zero outside the matrix, and
	// ldr is ld reversed within each diagonal (ldr[t*(n+2*pad) + pad +
	// n-1-c] = L[c][c-t]). Each pass runs over contiguous rows of X and L
	// (no gather of X's columns), and every row is computed on its own, by
	// the same operations whatever the split into chunks.
	ld, ldr, pad := bp.ld, bp.ldr, bp.pad
	nl := n + 2*pad
	forBandRows(n, float64((p+1)*(p+1)*wq), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			qrow := bp.q.Data[i*wq : i*wq+wq]
			if p == 1 && b >= 2 && i >= kq && i+1 < n {
				// L bidiagonal (prefix sums), a row away from the
				// edges: every entry in one pass ([qRowBidiagonal]).
				r0 := pad + n - 1 - i
				qRowBidiagonal(qrow, x.Data[i*b:i*b+b], x.Data[(i+1)*b:(i+1)*b+b],
					ldr[r0:r0+wq], ldr[nl+r0-1:nl+r0-1+wq], ld[pad+i], ld[nl+pad+i+1])
				continue
			}
			clear(qrow)
			for s := 0; s <= p && i+s < n; s++ {
				ls := ld[s*nl+pad+i+s]
				xr := x.Data[(i+s)*b : (i+s)*b+b]
				for t := 0; t <= p; t++ {
					// L[i-d+t][i-d] = ld[l0-d].
					l0 := t*nl + pad + i + t
					for d := 0; d < t-s && d <= i; d++ {
						if e := t - s - d; e < b && i+s+e < n {
							qrow[d] += ls * ld[l0-d] * x.Data[(i+s+e)*b+e]
						}
					}
					dlo, dhi := max(0, t-s), min(kq, i, b-1+t-s)
					if dlo > dhi {
						continue
					}
					// d in [dlo, dhi]: qrow[d], xr[d+s-t] and L[i-d+t][i-d] =
					// ldr[r0+d], all forwards.
					r0 := t*nl + pad + n - 1 - i - t
					xs := xr[dlo+s-t : dhi+s-t+1]
					qs, lr := qrow[dlo:dlo+len(xs)], ldr[r0+dlo:r0+dlo+len(xs)]
					qs, lr = qs[:len(xs)], lr[:len(xs)]
					for u, xv := range xs {
						qs[u] += ls * lr[u] * xv
					}
				}
			}
		}
	})
	// Full rows of Z = Q^{-1} and Z^2 within kq.
	wz := 2*kq + 1
	zf, z2f := bp.zf, bp.z2f
	if bp.q.InverseBandSquaredRows(zf, z2f, bp.work) > 0 {
		return 0, false
	}
	for i := 0; i < n; i++ {
		zi := zf[i*wz+kq]
		if !(zi > 0) {
			return 0, false
		}
		f += zi
	}
	// G = L Z^2 L^T and H = X^{-1} = L Z L^T within the band b - 1, through
	// V = Z^2 L^T and W = Z L^T by rows over j in [a-b+1, a+p]:
	// V[a][j] = sum_t Z^2[a][j-t] L[j][j-t], G[i][j] = sum_t L[i][i-t] V[i-t][j].
	// Row i of G and H needs rows i-p .. i of V and W, so each chunk forms
	// them as it goes into a ring of p+1 rows (slot a mod (p+1)), which
	// stays in the first-level cache, rather than writing V and W whole
	// and reading them back; a chunk first forms the p rows before its
	// own (as the chunk before does, by the same operations). The ring
	// holds the rows backwards (V[a][j] at a+p-j), as the band's layout
	// holds G and H (G[i][j] at i-j), so that the rows of G, H and the
	// gradient, which go to memory, are written forwards. In both
	// products the first two terms (t = 0 and 1) are added in the pass
	// that assigns the row and the others (p > 1) added in a pass each,
	// so nothing is cleared and, for p = 1 (prefix sums), each row is
	// written once; the sums are in increasing t as they were.
	wv := b + p
	forBandRows(n, float64(2*(p+1)*(wv+b)), func(lo, hi int) {
		ring := make([]float64, 2*(p+1)*wv)
		vring, wring := ring[:(p+1)*wv], ring[(p+1)*wv:]
		for a := max(0, lo-p); a < hi; a++ {
			// Row a of V and W, entry j = a-b+1+u at wv-1-u: Z[a][j-t] =
			// zf[a*wz + kq + j-t-a], j-t-a = u - b + 1 - t, and L[j][j-t]
			// = ld[t*nl + pad + j].
			slot := (a % (p + 1)) * wv
			vrow, wrow := vring[slot:slot+wv], wring[slot:slot+wv]
			j0 := a - b + 1
			zrow := func(t int) (z2s, zs, lt []float64) {
				off := a*wz + kq - b + 1 - t
				return z2f[off : off+wv], zf[off : off+wv], ld[t*nl+pad+j0 : t*nl+pad+j0+wv]
			}
			z2s, zs, lt := zrow(0)
			z2s, zs = z2s[:len(lt)], zs[:len(lt)]
			if p == 0 {
				for u, lv := range lt {
					vrow[wv-1-u] = z2s[u] * lv
					wrow[wv-1-u] = zs[u] * lv
				}
			} else {
				z2n, zn, ln := zrow(1)
				z2n, zn, ln = z2n[:len(lt)], zn[:len(lt)], ln[:len(lt)]
				for u, lv := range lt {
					vrow[wv-1-u] = z2s[u]*lv + z2n[u]*ln[u]
					wrow[wv-1-u] = zs[u]*lv + zn[u]*ln[u]
				}
			}
			for t := 2; t <= p; t++ {
				z2s, zs, lt := zrow(t)
				z2s, zs = z2s[:len(lt)], zs[:len(lt)]
				for u, lv := range lt {
					vrow[wv-1-u] += z2s[u] * lv
					wrow[wv-1-u] += zs[u] * lv
				}
			}
			if a < lo {
				continue
			}
			// Row i = a of G and H, G[i][i-d] = grow[d] for d < m (j =
			// i-d >= 0); V[i-t][i-d] is in row i-t's slot at p-t+d.
			// Entries beyond the matrix's first column (rows i < b-1)
			// are zero. The gradient, -2 G off the diagonal, is written
			// with G in the pass that completes G (the first, for p <=
			// 1), and by a pass of its own after the others (p > 1).
			i := a
			m := min(b, i+1)
			grow, hxrow, gr := g[i*b:i*b+b], bp.hx[i*b:i*b+b], grad[i*b:i*b+b]
			clear(grow[m:])
			clear(hxrow[m:])
			clear(gr[m:])
			gs, hs, gd := grow[:m], hxrow[:m], gr[:m]
			// L[i][i-t] and rows i-t of V and W over d < m.
			vwrow := func(t int) (lit float64, vr, wr []float64) {
				k := ((i-t)%(p+1))*wv + p - t
				return ld[t*nl+pad+i], vring[k : k+m], wring[k : k+m]
			}
			l0, v0, w0 := vwrow(0)
			hs, gd, v0, w0 = hs[:len(gs)], gd[:len(gs)], v0[:len(gs)], w0[:len(gs)]
			if p == 0 || i == 0 {
				for d, v := range v0 {
					gv := l0 * v
					gs[d], gd[d] = gv, -2*gv
					hs[d] = l0 * w0[d]
				}
			} else {
				l1, v1, w1 := vwrow(1)
				v1, w1 = v1[:len(gs)], w1[:len(gs)]
				for d, v := range v0 {
					gv := l0*v + l1*v1[d]
					gs[d], gd[d] = gv, -2*gv
					hs[d] = l0*w0[d] + l1*w1[d]
				}
			}
			if p > 1 && i > 1 {
				for t := 2; t <= min(p, i); t++ {
					lit, vr, wr := vwrow(t)
					vr, wr = vr[:len(gs)], wr[:len(gs)]
					for d, v := range vr {
						gs[d] += lit * v
						hs[d] += lit * wr[d]
					}
				}
				for d, gv := range gs {
					gd[d] = -2 * gv
				}
			}
			gr[0] = 0
		}
	})
	return f, true
}

// qRowBidiagonal writes row i of Q = L^T X L, qrow[d] = Q[i][i-d] for
// d <= b, for L bidiagonal (p = 1) and a row with b <= i < n-1, from rows
// xi and xj of X's band (rows i and i+1), l0[d] = L[i-d][i-d], l1[d] =
// L[i-d+1][i-d], ls0 = L[i][i] and ls1 = L[i+1][i]. It is the general
// loop of [bandedProblem.eval] with the four (s, t) passes folded into
// one: each entry is the same terms, (ls l) x, added in the same order
// (s, then t, increasing), written once instead of cleared and updated
// four times. The terms with s = 0, t = 1 and d = 0 (X[i+1][i] above the
// diagonal), s = 1, t = 0 (X[i+1][i-d+1], absent for d = b-1) and d = b
// (only s = 0, t = 1) are the edges of the loop.
func qRowBidiagonal(qrow, xi, xj, l0, l1 []float64, ls0, ls1 float64) {
	b := len(xi)
	qrow, xj, l0, l1 = qrow[:b+1], xj[:b], l0[:b+1], l1[:b+1]
	qrow[0] = ls0*l0[0]*xi[0] + ls0*l1[0]*xj[1] + ls1*l0[0]*xj[1] + ls1*l1[0]*xj[0]
	// d in [1, b-2]: xi[d], xi[d-1], xj[d+1], xj[d], as slices from d = 1.
	q, m0, m1 := qrow[1:b-1], l0[1:b-1], l1[1:b-1]
	xd, xdm, xjp, xjd := xi[1:b-1], xi[:b-2], xj[2:b], xj[1:b-1]
	m0, m1, xd, xdm, xjp, xjd = m0[:len(q)], m1[:len(q)], xd[:len(q)], xdm[:len(q)], xjp[:len(q)], xjd[:len(q)]
	for u := range q {
		q[u] = ls0*m0[u]*xd[u] + ls0*m1[u]*xdm[u] + ls1*m0[u]*xjp[u] + ls1*m1[u]*xjd[u]
	}
	qrow[b-1] = ls0*l0[b-1]*xi[b-1] + ls0*l1[b-1]*xi[b-2] + ls1*l1[b-1]*xj[b-1]
	qrow[b] = ls0 * l1[b] * xi[b-1]
}

// bandRowChunk is the number of rows in one chunk of the banded solver's
// row loops ([forBandRows]).
const bandRowChunk = 256

// forBandRows calls f(lo, hi) for the chunks [lo, hi) of bandRowChunk rows
// of [0, n), perRow the estimated cost of one row in the units of
// [par.Grain]: on as many goroutines as that pays for ([par.Range]), at
// most GOMAXPROCS. Every loop that uses it computes each row by the same
// operations whatever the chunk, and sums over rows go through
// [sumBandRows], so that the results are the same bits on any number of
// cores.
func forBandRows(n int, perRow float64, f func(lo, hi int)) {
	par.Range(n, bandRowChunk, perRow, f)
}

// sumBandRows returns the k sums over the rows of [0, n) of the values
// that f adds into out for the rows [lo, hi): f runs once per chunk of
// [forBandRows] with out zeroed, and the chunks' sums are added in chunk
// order, so the result does not depend on the number of cores.
func sumBandRows(n, k int, perRow float64, f func(lo, hi int, out []float64)) []float64 {
	chunks := (n + bandRowChunk - 1) / bandRowChunk
	part := make([]float64, chunks*k)
	par.For(chunks, float64(n)*perRow, func(c int) {
		f(c*bandRowChunk, min(n, (c+1)*bandRowChunk), part[c*k:(c+1)*k])
	})
	sum := make([]float64, k)
	for c := 0; c < chunks; c++ {
		for t := range sum {
			sum[t] += part[c*k+t]
		}
	}
	return sum
}

// gapOf returns the certified relative gap of X, the smaller of the
// linear and the quadratic bounds of [OptimalBanded]'s certificate, from
// the band of G. gErr bounds the Frobenius norm of the error of the
// computed G over the off-diagonal band (both triangles); it is added to
// the norm of R and, through |delta| <= the norm, to P. The quadratic
// bound, (tr(W X W^T) + delta ||W||_F^2) / 4 with W = M R
// ([bandedProblem.mr]), costs about an iteration; it is computed where it
// may certify. A stop of 0 computes it always. Its dual form, tr(W X W^T)
// / (1 + sqrt(1 - e))^2 with e >= lambda_max(M R M^T), is taken with the
// diagonal correction R + diag(d) in place of R
// ([bandedProblem.diagCorrection]). Where gErr is what keeps it
// above stop, it is computed again from G's band evaluated in double-word
// arithmetic ([bandedProblem.evalGDD]), with the smaller allowance of
// [bandedProblem.ddBandAllowance]; a stop of 0 or a gErr of 0 never does.
func (bp *bandedProblem) gapOf(x linalg.SymBand, g []float64, f, gErr, stop float64) float64 {
	n, b := bp.n, bp.b
	bp.gapCalls++
	sums := sumBandRows(n, 2, float64(2*b), func(lo, hi int, out []float64) {
		// Row i's off-diagonal entries are g[i*b+1 : i*b+b] (fewer in the
		// first rows), summed in two interleaved halves to shorten the
		// chain of dependent additions.
		var p0, p1, r0, r1 float64
		for i := lo; i < hi; i++ {
			gr, xr := g[i*b+1:i*b+min(b, i+1)], x.Data[i*b+1:i*b+min(b, i+1)]
			xr = xr[:len(gr)]
			u := 0
			for ; u+1 < len(gr); u += 2 {
				g0, g1 := gr[u], gr[u+1]
				p0 += math.Abs(g0) - g0*xr[u]
				p1 += math.Abs(g1) - g1*xr[u+1]
				r0 += g0 * g0
				r1 += g1 * g1
			}
			if u < len(gr) {
				g0 := gr[u]
				p0 += math.Abs(g0) - g0*xr[u]
				r0 += g0 * g0
			}
		}
		out[0], out[1] = 2*(p0+p1), 2*(r0+r1)
	})
	p, r2 := sums[0], sums[1]
	// The off-diagonal band entries, both triangles.
	cnt := 2 * (n*(b-1) - b*(b-1)/2)
	lin := (p + 2*math.Sqrt(float64(cnt))*gErr) / f
	if b == 1 {
		return lin
	}
	r := math.Sqrt(r2) + gErr
	rel := func(q float64) float64 {
		if q < f {
			return q / (f - q)
		}
		return math.Inf(1)
	}
	// The quadratic bound, from ||M R||_F^2 = m2 and tr(M R X (M R)^T) =
	// tx: delta bounds ||X* - X||_2, 2b - 1 for any two feasible matrices
	// (-X <= X* - X <= X*), and, from f(X*) <= f(X), the bounds below by
	// the same expansion (docs/solver.md), which a few rounds tighten.
	//
	// The dual bound needs no delta: where lambda_max(E) <= eMax < 1,
	// f(X) - f(X*) <= tx / (1 + sqrt(1 - eMax))^2 (docs/solver.md,
	// "A dual bound without delta").
	//
	// An m2 of +Inf stands for the dual bound alone (W from R + diag(d),
	// below), for which the form with delta does not hold.
	quad := func(tx, m2, gersh, lam, eMax, r float64) float64 {
		q := math.Inf(1)
		if !math.IsInf(m2, 1) {
			delta := float64(2*b - 1)
			for range 8 {
				delta = math.Min(delta, math.Min((gersh+delta)*r/lam, math.Sqrt((gersh+delta)*(tx+delta*m2)/lam)))
			}
			q = (tx + delta*m2) / 4
		}
		if eMax < 1 {
			s := 1 + math.Sqrt(1-math.Max(eMax, 0))
			q = math.Min(q, tx/(s*s)*(1+1e-15))
		}
		return q
	}
	// Where it may certify is predicted from its last computation, with
	// tx and m2 scaled by r^2 (their ratios to it change slowly): it is
	// computed where the prediction is at most stop, at least every 20
	// iterations where it is within a factor 10 of stop, and once the
	// linear bound is within a factor 10^5 of stop and below 1, then at
	// every tenth of it. Where G's band has a rounding allowance, it is
	// also computed every 20 iterations once tr(W X W^T) / 4 without the
	// allowances (txl, over the computed ||R||_F^2) would certify: the
	// bound from G in double words may (below). A stop of 0 computes it
	// always.
	last := &bp.lastQuad
	last.since++
	switch {
	case stop <= 0:
	case lin <= min(1e5*stop, 1) && (last.lam == 0 || lin <= last.lin/10):
	case last.lam > 0:
		pred := rel(quad(last.tx*r*r, last.m2*r*r, last.gersh, last.lam, last.e*r, r))
		mayDD := gErr > 0 && last.since >= 20 && rel(last.txl*r2/4) <= stop
		if pred > stop && (pred > 10*stop || last.since < 20) && !mayDD {
			return lin
		}
	default:
		return lin
	}
	m1, mi := bp.formM(x)
	lam := math.Max(1/(m1*mi*(1+1e-12)), bp.refineLambda())
	gersh := bp.gershgorin(x)
	// sharpen returns a bound on lambda_max(E) for the E whose rows
	// [bandedProblem.mr] last formed from bp.rf, given Gershgorin's eMax
	// and E's error allowance eErr: eMax, or a smaller e that an LDL^T
	// factorization proves ([bandedProblem.eProvenBelow]) where Gershgorin's
	// bound is too loose for the dual bound from tx to certify. A Ritz
	// value of E (never above lambda_max(E)) places the tries: first just
	// above it (the sharpest bound that may hold), then, if that fails,
	// the largest e at which the dual bound certifies stop; tries that
	// must fail (at or below the Ritz value) are skipped, and so is
	// everything where no e would certify. With a stop of 0 the tries
	// after the first are at 1/2 and 9/10.
	sharpen := func(tx, eMax, eErr float64) float64 {
		need := 0.9
		if stop > 0 {
			// rel(tx / (1 + sqrt(1 - e))^2) <= stop for e <= need.
			sig := math.Sqrt(tx*(1+stop)/(stop*f)) - 1
			if !(sig < 1) {
				return eMax
			}
			need = 1 - math.Max(sig, 1e-3)*math.Max(sig, 1e-3)
		}
		if !(need < eMax) {
			return eMax
		}
		ritz := bp.eRitz(bandedRitzSteps)
		tries := []float64{math.Max(ritz, 0)*1.25 + 2*eErr + 1e-3, need}
		if stop <= 0 {
			tries = []float64{tries[0], 0.5, need}
		}
		for _, e := range tries {
			if e > ritz && e < eMax && e <= need && bp.eProvenBelow(bp.rf, e, eErr) {
				return e
			}
		}
		return eMax
	}
	// bound returns the quadratic bound from the band g of G with ||R||_F =
	// rn and an error of at most gErr, and its terms, and txLow, tr(W X
	// W^T) without the allowance for rounding (which only decides whether
	// a more accurate G may certify). The dual bound is taken with
	// V = R + diag(d) in place of R ([bandedProblem.diagCorrection]),
	// which it holds for with any d: with the d that minimises tr(W X W^T)
	// it is lower, and so mostly is lambda_max(E) (docs/solver.md, "A
	// diagonal correction of the dual point"). The bound with R itself,
	// with delta, is computed only where that d cannot be formed, or where
	// the dual bound does not apply (lambda_max(E) not proven below 1) and
	// tr(W X W^T) / 4 without its allowances would certify: with V it is
	// at most the bound with R but for lambda_max(E), and the bound with
	// delta is at least tr(W X W^T) / 4 for R, at least that for V. m2 is
	// +Inf where only the dual bound was computed.
	bound := func(g []float64, rn, gErr float64) (q, tx, m2, eMax, txLow float64) {
		bp.fillRF(g, nil)
		q, m2 = math.Inf(1), math.Inf(1)
		if d := bp.diagCorrection(x, bp.rf); d != nil {
			bp.fillRF(g, d)
			var eErr float64
			_, tx, eMax, eErr, txLow = bp.mr(x, math.Hypot(rn, math.Sqrt(linalg.Dot(d, d))), gErr, m1, mi, gersh)
			eMax = sharpen(tx, eMax, eErr)
			q = quad(tx, m2, gersh, lam, eMax, rn+gErr)
			if eMax < 1 || (stop > 0 && rel(txLow/4) > stop) {
				return q, tx, m2, eMax, txLow
			}
			bp.fillRF(g, nil)
		}
		m, txR, eR, eErrR, txLowR := bp.mr(x, rn, gErr, m1, mi, gersh)
		eR = sharpen(txR, eR, eErrR)
		if qR := quad(txR, m*m, gersh, lam, eR, rn+gErr); qR < q || math.IsInf(q, 1) {
			q, tx, m2, eMax, txLow = qR, txR, m*m, eR, txLowR
		}
		return q, tx, m2, eMax, txLow
	}
	q, tx, m2, eMax, txLow := bound(g, math.Sqrt(r2), gErr)
	// Where the float64 band's rounding is what keeps the bound above
	// stop (it would certify without its allowances, at e = 0), G's band
	// is evaluated again in double-word arithmetic ([bandedProblem.evalGDD],
	// some 25 iterations' time), whose error is smaller by many orders
	// ([bandedProblem.ddBandAllowance]). After a try that does not
	// certify, the next waits for tr(W X W^T) (without the allowances) to
	// halve, or for 200 iterations.
	try := stop > 0 && gErr > 0 && rel(q) > stop && rel(txLow/4) <= stop
	if try && bp.dd.next > 0 {
		try = txLow <= bp.dd.next || bp.gapCalls-bp.dd.at >= 200
	}
	if try {
		bp.dd.at = bp.gapCalls
		gd := make([]float64, len(g))
		if _, ok := bp.evalGDD(x, gd); ok {
			rd, errD := bp.ddBandAllowance(gd, gErr)
			qd, txd, m2d, ed, _ := bound(gd, rd, errD)
			if qd < q {
				q, tx, m2, eMax, r = qd, txd, m2d, ed, rd+errD
				bp.dd.used++
			}
			if rel(qd) > stop {
				bp.dd.next = txLow / 2
			}
		}
	}
	*last = lastQuad{tx: tx / (r * r), m2: m2 / (r * r), e: eMax / r, gersh: gersh, lam: lam, lin: lin, txl: txLow / r2}
	return math.Min(lin, rel(q))
}

// bandedRitzSteps is the number of Lanczos steps of [bandedProblem.eRitz]
// in the certificate.
const bandedRitzSteps = 30

// lastQuad is what [bandedProblem.gapOf] keeps of its last quadratic
// bound to predict the next: tx and m2 over r^2, gersh, lambda, the
// linear bound then (all 0 before the first), tr(W X W^T) without rounding
// allowances over the computed ||R||_F^2, and the calls since.
type lastQuad struct {
	tx, m2, e, gersh, lam, lin, txl float64
	since                           int
}

// fillRF lays out in bp.rf, by rows, the off-diagonal band of G from g
// (both triangles) with diag on the diagonal (zero where diag is nil):
// row k holds V[k][l] for l in [k-b+1, k+b-1] at l-k+b-1 (V is
// symmetric, so row l is also column l). It is the V = R + diag(d) of
// [bandedProblem.mr] and of the products built on it.
func (bp *bandedProblem) fillRF(g, diag []float64) {
	n, b := bp.n, bp.b
	wr := 2*b - 1
	if len(bp.rf) < n*wr {
		bp.rf = make([]float64, n*wr)
	}
	rf := bp.rf[:n*wr]
	forBandRows(n, float64(wr), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			row := rf[k*wr : k*wr+wr]
			clear(row)
			for l := max(0, k-b+1); l < k; l++ {
				row[l-k+b-1] = g[k*b+k-l]
			}
			if diag != nil {
				row[b-1] = diag[k]
			}
			for l := k + 1; l <= min(n-1, k+b-1); l++ {
				row[l-k+b-1] = g[l*b+l-k]
			}
		}
	})
}

// mr returns upper bounds on ||W||_F and on tr(W X W^T), W = M R with M
// = L^T X and R the off-diagonal band of G (both triangles), and on
// lambda_max(E), E = M R M^T = W M^T (the dual bound's, docs/solver.md
// "A dual bound without delta"), at the X of the last
// [bandedProblem.formM], which returned m1 and mi, and the R that
// [bandedProblem.fillRF] last laid out in bp.rf; rn is the computed
// ||R||_F, gErr bounds its error, and gersh is X's Gershgorin bound.
// Where fillRF put a diagonal d on R's (the dual bound's V = R + diag(d),
// [bandedProblem.diagCorrection]), R stands for V throughout, rn for
// ||V||_F, and gErr still bounds the error of its off-diagonal band (d is
// taken as it is stored); only the bounds on tr(W X W^T) and
// lambda_max(E) are then used.
//
// They are the quadratic bound's weights (docs/solver.md): with delta >=
// ||X* - X||_2, f(X) - f(X*) <= sup over Delta on the band of <R, Delta>
// - vec(Delta)^T K vec(Delta), K = (X + delta I)^{-1} (x) G, which is at
// most 1/4 vec(R)^T (K^{-1}) vec(R) (the inverse of a principal block is
// at most that block of the inverse), and K^{-1} = (X + delta I) (x)
// G^{-1} with G^{-1} = X S^{-1} X = M^T M banded: 1/4 (tr(W X W^T) +
// delta ||W||_F^2).
//
// Rounding (Higham 2002, section 3.5): the computed M is within
// gamma_{p+1} |L|^T |X| of L^T X entry-wise, whose 2-norm is at most
// ||L||_2 gersh; the product with the computed R is within gamma_{2w}
// |fl(M)| |R| (at most w = 2b + p - 1 terms per entry), whose
// 2-norm is at most sqrt(m1 mi) ||R||_F; R's own error adds
// (sqrt(m1 mi) + the first) gErr: together e >= ||W - fl(W)||_F. The sums
// of squares and of the quadratic forms are raised by gamma of their
// longest chain of additions (|X| <= gersh in the forms), and tr(W X
// W^T)^(1/2) = ||W X^{1/2}||_F by e sqrt(gersh).
func (bp *bandedProblem) mr(x linalg.SymBand, rn, gErr, m1, mi, gersh float64) (m, tx, eMax, eErr, txLow float64) {
	n, b, p := bp.n, bp.b, bp.p
	wm, wr, wa := 2*b+p-1, 2*b-1, 4*b+p-3
	rf := bp.rf[:n*wr]
	xd := x.Data
	// Each chunk's largest E row sum (a maximum, not a sum).
	maxes := make([]float64, (n+bandRowChunk-1)/bandRowChunk)
	sums := sumBandRows(n, 2, float64(16*wm*b), func(lo, hi int, out []float64) {
		acc, rev := make([]float64, wa), make([]float64, wa)
		s, t := 0.0, 0.0
		// eRow is the largest Gershgorin sum of a row of E = W M^T over the
		// chunk's rows.
		eRow := math.Inf(-1)
		for i := lo; i < hi; i++ {
			// W[i][l] = sum_k M[i][k] R[l][k] at acc[a], l = i-2b+2+a,
			// over the columns k of both rows; M's row i holds the
			// columns i-b+1 .. i+b+p-1 and R's row l l-b+1 .. l+b-1.
			l0 := i - 2*b + 2
			bp.wRow(i, rf, acc)
			s += linalg.Dot(acc, acc)
			// W[i] X W[i]^T = 2 sum_l W[i][l] sum_{c <= l} X[l][c] W[i][c]
			// - sum_l X[l][l] W[i][l]^2, X[l][l-d] = xd[l*b+d]: with rev
			// the reversed acc, the inner sum is a dot product of xd's
			// row l and rev from rev[wa-1-a] on.
			for a, v := range acc {
				rev[wa-1-a] = v
			}
			for a, v := range acc {
				l := l0 + a
				if v == 0 || l < 0 || l >= n {
					continue
				}
				d := min(b, a+1, l+1)
				t += v * (2*linalg.Dot(xd[l*b:l*b+d], rev[wa-1-a:]) - v*xd[l*b])
			}
			// Row i of E = M R M^T = W M^T: E[i][j] = sum_l W[i][l]
			// M[j][l] over the columns l of both rows, j within 3b + p - 3
			// of i; its Gershgorin sum E[i][i] + sum_{j != i} |E[i][j]|.
			rs, ra := 0.0, 0.0
			for j := max(0, i-3*b-p+3); j <= min(n-1, i+3*b+p-3); j++ {
				v := bp.eEntry(i, j, acc)
				if j == i {
					rs += v
				} else {
					rs += math.Abs(v)
				}
				ra += math.Abs(v)
			}
			// The sum's own rounding is at most gamma of its length times
			// the sum of the magnitudes.
			eRow = math.Max(eRow, rs+gammaU(6*b+2*p)*ra)
		}
		out[0], out[1] = s, t
		maxes[lo/bandRowChunk] = eRow
	})
	eTop := math.Inf(-1)
	for _, v := range maxes {
		eTop = math.Max(eTop, v)
	}
	gamma := gammaU
	mNorm := math.Sqrt(m1 * mi)
	formErr := gamma(p+1) * bp.lNorm() * gersh
	e := (gamma(2*wm)*mNorm+formErr)*rn + (mNorm+formErr)*gErr
	s := sums[0] * (1 + gamma(n+wa))
	m = math.Sqrt(s) + e
	tx = math.Sqrt(math.Max(0, sums[1])+gamma(n+2*b*wa)*gersh*s) + e*math.Sqrt(gersh)
	// E's bound (Gershgorin, with Weyl's inequality for the error): with
	// R^ the computed band of G (R^ symmetric, ||R - R^||_F <= gErr),
	// lambda_max(E) <= lambda_max(M R^ M^T) + ||M||_2^2 gErr, and the
	// computed rows of M R^ M^T are within kappa Q |R^| Q^T entry-wise,
	// Q = |L|^T |X| (|fl(M) - M| <= gamma_{p+1} Q, |M| <= Q, the two
	// products' errors as above), whose row sums are
	// |L|^T |X| |R^| |X| |L| 1: four band products with a vector.
	g1, g2, g3 := gamma(p+1), gamma(2*wm), gamma(wa)
	k1 := g2*(1+g1) + g1
	kappa := g3*(1+k1)*(1+g1) + k1*(1+g1) + g1
	mN := mNorm*(1+1e-12) + formErr
	eErr = (kappa*bp.absRowSums(x, rf)*(1+gamma(4*(2*b+p+1))) + mN*mN*gErr) * (1 + gamma(2))
	eMax = eTop + eErr
	eMax += math.Abs(eMax) * gamma(2)
	return m, tx * tx, eMax, eErr, math.Max(0, sums[1])
}

// wRow writes row i of W = M R into acc (length 4b + p - 3): W[i][l] at
// acc[l - i + 2b - 2], from the M of the last [bandedProblem.formM] and R
// by rows in rf ([bandedProblem.mr]'s layout).
func (bp *bandedProblem) wRow(i int, rf, acc []float64) {
	n, b, p := bp.n, bp.b, bp.p
	wm, wr := 2*b+p-1, 2*b-1
	// W[i][l] = sum_k M[i][k] R[l][k] over the columns k of both rows;
	// M's row i holds the columns i-b+1 .. i+b+p-1 and R's row l
	// l-b+1 .. l+b-1.
	mrow := bp.m[i*wm : i*wm+wm]
	l0 := i - 2*b + 2
	for a := range acc {
		l := l0 + a
		acc[a] = 0
		if l < 0 || l >= n {
			continue
		}
		k0, k1 := max(0, i-b+1, l-b+1), min(n-1, i+b+p-1, l+b-1)
		if k0 <= k1 {
			acc[a] = linalg.Dot(mrow[k0-i+b-1:k1-i+b], rf[l*wr+k0-l+b-1:])
		}
	}
}

// eEntry returns E[i][j] = sum_l W[i][l] M[j][l] (E = M R M^T = W M^T)
// from row i of W in acc ([bandedProblem.wRow]); it is zero unless
// |i - j| <= 3b + p - 3.
func (bp *bandedProblem) eEntry(i, j int, acc []float64) float64 {
	n, b, p := bp.n, bp.b, bp.p
	wm, wa := 2*b+p-1, 4*b+p-3
	l0 := i - 2*b + 2
	la, lb := max(l0, j-b+1, 0), min(l0+wa-1, j+b+p-1, n-1)
	if la > lb {
		return 0
	}
	return linalg.Dot(acc[la-l0:lb-l0+1], bp.m[j*wm+la-j+b-1:])
}

// eProvenBelow reports whether lambda_max(M R M^T) <= e is proven, R the
// off-diagonal band of G (with the diagonal correction where
// [bandedProblem.fillRF] put one), from the M of the last
// [bandedProblem.formM] and R in rf, where eErr bounds the 2-norm of the
// error of the computed entries ([bandedProblem.mr]): the computed band F
// (the lower triangle, so symmetric) has lambda_max(F) <= e - eErr when
// the LDL^T factorization of -F proves lambda_min(-F) >= eErr - e
// ([linalg.SymBand.ProvenAbove]), and then lambda_max(M R M^T) <= e by
// Weyl's inequality. It costs a pass like mr's and a band LDL^T with
// 3b + p - 3 off-diagonals and its residual, and O(R b) memory.
func (bp *bandedProblem) eProvenBelow(rf []float64, e, eErr float64) bool {
	if !(e-eErr > 0) {
		return false
	}
	n, b, p := bp.n, bp.b, bp.p
	k := min(n-1, 3*b+p-3)
	// The matrix factored is M = fl(c I - F), c = e - eErr' + t: if
	// lambda_min(M) >= t, lambda_max(F) <= c - t + u max |M_ii| (the
	// rounding of the diagonal), at most e - eErr when eErr' - eErr is
	// 4u (max |F_ii| + e + 1). t only makes room for ProvenAbove's
	// relative margin.
	neg := linalg.NewSymBand(n, k)
	diag := make([]float64, n)
	forBandRows(n, float64(10*b*b), func(lo, hi int) {
		acc := make([]float64, 4*b+p-3)
		for i := lo; i < hi; i++ {
			bp.wRow(i, rf, acc)
			for d := 0; d <= k && d <= i; d++ {
				neg.Data[i*(k+1)+d] = -bp.eEntry(i, i-d, acc)
			}
			diag[i] = -neg.Data[i*(k+1)]
		}
	})
	top := 0.0
	for _, v := range diag {
		top = math.Max(top, math.Abs(v))
	}
	room := e - eErr - 4*0x1p-53*(top+e+1)
	if !(room > 0) {
		return false
	}
	t := room / 100
	c := room + t
	for i := range n {
		neg.Data[i*(k+1)] += c
	}
	return neg.ProvenAbove(t, make([]float64, n*(k+1)+n))
}

// gammaU returns gamma_k = k u / (1 - k u), u = 2^-53, the bound on the
// relative rounding error of k floating-point operations in a chain
// (Higham 2002, section 3.1).
func gammaU(k int) float64 { u := 0x1p-53; return float64(k) * u / (1 - float64(k)*u) }

// absRowSums returns the largest entry of |L|^T |X| |R| |X| |L| 1 (the
// row sums of that product of band matrices), L = A^{-1}, R the
// off-diagonal band of G in rf (rows as [bandedProblem.mr] lays them out),
// each product formed as a product with a vector in O(R b).
func (bp *bandedProblem) absRowSums(x linalg.SymBand, rf []float64) float64 {
	n, b, p := bp.n, bp.b, bp.p
	wl := p + 1
	u, v := make([]float64, n), make([]float64, n)
	// |L| 1: row a of L holds columns a-p .. a.
	for a := 0; a < n; a++ {
		s := 0.0
		for t := 0; t < wl && t <= a; t++ {
			s += math.Abs(bp.lb[a*wl+t])
		}
		u[a] = s
	}
	absX := func(dst, src []float64) {
		forBandRows(n, float64(2*b), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				s := src[i] // unit diagonal
				for d := 1; d < b && d <= i; d++ {
					s += math.Abs(x.Data[i*b+d]) * src[i-d]
				}
				for d := 1; d < b && i+d < n; d++ {
					s += math.Abs(x.Data[(i+d)*b+d]) * src[i+d]
				}
				dst[i] = s
			}
		})
	}
	absX(v, u)
	bp.rRows(u, v, rf, false)
	absX(v, u)
	// |L|^T v: column i of L holds rows i .. i+p.
	top := 0.0
	for i := 0; i < n; i++ {
		s := 0.0
		for a := i; a <= min(n-1, i+p); a++ {
			s += math.Abs(bp.lb[a*wl+a-i]) * v[a]
		}
		top = math.Max(top, s)
	}
	return top
}

// rRows writes into dst the product of |R| (R itself with signed) and v,
// R by rows in rf as [bandedProblem.mr] lays it out.
func (bp *bandedProblem) rRows(dst, v, rf []float64, signed bool) {
	n, b := bp.n, bp.b
	wr := 2*b - 1
	forBandRows(n, float64(wr), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			s := 0.0
			for l := max(0, k-b+1); l <= min(n-1, k+b-1); l++ {
				r := rf[k*wr+l-k+b-1]
				if !signed {
					r = math.Abs(r)
				}
				s += r * v[l]
			}
			dst[k] = s
		}
	})
}

// lNorm returns sqrt(||L||_1 ||L||_inf) >= ||L||_2, L = A^{-1}, raised by
// a relative 1e-12 for rounding.
func (bp *bandedProblem) lNorm() float64 {
	n, wl := bp.n, bp.p+1
	rows, cols := make([]float64, n), make([]float64, n)
	for a := 0; a < n; a++ {
		for t := 0; t < wl && t <= a; t++ {
			v := math.Abs(bp.lb[a*wl+t])
			rows[a] += v
			cols[a-t] += v
		}
	}
	r1, ri := 0.0, 0.0
	for a := range n {
		ri, r1 = math.Max(ri, rows[a]), math.Max(r1, cols[a])
	}
	return math.Sqrt(r1*ri) * (1 + 1e-12)
}

// gershgorin returns Gershgorin's bound on lambda_max(X), the largest row
// sum of |X|, raised by a relative 1e-12 for rounding.
func (bp *bandedProblem) gershgorin(x linalg.SymBand) float64 {
	n, b := bp.n, bp.b
	sums := bp.pu[:n]
	forBandRows(n, float64(2*b), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := 1.0
			for d := 1; d < b && d <= i; d++ {
				s += math.Abs(x.Data[i*b+d])
			}
			for d := 1; d < b && i+d < n; d++ {
				s += math.Abs(x.Data[(i+d)*b+d])
			}
			sums[i] = s
		}
	})
	top := 0.0
	for _, v := range sums {
		top = math.Max(top, v)
	}
	return top * (1 + 1e-12)
}

// formM writes the nonzero entries of M = L^T X into bp.m (row i holds
// columns i-b+1 .. i+p+b-1) and returns ||M||_1 and ||M||_inf.
// M^T M = X L L^T X = X S^{-1} X = G^{-1}, so 1 / (||M||_1 ||M||_inf) <=
// 1 / ||M||_2^2 = lambda_min(G).
func (bp *bandedProblem) formM(x linalg.SymBand) (m1, mi float64) {
	n, b, p := bp.n, bp.b, bp.p
	wl, wm := p+1, 2*b+p-1
	cols, rows := bp.colSums, bp.pw
	xd := x.Data
	forBandRows(n, float64((p+2)*wm), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := bp.m[i*wm : i*wm+wm]
			clear(row)
			for a := i; a <= min(n-1, i+p); a++ {
				lai := bp.lb[a*wl+a-i]
				// X[a][j] for j in [a-b+1, a+b-1]; column j is row[j-(i-b+1)].
				for j := max(0, a-b+1); j <= a; j++ {
					row[j-i+b-1] += lai * xd[a*b+a-j]
				}
				for j := a + 1; j <= min(n-1, a+b-1); j++ {
					row[j-i+b-1] += lai * xd[j*b+j-a]
				}
			}
			rs := 0.0
			for _, v := range row {
				rs += math.Abs(v)
			}
			rows[i] = rs
		}
	})
	bp.mColumns(cols, nil, false)
	for i := range n {
		mi = math.Max(mi, rows[i])
		m1 = math.Max(m1, cols[i])
	}
	return m1, mi
}

// mColumns writes into dst the sums of the columns of |M|, M in bp.m
// (see [bandedProblem.formM]), each weighted by u (1 where u is nil):
// dst[j] = sum_i |M|[i][j] u[i], the rows in increasing order; with
// signed, M^T u (u not nil).
func (bp *bandedProblem) mColumns(dst, u []float64, signed bool) {
	n, b, p := bp.n, bp.b, bp.p
	wm := 2*b + p - 1
	forBandRows(n, float64(2*wm), func(lo, hi int) {
		// Row i holds the columns [i-b+1, i+b+p-1] at t = j - i + b - 1;
		// the rows that reach [lo, hi) are added in increasing order, each
		// over a contiguous run of its entries.
		out := dst[lo:hi]
		clear(out)
		for i := max(0, lo-b-p+1); i <= min(n-1, hi+b-2); i++ {
			j0, j1 := max(lo, i-b+1), min(hi, i+b+p)
			if j0 >= j1 {
				continue
			}
			row := bp.m[i*wm+j0-i+b-1 : i*wm+j1-i+b-1]
			o := out[j0-lo : j1-lo]
			switch {
			case u == nil:
				for t, mv := range row {
					o[t] += math.Abs(mv)
				}
			case signed:
				ui := u[i]
				for t, mv := range row {
					o[t] += mv * ui
				}
			default:
				ui := u[i]
				for t, mv := range row {
					o[t] += math.Abs(mv) * ui
				}
			}
		}
	})
}

// mRows writes into dst the product of |M| (M itself with signed) and v,
// M in bp.m (see [bandedProblem.formM]).
func (bp *bandedProblem) mRows(dst, v []float64, signed bool) {
	n, b, p := bp.n, bp.b, bp.p
	wm := 2*b + p - 1
	forBandRows(n, float64(wm), func(r0, r1 int) {
		for i := r0; i < r1; i++ {
			row := bp.m[i*wm : i*wm+wm]
			lo := i - b + 1
			s := 0.0
			for t, mv := range row {
				if j := lo + t; j >= 0 && j < n {
					if !signed {
						mv = math.Abs(mv)
					}
					s += mv * v[j]
				}
			}
			dst[i] = s
		}
	})
}

// refineLambda returns a sharper lower bound on lambda_min(G) from the M
// that the last [bandedProblem.formM] left in bp.m: ||M||_2^2 <=
// rho(|M|^T |M|) <= max_j (|M|^T |M| v)_j / v_j for every positive v (the
// Collatz-Wielandt bound for a nonnegative matrix), with v from 30 steps
// of the power method (floored at 1e-300 relative to its largest entry) on
// the first call and 3 more from the last call's v after that (X changes
// little between calls; any positive v gives a bound), raised by a
// relative 1e-12 for rounding.
func (bp *bandedProblem) refineLambda() float64 {
	n := bp.n
	v, u, w := bp.pv[:n], bp.pu[:n], bp.pw[:n]
	steps := 3
	if !bp.pvSet {
		for j := range v {
			v[j] = 1
		}
		steps, bp.pvSet = 30, true
	}
	apply := func(v, w []float64) {
		// w = |M|^T (|M| v), through u = |M| v.
		bp.mRows(u, v, false)
		bp.mColumns(w, u, false)
	}
	for it := 0; it < steps; it++ {
		apply(v, w)
		top := 0.0
		for _, x := range w {
			top = math.Max(top, x)
		}
		if !(top > 0) {
			return 0
		}
		for j := range v {
			v[j] = math.Max(w[j]/top, 1e-300)
		}
	}
	apply(v, w)
	rho := 0.0
	for j := range v {
		rho = math.Max(rho, w[j]/v[j])
	}
	return 1 / (rho * (1 + 1e-12))
}

// bandedPrecondWidth is the half-bandwidth, in the offset index, of the X
// phase's preconditioner: for each row i, f's Hessian in the row's
// off-diagonal entries X_i,i-1, ..., X_i,i-m (m = min(b-1, i)) is kept
// within this many places of its diagonal, and the initial inverse Hessian
// of L-BFGS is the inverse of that band matrix, applied through its
// Cholesky factor. At R = 10,000 with 64 bands it took 445 iterations
// and 466 evaluations against 488 and 509 for the Hessian's diagonal
// blocks over groups of four offsets, which it replaced; the whole row
// (O(R b^3) to form) took 423, a width of 7 about 438 (docs/solver.md,
// "Row blocks").
const bandedPrecondWidth = 3

// bandedPrecondRefresh is the number of steps between refreshes of the X
// phase's preconditioner. With the blocks of four offsets it replaced,
// refreshing every 20 steps instead of every 4 took about the same number
// of iterations (263 and 264 at R = 4000, 488 and 481 at R = 10,000, with
// 64 bands).
const bandedPrecondRefresh = 20

// precondStride is the number of positions u held for each row of the
// preconditioner ([bandedProblem.precondition]): the row's entries u < m
// and bandedPrecondWidth zero positions after them, which the backward
// solve reads.
func (bp *bandedProblem) precondStride() int {
	return bp.b - 1 + bandedPrecondWidth
}

// precondRow returns the number of entries the preconditioner holds per
// row ([bandedProblem.precondition]).
func (bp *bandedProblem) precondRow() int {
	return (bandedPrecondWidth + 1) * bp.precondStride()
}

// precondLen returns the length of the preconditioner's storage
// ([bandedProblem.precondition]): whole groups of four rows.
func (bp *bandedProblem) precondLen() int {
	return (bp.n + 3) / 4 * 4 * bp.precondRow()
}

// precondIndex returns where the preconditioner ([bandedProblem.precondition])
// holds coefficient t of position u of row i: 1 / L_uu for t = 0, L_u,u-t
// for 0 < t <= bandedPrecondWidth. Rows are stored in groups of four
// (rows 4q to 4q+3), interleaved, so that [bandSolve4] reads the four
// rows' coefficients of one position from one contiguous run.
func (bp *bandedProblem) precondIndex(i, u, t int) int {
	const w1 = bandedPrecondWidth + 1
	return i/4*4*bp.precondRow() + (u*w1+t)*4 + i%4
}

// precondition writes into h (length [bandedProblem.precondLen]) the
// Cholesky factor of each row's band of f's Hessian in the variables X_ij
// (i > j). For row i, u and v index its entries j = i-1-u and k = i-1-v
// (0 <= u, v < m, m = min(b-1, i)), and the band is
//
//	T_uv = d^2 f / dX_ij dX_ik = 2 (G_ii H_jk + H_ii G_jk + G_ij H_ik + G_ik H_ij)
//
// for |u - v| <= bandedPrecondWidth, 0 beyond, with H = X^{-1}, whose band
// the last call of eval (at x) left in bp.hx (f = tr(S X^{-1}) has second
// derivative 2 tr(G E H E') along the symmetric directions E and E').
// T = L L^T with L lower triangular within the same band, held as
// [bandedProblem.precondIndex] says (0 for u - t < 0 and for u >= m). A
// band whose factorization fails (a pivot not positive) falls back to the
// inverse of its diagonal (0 where that is not positive). Any positive
// definite T gives a valid initial matrix.
func (bp *bandedProblem) precondition(x linalg.SymBand, g, h []float64) {
	const w = bandedPrecondWidth
	n, b := bp.n, bp.b
	if b == 1 {
		return
	}
	st := bp.precondStride()
	hx := bp.hx
	forBandRows(n, float64(4*(w+1)*(w+2)*b), func(lo, hi int) {
		// The row's coefficients, l[t][u], t = 0 holding 1 / L_uu.
		buf := make([]float64, (w+1)*st)
		var l [w + 1][]float64
		for t := range l {
			l[t] = buf[t*st : t*st+st]
		}
		for i := lo; i < hi; i++ {
			m := min(b-1, i)
			clear(buf)
			dinv := l[0][:m]
			gii, hii := g[i*b], hx[i*b]
			gr, hr := g[i*b+1:i*b+1+m], hx[i*b+1:i*b+1+m]
			ok := true
			for u := 0; u < m && ok; u++ {
				for v := max(0, u-w); v <= u; v++ {
					e := u - v
					r := (i-1-v)*b + e
					a := 2 * (gii*hx[r] + hii*g[r] + gr[u]*hr[v] + gr[v]*hr[u])
					for c := max(0, u-w); c < v; c++ {
						a -= l[u-c][u] * l[v-c][v]
					}
					if e > 0 {
						l[e][u] = a * dinv[v]
						continue
					}
					if !(a > 0) {
						ok = false
						break
					}
					dinv[u] = 1 / math.Sqrt(a)
				}
			}
			if !ok {
				clear(buf)
				for u := 0; u < m; u++ {
					r := (i - 1 - u) * b
					if d := 2 * (gii*hx[r] + hii*g[r] + 2*gr[u]*hr[u]); d > 0 {
						dinv[u] = 1 / math.Sqrt(d)
					}
				}
			}
			for u := 0; u < st; u++ {
				for t := range l {
					h[bp.precondIndex(i, u, t)] = l[t][u]
				}
			}
		}
	})
}

// applyPrecondition solves T y = d for each row's off-diagonal band
// entries d of dir with the factors h from [bandedProblem.precondition]
// (forwards with L, backwards with L^T; a 1 / L_uu of 0 gives 0) and sets
// the diagonal entries and those beyond the matrix (j < 0) to 0. A group
// of four rows with b-1 entries each is solved together ([bandSolve4]),
// other rows alone ([bandSolveRow]), by the same operations.
func (bp *bandedProblem) applyPrecondition(h, dir []float64) {
	// The solves below are written out for this width.
	var _ = [1]int{}[bandedPrecondWidth-3]
	n, b := bp.n, bp.b
	grp := 4 * bp.precondRow()
	// Chunks of bandRowChunk rows hold whole groups of four.
	var _ = [1]int{}[bandRowChunk%4]
	forBandRows(n, float64(8*(bandedPrecondWidth+1)*b), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			m := min(b-1, i)
			dir[i*b] = 0
			clear(dir[i*b+1+m : i*b+b])
		}
		if b == 1 {
			return
		}
		for i0 := lo; i0 < hi; i0 += 4 {
			hg := h[i0/4*grp : i0/4*grp+grp]
			if i0 >= b-1 && i0+4 <= hi {
				m := b - 1
				bandSolve4(hg, dir[i0*b+1:i0*b+1+m], dir[(i0+1)*b+1:(i0+1)*b+1+m],
					dir[(i0+2)*b+1:(i0+2)*b+1+m], dir[(i0+3)*b+1:(i0+3)*b+1+m])
				continue
			}
			for i := i0; i < min(i0+4, hi); i++ {
				m := min(b-1, i)
				bandSolveRow(hg, dir[i*b+1:i*b+1+m], i%4)
			}
		}
	})
}

// bandSolveRow overwrites d with T^{-1} d for the row in lane r of the
// group of four rows whose factors hg holds ([bandedProblem.precondIndex]).
func bandSolveRow(hg, d []float64, r int) {
	const w1 = bandedPrecondWidth + 1
	at := func(u, t int) float64 { return hg[(u*w1+t)*4+r] }
	var y1, y2, y3 float64
	for u := range d {
		y := (d[u] - at(u, 1)*y1 - at(u, 2)*y2 - at(u, 3)*y3) * at(u, 0)
		d[u], y1, y2, y3 = y, y, y1, y2
	}
	// L^T: entry (u, u+t) is L_u+t,u, zero from u+t >= m on.
	y1, y2, y3 = 0, 0, 0
	for u := len(d) - 1; u >= 0; u-- {
		y := (d[u] - at(u+1, 1)*y1 - at(u+2, 2)*y2 - at(u+3, 3)*y3) * at(u, 0)
		d[u], y1, y2, y3 = y, y, y1, y2
	}
}

// bandSolve4 is [bandSolveRow] for the four rows of a group at once, d0
// to d3 of equal length, so that their chains of dependent operations
// overlap; each row's operations are those of bandSolveRow.
func bandSolve4(hg, d0, d1, d2, d3 []float64) {
	const w1 = bandedPrecondWidth + 1
	const s = 4 * w1
	m := len(d0)
	d1, d2, d3 = d1[:m], d2[:m], d3[:m]
	var a1, a2, a3, b1, b2, b3, c1, c2, c3, e1, e2, e3 float64
	for u := 0; u < m; u++ {
		c := (*[s]float64)(hg[u*s : u*s+s])
		ya := (d0[u] - c[4]*a1 - c[8]*a2 - c[12]*a3) * c[0]
		yb := (d1[u] - c[5]*b1 - c[9]*b2 - c[13]*b3) * c[1]
		yc := (d2[u] - c[6]*c1 - c[10]*c2 - c[14]*c3) * c[2]
		ye := (d3[u] - c[7]*e1 - c[11]*e2 - c[15]*e3) * c[3]
		d0[u], a1, a2, a3 = ya, ya, a1, a2
		d1[u], b1, b2, b3 = yb, yb, b1, b2
		d2[u], c1, c2, c3 = yc, yc, c1, c2
		d3[u], e1, e2, e3 = ye, ye, e1, e2
	}
	a1, a2, a3, b1, b2, b3, c1, c2, c3, e1, e2, e3 = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
	for u := m - 1; u >= 0; u-- {
		c := (*[s]float64)(hg[u*s : u*s+s])
		p := (*[4 * s]float64)(hg[u*s : u*s+4*s])
		// L_u+t,u is coefficient t of position u+t: p[t*s + 4t + r].
		ya := (d0[u] - p[s+4]*a1 - p[2*s+8]*a2 - p[3*s+12]*a3) * c[0]
		yb := (d1[u] - p[s+5]*b1 - p[2*s+9]*b2 - p[3*s+13]*b3) * c[1]
		yc := (d2[u] - p[s+6]*c1 - p[2*s+10]*c2 - p[3*s+14]*c3) * c[2]
		ye := (d3[u] - p[s+7]*e1 - p[2*s+11]*e2 - p[3*s+15]*e3) * c[3]
		d0[u], a1, a2, a3 = ya, ya, a1, a2
		d1[u], b1, b2, b3 = yb, yb, b1, b2
		d2[u], c1, c2, c3 = yc, yc, c1, c2
		d3[u], e1, e2, e3 = ye, ye, e1, e2
	}
}

// bandedSolution is the result of [bandedProblem.solve].
type bandedSolution struct {
	x      linalg.SymBand
	f, gap float64
	// lower is the best certified lower bound on the optimum so far, with
	// lowerErr the rounding allowance for f it was certified with.
	lower, lowerErr float64
	iter, evals     int
	// levels is the number of coarse levels that [bandedProblem.run]
	// solved first.
	levels int
}

// bandedSwitchGap is the certified gap at which [bandedProblem.solve]
// leaves the Cholesky parametrisation for the entries of X.
const bandedSwitchGap = 1e-1

// bandedMemory is the number of L-BFGS pairs [bandedProblem.descend]
// keeps. The recursion reads every pair twice per direction and is bound
// by memory traffic (a quarter of a solve's CPU time at R = 10^4 with 64
// bands and 12 pairs), while the iteration count hardly depends on the
// memory between 8 and 16 pairs with the band preconditioner (at
// R = 10^4: 443, 439, 445 and 421 iterations for 8, 10, 12 and 16; 482
// for 6): 8 pairs do the same iterations with two thirds of the
// recursion's traffic (docs/solver.md, "L-BFGS memory").
const bandedMemory = 8

// bandedStallIters is the number of iterations without halving the gap
// after which [bandedProblem.descend] reports a stall.
const bandedStallIters = 500

// bandedStallCause explains a stall of the banded solver.
// The certified gap stops halving for one of two reasons: the steps change
// f by less than its rounding (a tolerance near the evaluation's rounding,
// which grows about as R^2), or, at large R, the certificate is far looser
// than the iterate (at R = 10^5 with 64 bands the iterate's true gap was
// below 1e-6 after about 780 iterations, and the certified one stalled at
// 2.87e-6 after 2787: docs/solver.md, "What limits R = 10^5").
const bandedStallCause = "the certified gap stopped halving: the steps change f by less than its rounding, which grows about as R^2, or, at large R, the certificate is looser than the iterate (docs/solver.md, optimal banded factors, Limits)"

// bandedPoint is one iterate of a phase of [bandedProblem.solve]: the
// variables v (entries of C or of X), f and its gradient in v, X and the
// band of G (layout of X's Data).
type bandedPoint struct {
	v, grad, g []float64
	x          linalg.SymBand
	f          float64
}

// bandedPhase is one parametrisation of the banded problem.
type bandedPhase interface {
	// eval sets p.x, p.f, p.g and p.grad from p.v and reports whether X
	// is positive definite. The last call must be for the point that is
	// then used as the current one (bp.hx refers to it).
	eval(p *bandedPoint) bool
	// scale applies the initial inverse Hessian of L-BFGS at cur to dir.
	scale(cur *bandedPoint, mem *optim.Memory32, dir []float64)
}

// xPhase has the off-diagonal band entries of X as variables (v is
// X's Data; the diagonal entries stay 1 and have zero gradient), with the
// inverse of the Hessian's diagonal blocks ([bandedProblem.precondition])
// as the initial inverse Hessian.
type xPhase struct {
	bp    *bandedProblem
	h     []float64
	calls int
}

func (ph *xPhase) eval(p *bandedPoint) bool {
	p.x.Data = p.v
	f, ok := ph.bp.eval(p.x, p.grad, p.g)
	p.f = f
	return ok
}

func (ph *xPhase) scale(cur *bandedPoint, _ *optim.Memory32, dir []float64) {
	// Any positive definite matrix is a valid initial matrix; the
	// Hessian's blocks change slowly, so they are refreshed every
	// bandedPrecondRefresh steps.
	if ph.calls%bandedPrecondRefresh == 0 {
		ph.bp.precondition(cur.x, cur.g, ph.h)
	}
	ph.calls++
	ph.bp.applyPrecondition(ph.h, dir)
}

// cPhase has the entries of a banded lower-triangular C as variables
// (McKenna 2024's parametrisation): X = N^{-1} C^T C N^{-1} with N the
// diagonal of C's column norms, positive definite whenever C is
// nonsingular, so that a step cannot leave the cone; the initial inverse
// Hessian is the usual scalar s^T y / y^T y.
type cPhase struct {
	bp       *bandedProblem
	nrm, gx  []float64
	gradX    []float64
	firstLen float64
}

func (ph *cPhase) eval(p *bandedPoint) bool {
	bp := ph.bp
	if !bandedXFromC(bp.n, bp.b, p.v, p.x, ph.nrm) {
		return false
	}
	f, ok := bp.eval(p.x, ph.gradX, p.g)
	if !ok {
		return false
	}
	p.f = f
	bandedGradC(bp.n, bp.b, p.v, p.x, p.g, ph.nrm, ph.gx, p.grad)
	return true
}

func (ph *cPhase) scale(cur *bandedPoint, mem *optim.Memory32, dir []float64) {
	gamma := ph.firstLen / math.Sqrt(dot(cur.grad, cur.grad))
	if mem.Len() > 0 {
		gamma = mem.Gamma()
	}
	par.Range(len(dir), linalg.VectorChunk, 2, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dir[i] *= gamma
		}
	})
}

// bandedXFromC writes X = N^{-1} C^T C N^{-1} into x for the banded
// lower-triangular C stored by columns, c[j*b+d] = C[j+d][j], and the
// column norms into nrm. It reports false for a zero column.
func bandedXFromC(n, b int, c []float64, x linalg.SymBand, nrm []float64) bool {
	forBandRows(n, float64(b), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			col := c[j*b : j*b+min(b, n-j)]
			nrm[j] = math.Sqrt(dot(col, col))
		}
	})
	for j := 0; j < n; j++ {
		if !(nrm[j] > 0) || math.IsInf(nrm[j], 0) {
			return false
		}
	}
	// X[i][i-e] = sum_{r >= i} C[r][i] C[r][i-e] = sum_d C[i+d][i] C[i+d][i-e].
	forBandRows(n, float64(b*b/2+b), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ci := c[i*b : i*b+min(b, n-i)]
			for e := 0; e < b && e <= i; e++ {
				j := i - e
				cj := c[j*b+e : j*b+min(b, n-j)]
				x.Data[i*b+e] = dot(ci[:len(cj)], cj) / (nrm[i] * nrm[j])
			}
		}
	})
	return true
}

// bandedGradC writes the gradient of f in the entries of C (layout of c)
// into gc, from the band of G at X = N^{-1} C^T C N^{-1}: with C~ = C N^{-1}
// and df = -tr(G dX),
//
//	df/dC[r][j] = (2 / N_j) ((G X)_jj C~[r][j] - (C~ G)[r][j]),
//
// which needs G only within the band. gx is scratch of length n.
func bandedGradC(n, b int, c []float64, x linalg.SymBand, g, nrm, gx, gc []float64) {
	// (G X)_jj, both sides of the diagonal, in one pass over the band in
	// row order: G[i][i-e] X[i][i-e] belongs to row i and, for e > 0, to
	// column i-e (O(n b), in a fixed order).
	clear(gx)
	for i := 0; i < n; i++ {
		gr, xr := g[i*b:i*b+min(b, i+1)], x.Data[i*b:i*b+min(b, i+1)]
		xr = xr[:len(gr)]
		gx[i] += gr[0] * xr[0]
		for e := 1; e < len(gr); e++ {
			v := gr[e] * xr[e]
			gx[i] += v
			gx[i-e] += v
		}
	}
	// Column j of C~ G within C's band, (C~ G)[j+d][j] for d < b, as a sum
	// over i of G[i][j] times column i of C~ (contiguous in c):
	// C~[j+d][i] = c[i*b + j+d-i] / N_i for 0 <= j+d-i < b.
	forBandRows(n, float64(2*b*b), func(lo, hi int) {
		s := make([]float64, b)
		for j := lo; j < hi; j++ {
			dn := min(b, n-j)
			clear(s)
			for i := max(0, j-b+1); i < min(n, j+b); i++ {
				var gij float64 // G[i][j], stored in row max(i, j)
				if i <= j {
					gij = g[j*b+j-i]
				} else {
					gij = g[i*b+i-j]
				}
				dlo, dhi := max(i-j, 0), min(i-j+b-1, dn-1)
				if dlo > dhi {
					continue
				}
				floats.AddScaled(s[dlo:dhi+1], gij/nrm[i], c[i*b+j-i+dlo:i*b+j-i+dhi+1])
			}
			for d := 0; d < dn; d++ {
				gc[j*b+d] = 2 / nrm[j] * (gx[j]*c[j*b+d]/nrm[j] - s[d])
			}
		}
	})
}

// bandedFactors returns B = A C^{-1} and C for X banded within b: C = P
// chol(P X P)^T P by [bandedCholesky] (O(R b^2), banded, exactly zero
// outside the band), the rows of C^{-1} by back substitution with C's
// columns (row i solves z C = e_i: z_p = -sum_{q in (p, p+b)} z_q C_qp /
// C_pp, O(R b) per row, O(R^2 b) in all, the rows split between the
// available cores), then B by the workload as for the dense path.
func bandedFactors(ctx context.Context, w *Workload, x linalg.SymBand) (*mat.Dense, *mat.Dense, error) {
	n, b := x.N, x.K+1
	c, ok := bandedCholesky(x)
	if !ok {
		return nil, nil, fmt.Errorf("factorize: Cholesky factorization of X failed (R = %d): the matrix is not numerically positive definite", n)
	}
	cData := make([]float64, n*n)
	for j := 0; j < n; j++ {
		for d := 0; d < b && j+d < n; d++ {
			cData[(j+d)*n+j] = c[j*b+d]
		}
	}
	inv := make([]float64, n*n)
	rows := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if i%256 == 0 && ctx.Err() != nil {
				return
			}
			z := inv[i*n : i*n+i+1]
			z[i] = 1 / c[i*b]
			for p := i - 1; p >= 0; p-- {
				m := min(b-1, i-p)
				z[p] = -dot(c[p*b+1:p*b+1+m], z[p+1:p+1+m]) / c[p*b]
			}
		}
	}
	// Row i costs about i b: split the rows at n / sqrt(2) for equal work.
	split := int(float64(n) / math.Sqrt2)
	par.Both(float64(n)*float64(n)*float64(b)/2, func() { rows(0, split) }, func() { rows(split, n) })
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return applyWorkload(w, inv, n), mat.NewDense(n, n, cData), nil
}

// bandedCholesky returns the banded lower-triangular C with C^T C = X
// (stored by columns, as for [bandedXFromC]), by the recurrences of the
// Cholesky factorization run from the last column, and false if X is not
// numerically positive definite. It stays beside linalg's
// QuasiSep.ReverseCholesky (the same causal factor for quasiseparable X)
// because the structures differ; gonum's BandCholesky factors from the
// first column (X = U^T U) and would need X and C flipped and copied.
func bandedCholesky(x linalg.SymBand) ([]float64, bool) {
	n, b := x.N, x.K+1
	c := make([]float64, n*b)
	for j := n - 1; j >= 0; j-- {
		top := min(n-1, j+b-1)
		// X[r][j] = sum_{t >= r} C[t][r] C[t][j] for r in (j, top].
		for r := top; r > j; r-- {
			s := x.Data[r*b+r-j]
			for t := r + 1; t <= top; t++ {
				s -= c[r*b+t-r] * c[j*b+t-j]
			}
			c[j*b+r-j] = s / c[r*b]
		}
		s := x.Data[j*b]
		for t := j + 1; t <= top; t++ {
			s -= c[j*b+t-j] * c[j*b+t-j]
		}
		if !(s > 0) {
			return nil, false
		}
		c[j*b] = math.Sqrt(s)
	}
	return c, true
}

// solve minimises f from x0 until the certified gap is at most opt.Tol, by
// L-BFGS in two parametrisations: first in the entries of C (X = C^T C
// with unit columns), which keeps every trial X positive definite and so
// makes long steps where X is nearly singular (from R of a few thousand on
// with many bands, steps in X's entries are cut a hundredfold to stay in
// the cone), until the gap is [bandedSwitchGap] (or opt.Tol, if that is
// looser: the second phase then only confirms it); then in the entries of X
// with the Hessian's diagonal blocks as preconditioner, whose convergence near
// the optimum is faster. The certificate is the same in both.
func (bp *bandedProblem) solve(ctx context.Context, x0 linalg.SymBand, opt Options) (*bandedSolution, error) {
	return bp.solveFrom(ctx, x0, opt, &bandedSolution{})
}

// solveFrom is [bandedProblem.solve] counting into st.
func (bp *bandedProblem) solveFrom(ctx context.Context, x0 linalg.SymBand, opt Options, st *bandedSolution) (*bandedSolution, error) {
	// Rounding in f: the band kernels work on formed entries (as the
	// momentum path of Optimal does); from the second phase on, at least
	// the measured scatter of f (see [bandedProblem.scatter]).
	rnd := bp.aPriori()
	x := x0
	if bp.b > 1 {
		if c, ok := bandedCholesky(x0); ok {
			ph := &cPhase{bp: bp, nrm: make([]float64, bp.n), gx: make([]float64, bp.n), gradX: make([]float64, bp.n*bp.b), firstLen: 1e-2}
			cur := bp.newPoint()
			copy(cur.v, c)
			res, err := bp.descend(ctx, ph, cur, bp.newPoint(), math.Max(opt.Tol, bandedSwitchGap), rnd, opt, st)
			if err != nil {
				var nc *NotConvergedError
				if !errors.As(err, &nc) || !nc.Stalled {
					return nil, err
				}
			}
			x = res.x
		}
	}
	return bp.finish(ctx, x, opt, st, rnd)
}

// finish runs the second phase of [bandedProblem.solve], L-BFGS in the
// entries of X from x, after measuring the scatter of f and G at x.
func (bp *bandedProblem) finish(ctx context.Context, x linalg.SymBand, opt Options, st *bandedSolution, rnd bandedRounding) (*bandedSolution, error) {
	if bp.b > 1 {
		sc, ok := bp.scatter(x)
		if !ok {
			return nil, fmt.Errorf("factorize: banded X lost positive definiteness")
		}
		st.evals += 3
		rnd.f = math.Max(rnd.f, 4*sc.f)
		rnd.g = 4 * sc.g
	}
	ph := &xPhase{bp: bp, h: make([]float64, bp.precondLen())}
	cur := bp.newPoint()
	copy(cur.v, x.Data)
	res, err := bp.descend(ctx, ph, cur, bp.newPoint(), opt.Tol, rnd, opt, st)
	if err != nil {
		return nil, err
	}
	st.x, st.f = res.x, res.f
	return st, nil
}

// newPoint returns a zero iterate of the problem's size.
func (bp *bandedProblem) newPoint() *bandedPoint {
	m := bp.n * bp.b
	return &bandedPoint{v: make([]float64, m), grad: make([]float64, m), g: make([]float64, m), x: linalg.NewSymBand(bp.n, bp.b-1)}
}

// aPriori returns the a-priori rounding allowance of f, (2 sqrt(R) (b +
// p) + 16) 2^-53, before the scatter is measured.
func (bp *bandedProblem) aPriori() bandedRounding {
	return bandedRounding{f: (2*math.Sqrt(float64(bp.n))*float64(bp.q.K+1) + 16) * 0x1p-53}
}

// Multilevel start: from bandedLevelBands bands' worth of rows on, a
// Toeplitz workload is solved first at half the order to the gap
// bandedCoarseGap (recursively), and the fine problem starts from that
// solution stretched to the full order ([stretchBands]). The coarse gap is
// the one at which the first phase ends: a closer coarse solution does not
// shorten the fine level (at R = 20,000 with 64 bands, 647 to 667 fine
// iterations to 1e-6 for coarse gaps 1e-3 to 1e-1), and below about
// 128 b rows the coarse level costs what it saves (docs/solver.md,
// "Multilevel start"). With fewer than bandedLevelMinBands bands it costs
// more than it saves at every order measured (at R = 10,000 with 8 and 16
// bands, 3273 and 1370 evaluations over every level against 3028 and 1324
// from the banded square root), so those start from the square root.
const (
	bandedLevelBands    = 128
	bandedLevelMinBands = 32
	bandedCoarseGap     = bandedSwitchGap
)

// run solves the problem to opt.Tol: from the banded square root by
// [bandedProblem.solve], or, for a Toeplitz workload of order at least
// bandedLevelBands b with at least bandedLevelMinBands bands (and more
// than one) and a tolerance of at most bandedCoarseGap, from the
// solution of the same problem at half the order, stretched to the full
// order ([stretchBands]), by both phases of solve. The coarse level does
// most of the work of the first phase (its C-parametrised gradient costs
// about 1.5 evaluations and its iterations grow with R: at R = 10^5 the
// banded square root has a gap above 10^3) at a fraction of the cost; the
// first phase then takes the stretched start (at R = 10^5 a gap near 1)
// to 1e-1 in a few dozen iterations, where the second phase alone had most
// of its trial points leave the cone. The iterations and evaluations of
// every level are counted, those of a coarse level that fails too, and
// opt.MaxIter bounds them all together. A coarse level that fails (not
// certified, or a start that is not positive definite) falls back to solve
// from the banded square root with the iterations left; a run whose coarse
// levels spent them all ends with a *NotConvergedError without a gap (the
// problem has none yet).
func (bp *bandedProblem) run(ctx context.Context, opt Options) (*bandedSolution, error) {
	return bp.runAfter(ctx, opt, &bandedSolution{})
}

// runAfter is [bandedProblem.run] after the iterations and evaluations in
// done (those of the levels before), counting this problem's into done
// whether it is solved or not.
func (bp *bandedProblem) runAfter(ctx context.Context, opt Options, done *bandedSolution) (*bandedSolution, error) {
	n, b := bp.n, bp.b
	// from solves from x0 in the iterations left.
	from := func(x0 linalg.SymBand, levels int) (*bandedSolution, error) {
		if done.iter >= opt.MaxIter {
			return nil, &NotConvergedError{Iter: done.iter, Gap: math.Inf(1), Tol: opt.Tol}
		}
		st := &bandedSolution{iter: done.iter, evals: done.evals, levels: levels}
		sol, err := bp.solveFrom(ctx, x0, opt, st)
		done.iter, done.evals = st.iter, st.evals
		return sol, err
	}
	if b > 1 && b >= bp.levelMinBands && n >= bandedLevelBands*b && opt.Tol <= bandedCoarseGap {
		if _, ok := bp.toeplitzColumn(); ok {
			nc := n / 2
			inv := mat.NewTriBandDense(nc, bp.p, mat.Lower, nil)
			for i := 0; i < nc; i++ {
				for j := max(0, i-bp.p); j <= i; j++ {
					inv.SetTriBand(i, j, bp.inv.At(i, j))
				}
			}
			copt := opt
			copt.Tol, copt.Progress = bandedCoarseGap, nil
			if report := opt.Progress; report != nil {
				// A level below nc reports its own order.
				copt.Progress = func(pr Progress) {
					if pr.Coarse == 0 {
						pr.Coarse = nc
					}
					report(pr)
				}
			}
			cp := newBandedProblem(inv, b)
			cp.levelMinBands = bp.levelMinBands
			coarse, err := cp.runAfter(ctx, copt, done)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err == nil {
				if c, ok := bandedCholesky(coarse.x); ok {
					cf := stretchBands(c, nc, n, b)
					x := linalg.NewSymBand(n, b-1)
					if positiveDiagonal(cf, n, b) && bandedXFromC(n, b, cf, x, make([]float64, n)) {
						return from(x, coarse.levels+1)
					}
				}
			}
		}
	}
	x0, err := bp.start()
	if err != nil {
		return nil, err
	}
	return from(x0, 0)
}

// stretchBands returns a banded C of order n (layout of [bandedXFromC])
// from the one of order nc < n of the same Toeplitz workload. The optimal
// factor's columns depend on their distance e to the last row, and little
// on the order (at R = 1000 and 2000 with 64 bands, the last 300 columns
// agree to 1e-5), and away from both ends they grow about linearly in
// log(e): so the last nc/2 columns are copied by distance to the end, the
// columns further from the end follow the line in log(e) through the
// coarse columns at distances nc/4 and nc/2, and the first W = 4b columns
// (the layer at the start) are the coarse ones shifted to meet that line.
// Any C with a positive diagonal gives a feasible X; this one is only a
// start.
func stretchBands(cc []float64, nc, n, b int) []float64 {
	w := 4 * b
	c := make([]float64, n*b)
	ea, eb := nc/2, nc/4
	ja, jb := nc-1-ea, nc-1-eb
	la, lab := math.Log(float64(ea)), math.Log(float64(ea))-math.Log(float64(eb))
	line := func(e, d int) float64 {
		va, vb := cc[ja*b+d], cc[jb*b+d]
		return va + (va-vb)*(math.Log(float64(e))-la)/lab
	}
	for j := 0; j < n; j++ {
		e := n - 1 - j
		for d := 0; d < b && d <= e; d++ {
			switch {
			case e <= ea:
				c[j*b+d] = cc[(nc-1-e)*b+d]
			case j < w:
				c[j*b+d] = cc[j*b+d] + line(n-1-w, d) - cc[w*b+d]
			default:
				c[j*b+d] = line(e, d)
			}
		}
	}
	return c
}

// positiveDiagonal reports whether the banded C (layout of
// [bandedXFromC]) has a positive diagonal, so that X = N^{-1} C^T C N^{-1}
// is positive definite.
func positiveDiagonal(c []float64, n, b int) bool {
	for j := 0; j < n; j++ {
		if !(c[j*b] > 0) {
			return false
		}
	}
	return true
}

// bandedRounding is the rounding allowance of a phase of the banded
// solver: f is relative to f, g is the Frobenius norm of the error of the
// off-diagonal band of G (both triangles).
type bandedRounding struct{ f, g float64 }

// scatter returns the scatter of the computed f and G near x: the largest
// of |f(y) - f(x) - grad f(x) . (y - x)| / f(x) and of the Frobenius norm
// of G(y) - G(x) over the off-diagonal band (both triangles), over two
// points y that raise every other off-diagonal band entry of x
// (alternately the even and the odd ones) by one unit in the last place.
// In exact arithmetic the first is a second-order term of order 1e-32 and
// the second of order 1e-16 |G|; what is measured is the rounding of the
// evaluation, which on the prefix workload grows with R faster than the
// a-priori estimate (at R = 10,000 and 64 bands, about 1.8e-10 for f,
// against 1.4e-12).
func (bp *bandedProblem) scatter(x linalg.SymBand) (bandedRounding, bool) {
	m := len(x.Data)
	grad, g0, g, grad2 := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
	f, ok := bp.eval(x, grad, g0)
	if !ok {
		return bandedRounding{}, false
	}
	y := linalg.SymBand{N: x.N, K: x.K, Data: make([]float64, m)}
	var dev bandedRounding
	for parity := 0; parity < 2; parity++ {
		lin := 0.0
		for i, v := range x.Data {
			y.Data[i] = v
			if i%bp.b != 0 && i%2 == parity {
				y.Data[i] = math.Nextafter(v, math.Inf(1))
				lin += grad[i] * (y.Data[i] - v)
			}
		}
		fy, ok := bp.eval(y, grad2, g)
		if !ok {
			return bandedRounding{}, false
		}
		dg := 0.0
		for i := range g {
			if i%bp.b != 0 {
				dg += 2 * (g[i] - g0[i]) * (g[i] - g0[i])
			}
		}
		dev.f = math.Max(dev.f, math.Abs(fy-f-lin)/f)
		dev.g = math.Max(dev.g, math.Sqrt(dg))
	}
	return dev, true
}

// descend runs preconditioned L-BFGS in the phase ph from cur until the
// certified gap is at most stop, with Armijo backtracking (a trial point
// that is not positive definite is rejected like one that does not
// decrease f) and, once f changes by less than its rounding, the
// approximate Wolfe conditions of Hager and Zhang (SIAM J. Optim. 16(1),
// 2005) on the directional derivative. It counts iterations and
// evaluations in st and sets st.gap; the point returned is the last
// accepted one, also with a *NotConvergedError (Stalled) when the line
// search fails.
func (bp *bandedProblem) descend(ctx context.Context, ph bandedPhase, cur, trial *bandedPoint, stop float64, rnd bandedRounding, opt Options, st *bandedSolution) (*bandedPoint, error) {
	roundErr := rnd.f
	// A lower bound from an earlier phase, certified with a smaller
	// rounding allowance for f, is lowered by the difference.
	if roundErr > st.lowerErr {
		st.lower *= 1 - 2*(roundErr-st.lowerErr)
		st.lowerErr = roundErr
	}
	const memSize = bandedMemory
	m := len(cur.v)
	if !ph.eval(cur) {
		return nil, fmt.Errorf("factorize: the starting banded X is not positive definite")
	}
	st.evals++
	mem := optim.NewMemory32(memSize)
	dir := make([]float64, m)
	alpha := make([]float64, memSize)
	scale := func(d []float64) { ph.scale(cur, mem, d) }
	// The gap is not monotone; a run whose gap has not halved in
	// bandedStallIters iterations has reached what the evaluation's
	// rounding lets it certify (see docs/solver.md, "Limits").
	mark, markIter := math.Inf(1), st.iter
	stalled := func() error {
		return &NotConvergedError{Iter: st.iter, Gap: st.gap, Tol: opt.Tol, LastLower: cur.f / (1 + st.gap), Stalled: true, Cause: bandedStallCause}
	}
	for st.iter < opt.MaxIter {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st.iter++
		st.gap = bp.gapOf(cur.x, cur.g, cur.f, rnd.g, stop-2*roundErr) + 2*roundErr
		// Every certified gap gives a lower bound on f* that holds for
		// every later iterate: keep the best, so that the gap never rises
		// between computations of the quadratic bound.
		if lb := cur.f / (1 + st.gap); lb > st.lower {
			st.lower = lb
		} else if st.lower > 0 {
			st.gap = math.Min(st.gap, cur.f*(1+2*roundErr)/st.lower-1)
		}
		if opt.Progress != nil {
			opt.Progress(Progress{Iter: st.iter, Lower: cur.f / (1 + st.gap), Upper: cur.f, Gap: st.gap, Tol: opt.Tol})
		}
		if st.gap <= stop {
			return cur, nil
		}
		if st.gap <= mark/2 {
			mark, markIter = st.gap, st.iter
		} else if st.iter-markIter >= bandedStallIters {
			return cur, stalled()
		}
		if bp.b == 1 {
			st.gap = 0
			return cur, nil
		}
		mem.Direction(cur.grad, dir, alpha, scale)
		slope := -dot(cur.grad, dir)
		if !(slope < 0) {
			// Not a descent direction: restart from the preconditioned
			// gradient.
			mem.Reset()
			copy(dir, cur.grad)
			scale(dir)
			slope = -dot(cur.grad, dir)
			if !(slope < 0) {
				return cur, stalled()
			}
		}
		step := 1.0
		accepted := false
		for ls := 0; ls < 50; ls++ {
			par.Range(m, linalg.VectorChunk, 3, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					trial.v[i] = cur.v[i] - step*dir[i]
				}
			})
			ok := ph.eval(trial)
			st.evals++
			if ok && trial.f <= cur.f+1e-4*step*slope {
				accepted = true
				break
			}
			// Near the optimum f changes by less than its rounding (at
			// R = 10,000 the computed f scatters by up to three times
			// roundErr): accept the approximate Wolfe conditions on the
			// directional derivative where f is within 8 roundErr.
			if ok && trial.f <= cur.f+8*roundErr*math.Abs(cur.f) {
				if s1 := -dot(trial.grad, dir); s1 >= 0.9*slope && s1 <= -0.8*slope {
					accepted = true
					break
				}
			}
			step /= 2
		}
		if !accepted {
			return cur, stalled()
		}
		mem.Push(trial.v, cur.v, trial.grad, cur.grad)
		cur, trial = trial, cur
	}
	return cur, &NotConvergedError{Iter: st.iter, Gap: st.gap, Tol: opt.Tol, LastLower: cur.f / (1 + st.gap)}
}

// dot returns a . b (b at least as long as a).
func dot(a, b []float64) float64 { return linalg.Dot(a, b) }

// BandedSqrt returns the banded square root factorization for
// b-min-separation (Kalinin and Lampert 2024, "Banded Square Root Matrix
// Factorization for Differentially Private Model Training"): C is the
// lower-triangular Toeplitz matrix of the first b power-series coefficients
// of A^{1/2} with every column scaled to unit norm, and B = A C^{-1}. X =
// C^T C is banded within b with unit diagonal, so under [MinSeparation](b,
// k) the sensitivity is sqrt(k') with k' = min(k, ceil(R / b)). The
// workload must be lower-triangular Toeplitz. The metrics are those of B
// and C under that participation (Participation records it).
func BandedSqrt(w *Workload, b, k int) (*Factorization, error) {
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if b < 1 {
		return nil, &ParamError{Param: "bands", Value: b, Want: ">= 1"}
	}
	part := MinSeparation(b, k)
	if err := part.Validate(w.R()); err != nil {
		return nil, err
	}
	if err := checkDenseFits(w.R()); err != nil {
		return nil, err
	}
	tw, err := toeplitzOf(StrategyBanded, w)
	if err != nil {
		return nil, err
	}
	r := w.R()
	b = min(b, r)
	s := tw.sqrt(b)
	c := padded(s, r)
	f := toeplitzScaled(StrategyBanded, w, tw, c, linalg.SeriesInverse(s, r), columnNorms(c))
	f.Operator = bandedOpOf(f.C, b)
	return f.checkedUnder(part)
}

// minSepMajorantSq returns the squared sensitivity bound of the
// objective of [BLTMinSep] for the Toeplitz C with first column c: the
// rule of [ToeplitzMinSepSensitivity] applied to the smallest
// non-increasing majorant of |c| (exact where c is non-negative and
// non-increasing), +Inf where c is not finite or b or k is below 1. O(n k):
// each row's sum over the pattern is added up from its first term, as the
// rule was evaluated when the fit of [fitBLTPlainLevels] was made (the
// O(n) running sums of ToeplitzMinSepSensitivity round differently, and
// finite differences amplify that into another fit).
func minSepMajorantSq(c []float64, b, k int) float64 {
	n := len(c)
	m := make([]float64, n)
	run := 0.0
	for i := n - 1; i >= 0; i-- {
		run = math.Max(run, math.Abs(c[i]))
		m[i] = run
	}
	if math.IsInf(run, 0) || math.IsNaN(run) || b < 1 || k < 1 {
		return math.Inf(1)
	}
	k = min(k, (n-1)/b+1)
	s := 0.0
	for r := 0; r < n; r++ {
		v := 0.0
		for j := 0; j < k && j*b <= r; j++ {
			v += m[r-j*b]
		}
		s += v * v
	}
	sens := math.Sqrt(s)
	return sens * sens
}

// bltMinSepReported returns the loss that [SensitivityOf] gives the
// Toeplitz C = T_d^{-1} of p under b-min-separation with at most kk
// participations, sens^2 ||A T_d||_F^2, in O(R^2 kk) rather than the
// O(R^3) of forming C's Gram matrix from C: the exact rule where C's
// first column is non-negative and non-increasing, else [MinSepSensitivity]
// of the Gram matrix, whose entries X_ij = sum_{s <= R-1-max(i,j)} c_s
// c_{s+|i-j|} are running sums. It returns +Inf where the loss is not
// finite, and also, without the O(R^2 kk) bound, where the loss is
// certainly not below above: the pattern {0, b, ..., (k'-1) b} gives
// sens^2 >= ||C u||^2 (u its indicator), O(R). x, if not nil, is an R x R
// matrix to hold the Gram matrix (it is overwritten); the one used is
// returned for the next call.
func bltMinSepReported(tw toeplitzWorkload, p *BLTParams, b, kk int, above float64, x *mat.SymDense) (float64, *mat.SymDense) {
	r := len(tw.a)
	c := bltInverse(p, r)
	frob := tw.frobB(p.Coefficients(r))
	if s, err := ToeplitzMinSepSensitivity(c, b, kk); err == nil {
		return s * s * frob, x
	}
	if _, sq := minSepPattern(c, b, kk); !(sq*frob < above) {
		return math.Inf(1), x
	}
	if x == nil {
		x = mat.NewSymDense(r, nil)
	}
	for lag := 0; lag < r; lag++ {
		sum := 0.0
		for s := 0; s+lag < r; s++ {
			sum += c[s] * c[s+lag]
			// s = R-1-j: X_{j-lag, j}
			j := r - 1 - s
			x.SetSym(j-lag, j, sum)
		}
	}
	sens, err := MinSepSensitivity(x, b, kk)
	l := sens.Value * sens.Value * frob
	if err != nil || math.IsNaN(l) {
		return math.Inf(1), x
	}
	return l, x
}

// BLTMinSep returns a buffered-linear-Toeplitz factorization ([BLT]) with
// the given number of buffers ([DefaultBuffers] if 0) fitted to the loss
// under b-min-separation with at most k participations, sens^2 ||A
// T_d||_F^2 for the Toeplitz C = T_d^{-1} (columns not rescaled: the
// Toeplitz sensitivity rule needs C Toeplitz), with sens the rule of
// Kalinin and Lampert (2024, Thm. 2) applied to the non-increasing
// majorant of |c| (c C's first column): exact where c is non-negative and
// non-increasing, a never-lower bound elsewhere (see
// bltObjective.minSepLoss). Two fits by continuation in the number of
// buffers: the one BLTMinSep used before (finite differences, see
// fitBLTPlainLevels) and the analytic-gradient one of fitBLTObjective
// started from it at every level too. The result is the parameters, over
// both fits and every level up to the number of buffers (padded with
// zero-weight buffers), with the lowest loss as [SensitivityOf] reports it
// (exact for a monotone c, else its dynamic-programming bound; see
// bltMinSepReported): never above either fit, and never increasing with
// the number of buffers. The metrics are those of B and C under
// [MinSeparation](b, k) by [SensitivityOf]. A local optimum, not
// certified. With the gradient in closed form for prefix sums (finite
// differences otherwise).
func BLTMinSep(ctx context.Context, w *Workload, buffers, b, k int) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if err := checkBuffers(buffers); err != nil {
		return nil, err
	}
	part := MinSeparation(b, k)
	if err := part.Validate(w.R()); err != nil {
		return nil, err
	}
	if err := checkDenseFits(w.R()); err != nil {
		return nil, err
	}
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		return nil, err
	}
	r := w.R()
	kk := part.Participations(r)
	var gram *mat.SymDense // allocated at the first non-monotone column
	p, err := bltMinSepChoose(ctx, tw, r, buffers, b, kk, func(q *BLTParams, above float64) (float64, error) {
		var l float64
		l, gram = bltMinSepReported(tw, q, b, kk, above, gram)
		return l, nil
	})
	if err != nil {
		return nil, err
	}
	d := p.Coefficients(r)
	c := bltInverse(p, r)
	unit := ones(r)
	f := toeplitzScaled(StrategyBLT, w, tw, c, d, unit)
	p.Scale = unit
	f.Operator = p
	return f.checkedUnder(part)
}

// bltMinSepChoose fits BLT under b-min-separation with kk participations at
// every level up to the number of buffers (both fits: the levels of the
// exact objective and the plain ones of the majorant) and returns the one
// with the lowest reported loss, reported(p, above) (+Inf where it is
// certainly not below above): never above either fit with the full number of
// buffers and, as a level does not depend on the levels above it, never
// increasing with the number of buffers. [BLTMinSep] and the loss-only path
// share it, so they choose alike.
func bltMinSepChoose(ctx context.Context, tw toeplitzWorkload, r, buffers, b, kk int, reported func(p *BLTParams, above float64) (float64, error)) (*BLTParams, error) {
	p := &BLTParams{Weights: []float64{}, Lambdas: []float64{}}
	nb := bltBuffers(buffers, r)
	if nb <= 0 {
		return p, nil
	}
	// A separation b >= r allows one participation, as b = r does; the
	// objective adds b to round indices (t + b < r), which overflowed for
	// b near MaxInt.
	b = min(b, r)
	o := &bltObjective{tw: tw, minSep: true, b: b, kk: kk}
	plain, err := fitBLTPlainLevels(ctx, tw, nb, func(c []float64) float64 { return minSepMajorantSq(c, b, kk) })
	if err != nil {
		return nil, err
	}
	levels, err := fitBLTLevels(ctx, o, nb, plain)
	if err != nil {
		return nil, err
	}
	var best []float64
	bestLoss := math.Inf(1)
	for j := range nb {
		for _, chain := range [][][]float64{levels, plain} {
			x := chain[j]
			if j > 0 && x[j] == 0 && slices.Equal(x[:j], chain[j-1][:j]) && slices.Equal(x[j+1:2*j+1], chain[j-1][j:]) {
				continue // the level below with a zero-weight buffer: the same C
			}
			l, err := reported(bltParamsOf(x), bestLoss)
			if err != nil {
				return nil, err
			}
			if l < bestLoss {
				best, bestLoss = x, l
			}
		}
	}
	if best != nil {
		p = bltPadded(best, nb)
	}
	return p, nil
}
