package factorize

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// This file computes diag(M^{1/2}), M = D A^T A D, D = diag(sqrt(v)), to
// about twice double precision, independently of the solver's evaluators:
// M is formed from A's float64 entries and v in double-double arithmetic
// (error-free products and compensated sums), and the square root is
// Newton's iteration X <- X + F, X F + F X = M - X^2, started from
// float64 eigenvectors of M, with the residual M - X^2 computed in
// double-double and each correction solved in float64 in the fixed
// eigenbasis. The result is checked by squaring it back: for symmetric
// positive definite X, ||X - M^{1/2}||_2 <= ||X^2 - M||_2 /
// (lambda_min(X) + lambda_min(M)^{1/2}), which bounds every diagonal entry's
// error.

// dot2 returns x . y as an unevaluated sum hi + lo whose error is at most
// about n^2 2^-106 sum_k |x_k y_k| (Ogita, Rump and Oishi's Dot2, the pair
// kept unrounded).
func dot2(x, y []float64) (hi, lo float64) {
	for k, a := range x {
		p, e := ddfloat.TwoProd(a, y[k])
		var f float64
		hi, f = ddfloat.TwoSum(hi, p)
		lo += e + f
	}
	return ddfloat.TwoSum(hi, lo)
}

// refSqrt is the high-precision reference for one workload and v.
type refSqrt struct {
	n      int
	mh, ml []float64 // M = mh + ml, row-major, symmetric
	phi    []float64 // diag(M^{1/2}), rounded
	phiLo  []float64 // phi's low parts: diag = phi + phiLo
	absErr float64   // bound on |phi_i + phiLo_i - diag(M^{1/2})_i|, every i
	cond   float64   // estimated condition number of M
	iters  int
}

// newRefSqrt computes the reference for the lower-triangular workload a (its
// float64 entries, as the dense evaluator reads them) and multipliers v. It
// fails (an error, not a wrong value) when M is too ill-conditioned for the
// float64 start or the iteration does not reach a residual near
// double-double rounding.
func newRefSqrt(a *mat.TriDense, v []float64) (*refSqrt, error) {
	n, _ := a.Triangle()
	// Columns of A as contiguous rows of A^T: at[j*n+k] = A[k][j].
	at := make([]float64, n*n)
	for k := 0; k < n; k++ {
		for j := 0; j <= k; j++ {
			at[j*n+k] = a.At(k, j)
		}
	}
	return refSqrtFromColumns(n, at, v)
}

// refSqrtFromColumns forms M = D A^T A D in double-double from the columns
// of the lower-triangular A (row j of at holds column j) and computes the
// reference.
func refSqrtFromColumns(n int, at, v []float64) (*refSqrt, error) {
	if len(v) != n {
		return nil, fmt.Errorf("refSqrt: v has %d entries, want %d", len(v), n)
	}
	sh, sl, err := ddSqrts(v)
	if err != nil {
		return nil, err
	}
	mh, ml := make([]float64, n*n), make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			// S_ij = sum_{k >= j} A_ki A_kj (A lower triangular, j >= i).
			h, l := dot2(at[i*n+j:i*n+n], at[j*n+j:j*n+n])
			h, l = ddfloat.Mul(sh[i], sl[i], h, l)
			h, l = ddfloat.Mul(h, l, sh[j], sl[j])
			mh[i*n+j], ml[i*n+j] = h, l
			mh[j*n+i], ml[j*n+i] = h, l
		}
	}
	return refSqrtOf(n, mh, ml)
}

// refSqrtOf computes the reference for the symmetric positive definite
// M = mh + ml (row-major, n x n, kept).
func refSqrtOf(n int, mh, ml []float64) (*refSqrt, error) {
	r := &refSqrt{n: n, mh: mh, ml: ml}

	// Float64 eigenvectors and eigenvalues of M.
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, append([]float64(nil), r.mh...)), true) {
		return nil, fmt.Errorf("refSqrt: float64 eigendecomposition failed")
	}
	lam := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	lmin, lmax := lam[0], lam[n-1]
	r.cond = lmax / lmin
	// The float64 eigenvalues are within about n u lambda_max of M's
	// (a backward stable solver): lo is a lower bound on lambda_min(M).
	lo := lmin - float64(n)*0x1p-53*lmax
	if !(lo > 0) {
		return nil, fmt.Errorf("refSqrt: M too ill-conditioned for the float64 start (lambda in [%g, %g])", lmin, lmax)
	}
	s := make([]float64, n)
	for i, l := range lam {
		s[i] = math.Sqrt(l)
	}
	// X = xh + xl, symmetric; start from Q diag(s) Q^T.
	qs := mat.DenseCopyOf(&q)
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			qs.Set(i, j, qs.At(i, j)*s[j])
		}
	}
	var x0 mat.Dense
	x0.Mul(qs, q.T())
	xh, xl := make([]float64, n*n), make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			m := (x0.At(i, j) + x0.At(j, i)) / 2
			xh[i*n+j], xh[j*n+i] = m, m
		}
	}

	res := mat.NewDense(n, n, nil)
	// residual writes R = M - X^2 into res and returns ||R||_F and a bound
	// on the error of its computation in the Frobenius norm.
	residual := func() (float64, float64) {
		h := mat.NewDense(n, n, xh)
		l := mat.NewDense(n, n, xl)
		var hl, ll mat.Dense
		hl.Mul(h, l)
		ll.Mul(l, l)
		norm := 0.0
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				// (H H)_ij = row i . row j (H symmetric).
				ph, pl := dot2(xh[i*n:i*n+n], xh[j*n:j*n+n])
				d, e := ddfloat.TwoSum(r.mh[i*n+j], -ph)
				v := d + (e + r.ml[i*n+j] - pl - hl.At(i, j) - hl.At(j, i) - ll.At(i, j))
				res.Set(i, j, v)
				res.Set(j, i, v)
				w := 2.0
				if i == j {
					w = 1
				}
				norm += w * v * v
			}
		}
		// Dot2's error is at most about n^2 2^-106 (|H||H|)_ij, the float64
		// products H L and L L add n u |H||L| <= n 2^-106 |H||H| (|L| <= u |H|
		// entrywise), and ||(|H||H|)||_F <= ||H||_F^2: the computed R is
		// within 4 n^2 2^-106 ||H||_F^2 of M - X^2 in the Frobenius norm.
		hf := 0.0
		for _, y := range xh {
			hf += y * y
		}
		return math.Sqrt(norm), 4 * float64(n) * float64(n) * 0x1p-106 * hf
	}
	prev := math.Inf(1)
	var norm, errR float64
	for it := 0; ; it++ {
		norm, errR = residual()
		r.iters = it
		if norm <= errR || norm >= prev/4 || it == 8 {
			break
		}
		prev = norm
		// F = Q ((Q^T R Q)_ij / (s_i + s_j)) Q^T, symmetrised.
		var g, tmp, f mat.Dense
		tmp.Mul(q.T(), res)
		g.Mul(&tmp, &q)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				g.Set(i, j, g.At(i, j)/(s[i]+s[j]))
			}
		}
		tmp.Mul(&q, &g)
		f.Mul(&tmp, q.T())
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				c := (f.At(i, j) + f.At(j, i)) / 2
				h, e := ddfloat.TwoSum(xh[i*n+j], c)
				h, e = ddfloat.TwoSum(h, e+xl[i*n+j])
				xh[i*n+j], xl[i*n+j] = h, e
				xh[j*n+i], xl[j*n+i] = h, e
			}
		}
	}
	// ||X - M^{1/2}||_2 <= ||X^2 - M||_2 / (lambda_min(X) + sqrt(lambda_min(M))),
	// with lambda_min(X)^2 >= lambda_min(M) - ||X^2 - M||_2 (Weyl).
	rn := norm + errR
	if !(lo > rn) {
		return nil, fmt.Errorf("refSqrt: residual %.2g not below lambda_min %.2g", rn, lo)
	}
	r.absErr = rn / (math.Sqrt(lo-rn) + math.Sqrt(lo))
	r.phi, r.phiLo = make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		r.phi[i], r.phiLo[i] = xh[i*n+i], xl[i*n+i]
	}
	if rel := r.absErr / math.Sqrt(lo); !(rel <= 1e-13) {
		return nil, fmt.Errorf("refSqrt: reference error bound %.2g relative (residual %.2g after %d steps) is not below 1e-13", rel, norm, r.iters)
	}
	return r, nil
}

// absDiff returns |got - (phi_i + phiLo_i)|, the error of a float64 value
// of entry i against the reference.
func (r *refSqrt) absDiff(i int, got float64) float64 {
	return math.Abs((got - r.phi[i]) - r.phiLo[i])
}

// The reference against closed forms: M = T^2 for T = G K G, K the
// second-difference matrix tridiag(-1, 2, -1) and G diagonal with powers of
// two, so that M is exact in float64 and M^{1/2} = T (T is positive
// definite): diag(M^{1/2})_i = 2 G_i^2. Ungraded at n = 300 (cond(M) about
// 1.3e9) and graded by 2^-floor(i/25) at n = 100 (about 6e9), like the
// momentum workloads' M.
func TestRefSqrtClosedForm(t *testing.T) {
	for _, c := range []struct{ n, step int }{{300, 0}, {100, 25}} {
		n := c.n
		g := make([]float64, n)
		for i := range g {
			g[i] = 1
			if c.step > 0 {
				g[i] = math.Ldexp(1, -i/c.step)
			}
		}
		tm := func(i, j int) float64 {
			switch {
			case i == j:
				return 2 * g[i] * g[i]
			case i-j == 1 || j-i == 1:
				return -g[i] * g[j]
			}
			return 0
		}
		mh := make([]float64, n*n)
		for i := 0; i < n; i++ {
			for j := max(0, i-2); j <= min(n-1, i+2); j++ {
				s := 0.0
				for k := max(0, i-1); k <= min(n-1, i+1); k++ {
					s += tm(i, k) * tm(k, j)
				}
				mh[i*n+j] = s
			}
		}
		r, err := refSqrtOf(n, mh, make([]float64, n*n))
		require.NoError(t, err)
		worst := 0.0
		for i := 0; i < n; i++ {
			d := r.absDiff(i, 2*g[i]*g[i])
			require.LessOrEqual(t, d, r.absErr, "n=%d entry %d: the reference's own bound", n, i)
			worst = math.Max(worst, d/(2*g[i]*g[i]))
		}
		assert.Less(t, worst, 1e-20, "n=%d", n)
		t.Logf("n=%d cond %.1e: largest relative error %.1e, bound %.1e, %d Newton steps", n, r.cond, worst, r.absErr/(2*g[n-1]*g[n-1]), r.iters)
	}
}

// newRefSqrtBand computes the reference for the workload A = L^{-1} of a
// band inverse L (w.InverseBand, float64 entries taken as exact) and
// multipliers v, for comparison with the structured path, which works
// with L itself: A's columns in double-double by forward substitution
// (where newRefSqrt reads A's float64 entries, each rounded once, which
// perturbs diag(M^{1/2}) by a relative several u on the momentum
// workloads), then S = A^T A and M = D S D in double-double. The error of
// forming M, a few u^2 relative to the terms' magnitudes, moves the result
// by about u^2 cond(M), below 1e-20 here, which absErr does not count.
func newRefSqrtBand(w *Workload, v []float64) (*refSqrt, error) {
	inv, ok := w.InverseBand()
	if !ok {
		return nil, fmt.Errorf("refSqrt: workload %q has no band inverse", w.Name())
	}
	n, _, _ := inv.TriBand()
	ah, al := ddInverseColumns(inv)
	sh, sl, err := ddSqrts(v)
	if err != nil {
		return nil, err
	}
	mh, ml := make([]float64, n*n), make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			h, l := 0.0, 0.0
			for r := j; r < n; r++ {
				th, tl := ddfloat.Mul(ah[i*n+r], al[i*n+r], ah[j*n+r], al[j*n+r])
				h, l = ddfloat.Add(h, l, th, tl)
			}
			h, l = ddfloat.Mul(sh[i], sl[i], h, l)
			h, l = ddfloat.Mul(h, l, sh[j], sl[j])
			mh[i*n+j], ml[i*n+j] = h, l
			mh[j*n+i], ml[j*n+i] = h, l
		}
	}
	return refSqrtOf(n, mh, ml)
}

// ddSqrts returns sqrt(v) in double-double (high and low parts), each
// within a few u^2 relatively; every entry of v must be positive.
func ddSqrts(v []float64) (sh, sl []float64, err error) {
	sh, sl = make([]float64, len(v)), make([]float64, len(v))
	for i, x := range v {
		if !(x > 0) {
			return nil, nil, fmt.Errorf("refSqrt: v[%d] = %v, want > 0", i, x)
		}
		h := math.Sqrt(x)
		sh[i], sl[i] = h, math.FMA(-h, h, x)/(2*h)
	}
	return sh, sl, nil
}

// ddInverseColumns returns the columns of A = L^{-1} for the band lower
// triangular L, in double-double by forward substitution: column j, rows
// j..n-1, at ah[j*n+i], al[j*n+i] (row-major by column; zero above the
// diagonal).
func ddInverseColumns(inv *mat.TriBandDense) (ah, al []float64) {
	n, k, _ := inv.TriBand()
	ah, al = make([]float64, n*n), make([]float64, n*n)
	for j := 0; j < n; j++ {
		for i := j; i < n; i++ {
			h, l := 0.0, 0.0
			if i == j {
				h = 1
			}
			for p := max(j, i-k); p < i; p++ {
				th, tl := ddfloat.MulFloat(ah[j*n+p], al[j*n+p], inv.At(i, p))
				h, l = ddfloat.Add(h, l, -th, -tl)
			}
			ah[j*n+i], al[j*n+i] = ddfloat.Div(h, l, inv.At(i, i), 0)
		}
	}
	return ah, al
}
