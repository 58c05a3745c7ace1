package factorize

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/internal/testutil"
)

// refEpochDual returns a lower bound on the optimal fixed-epoch loss of w
// at the multipliers d of e, computed independently of the solver: each
// class block Lambda_c (diagonal lam, off-diagonal fl(lam r), as the
// evaluator forms it) is factored in float64, Lambda_c ~ U_c U_c^T; for
// Lambda' = U U^T, a valid multiplier whatever U's rounding (its diagonal
// need not be constant on a class: the dual term is then the largest
// diagonal entry of each class), g = 2 tr((U^T S U)^{1/2}) - sum_c
// max_{i in c} Lambda'_ii is at most the optimum. U^T S U is formed in
// double-double from A = L^{-1}'s columns (L the exact band inverse, by
// forward substitution, as newRefSqrtBand) and its square root's trace
// from refSqrtOf, whose certified error is subtracted.
func refEpochDual(e *epochEvaluator, d *epochDual) (float64, error) {
	n, k, b := e.n, e.k, e.b
	inv, _ := e.w.InverseBand()
	// Column j of A (rows j..n-1) in double-double.
	ah, al := ddInverseColumns(inv)
	// U per class (round order: class c holds rounds c + e b), and the
	// columns of A U in double-double: column a of A U is
	// sum_q U[q][a] A[:, q] over the rounds q of a's class.
	uh, ul := make([]float64, n*n), make([]float64, n*n)
	sumMu := 0.0
	blk := make([]float64, k*k)
	for pos, cls := range e.class {
		e.blockMatrix(d, pos, blk)
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(k, append([]float64(nil), blk...))) {
			return 0, fmt.Errorf("class %d: multiplier block not positive definite", cls)
		}
		var u mat.TriDense
		ch.LTo(&u)
		muMax := 0.0
		for a := 0; a < k; a++ {
			mh, ml := 0.0, 0.0
			for q := 0; q <= a; q++ {
				ph, pl := ddfloat.TwoProd(u.At(a, q), u.At(a, q))
				mh, ml = ddfloat.Add(mh, ml, ph, pl)
			}
			muMax = math.Max(muMax, mh+ml)
			ia := cls + a*b
			for q := a; q < k; q++ { // U[q][a] != 0 for q >= a
				iq := cls + q*b
				uqa := u.At(q, a)
				for r := iq; r < n; r++ {
					th, tl := ddfloat.MulFloat(ah[iq*n+r], al[iq*n+r], uqa)
					uh[ia*n+r], ul[ia*n+r] = ddfloat.Add(uh[ia*n+r], ul[ia*n+r], th, tl)
				}
			}
		}
		// Rounded up: the sum over classes below adds a few u.
		sumMu += muMax * (1 + 1e-15)
	}
	sumMu *= 1 + float64(b+2)*0x1p-53
	mh, ml := make([]float64, n*n), make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			h, l := 0.0, 0.0
			for r := 0; r < n; r++ {
				th, tl := ddfloat.Mul(uh[i*n+r], ul[i*n+r], uh[j*n+r], ul[j*n+r])
				h, l = ddfloat.Add(h, l, th, tl)
			}
			mh[i*n+j], ml[i*n+j] = h, l
			mh[j*n+i], ml[j*n+i] = h, l
		}
	}
	ref, err := refSqrtOf(n, mh, ml)
	if err != nil {
		return 0, err
	}
	th, tl := 0.0, 0.0
	for i := 0; i < n; i++ {
		th, tl = ddfloat.Add(th, tl, ref.phi[i], ref.phiLo[i])
	}
	tr := (th + tl) - float64(n)*ref.absErr
	return 2*tr*(1-0x1p-52) - sumMu, nil
}

// The fixed-epoch certificate on momentum (the double-word evaluation of
// the class blocks, since 2026-11-28) against independent values, at
// beta = 0.9 and 0.99 with 2 and 4 epochs: the certified upper bound, of
// the solver and of the loss-only result, is at least the double-double
// reference dual at the solver's own multipliers (refEpochDual, a lower
// bound on the optimum), and the certified lower bound at most the loss
// of the factors built from those multipliers, computed in 256-bit
// arithmetic (bigEpochLoss, an upper bound on the optimum). Both
// references lie within 1e-9 of the certified interval, so the
// comparison is sharp. Before, the float64 band kernel's certificate
// fell outside such references (its upper bound 4.3e-11 below the 256-bit
// loss of its own point at R = 128) and momentum 0.99 did not certify
// at all.
func TestOptimalEpochsMomentumAgainstReference(t *testing.T) {
	testutil.SkipOn386Short(t, "the double-word momentum solves: math.FMA is exact everywhere (software on 386), so 386 computes the same bits as amd64, only far slower; linalg and ddfloat check the kernel on 386")
	ctx := context.Background()
	rs := []int{40}
	if !testing.Short() {
		rs = append(rs, 64)
	}
	for _, r := range rs {
		for _, beta := range []float64{0.9, 0.99} {
			for _, k := range []int{2, 4} {
				name := fmt.Sprintf("momentum %g, R = %d, %d epochs", beta, r, k)
				w, err := Momentum(r, beta)
				require.NoError(t, err)
				e, err := newEpochEvaluator(w, k)
				require.NoError(t, err)
				require.True(t, e.multiBand)
				opt, err := Options{}.withDefaults()
				require.NoError(t, err)
				sol, err := e.solve(ctx, opt, nil)
				require.NoError(t, err, name)
				require.LessOrEqual(t, sol.gap, opt.Tol, name)
				lo, err := OptimalEpochs(ctx, w, k, Options{LossOnly: true})
				require.NoError(t, err, name)

				dual, err := refEpochDual(e, sol.lamUpper)
				require.NoError(t, err, name)
				x, err := e.denseX(ctx, sol)
				require.NoError(t, err, name)
				_, c, err := factorsFromX(w, x)
				require.NoError(t, err, name)
				primal, _ := bigEpochLoss(w, k, c, 256).Float64()

				assert.GreaterOrEqual(t, sol.upper, dual, "%s: certified upper bound below the reference dual", name)
				assert.GreaterOrEqual(t, lo.Metrics.Loss, dual, "%s: loss-only result below the reference dual", name)
				assert.LessOrEqual(t, sol.lower, primal, "%s: certified lower bound above the 256-bit loss of a feasible point", name)
				loLower := lo.Metrics.Loss / (1 + lo.Gap)
				assert.LessOrEqual(t, loLower, primal, "%s: loss-only lower bound above the 256-bit loss", name)
				assert.Less(t, (sol.upper-dual)/dual, 1e-9, "%s: reference dual far below (not a sharp check)", name)
				assert.Less(t, (primal-sol.lower)/sol.lower, 1e-9, "%s: 256-bit loss far above (not a sharp check)", name)
				t.Logf("%s: certified [%.13g, %.13g]; reference dual %.13g (%.2g below the upper bound), 256-bit loss %.13g (%.2g above the lower bound)",
					name, sol.lower, sol.upper, dual, (sol.upper-dual)/dual, primal, (primal-sol.lower)/sol.lower)
			}
		}
	}
}
