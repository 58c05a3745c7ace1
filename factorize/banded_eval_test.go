package factorize

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// randomInverseBand returns a random n x n lower-triangular band matrix
// with p subdiagonals, as L = A^{-1}: diagonally dominant by rows (the
// subdiagonal entries of a row sum to at most 0.6 in magnitude, the
// diagonal at least 1), so that A stays well conditioned at any order and
// the dense reference is accurate.
func randomInverseBand(rng *rand.Rand, n, p int) *mat.TriBandDense {
	inv := mat.NewTriBandDense(n, p, mat.Lower, nil)
	for i := 0; i < n; i++ {
		inv.SetTriBand(i, i, 1+rng.Float64())
		for j := max(0, i-p); j < i; j++ {
			inv.SetTriBand(i, j, 0.6*(2*rng.Float64()-1)/float64(p))
		}
	}
	return inv
}

// randomBandedX returns a random X = N^{-1} C^T C N^{-1} banded within b
// with unit diagonal (C lower triangular with b bands, a positive diagonal,
// N its column norms), formed densely, and the same as a SymBand.
func randomBandedX(rng *rand.Rand, n, b int) (*mat.SymDense, linalg.SymBand) {
	c := mat.NewDense(n, n, nil)
	for j := 0; j < n; j++ {
		c.Set(j, j, 1+rng.Float64())
		for i := j + 1; i < min(n, j+b); i++ {
			c.Set(i, j, 0.4*rng.NormFloat64())
		}
	}
	xd := normalizedGram(c)
	x := linalg.NewSymBand(n, b-1)
	for i := 0; i < n; i++ {
		for j := max(0, i-b+1); j <= i; j++ {
			x.Data[i*b+i-j] = xd.At(i, j)
		}
	}
	return xd, x
}

// normalizedGram returns N^{-1} C^T C N^{-1}, N the diagonal of C's column
// norms, formed densely.
func normalizedGram(c *mat.Dense) *mat.SymDense {
	_, n := c.Dims()
	var g mat.SymDense
	g.SymOuterK(1, c.T())
	x := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			x.SetSym(i, j, g.At(i, j)/math.Sqrt(g.At(i, i)*g.At(j, j)))
		}
	}
	return x
}

// denseBandedObjective returns f = tr(S X^{-1}), G = X^{-1} S X^{-1} and
// H = X^{-1} for S = A^T A, A = inv^{-1}, by gonum's dense inverses.
func denseBandedObjective(t *testing.T, inv *mat.TriBandDense, xd *mat.SymDense) (float64, *mat.Dense, *mat.Dense) {
	n, _, _ := inv.TriBand()
	l := mat.NewTriDense(n, mat.Lower, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			l.SetTri(i, j, inv.At(i, j))
		}
	}
	var a mat.TriDense
	require.NoError(t, a.InverseTri(l))
	ad := mat.DenseCopyOf(&a)
	var s, h, sh, g mat.Dense
	s.Mul(ad.T(), ad)
	require.NoError(t, h.Inverse(xd))
	sh.Mul(&s, &h)
	g.Mul(&h, &sh)
	f := 0.0
	for i := 0; i < n; i++ {
		f += sh.At(i, i)
	}
	return f, &g, &h
}

// bandedEvalCase is a workload's inverse band with a name.
type bandedEvalCase struct {
	name string
	inv  *mat.TriBandDense
}

// bandedEvalCases returns inverse bands with p = 0 to 3 subdiagonals (at
// most R - 1) for the order n: random ones, and those of prefix sums,
// momentum and a weighted prefix where they exist at that order.
func bandedEvalCases(t *testing.T, rng *rand.Rand, n int) []bandedEvalCase {
	var cs []bandedEvalCase
	for p := 0; p <= min(3, n-1); p++ {
		cs = append(cs, bandedEvalCase{fmt.Sprintf("random p=%d", p), randomInverseBand(rng, n, p)})
	}
	mom, err := Momentum(n, 0.7)
	require.NoError(t, err)
	wts := make([]float64, n)
	for i := range wts {
		wts[i] = 0.5 + rng.Float64()
	}
	wp, err := WeightedPrefix(wts)
	require.NoError(t, err)
	for _, w := range []*Workload{prefix(t, n), mom, wp} {
		inv, ok := w.InverseBand()
		require.True(t, ok)
		_, p, _ := inv.TriBand()
		cs = append(cs, bandedEvalCase{fmt.Sprintf("%s p=%d", w.Name(), p), inv})
	}
	return cs
}

// The banded evaluation (Q = L^T X L formed from X's band, f = tr(Q^{-1}),
// the bands of G and H = X^{-1}, the gradient -2 G off the diagonal)
// against dense gonum inverses, at random feasible X, for inverse bands
// with p = 0, 1, 2, 3 subdiagonals (random ones and the workloads'), every
// b from 1 to R, at R = 1, 2, 3, 4, 7 (R < b + p, R = p + 1) and at R =
// 260 (two row chunks, p from 0 to 3) and 257 (a last chunk of one row,
// b = 1 and 2). Every output entry is
// overwritten (they start as NaN). The certificate's linear bound from
// that G (gapOf's sums) against the same sum over the dense G.
func TestBandedEvalDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	check := func(c bandedEvalCase, n, b int, tol float64) {
		t.Helper()
		bp := newBandedProblem(c.inv, b)
		xd, x := randomBandedX(rng, n, b)
		m := n * b
		grad, g := make([]float64, m), make([]float64, m)
		// Garbage in the outputs: eval must overwrite every entry.
		for i := range grad {
			grad[i], g[i], bp.hx[i] = math.NaN(), math.NaN(), math.NaN()
		}
		f, ok := bp.eval(x, grad, g)
		require.True(t, ok, "%s R=%d b=%d", c.name, n, b)
		wantF, gd, hd := denseBandedObjective(t, c.inv, xd)
		require.InEpsilon(t, wantF, f, tol, "%s R=%d b=%d: f", c.name, n, b)
		gScale, hScale := mat.Norm(gd, math.Inf(1)), mat.Norm(hd, math.Inf(1))
		for i := 0; i < n; i++ {
			for d := 0; d < b; d++ {
				k := i*b + d
				if d > i {
					// Outside the matrix: zero (or at least finite).
					require.False(t, math.IsNaN(g[k]) || math.IsNaN(grad[k]) || math.IsNaN(bp.hx[k]), "%s R=%d b=%d: entry %d", c.name, n, b, k)
					continue
				}
				require.InDelta(t, gd.At(i, i-d), g[k], tol*gScale, "%s R=%d b=%d: G[%d][%d]", c.name, n, b, i, i-d)
				require.InDelta(t, hd.At(i, i-d), bp.hx[k], tol*hScale, "%s R=%d b=%d: H[%d][%d]", c.name, n, b, i, i-d)
				wantGrad := -2 * gd.At(i, i-d)
				if d == 0 {
					wantGrad = 0
				}
				require.InDelta(t, wantGrad, grad[k], 2*tol*gScale, "%s R=%d b=%d: grad[%d][%d]", c.name, n, b, i, i-d)
			}
		}
		// The certificate's linear bound P / f, P = sum over the
		// off-diagonal band (both triangles) of |G_ij| - G_ij X_ij: what
		// gapOf returns on a fresh problem with a stop it cannot reach.
		pd, abs := 0.0, 0.0
		for i := 0; i < n; i++ {
			for j := max(0, i-b+1); j <= min(n-1, i+b-1); j++ {
				if i != j {
					pd += math.Abs(gd.At(i, j)) - gd.At(i, j)*xd.At(i, j)
					abs += 2 * math.Abs(gd.At(i, j))
				}
			}
		}
		require.InDelta(t, pd/wantF, bp.gapOf(x, g, f, 0, 1e-300), tol*(abs/wantF+1), "%s R=%d b=%d: linear gap", c.name, n, b)
	}
	for _, n := range []int{1, 2, 3, 4, 7} {
		for _, c := range bandedEvalCases(t, rng, n) {
			for b := 1; b <= n; b++ {
				check(c, n, b, 1e-11)
			}
		}
	}
	for k, c := range bandedEvalCases(t, rng, 260) {
		bs := []int{5}
		if k >= 4 { // the workloads' inverses, after the four random ones
			bs = []int{2, 5}
		}
		for _, b := range bs {
			// Q = L^T X L squares the conditioning of L: at R = 260 momentum's
			// f is rounded to about 1e-10 (as before Q was formed from X's
			// band directly), the random, diagonally dominant L to 1e-15.
			check(c, 260, b, 5e-10)
		}
	}
	// R = 257: a last chunk of one row, fewer than the p + 1 rows of its
	// V and W ring, with b = 1 and 2.
	for _, c := range bandedEvalCases(t, rng, 257) {
		for _, b := range []int{1, 2} {
			check(c, 257, b, 5e-10)
		}
	}
}

// bandedGradC against central differences of f(X(C)) formed densely
// (X = N^{-1} C^T C N^{-1}, f = tr(S X^{-1}) by gonum), for b = 1, 2, b =
// R and R = 1, 2, 3, 6, with p = 0, 1, 2.
func TestBandedGradCDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, n := range []int{1, 2, 3, 6} {
		for p := 0; p <= min(2, n-1); p++ {
			inv := randomInverseBand(rng, n, p)
			for _, b := range []int{1, 2, n} {
				if b > n {
					continue
				}
				bp := newBandedProblem(inv, b)
				m := n * b
				c := make([]float64, m)
				for j := 0; j < n; j++ {
					c[j*b] = 1 + rng.Float64()
					for d := 1; d < b && j+d < n; d++ {
						c[j*b+d] = 0.4 * rng.NormFloat64()
					}
				}
				fOf := func(v []float64) float64 {
					cd := mat.NewDense(n, n, nil)
					for j := 0; j < n; j++ {
						for d := 0; d < b && j+d < n; d++ {
							cd.Set(j+d, j, v[j*b+d])
						}
					}
					f, _, _ := denseBandedObjective(t, inv, normalizedGram(cd))
					return f
				}
				x := linalg.NewSymBand(n, b-1)
				nrm := make([]float64, n)
				require.True(t, bandedXFromC(n, b, c, x, nrm))
				g := make([]float64, m)
				_, ok := bp.eval(x, make([]float64, m), g)
				require.True(t, ok)
				gc := make([]float64, m)
				for i := range gc {
					gc[i] = math.NaN()
				}
				bandedGradC(n, b, c, x, g, nrm, make([]float64, n), gc)
				for j := 0; j < n; j++ {
					for d := 0; d < b && j+d < n; d++ {
						k := j*b + d
						const h = 1e-5
						cp, cm := append([]float64(nil), c...), append([]float64(nil), c...)
						cp[k] += h
						cm[k] -= h
						fd := (fOf(cp) - fOf(cm)) / (2 * h)
						require.InDelta(t, fd, gc[k], 1e-6*(1+math.Abs(fd)), "R=%d p=%d b=%d: C[%d][%d]", n, p, b, j+d, j)
					}
				}
			}
		}
	}
}

// The optimal banded factorization does not depend on the workload's
// scale: weighted prefix sums with every weight times 2^e (e = ±70, ±100:
// gradients of 1e42 or 1e-42, outside float32's range, where the L-BFGS
// pairs are kept) take as many iterations as at e = 0, to the same loss
// times 4^e, and B scales by 2^e.
func TestOptimalBandedScale(t *testing.T) {
	const n, b = 40, 6
	solve := func(e int, lossOnly bool) *Factorization {
		w := make([]float64, n)
		for i := range w {
			w[i] = math.Ldexp(1+0.4*math.Cos(float64(i)), e)
		}
		wl, err := WeightedPrefix(w)
		require.NoError(t, err)
		f, err := OptimalBanded(context.Background(), wl, b, 2, Options{LossOnly: lossOnly})
		require.NoError(t, err, "e = %d", e)
		return f
	}
	ref := solve(0, false)
	for _, e := range []int{70, -70, 100, -100} {
		f := solve(e, e == 70)
		require.Equal(t, ref.Iterations, f.Iterations, "e = %d", e)
		require.InEpsilon(t, ref.Metrics.Loss, math.Ldexp(f.Metrics.Loss, -2*e), 1e-12, "e = %d", e)
		if f.B != nil {
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					require.InDelta(t, ref.B.At(i, j), math.Ldexp(f.B.At(i, j), -e), 1e-12*(1+math.Abs(ref.B.At(i, j))))
					require.InDelta(t, ref.C.At(i, j), f.C.At(i, j), 1e-12)
				}
			}
		}
	}
}

// Whole solves at small R, where the band of Q = L^T X L covers the
// matrix (R <= b - 1 + p), against the dense Newton method over the band
// or a closed form: p = 0 (a diagonal workload, whose optimum is X = I
// with loss sum A_ii^2; R = 1, loss A_00^2), p = 1 and 2 at R = 2, 3, 4
// with every b, and p = 3 (a workload whose detected inverse has three
// subdiagonals) at R = 8.
func TestOptimalBandedSmallIndependent(t *testing.T) {
	ctx := context.Background()
	diag, err := NewWorkload(mat.NewDiagDense(5, []float64{1, 2, 3, 0.5, 1.5}))
	require.NoError(t, err)
	inv, ok := diag.InverseBand()
	require.True(t, ok)
	_, p, _ := inv.TriBand()
	require.Equal(t, 0, p)
	for b := 1; b <= 5; b++ {
		f, err := OptimalBanded(ctx, diag, b, 1, Options{Tol: 1e-10})
		require.NoError(t, err)
		require.InEpsilon(t, 16.5, f.Metrics.Loss, 1e-12, "diagonal b=%d", b)
	}
	for _, b := range []int{1, 3} {
		f, err := OptimalBanded(ctx, prefix(t, 1), b, 1, Options{Tol: 1e-10})
		require.NoError(t, err)
		require.InEpsilon(t, 1, f.Metrics.Loss, 1e-14, "R=1 b=%d", b)
	}
	rng := rand.New(rand.NewPCG(35, 36))
	l := randomInverseBand(rng, 8, 3)
	ld := mat.NewTriDense(8, mat.Lower, nil)
	for i := 0; i < 8; i++ {
		for j := 0; j <= i; j++ {
			ld.SetTri(i, j, l.At(i, j))
		}
	}
	var a mat.TriDense
	require.NoError(t, a.InverseTri(ld))
	band3, err := NewWorkload(&a)
	require.NoError(t, err)
	inv, ok = band3.InverseBand()
	require.True(t, ok)
	_, p, _ = inv.TriBand()
	require.Equal(t, 3, p)
	cases := []struct {
		w *Workload
		b int
	}{{band3, 2}, {band3, 3}, {band3, 6}}
	for _, r := range []int{2, 3, 4} {
		mom, err := Momentum(r, 0.6)
		require.NoError(t, err)
		for b := 2; b <= r; b++ {
			cases = append(cases, struct {
				w *Workload
				b int
			}{prefix(t, r), b}, struct {
				w *Workload
				b int
			}{mom, b})
		}
	}
	for _, c := range cases {
		inv, _ := c.w.InverseBand()
		_, p, _ := inv.TriBand()
		want := bandedNewton(t, c.w, c.b)
		f, err := OptimalBanded(ctx, c.w, c.b, 1, Options{Tol: 1e-10})
		require.NoError(t, err)
		require.InEpsilon(t, want, f.Metrics.Loss, 1e-9, "%s p=%d R=%d b=%d", c.w.Name(), p, c.w.R(), c.b)
		require.LessOrEqual(t, f.Gap, 1e-10)
	}
}

// At R = 260 (two row chunks of bandedGradC's column loop) the gradient in
// C against its formula evaluated densely with gonum's G = X^{-1} S X^{-1}:
// df/dC[r][j] = (2 / N_j) ((G X)_jj C~[r][j] - (C~ G)[r][j]), C~ = C N^{-1}
// (the formula itself is checked against differences at small R above).
func TestBandedGradCDenseFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	const n = 260
	for _, c := range []struct{ p, b int }{{2, 5}, {1, 2}, {0, 4}} {
		inv := randomInverseBand(rng, n, c.p)
		b := c.b
		bp := newBandedProblem(inv, b)
		m := n * b
		cv := make([]float64, m)
		cd := mat.NewDense(n, n, nil)
		for j := 0; j < n; j++ {
			for d := 0; d < b && j+d < n; d++ {
				v := 0.4 * rng.NormFloat64()
				if d == 0 {
					v = 1 + rng.Float64()
				}
				cv[j*b+d] = v
				cd.Set(j+d, j, v)
			}
		}
		nrm := make([]float64, n)
		x := linalg.NewSymBand(n, b-1)
		require.True(t, bandedXFromC(n, b, cv, x, nrm))
		g := make([]float64, m)
		_, ok := bp.eval(x, make([]float64, m), g)
		require.True(t, ok)
		gc := make([]float64, m)
		bandedGradC(n, b, cv, x, g, nrm, make([]float64, n), gc)

		xd := normalizedGram(cd)
		_, gd, _ := denseBandedObjective(t, inv, xd)
		ct := mat.NewDense(n, n, nil)
		for j := 0; j < n; j++ {
			norm := math.Sqrt(mat.Dot(cd.ColView(j), cd.ColView(j)))
			for r := j; r < min(n, j+b); r++ {
				ct.Set(r, j, cd.At(r, j)/norm)
			}
		}
		var ctg, gx mat.Dense
		ctg.Mul(ct, gd)
		gx.Mul(gd, xd)
		scale := 2 * mat.Norm(gd, math.Inf(1))
		for j := 0; j < n; j++ {
			norm := math.Sqrt(mat.Dot(cd.ColView(j), cd.ColView(j)))
			for d := 0; d < b && j+d < n; d++ {
				want := 2 / norm * (gx.At(j, j)*ct.At(j+d, j) - ctg.At(j+d, j))
				require.InDelta(t, want, gc[j*b+d], 1e-11*scale, "p=%d b=%d: C[%d][%d]", c.p, b, j+d, j)
			}
		}
	}
}

// eval reports X not positive definite exactly when it is not (random
// symmetric band matrices with unit diagonal, many of them indefinite, at
// p = 0, 1, 2), by the sign of the smallest eigenvalue of the dense X
// where it is clearly away from zero.
func TestBandedEvalIndefinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	const n, b = 12, 3
	seen := [2]int{}
	for trial := 0; trial < 60; trial++ {
		inv := randomInverseBand(rng, n, trial%3)
		bp := newBandedProblem(inv, b)
		x := linalg.NewSymBand(n, b-1)
		xd := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			x.Data[i*b] = 1
			xd.SetSym(i, i, 1)
			for d := 1; d < b && d <= i; d++ {
				v := 0.8 * (2*rng.Float64() - 1)
				x.Data[i*b+d] = v
				xd.SetSym(i, i-d, v)
			}
		}
		var eig mat.EigenSym
		require.True(t, eig.Factorize(xd, false))
		lmin := eig.Values(nil)[0]
		if math.Abs(lmin) < 1e-6 {
			continue
		}
		_, ok := bp.eval(x, make([]float64, n*b), make([]float64, n*b))
		require.Equal(t, lmin > 0, ok, "trial %d: smallest eigenvalue %g", trial, lmin)
		if ok {
			seen[1]++
		} else {
			seen[0]++
		}
	}
	require.Positive(t, seen[0], "no indefinite X drawn")
	require.Positive(t, seen[1], "no positive definite X drawn")
}

// The preconditioner is the Cholesky factor of each row's band of f's
// Hessian in the entries X_ij, i > j, of the row (within
// bandedPrecondWidth places of the diagonal in the offset index). The
// band is formed independently: by central second differences of the
// dense f in X_ij = X_ji (mixed ones off the diagonal) at R = 7 (every b,
// every case), and from the closed form
// 2 (G_ii H_jk + H_ii G_jk + G_ij H_ik + G_ik H_ij) with the dense H and G
// at R = 260 (two row chunks; b = 5 and 11, where rows are solved four at
// a time and alone; at random X and at the solver's start). The factor times its transpose is that band, and
// applying the preconditioner to a random direction gives y with T y equal
// to the direction's row entries (T the band from the dense f); the
// diagonal entries and those beyond the matrix (j < 0) become 0.
func TestBandedPreconditionDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const w = bandedPrecondWidth
	// Rows whose band is not positive definite (by the dense Cholesky
	// factorization) and rows with more entries than the band's width
	// whose band is: both must occur.
	fallbacks, banded := 0, 0
	check := func(c bandedEvalCase, n, b int, byDiff, atStart bool) {
		t.Helper()
		bp := newBandedProblem(c.inv, b)
		xd, x := randomBandedX(rng, n, b)
		if atStart {
			// The banded square root (the identity where the
			// workload is not Toeplitz), where the solver starts.
			var err error
			x, err = bp.start()
			require.NoError(t, err)
			for i := 0; i < n; i++ {
				for j := 0; j <= i; j++ {
					v := 0.0
					if i-j < b {
						v = x.Data[i*b+i-j]
					}
					xd.SetSym(i, j, v)
				}
			}
		}
		m := n * b
		grad, g, h := make([]float64, m), make([]float64, m), make([]float64, bp.precondLen())
		_, ok := bp.eval(x, grad, g)
		require.True(t, ok)
		bp.precondition(x, g, h)
		_, gd, hd := denseBandedObjective(t, c.inv, xd)
		// Second differences are good to about 1e-5 relatively, the
		// banded H and G against the dense ones to about 1e-7 (momentum,
		// p = 2); the product's terms cancel, so the tolerance is relative
		// to the sum of their magnitudes.
		tol := 1e-6
		if byDiff {
			tol = 1e-4
		}
		// hess returns d^2 f / dX_ij dX_ik.
		hess := func(i, j, k int) float64 {
			if !byDiff {
				return 2 * (gd.At(i, i)*hd.At(j, k) + hd.At(i, i)*gd.At(j, k) + gd.At(i, j)*hd.At(i, k) + gd.At(i, k)*hd.At(i, j))
			}
			const step = 2e-4
			fAt := func(dj, dk float64) float64 {
				y := mat.NewSymDense(n, nil)
				y.CopySym(xd)
				y.SetSym(i, j, y.At(i, j)+dj)
				y.SetSym(i, k, y.At(i, k)+dk)
				f, _, _ := denseBandedObjective(t, c.inv, y)
				return f
			}
			if j == k {
				return (fAt(step, 0) - 2*fAt(0, 0) + fAt(-step, 0)) / (step * step)
			}
			return (fAt(step, step) - fAt(step, -step) - fAt(-step, step) + fAt(-step, -step)) / (4 * step * step)
		}
		// habs bounds the magnitude of hess's terms, to which its
		// error is relative.
		habs := func(i, j, k int) float64 {
			if byDiff {
				return math.Abs(hess(i, j, k))
			}
			return 2 * (math.Abs(gd.At(i, i)*hd.At(j, k)) + math.Abs(hd.At(i, i)*gd.At(j, k)) + math.Abs(gd.At(i, j)*hd.At(i, k)) + math.Abs(gd.At(i, k)*hd.At(i, j)))
		}
		dir := make([]float64, m)
		for k := range dir {
			dir[k] = rng.NormFloat64()
		}
		want := append([]float64(nil), dir...)
		bp.applyPrecondition(h, dir)
		for i := 0; i < n; i++ {
			mm := min(b-1, i)
			// lf(u, v) = L_uv within the band, from the stored factor.
			lf := func(u, v int) float64 {
				switch {
				case u < v || u-v > w:
					return 0
				case u == v:
					return 1 / h[bp.precondIndex(i, u, 0)]
				}
				return h[bp.precondIndex(i, u, u-v)]
			}
			// The band of the Hessian over the row's entries j = i-1-u.
			tb := make([][]float64, mm)
			for u := range tb {
				tb[u] = make([]float64, mm)
				for v := max(0, u-w); v <= min(mm-1, u+w); v++ {
					tb[u][v] = hess(i, i-1-u, i-1-v)
				}
			}
			var tm mat.Cholesky
			tsym := mat.NewSymDense(max(mm, 1), nil)
			for u := 0; u < mm; u++ {
				for v := 0; v <= u; v++ {
					tsym.SetSym(u, v, tb[u][v])
				}
			}
			if mm > 0 && !tm.Factorize(tsym) {
				// Not positive definite: the fallback, the inverse of
				// the band's diagonal.
				fallbacks++
				for u := 0; u < mm; u++ {
					for v := 0; v < mm; v++ {
						if u != v {
							tb[u][v] = 0
						}
					}
				}
			} else if mm > w+1 {
				banded++
			}
			for u := 0; u < mm; u++ {
				for v := max(0, u-w); v <= u; v++ {
					sum, abs := 0.0, 0.0
					for c := max(0, u-w); c <= v; c++ {
						p := lf(u, c) * lf(v, c)
						sum += p
						abs += math.Abs(p)
					}
					require.InDelta(t, tb[u][v], sum, tol*(abs+habs(i, i-1-u, i-1-v)), "%s R=%d b=%d: row %d, (L L^T)[%d][%d]", c.name, n, b, i, u, v)
				}
			}
			for d := 0; d < b; d++ {
				if d == 0 || d > mm {
					require.Zero(t, dir[i*b+d], "%s R=%d b=%d: entry %d", c.name, n, b, i*b+d)
				}
			}
			for u := 0; u < mm; u++ {
				sum, abs := 0.0, 0.0
				for v := 0; v < mm; v++ {
					p := tb[u][v] * dir[i*b+1+v]
					sum += p
					abs += math.Abs(p)
				}
				require.InDelta(t, want[i*b+1+u], sum, tol*(abs+math.Abs(want[i*b+1+u])), "%s R=%d b=%d: row %d, (T y)[%d]", c.name, n, b, i, u)
			}
		}
	}
	for _, c := range bandedEvalCases(t, rng, 7) {
		for b := 1; b <= 7; b++ {
			check(c, 7, b, true, false)
		}
	}
	for _, c := range bandedEvalCases(t, rng, 260) {
		for _, atStart := range []bool{false, true} {
			check(c, 260, 5, false, atStart)
			check(c, 260, 11, false, atStart)
		}
	}
	t.Logf("%d rows fell back to the diagonal, %d rows wider than the band did not", fallbacks, banded)
	require.Positive(t, fallbacks)
	require.Positive(t, banded)
}

// The evaluation (Q, f, G, H, the gradient) and the preconditioner give
// the same bits for GOMAXPROCS 1, 2 and 8 at R = 2800 (not a multiple of
// the 256-row chunks, whose V and W rings redo the p rows before them)
// with 32 bands, where the row loops run on several goroutines, for
// inverse bands with p = 0 to 3 (TestBandedStepsSameBitsAnyGOMAXPROCS
// covers prefix sums, p = 1), at the banded square root.
func TestBandedEvalSameBitsAnyGOMAXPROCS(t *testing.T) {
	const n, b = 2800, 32
	// The V, W, G and H rows cost 2 (p+1) (2b + p) per row: two grains
	// at least from p = 1 on.
	require.GreaterOrEqual(t, float64(n*2*2*(2*b+1)), float64(2*par.Grain))
	rng := rand.New(rand.NewPCG(41, 42))
	for _, c := range bandedEvalCases(t, rng, n) {
		x, err := newBandedProblem(c.inv, b).start()
		require.NoError(t, err, c.name)
		run := func(procs int) [][]float64 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			bp := newBandedProblem(c.inv, b)
			grad, g, h := make([]float64, n*b), make([]float64, n*b), make([]float64, bp.precondLen())
			f, ok := bp.eval(x, grad, g)
			require.True(t, ok, c.name)
			bp.precondition(x, g, h)
			return [][]float64{{f}, bp.q.Data, grad, g, bp.hx, h}
		}
		one := run(1)
		for _, procs := range []int{2, 8} {
			assert.Equal(t, one, run(procs), "%s GOMAXPROCS %d", c.name, procs)
		}
	}
}
