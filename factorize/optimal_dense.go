package factorize

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// denseEvaluator evaluates phi(v) = diag((D S D)^{1/2}) for any workload.
//
// Each evaluation reduces M = D S D to tridiagonal form, M = Q T Q^T
// ([linalg.Tridiagonalizer]: blocked Householder on both cores, then Q),
// and takes the square root of T through the rational approximation of its
// inverse square root, Y = T^{-1/2} = sum_j w_j (T + s_j I)^{-1}: the rows
// of P = Q Y are Y q_i for the rows q_i of Q, shifted tridiagonal solves
// ([linalg.SymTridiag.ApplyRationalRows], O(n^2) per shift). Then
// M^{1/2} = Q T Y Q^T = (Q T) P^T and diag(M^{1/2})_i = (T q_i) . p_i. This
// replaces the implicit QR sweeps of a full eigendecomposition (about
// 6 n^3 flops of plane rotations).
//
// Forming M squares A's condition number, and the tridiagonal reduction is
// backward stable only relative to ||M||: the entries phi_i dominated by
// M's small eigenvalues carry relative errors up to about u cond(M). The
// evaluator reports that bound, which enters the certificate: on an
// ill-conditioned workload the dense path cannot certify a gap below it.
// The bound is estimated a posteriori by a second evaluation (see
// errorBound), paid only on the iterations close enough to certify.
type denseEvaluator struct {
	w    *Workload
	n    int
	s    []float64 // S = A^T A, row-major upper triangle; nil until ready
	m    []float64 // D S D, then Q
	td   *linalg.Tridiagonalizer
	qf   []float64 // P = Q Y, Y ~ T^{-1/2}
	qt   []float64 // Q T
	tmp  []float64
	errs []float64 // per-entry error bounds of the last errorBound
	tri  linalg.SymTridiag
	lo   float64
	q    linalg.InvSqrtRational // none (no shifts) until the first sqrtT
}

func newDenseEvaluator(w *Workload) *denseEvaluator {
	n := w.R()
	return &denseEvaluator{
		w: w, n: n, m: make([]float64, n*n), td: linalg.NewTridiagonalizer(n, 0),
		qf: make([]float64, n*n), qt: make([]float64, n*n),
		tri: linalg.SymTridiag{Diag: make([]float64, n), Off: make([]float64, n)},
	}
}

// ready forms S = A^T A on first use (O(R^3), checking ctx between rows),
// each entry a compensated dot product ([compensatedDot]): S is then
// rounded once per entry (for a workload without cancellation in A^T A,
// such as prefix sums and momentum), where a float64 product rounds it
// about sqrt(R) times, an error the second ordering of errorBound cannot
// see. It costs about 5 times a blocked float64 product, once per solve.
func (e *denseEvaluator) ready(ctx context.Context) error {
	if e.s != nil {
		return nil
	}
	n := e.n
	// Column j of A, rows j..n-1, at at[j*n+j:j*n+n].
	at := make([]float64, n*n)
	tri := e.w.Matrix().RawTriangular()
	for i := 0; i < n; i++ {
		for j, x := range tri.Data[i*tri.Stride : i*tri.Stride+i+1] {
			at[j*n+i] = x
		}
	}
	s := make([]float64, n*n)
	// Row i costs about (n - i)^2 / 2 compensated products of 10 flops.
	par.For(n, 5*float64(n)*float64(n)*float64(n)/3, func(i int) {
		if ctx.Err() != nil {
			return
		}
		// S[i][j] = sum_{k >= j} A[k][i] A[k][j], j >= i.
		for j := i; j < n; j++ {
			s[i*n+j] = compensatedDot(at[i*n+j:i*n+n], at[j*n+j:j*n+n])
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	e.s = s
	return nil
}

// compensatedDot returns x . y as if computed in twice the working
// precision and then rounded (Ogita, Rump and Oishi, "Accurate sum and dot
// product", SIAM J. Sci. Comput. 26(6), 2005, Dot2): within u |x . y| +
// (n u)^2 sum_k |x_k y_k|, u = 2^-53.
func compensatedDot(x, y []float64) float64 {
	var hi, lo float64
	for k, a := range x {
		p, pe := ddfloat.TwoProd(a, y[k])
		s, e := ddfloat.TwoSum(hi, p)
		lo += pe + e
		hi = s
	}
	return hi + lo
}

// formingRounding returns a model of the rounding error of entry (a, b),
// a <= b, of S as it enters M = D S D: S_ab rounded once by ready, and
// M_ab = sqrt(v_a) S_ab sqrt(v_b) by two products and two square roots,
// at most about 3 u |S_ab| in all (u = 2^-53). The model is that scale
// times a fixed pseudo-random number in [-1, 1) for each entry, symmetric
// in (a, b), so that its effect on phi is a sample of the effect of the
// actual rounding, which both orderings of [orderings] share and their
// difference cannot see.
func (e *denseEvaluator) formingRounding(a, b int) float64 {
	x := uint64(a)*uint64(e.n) + uint64(b) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	r := float64(x>>11)*0x1p-52 - 1
	return r * 3 * 0x1p-53 * math.Abs(e.s[a*e.n+b])
}

// roundingFactor multiplies the difference between two evaluations of
// phi that differ only in rounding (two symmetric orderings of M, the
// second with M's forming rounding modelled; see errorBound) to give the
// error bound of the dense path. It is a measured safety factor: against a
// double-double reference (TestDenseRoundingEstimate: prefix sums,
// weighted prefix sums and momentum up to 0.99, R <= 300, cond(M) up to
// 1.5e13) the bound is at least 3.5 times the largest relative error and
// the summed per-entry bounds at least 13 times the summed error, for each
// of four seeds of formingRounding's pseudo-random numbers.
const roundingFactor = 8

// sqrtT tridiagonalizes M = D S D = Q T Q^T for multipliers v, leaving Q in
// e.m, T in e.tri, Q T in e.qt and P = Q Y in e.qf, Y ~ T^{-1/2}, so that
// M^{1/2} = (Q T)(Q Y)^T and M^{-1/2} = Q Y Q^T. It returns the largest
// eigenvalue bound of T.
//
// The matrix reduced is M permuted symmetrically by perm: row i of the
// reduced matrix is row perm[i] of M. With perturbed set, S's entries are
// perturbed by [denseEvaluator.formingRounding] first.
func (e *denseEvaluator) sqrtT(ctx context.Context, v []float64, perm []int, perturbed bool) (float64, error) {
	n := e.n
	sq := make([]float64, n)
	for i := range sq {
		sq[i] = math.Sqrt(v[i])
	}
	for i := 0; i < n; i++ {
		pi := perm[i]
		for j := i; j < n; j++ {
			a, b := pi, perm[j]
			if a > b {
				a, b = b, a // S is kept in its upper triangle
			}
			s := e.s[a*n+b]
			if perturbed {
				s += e.formingRounding(a, b)
			}
			e.m[i*n+j] = sq[a] * s * sq[b]
		}
	}
	// T's subdiagonal goes to tri.Off[1:] (Off[i] = T[i][i-1]).
	if err := e.td.Reduce(ctx, e.m, e.tri.Diag, e.tri.Off[1:]); err != nil {
		return 0, err
	}
	lo, hi := e.tri.Bounds(e.lo)
	if err := checkSpectrum(lo, hi); err != nil {
		return 0, err
	}
	e.lo = lo
	if len(e.q.Shifts) == 0 || !e.q.Covers(lo, hi) {
		e.q = linalg.NewInvSqrtRational(lo/4, hi*4, quadTol)
	}
	// P = Q Y, row by row: row i of P is Y q_i for the row q_i of Q,
	// O(n^2 K) tridiagonal solves instead of forming Y densely and
	// multiplying (2 n^3).
	if !e.tri.ApplyRationalRows(e.q, e.m, e.qf, n, runtime.GOMAXPROCS(0)) {
		return 0, fmt.Errorf("factorize: numerical breakdown: a shifted tridiagonal matrix of the dense path is not positive definite")
	}
	// Q T, column by column of the tridiagonal T.
	for i := 0; i < n; i++ {
		q, out := e.m[i*n:i*n+n], e.qt[i*n:i*n+n]
		for k := 0; k < n; k++ {
			x := q[k] * e.tri.Diag[k]
			if k > 0 {
				x += q[k-1] * e.tri.Off[k]
			}
			if k+1 < n {
				x += q[k+1] * e.tri.Off[k+1]
			}
			out[k] = x
		}
	}
	return hi, nil
}

// reduce forms S on first use and runs [denseEvaluator.sqrtT] in the
// first ordering of [denseEvaluator.orderings], or (second) in the second
// from S perturbed by [denseEvaluator.formingRounding], and returns the
// ordering used.
func (e *denseEvaluator) reduce(ctx context.Context, v []float64, second bool) ([]int, error) {
	if err := e.ready(ctx); err != nil {
		return nil, err
	}
	perm, other := e.orderings(v)
	if second {
		perm = other
	}
	if _, err := e.sqrtT(ctx, v, perm, second); err != nil {
		return nil, err
	}
	return perm, nil
}

// diagRoot writes diag(M^{1/2})_i = sum_k (Q T)_ik P_ik from the buffers
// of sqrtT into e.tmp, in the order of the matrix that was reduced.
func (e *denseEvaluator) diagRoot() {
	n := e.n
	if len(e.tmp) != n {
		e.tmp = make([]float64, n)
	}
	dst := e.tmp
	for i := 0; i < n; i++ {
		qt, p := e.qt[i*n:i*n+n], e.qf[i*n:i*n+n]
		s := 0.0
		for k := range p {
			s += qt[k] * p[k]
		}
		dst[i] = s
	}
}

// orderings returns the two symmetric permutations phi evaluates M in:
// first by decreasing diagonal, so that Householder reduction (which
// [linalg.Tridiagonalizer] runs from the first column) meets the largest
// entries first, as graded matrices want; then the same with neighbours
// swapped in pairs, which rounds differently but is as well ordered.
func (e *denseEvaluator) orderings(v []float64) (first, second []int) {
	n := e.n
	first = make([]int, n)
	for i := range first {
		first[i] = i
	}
	sort.SliceStable(first, func(a, b int) bool {
		i, j := first[a], first[b]
		return v[i]*e.s[i*n+i] > v[j]*e.s[j*n+j]
	})
	second = append([]int(nil), first...)
	for i := 0; i+1 < n; i += 2 {
		second[i], second[i+1] = second[i+1], second[i]
	}
	return first, second
}

// phi evaluates diag(M^{1/2}) in the first ordering of [orderings]. Its
// error bound needs a second evaluation (errorBound), so it returns NaN.
func (e *denseEvaluator) phi(ctx context.Context, v, dst []float64) (float64, error) {
	first, err := e.reduce(ctx, v, false)
	if err != nil {
		return 0, err
	}
	e.diagRoot()
	for i, p := range first {
		dst[p] = e.tmp[i]
	}
	return math.NaN(), nil
}

// errorBound evaluates diag(M^{1/2}) again in the second ordering of
// [orderings], from S perturbed by [denseEvaluator.formingRounding], and
// bounds the relative error of ph, the first, by roundingFactor times the
// largest relative difference between the two (and never less than the
// rounding of the sums). In exact arithmetic the two orderings agree; their
// difference measures the rounding of the tridiagonal reduction on this
// workload, which the worst-case bound (u ||M|| times the Frechet
// derivative of the square root) overstates by orders of magnitude. The
// rounding of S = A^T A and of M = D S D is the same in both orderings and
// invisible in their difference; the perturbation, of the size of that
// rounding, adds a sample of its effect. (With S from a float64 product,
// rounded about sqrt(R) times per entry, that rounding was most of the
// error on weighted prefix sums at R = 300: 4.7e-13, 0.45e-13 with S from
// [compensatedDot].)
//
// It also leaves per-entry bounds for [denseEvaluator.entryErrors]:
// roundingFactor times each entry's own difference, plus, times the entry,
// roundingFactor times the mean relative difference and the sums' rounding
// (the largest relative difference times every entry, which this added to
// cover the forming rounding before it was modelled, is not needed: the
// summed bounds are still at least 13 times the summed errors). The
// certificate uses them only in weighted sums over all entries, where the
// per-entry estimates average out; the largest relative error sits on a
// few entries, so these sums are several times below the largest relative
// error bound times the whole (at R = 2000, prefix sums, about 8 times),
// which is what lets the dense path certify 1e-10 there.
func (e *denseEvaluator) errorBound(ctx context.Context, v, ph []float64) (float64, error) {
	second, err := e.reduce(ctx, v, true)
	if err != nil {
		return 0, err
	}
	e.diagRoot()
	n := e.n
	if len(e.errs) != n {
		e.errs = make([]float64, n)
	}
	worst, sumDiff, sum := 0.0, 0.0, 0.0
	for i, p := range second {
		d := math.Abs(ph[p] - e.tmp[i])
		e.errs[p] = d
		worst = math.Max(worst, d/ph[p])
		sumDiff += d
		sum += ph[p]
	}
	// Both orderings use the same rational approximation, whose own error
	// (RelErr, about 1e-14) their difference does not see: it is added.
	floor := roundingFactor*sumDiff/sum + 4*float64(n)*0x1p-53 + e.q.RelErr
	for i, d := range e.errs {
		e.errs[i] = roundingFactor*d + floor*ph[i]
	}
	return roundingFactor*worst + 4*float64(n)*0x1p-53 + e.q.RelErr, nil
}

// entryErrors returns the per-entry absolute error bounds of the last
// errorBound.
func (e *denseEvaluator) entryErrors() []float64 { return e.errs }

func (e *denseEvaluator) root(ctx context.Context, v []float64) ([]float64, error) {
	first, err := e.reduce(ctx, v, false)
	if err != nil {
		return nil, err
	}
	n := e.n
	y := make([]float64, n*n)
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: n, Cols: n, Stride: n, Data: e.qt},
		blas64.General{Rows: n, Cols: n, Stride: n, Data: e.qf},
		0, blas64.General{Rows: n, Cols: n, Stride: n, Data: y})
	// Undo the permutation: Y[first[i]][first[j]] = y[i][j].
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			out[first[i]*n+first[j]] = y[i*n+j]
		}
	}
	return out, nil
}

// quadTerm returns q = tr(Delta M Delta M^{-1/2}) for M = D S D of the
// multipliers v of the last call to phi (whose buffers it reads: call it
// before errorBound, which overwrites them) and Delta = diag(delta), raised
// by the rounding of the products and the rational approximation, with
// errScale such that the error of the result is at most eps errScale when
// the tridiagonal reduction's rounding perturbs the entries of M^{-1/2} by
// at most eps ||M^{-1/2}||_2.
// M^{-1/2} = Q Y Q^T = P Q^T is one matrix product (n^3 for its upper
// triangle); e.qt is overwritten.
func (e *denseEvaluator) quadTerm(ctx context.Context, v, delta []float64) (q, errScale, lambda float64, err error) {
	n := e.n
	if err := ctx.Err(); err != nil {
		return 0, 0, 0, err
	}
	first, _ := e.orderings(v)
	// The upper triangle of M^{-1/2} = P Q^T, by blocks of rows (half the
	// product).
	nm := e.qt
	const bs = 256
	for a0 := 0; a0 < n; a0 += bs {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		a1 := min(n, a0+bs)
		blas64.Gemm(blas.NoTrans, blas.Trans, 1,
			blas64.General{Rows: a1 - a0, Cols: n, Stride: n, Data: e.qf[a0*n:]},
			blas64.General{Rows: n - a0, Cols: n, Stride: n, Data: e.m[a0*n:]},
			0, blas64.General{Rows: a1 - a0, Cols: n - a0, Stride: n, Data: nm[a0*n+a0:]})
	}
	// In the reduced ordering, row a is row first[a] of M.
	dv := make([]float64, n) // delta_i sqrt(v_i), permuted
	for a, i := range first {
		dv[a] = delta[i] * math.Sqrt(v[i])
	}
	abs := 0.0
	for a := 0; a < n; a++ {
		i := first[a]
		row := nm[a*n : a*n+n]
		s, t := 0.0, 0.0
		for b := a + 1; b < n; b++ {
			j := first[b]
			lo, hi := min(i, j), max(i, j)
			m := dv[b] * e.s[lo*n+hi]
			s += m * row[b]
			t += math.Abs(m)
		}
		m := dv[a] * e.s[i*n+i]
		q += dv[a] * (2*s + m*row[a])
		abs += math.Abs(dv[a]) * (2*t + math.Abs(m))
	}
	scale := abs / math.Sqrt(e.lo)
	// The products forming M^{-1/2} round each entry by at most about
	// n u ||M^{-1/2}||_2, and the rational approximation is within RelErr.
	// lambda >= lambda_max(M o M^{-1/2}) >= max_i M_ii / sqrt(lambda_min(M))
	// (Schur).
	mmax := 0.0
	for i := 0; i < n; i++ {
		mmax = math.Max(mmax, v[i]*e.s[i*n+i])
	}
	lambda = mmax / math.Sqrt(e.lo)
	return q + (2*float64(n)*0x1p-53+e.q.RelErr)*scale, scale, lambda, nil
}
