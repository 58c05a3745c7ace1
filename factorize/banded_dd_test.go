package factorize

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/linalg"
)

// bigBandedG returns f = tr(Q^{-1}) and the band of G = L Q^{-2} L^T
// (G[i][i-d] at i*b + d), Q = L^T X L, in 400-bit arithmetic from the
// float64 entries of L (inv) and X: Q formed exactly, its dense inverse by
// Gauss-Jordan elimination and the square by dense products. An
// independent reference for bandedProblem.evalGDD.
func bigBandedG(inv *mat.TriBandDense, x linalg.SymBand, b int) (*big.Float, []*big.Float) {
	const prec = 400
	n := x.N
	nf := func() *big.Float { return new(big.Float).SetPrec(prec) }
	lAt := func(a, c int) float64 {
		if a < 0 || c < 0 || a >= n || c >= n {
			return 0
		}
		return inv.At(a, c)
	}
	// a = [Q | I], Q[i][j] = sum_{a,c} L[a][i] X[a][c] L[c][j].
	a := make([][]*big.Float, n)
	for i := range a {
		a[i] = make([]*big.Float, 2*n)
		for j := range a[i] {
			a[i][j] = nf()
		}
		a[i][n+i].SetInt64(1)
	}
	_, p, _ := inv.TriBand()
	t := nf()
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			for r := i; r <= min(n-1, i+p); r++ {
				for c := j; c <= min(n-1, j+p); c++ {
					if xv := x.At(r, c); xv != 0 {
						t.Mul(nf().SetFloat64(lAt(r, i)), nf().SetFloat64(lAt(c, j)))
						t.Mul(t, nf().SetFloat64(xv))
						a[i][j].Add(a[i][j], t)
					}
				}
			}
		}
	}
	for c := 0; c < n; c++ { // positive definite: no pivoting needed
		piv := nf().Set(a[c][c])
		for j := c; j < 2*n; j++ {
			a[c][j].Quo(a[c][j], piv)
		}
		for r := 0; r < n; r++ {
			if r == c || a[r][c].Sign() == 0 {
				continue
			}
			f := nf().Set(a[r][c])
			for j := c; j < 2*n; j++ {
				a[r][j].Sub(a[r][j], t.Mul(f, a[c][j]))
			}
		}
	}
	f := nf()
	for i := 0; i < n; i++ {
		f.Add(f, a[i][n+i])
	}
	// E = Z^2, then G's band.
	e := make([]*big.Float, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := nf()
			for q := 0; q < n; q++ {
				s.Add(s, t.Mul(a[i][n+q], a[q][n+j]))
			}
			e[i*n+j], e[j*n+i] = s, s
		}
	}
	g := make([]*big.Float, n*b)
	for i := 0; i < n; i++ {
		for d := 0; d < b && d <= i; d++ {
			j := i - d
			s := nf()
			for r := max(0, i-p); r <= i; r++ {
				for c := max(0, j-p); c <= j; c++ {
					t.Mul(nf().SetFloat64(lAt(i, r)), nf().SetFloat64(lAt(j, c)))
					s.Add(s, t.Mul(t, e[r*n+c]))
				}
			}
			g[i*b+d] = s
		}
	}
	return f, g
}

// TestBandedGDDAccuracy checks evalGDD (the band of G and f in
// double-word arithmetic) against a 400-bit reference: at random feasible
// X for the inverse bands with 0 to 3 subdiagonals (random, prefix sums,
// momentum, weighted prefix), every entry within 1e-24 of the reference
// relatively to sqrt(G_ii G_jj) beyond its rounding to float64 (u |G_ij|),
// and f within 1e-26 beyond its; and at the optimum for prefix sums with 8
// bands at R = 120, where the float64 evaluation's error is measured too,
// the error of the double-word band's off-diagonal entries (Frobenius
// norm) is within the allowance the certificate takes
// ([bandedProblem.ddBandAllowance], with the float64 error for gErr).
func TestBandedGDDAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	// relErr returns the largest error of an entry of the band beyond its
	// rounding to float64 (u |G_ij|), relatively to sqrt(G_ii G_jj), and
	// offErr the Frobenius norms of the error of the off-diagonal band
	// (both triangles) and of that band: what the certificate's gErr
	// bounds, and R.
	u := 0x1p-53
	relErr := func(got []float64, ref []*big.Float, n, b int) float64 {
		worst := 0.0
		d := new(big.Float).SetPrec(400)
		for i := 0; i < n; i++ {
			for k := 0; k < b && k <= i; k++ {
				j := i - k
				d.SetFloat64(got[i*b+k])
				d.Sub(d, ref[i*b+k])
				e, _ := d.Float64()
				r, _ := ref[i*b+k].Float64()
				gi, _ := ref[i*b].Float64()
				gj, _ := ref[j*b].Float64()
				worst = math.Max(worst, math.Max(0, math.Abs(e)-u*math.Abs(r))/math.Sqrt(gi*gj))
			}
		}
		return worst
	}
	offErr := func(got []float64, ref []*big.Float, n, b int) (e2, r2 float64) {
		d := new(big.Float).SetPrec(400)
		for i := 0; i < n; i++ {
			for k := 1; k < b && k <= i; k++ {
				d.SetFloat64(got[i*b+k])
				d.Sub(d, ref[i*b+k])
				e, _ := d.Float64()
				e2 += 2 * e * e
				r, _ := ref[i*b+k].Float64()
				r2 += 2 * r * r
			}
		}
		return math.Sqrt(e2), math.Sqrt(r2)
	}
	fErr := func(f float64, ref *big.Float) float64 {
		d := new(big.Float).SetPrec(400).SetFloat64(f)
		d.Sub(d, ref)
		e, _ := d.Float64()
		r, _ := ref.Float64()
		return math.Max(0, math.Abs(e/r)-u)
	}
	for _, n := range []int{1, 4, 30} {
		for _, c := range bandedEvalCases(t, rng, n) {
			for _, b := range []int{1, 3, 8} {
				if b > n {
					continue
				}
				bp := newBandedProblem(c.inv, b)
				_, x := randomBandedX(rng, n, b)
				g := make([]float64, n*b)
				for i := range g {
					g[i] = math.NaN()
				}
				f, ok := bp.evalGDD(x, g)
				require.True(t, ok, "%s R=%d b=%d", c.name, n, b)
				wantF, wantG := bigBandedG(c.inv, x, b)
				name := fmt.Sprintf("%s R=%d b=%d", c.name, n, b)
				assert.LessOrEqual(t, fErr(f, wantF), 1e-26, name)
				assert.LessOrEqual(t, relErr(g, wantG, n, b), 1e-24, name)
			}
		}
	}
	// At an optimum near the cone's boundary.
	const n, b = 120, 8
	w := prefix(t, n)
	inv, ok := w.InverseBand()
	require.True(t, ok)
	bp := newBandedProblem(inv, b)
	opt, err := Options{Tol: 1e-8, LossOnly: true}.withDefaults()
	require.NoError(t, err)
	sol, err := bp.run(context.Background(), opt)
	require.NoError(t, err)
	x := sol.x
	gF, gD := make([]float64, n*b), make([]float64, n*b)
	_, ok = bp.eval(x, make([]float64, n*b), gF)
	require.True(t, ok)
	f, ok := bp.evalGDD(x, gD)
	require.True(t, ok)
	wantF, wantG := bigBandedG(inv, x, b)
	errF, _ := offErr(gF, wantG, n, b)
	errD, rn := offErr(gD, wantG, n, b)
	t.Logf("R=%d b=%d at the optimum: off-diagonal band's error, float64 %.3g, double-word %.3g (||R||_F %.3g, ratio to the float64 error %.3g); beyond rounding %.3g; f %.3g", n, b, errF, errD, rn, errD/errF, relErr(gD, wantG, n, b), fErr(f, wantF))
	assert.LessOrEqual(t, relErr(gD, wantG, n, b), 1e-24)
	assert.LessOrEqual(t, errD, bandedDDErrRatio*errF+u*rn)
	assert.LessOrEqual(t, fErr(f, wantF), 1e-26)
	// Not positive definite: reported.
	bad := linalg.NewSymBand(3, 1)
	for i := range 3 {
		bad.Set(i, i, 1)
	}
	bad.Set(1, 0, 1.5)
	bp3 := newBandedProblem(mustInverseBand(t, prefix(t, 3)), 2)
	_, ok = bp3.evalGDD(bad, make([]float64, 6))
	assert.False(t, ok)
}

func mustInverseBand(t *testing.T, w *Workload) *mat.TriBandDense {
	t.Helper()
	inv, ok := w.InverseBand()
	require.True(t, ok)
	return inv
}

// TestBandedGapDoubleWord checks the certificate's path through G in
// double-word arithmetic: near the optimum (iterates certified to 1e-3
// and 1e-6) for prefix sums, a weighted prefix and momentum, with a
// rounding allowance gErr for the float64 band of G large enough
// (the smallest, by factors of 4 from 1e-12 of its largest entry) that the float64 bound cannot reach a target
// twice the allowance-free gap, gapOf evaluates G again in double words,
// certifies the target, and its lower bound f / (1 + gap) is below the
// optimum of an independent dense Newton method; eRitz, the Lanczos
// estimate of lambda_max(E) that times those evaluations, matches the dense
// eigenvalue of E = M R M^T formed from the same M and R (the Krylov space
// is the whole space at these orders).
func TestBandedGapDoubleWord(t *testing.T) {
	used := 0
	for _, c := range certificateCases(t) {
		n := c.w.R()
		fStar := bandedNewton(t, c.w, c.b)
		bp0 := testBandedProblem(t, c.w, c.b)
		x0, err := bp0.start()
		require.NoError(t, err)
		for _, tol := range []float64{1e-3, 1e-6} {
			opt, err := Options{Tol: tol}.withDefaults()
			require.NoError(t, err)
			sol, err := bp0.solve(context.Background(), x0, opt)
			require.NoError(t, err)
			x := sol.x
			m := n * c.b
			g := make([]float64, m)
			bp := testBandedProblem(t, c.w, c.b)
			f, ok := bp.eval(x, make([]float64, m), g)
			require.True(t, ok)
			exact := bp.gapOf(x, g, f, 0, 0)
			top := 0.0
			for _, v := range g {
				top = math.Max(top, math.Abs(v))
			}
			gErr, stop := 1e-12*top, 2*exact
			name := fmt.Sprintf("%s b=%d tol %g", c.w.Name(), c.b, tol)
			// The smallest allowance, from 1e-12 of G's largest entry up
			// by factors of 4, with which the float64 bound alone cannot
			// certify stop.
			floatGap := func() float64 {
				float := testBandedProblem(t, c.w, c.b)
				// As after a try at its first call that asked for a
				// tr(W X W^T) of 0: none now.
				float.dd.next, float.dd.at = math.SmallestNonzeroFloat64, 1
				return float.gapOf(x, g, f, gErr, stop)
			}
			for range 30 {
				if floatGap() > stop {
					break
				}
				gErr *= 4
			}
			require.Greater(t, floatGap(), stop, name)
			bp = testBandedProblem(t, c.w, c.b)
			gap := bp.gapOf(x, g, f, gErr, stop)
			assert.Equal(t, 1, bp.dd.used, name)
			assert.LessOrEqual(t, gap, stop, name)
			assert.GreaterOrEqual(t, fStar*(1+1e-12), f/(1+gap), name)
			used += bp.dd.used
			// E from the M and R that gapOf left, densely.
			b, p := c.b, bp.p
			wm, wr := 2*b+p-1, 2*b-1
			md, rd := mat.NewDense(n, n, nil), mat.NewDense(n, n, nil)
			for i := 0; i < n; i++ {
				for tt := 0; tt < wm; tt++ {
					if j := i - b + 1 + tt; j >= 0 && j < n {
						md.Set(i, j, bp.m[i*wm+tt])
					}
				}
				for l := max(0, i-b+1); l <= min(n-1, i+b-1); l++ {
					rd.Set(i, l, bp.rf[i*wr+l-i+b-1])
				}
			}
			var ed mat.Dense
			ed.Product(md, rd, md.T())
			var es mat.EigenSym
			require.True(t, es.Factorize(mat.NewSymDense(n, symmetrised(&ed)), false))
			ev := es.Values(nil)
			assert.InDelta(t, ev[n-1], bp.eRitz(30), 1e-8*max(1, math.Abs(ev[0]), math.Abs(ev[n-1])), name)
		}
	}
	assert.Equal(t, 8, used)
}
