package linalg

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpmf/dpmf/internal/par"
)

// BidiagGram is the symmetric positive definite tridiagonal matrix
// T = G G^T of a lower bidiagonal G, kept in factored form: G[i][i] = Diag[i]
// and G[i][i-1] = Sub[i] (Sub[0] is ignored). Its entries are
//
//	T[i][i] = Diag[i]^2 + Sub[i]^2,  T[i][i-1] = Sub[i] Diag[i-1].
//
// The methods work on Diag and Sub directly, with recurrences in which every
// operation combines nonnegative quantities. That keeps each result accurate
// to a small relative error even when T is very ill-conditioned, where
// forming T's entries would already perturb its smallest eigenvalues by
// u ||T|| (u the unit roundoff): for T = D^{-1} (A^{-1} A^{-T}) D^{-1} of the
// prefix-sum workload this is the difference between a relative error of
// 1e-16 and one of 1e-6 in the smallest eigenvalues at n = 100,000.
type BidiagGram struct {
	Diag, Sub []float64
}

// N returns the order of T.
func (b BidiagGram) N() int { return len(b.Diag) }

func (b BidiagGram) check(n int) {
	if len(b.Sub) != len(b.Diag) {
		panic(fmt.Sprintf("linalg: bidiagonal with %d diagonal and %d subdiagonal entries", len(b.Diag), len(b.Sub)))
	}
	if n < len(b.Diag) {
		panic(fmt.Sprintf("linalg: slice of length %d, want at least %d", n, len(b.Diag)))
	}
}

// ShiftedInverseDiag writes the diagonal of (T + sigma I)^{-1} into dst, for
// sigma >= 0. work must have length at least N(). The cost is O(n): about ten
// flops and three divisions per entry.
//
// The method is the twisted factorization of T + sigma I (Dhillon and
// Parlett, "Orthogonal eigenvectors and relative gaps", SIAM J. Matrix Anal.
// Appl. 25(3), 2004) in differential form. With g = Diag and h = Sub, the
// top-down LDL^T factorization has pivots D_i = g_i^2 + t_i, where
//
//	t_0 = sigma,  p_i = h_i^2 t_{i-1} / D_{i-1},  t_i = sigma + p_i,
//
// and the bottom-up UEU^T factorization has pivots E_i = h_i^2 + s_i, where
//
//	s_{n-1} = g_{n-1}^2 + sigma,  s_i = sigma + g_i^2 s_{i+1} / E_{i+1}.
//
// Then 1 / (T + sigma I)^{-1}[i][i] = D_i - T[i][i+1]^2 / E_{i+1} = p_i + s_i,
// a sum of nonnegative terms.
func (b BidiagGram) ShiftedInverseDiag(sigma float64, dst, work []float64) {
	n := b.N()
	b.check(min(len(dst), len(work)))
	if n == 0 {
		return
	}
	g, h := b.Diag, b.Sub
	p := work[:n]
	p[0] = 0
	t := sigma
	d := g[0]*g[0] + t
	for i := 1; i < n; i++ {
		pi := h[i] * h[i] * (t / d)
		p[i] = pi
		t = sigma + pi
		d = g[i]*g[i] + t
	}
	s := g[n-1]*g[n-1] + sigma
	dst[n-1] = 1 / (p[n-1] + s)
	for i := n - 2; i >= 0; i-- {
		e := h[i+1]*h[i+1] + s
		s = sigma + g[i]*g[i]*(s/e)
		dst[i] = 1 / (p[i] + s)
	}
}

// InvSqrtDiag writes into dst the diagonal of r(T), the rational
// approximation q of T^{-1/2}: sum_j q.Weights[j] diag((T + q.Shifts[j] I)^{-1}).
// When T's spectrum lies in q's interval, every entry is within a relative
// q.RelErr of the diagonal of T^{-1/2} (up to rounding, a few units in the
// last place times the number of shifts). work must have length at least
// 2 N().
func (b BidiagGram) InvSqrtDiag(q InvSqrtRational, dst, work []float64) {
	n := b.N()
	b.check(min(len(dst), len(work)/2))
	tmp, w := work[:n], work[n:2*n]
	clear(dst[:n])
	for j, sigma := range q.Shifts {
		b.ShiftedInverseDiag(sigma, tmp, w)
		wt := q.Weights[j]
		for i, v := range tmp {
			dst[i] += wt * v
		}
	}
}

// AddShiftedInverse adds weight (T + sigma I)^{-1} to the upper triangle of
// the n x n row-major matrix dst (entries dst[i*stride+j], j >= i), for
// sigma >= 0. work must have length at least 2 N(). The cost is O(n^2).
//
// The inverse of a tridiagonal matrix is semiseparable: below the diagonal,
// column j is x_i = rho_i x_{i-1}, x_j = 1 / gamma_j, with
// rho_i = -T[i][i-1] / E_i from the bottom-up factorization (see
// [BidiagGram.ShiftedInverseDiag]).
func (b BidiagGram) AddShiftedInverse(dst []float64, stride int, sigma, weight float64, work []float64) {
	n := b.N()
	b.check(len(work) / 2)
	if n == 0 {
		return
	}
	if stride < n || len(dst) < (n-1)*stride+n {
		panic(fmt.Sprintf("linalg: destination of length %d and stride %d for order %d", len(dst), stride, n))
	}
	diag, rho := work[:n], work[n:2*n]
	b.ShiftedInverseGen(sigma, diag, rho)
	for j := 0; j < n; j++ {
		row := dst[j*stride : j*stride+n]
		x := weight * diag[j]
		row[j] += x
		for i := j + 1; i < n; i++ {
			x *= rho[i]
			row[i] += x
		}
	}
}

// ShiftedInverseGen writes the generators of (T + sigma I)^{-1}, sigma >= 0:
// its diagonal into diag and the multipliers rho (rho[0] = 0) with which
// column j continues below the diagonal, (T + sigma I)^{-1}[i][j] =
// diag[j] rho[j+1] ... rho[i] for i > j. Both have length at least N(); the
// cost is O(n). rho_i = -T[i][i-1] / E_i with E_i the bottom-up pivots of
// [BidiagGram.ShiftedInverseDiag].
func (b BidiagGram) ShiftedInverseGen(sigma float64, diag, rho []float64) {
	n := b.N()
	b.check(min(len(diag), len(rho)))
	if n == 0 {
		return
	}
	b.ShiftedInverseDiag(sigma, diag, rho)
	g, h := b.Diag, b.Sub
	s := g[n-1]*g[n-1] + sigma
	e := h[n-1]*h[n-1] + s
	rho[0] = 0
	for i := n - 1; i >= 1; i-- {
		rho[i] = -h[i] * g[i-1] / e
		s = sigma + g[i-1]*g[i-1]*(s/e)
		e = h[i-1]*h[i-1] + s
	}
}

// CountBelow returns the number of eigenvalues of T that are less than x,
// by Sylvester's law of inertia applied to the LDL^T factorization of
// T - x I computed by the differential stationary qd transform (Dhillon and
// Parlett 2004), which is stable in the mixed relative sense.
//
// From order 65,536 on it counts instead the inertia of the twisted
// factorization of T - x I at k = n / 2 (see
// [BidiagGram.ShiftedInverseDiag] with sigma = -x): the top-down pivots D_0, ..., D_{k-1}, the bottom-up
// pivots E_{k+1}, ..., E_{n-1} and the twist gamma_k = p_k + s_k, whose
// signs together are those of T - x I's eigenvalues (the twisted
// factorization is N Delta N^T with Delta = diag(D_0, ..., gamma_k, ...,
// E_{n-1})). The two recurrences are independent and run on two goroutines
// where GOMAXPROCS allows; the count does not depend on it.
func (b BidiagGram) CountBelow(x float64) int {
	n := b.N()
	b.check(n)
	if n < bidiagParallelOrder {
		c, _ := b.countDown(x, n)
		return c
	}
	k := n / 2
	var top, bottom int
	var p, s float64
	par.Both(math.Inf(1), func() { top, p = b.countDown(x, k) }, func() { bottom, s = b.countUp(x, k) })
	if p+s < 0 {
		bottom++
	}
	return top + bottom
}

// countDown returns the number of negative pivots D_0, ..., D_{m-1} of the
// top-down factorization of T - x I (see CountBelow) and, for m < n,
// p_m = h_m^2 t_{m-1} / D_{m-1}.
func (b BidiagGram) countDown(x float64, m int) (int, float64) {
	g, h := b.Diag, b.Sub
	count := 0
	t := -x
	floor := 0.0 // the pivot floor, once needed
	for i := 0; i < m; i++ {
		if i > 0 {
			t = -x + h[i]*h[i]*t
		}
		t /= b.countPivot(g[i]*g[i]+t, x, &floor, &count)
	}
	if m == 0 || m >= len(g) {
		return count, 0
	}
	return count, h[m] * h[m] * t
}

// countUp returns the number of negative pivots E_{m+1}, ..., E_{n-1} of
// the bottom-up factorization of T - x I (see CountBelow), for m < n, and
// s_m = -x + g_m^2 s_{m+1} / E_{m+1} (s_{n-1} = g_{n-1}^2 - x).
func (b BidiagGram) countUp(x float64, m int) (int, float64) {
	g, h := b.Diag, b.Sub
	n := len(g)
	floor := 0.0
	count := 0
	s := g[n-1]*g[n-1] - x
	for i := n - 1; i > m; i-- {
		e := b.countPivot(h[i]*h[i]+s, x, &floor, &count)
		s = -x + g[i-1]*g[i-1]*(s/e)
	}
	return count, s
}

// countPivot adds 1 to *count if the pivot d of countDown or countUp is
// negative, and returns d, or in place of a d that is zero to working
// precision (below 4 times the smallest subnormal in magnitude) the pivot
// floor with the sign d was counted with (zero as positive): u
// (Gershgorin's bound on ||T|| + |x|), a perturbation of one pivot at the
// size of rounding that keeps the recurrence finite (a subnormal pivot
// makes t / d overflow, and Inf / Inf is NaN after it), or 4 times the
// smallest subnormal where that bound is not finite and larger. *floor is
// the floor already computed for this x (0 if none), and is set when
// computed.
func (b BidiagGram) countPivot(d, x float64, floor *float64, count *int) float64 {
	if d < 0 {
		*count++
	}
	if math.Abs(d) >= math.SmallestNonzeroFloat64*4 || math.IsNaN(d) {
		return d
	}
	if *floor == 0 {
		*floor = roundingFloor(b.Gershgorin(), x)
	}
	if d < 0 {
		return -*floor
	}
	return *floor
}

// bidiagParallelOrder is the order from which [BidiagGram.CountBelow] and
// [BidiagGram.Gershgorin] split their work over two goroutines (below it
// they keep the sequential loops of old, bit for bit); a variable so that
// the tests can move it.
var bidiagParallelOrder = 1 << 16

// Gershgorin returns Gershgorin's upper bound on lambda_max(T), raised by a
// relative 1e-12 to cover rounding. The cost is O(n); from order 65,536
// on, chunks of gershgorinChunk rows run on as many goroutines as
// GOMAXPROCS and the length allow ([par.For]). The result is a maximum of
// exactly computed row bounds, so it does not depend on the split.
func (b BidiagGram) Gershgorin() float64 {
	n := b.N()
	b.check(n)
	if n < bidiagParallelOrder {
		return b.gershgorinRows(0, n) * (1 + 1e-12)
	}
	part := make([]float64, (n+gershgorinChunk-1)/gershgorinChunk)
	// About 8 units of par.Grain per row: two squares, two products and
	// three loads of the rows' entries.
	par.Range(n, gershgorinChunk, 8, func(lo, hi int) {
		part[lo/gershgorinChunk] = b.gershgorinRows(lo, hi)
	})
	// Every part is at least 0 or NaN, which slices.Max propagates as
	// math.Max does.
	return slices.Max(part) * (1 + 1e-12)
}

// gershgorinChunk is the number of rows of one chunk of
// [BidiagGram.Gershgorin].
const gershgorinChunk = 1 << 15

// gershgorinRows returns the largest Gershgorin row bound of rows [lo, hi).
func (b BidiagGram) gershgorinRows(lo, hi int) float64 {
	g, h := b.Diag, b.Sub
	n := len(g)
	m := 0.0
	for i := lo; i < hi; i++ {
		r := g[i]*g[i] + h[i]*h[i]
		if i > 0 {
			r += math.Abs(h[i] * g[i-1])
		}
		if i+1 < n {
			r += math.Abs(h[i+1] * g[i])
		}
		m = math.Max(m, r)
	}
	return m
}

// Bounds returns lo and hi with lo <= lambda_min(T) and
// lambda_max(T) <= hi. hi is Gershgorin's bound. lo is found by bisection on
// [BidiagGram.CountBelow] to within a factor 1.01 of lambda_min, starting from
// guess (pass 0 when there is none), and is then lowered by a relative 1e-8
// to cover rounding in the inertia count. The search is bounded for every
// input: when T's entries are not finite or its spectrum leaves the
// floating-point range, lo is 0 (and hi may be NaN or +Inf), which callers
// must treat as a numerical breakdown.
func (b BidiagGram) Bounds(guess float64) (lo, hi float64) {
	hi = b.Gershgorin()
	return bisectLowest(b.CountBelow, guess, hi), hi
}

// PrefixSolveEnds solves (T + sigma I) z = b^{(r)} for every r at once, where
// b^{(r)} is rhs with the entries after r set to zero, and writes z_r into
// zr[r] and z_{r+1} into zr1[r] (zr1[n-1] = 0). The cost is O(n) for all n
// right-hand sides together. work must have length at least 2 N().
//
// Forward elimination of b^{(r)} agrees with that of rhs up to row r, giving
// y_r; the twisted factorization at r (see [BidiagGram.ShiftedInverseDiag])
// then gives z_r = y_r / gamma_r, and the rows below r, whose right-hand side
// is zero, give z_{r+1} = -(T[r+1][r] / E_{r+1}) z_r.
func (b BidiagGram) PrefixSolveEnds(sigma float64, rhs, zr, zr1, work []float64) {
	n := b.N()
	b.check(min(len(rhs), len(zr), len(zr1), len(work)/2))
	if n == 0 {
		return
	}
	g, h := b.Diag, b.Sub
	p, y := work[:n], work[n:2*n]
	p[0] = 0
	t := sigma
	d := g[0]*g[0] + t
	y[0] = rhs[0]
	for i := 1; i < n; i++ {
		y[i] = rhs[i] - h[i]*g[i-1]/d*y[i-1]
		pi := h[i] * h[i] * (t / d)
		p[i] = pi
		t = sigma + pi
		d = g[i]*g[i] + t
	}
	s := g[n-1]*g[n-1] + sigma
	zr[n-1] = y[n-1] / (p[n-1] + s)
	zr1[n-1] = 0
	for i := n - 2; i >= 0; i-- {
		e := h[i+1]*h[i+1] + s // E_{i+1}
		rho := -h[i+1] * g[i] / e
		s = sigma + g[i]*g[i]*(s/e)
		zr[i] = y[i] / (p[i] + s)
		zr1[i] = rho * zr[i]
	}
}
