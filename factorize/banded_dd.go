package factorize

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/linalg"
)

// bandedDDErrRatio is the factor by which the certificate takes the band of
// G from [bandedProblem.evalGDD] to be more accurate than the float64
// evaluation's measured rounding: 2^-26, where the rounding models give
// about 2^-46 (the same algorithm, so the same amplification by cond(Q),
// with every sum of m products within (1.5 m (m + 1) + 12 m + 4) u^2 of
// its terms' magnitudes against gamma_m = m u in float64: a ratio of
// about 1.5 (m + 1) u, 100 u at m = 64, u = 2^-53).
// TestBandedGDDAccuracy checks the allowance against a 400-bit reference.
const bandedDDErrRatio = 0x1p-26

// evalGDD writes into g (the layout of x.Data) the band of
// G = X^{-1} S X^{-1} = L Q^{-2} L^T, Q = L^T X L, evaluated in double-word
// arithmetic: Q formed from the float64 entries of X and L with exact
// products and compensated sums, its band LDL^T factorization and the
// selected inversion with their derivatives in the shift by
// [linalg.SymBandDD.InverseBandSquaredRows], and G's entries, second
// differences of those of Q^{-2} for prefix sums, summed in double words
// before they are rounded once. It returns f = tr(Q^{-1}) the same way,
// and ok false when Q is not numerically positive definite.
//
// The float64 evaluation ([bandedProblem.eval]) loses about u cond(Q) of
// G's largest entries, and at R = 10^5 that error (about 0.5 on entries of
// order 10^10) is what keeps the dual bound from certifying
// (docs/solver.md, "G in double-word arithmetic"); here it is of order
// u^2 cond(Q). Its kernel costs 14 times the float64 one on one core
// (BenchmarkSymBandDDInverseBandSquaredRows, N = 10^4, K = 64) and runs on
// one core; at R = 10^5 with 64 bands a call took about 9 s, some 25
// iterations' time on two cores. It holds O(R b) memory while it runs
// (about 360 MB there), so the certificate calls it only where the float64
// band's rounding is what stops it.
func (bp *bandedProblem) evalGDD(x linalg.SymBand, g []float64) (f float64, ok bool) {
	n, b, p := bp.n, bp.b, bp.p
	kq := bp.q.K
	w := kq + 1
	wl := p + 1
	lAt := func(a, c int) float64 { // L[a][c], zero outside the band
		if c < 0 || a >= n || a < c || a-c > p {
			return 0
		}
		return bp.lb[a*wl+a-c]
	}
	q := linalg.SymBandDD{N: n, K: kq, Hi: make([]float64, n*w), Lo: make([]float64, n*w)}
	forBandRows(n, float64(wl*wl*w*4), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for d := 0; d <= kq && d <= i; d++ {
				j := i - d
				// Q[i][j] = sum_{s,t} L[i+s][i] X[i+s][j+t] L[j+t][j].
				h, l := 0.0, 0.0
				for s := 0; s <= p && i+s < n; s++ {
					ls := lAt(i+s, i)
					for t := 0; t <= p && j+t < n; t++ {
						xv := x.At(i+s, j+t)
						if xv == 0 || ls == 0 {
							continue
						}
						ph, pl := ddfloat.TwoProd(ls, lAt(j+t, j))
						h, l = ddfloat.AddProd(h, l, ph, pl, xv, 0)
					}
				}
				q.Hi[i*w+d], q.Lo[i*w+d] = ddfloat.TwoSum(h, l)
			}
		}
	})
	fh, fl := 0.0, 0.0
	// G row i = sum_{s,t} L[i][i-s] E[i-s][j-t] L[j][j-t], E = Q^{-2}, for
	// j in [i-b+1, i]: its entries E[a][c] have c >= i-kq, so the row is
	// complete once column i-kq of the selected inversion is.
	gRow := func(i int, row func(r int) (zh, zl, z2h, z2l []float64)) {
		gr := g[i*b : i*b+b]
		clear(gr)
		for d := 0; d < b && d <= i; d++ {
			j := i - d
			h, l := 0.0, 0.0
			for s := 0; s <= p && s <= i; s++ {
				_, _, eh, el := row(i - s)
				for t := 0; t <= p && t <= j; t++ {
					ph, pl := ddfloat.TwoProd(lAt(i, i-s), lAt(j, j-t))
					if ph == 0 {
						continue
					}
					// E[i-s][j-t] at kq + (j-t) - (i-s) in row i-s.
					o := kq + j - t - i + s
					h, l = ddfloat.AddProd(h, l, eh[o], el[o], ph, pl)
				}
			}
			gr[d] = h + l
		}
	}
	visit := func(c int, row func(r int) (zh, zl, z2h, z2l []float64)) {
		zh, zl, _, _ := row(c)
		fh, fl = ddfloat.Add(fh, fl, zh[kq], zl[kq])
		if c > 0 {
			if i := c + kq; i < n {
				gRow(i, row)
			}
			return
		}
		for i := 0; i <= min(kq, n-1); i++ {
			gRow(i, row)
		}
	}
	if q.InverseBandSquaredRows(visit, make([]float64, linalg.InverseBandSquaredDDWork(n, kq))) > 0 {
		return 0, false
	}
	return fh + fl, fh > 0
}

// ddBandAllowance returns the error bound the certificate takes for the
// band of G from [bandedProblem.evalGDD] in g: the float64 evaluation's
// allowance gErr times bandedDDErrRatio, plus the rounding of the
// off-diagonal entries to float64 (u |G_ij| each, in Frobenius norm over
// both triangles) and the Frobenius norm rn of that band (returned too).
func (bp *bandedProblem) ddBandAllowance(g []float64, gErr float64) (rn, err float64) {
	n, b := bp.n, bp.b
	s := 0.0
	for i := 0; i < n; i++ {
		for d := 1; d < b && d <= i; d++ {
			v := g[i*b+d]
			s += 2 * v * v
		}
	}
	rn = math.Sqrt(s) * (1 + gammaU(n*b))
	return rn, gErr*bandedDDErrRatio + 0x1p-53*rn
}

// eRitz returns the largest Ritz value of E = M R M^T after steps steps of
// the Lanczos method with full reorthogonalization from a fixed start
// (M from the last [bandedProblem.formM], R by rows in bp.rf as
// [bandedProblem.fillRF] left it): an estimate of lambda_max(E) from below,
// not a bound, which only places the LDL^T proofs of a bound on it. Each
// step is three band products with a vector, O(R b).
func (bp *bandedProblem) eRitz(steps int) float64 {
	n := bp.n
	steps = min(steps, n)
	y, z := make([]float64, n), make([]float64, n)
	apply := func(dst, v []float64) {
		bp.mColumns(y, v, true)     // y = M^T v
		bp.rRows(z, y, bp.rf, true) // z = R y
		bp.mRows(dst, z, true)      // dst = M z
	}
	vs := make([][]float64, 0, steps)
	v := make([]float64, n)
	for i := range v {
		v[i] = 1 + 0.5*math.Sin(float64(i)) // a fixed start that is not an eigenvector
	}
	t := mat.NewSymDense(steps, nil)
	for j := 0; j < steps; j++ {
		nv := math.Sqrt(linalg.Dot(v, v))
		if !(nv > 0) { // an invariant subspace: its Ritz values are exact
			break
		}
		for i := range v {
			v[i] /= nv
		}
		vs = append(vs, v)
		w := make([]float64, n)
		apply(w, v)
		for a := max(0, j-1); a <= j; a++ {
			t.SetSym(a, j, linalg.Dot(w, vs[a]))
		}
		for range 2 { // full reorthogonalization, twice
			for _, u := range vs {
				c := linalg.Dot(w, u)
				for i := range w {
					w[i] -= c * u[i]
				}
			}
		}
		v = w
	}
	if len(vs) == 0 {
		return 0
	}
	var es mat.EigenSym
	if !es.Factorize(t.SliceSym(0, len(vs)), false) {
		return math.Inf(1)
	}
	vals := es.Values(nil)
	return vals[len(vals)-1]
}
