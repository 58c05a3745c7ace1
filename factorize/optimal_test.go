package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// Published small cases (notes.md section 3): R = 2 gives the golden ratio
// squared, R = 3 gives 4.607861648.
func TestOptimalSmallExact(t *testing.T) {
	phi := (1 + math.Sqrt(5)) / 2
	for _, m := range []Method{Structured, Dense} {
		f, err := Optimal(context.Background(), prefix(t, 2), Options{Method: m})
		require.NoError(t, err)
		assert.InEpsilon(t, phi*phi, f.Metrics.Loss, 1e-10, "%v", m)
		f, err = Optimal(context.Background(), prefix(t, 3), Options{Method: m})
		require.NoError(t, err)
		assert.InEpsilon(t, 4.607861648, f.Metrics.Loss, 1e-9, "%v", m)
	}
}

// R = 3: the multipliers at the optimum are [2.651863, 1.257352, 0.698646]
// (notes.md), and the optimal loss is their sum.
func TestOptimalMultipliers(t *testing.T) {
	opt, _ := Options{}.withDefaults()
	sol, err := fixedPoint(context.Background(), newStructuredEvaluator(prefix(t, 3)), 3, opt)
	require.NoError(t, err)
	want := []float64{2.651863, 1.257352, 0.698646}
	for i, v := range sol.vUpper {
		assert.InDelta(t, want[i], v, 2e-6)
	}
	assert.InEpsilon(t, 4.607861648, want[0]+want[1]+want[2], 1e-6)
}

// At the certified optimum: unit column norms, A = B C, causality, the loss
// within the certified gap, and sum(v) equal to the loss.
func TestOptimalCertificate(t *testing.T) {
	for _, r := range []int{1, 4, 37, 200} {
		var last Progress
		f, err := Optimal(context.Background(), prefix(t, r), Options{Progress: func(p Progress) { last = p }})
		require.NoError(t, err)
		checkFactors(t, f)
		assert.LessOrEqual(t, f.Gap, DefaultTol)
		assert.Equal(t, f.Iterations, last.Iter)
		assert.InDelta(t, 1, f.Metrics.Gamma, 1e-12)
		_, c := factorsOf(t, f)
		for j := 0; j < r; j++ {
			assert.InDelta(t, 1, mat.Norm(c.ColView(j), 2), 1e-12)
		}
		// The factorization's own loss lies between the certified bounds.
		assert.GreaterOrEqual(t, f.Metrics.Loss, last.Lower*(1-1e-12))
		assert.LessOrEqual(t, f.Metrics.Loss, last.Upper*(1+1e-12))
	}
}

// The structured (O(R) per iteration) and dense (tridiagonalization) paths
// are different algorithms for the same map; their certified losses agree
// within their certified gaps. The dense path's certificate includes its
// rounding bound, which allows the default 1e-10 on these workloads except
// momentum 0.9, ill-conditioned enough to need 1e-8.
func TestOptimalStructuredMatchesDense(t *testing.T) {
	workloads := map[string]*Workload{"prefix": prefix(t, 60)}
	w, err := Momentum(40, 0.9)
	require.NoError(t, err)
	workloads["momentum"] = w
	weights := make([]float64, 50)
	for i := range weights {
		weights[i] = 1 / math.Sqrt(float64(i+1))
	}
	w, err = WeightedPrefix(weights)
	require.NoError(t, err)
	workloads["weighted"] = w
	for name, w := range workloads {
		s, err := Optimal(context.Background(), w, Options{Method: Structured})
		require.NoError(t, err)
		tol := DefaultTol
		if name == "momentum" {
			tol = 1e-8
		}
		d, err := Optimal(context.Background(), w, Options{Method: Dense, Tol: tol})
		require.NoError(t, err)
		assert.InEpsilon(t, d.Metrics.Loss, s.Metrics.Loss, tol+DefaultTol, name)
		checkFactors(t, s)
		checkFactors(t, d)
	}
}

// A general (dense) workload: a random well-conditioned lower-triangular
// matrix. The optimum must beat identity and satisfy the certificate.
func TestOptimalGeneralWorkload(t *testing.T) {
	n := 12
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			a.Set(i, j, 1/float64(1+i-j))
		}
	}
	w, err := NewWorkload(a)
	require.NoError(t, err)
	assert.False(t, w.IsPrefix())
	f, err := Optimal(context.Background(), w, Options{})
	require.NoError(t, err)
	checkFactors(t, f)
	id, err := newIdentity(w)
	require.NoError(t, err)
	assert.Less(t, f.Metrics.Loss, id.Metrics.Loss)
	_, err = Optimal(context.Background(), w, Options{Method: Structured})
	assert.ErrorContains(t, err, "banded inverse")
}

func TestOptimalLossOnly(t *testing.T) {
	full, err := Optimal(context.Background(), prefix(t, 300), Options{})
	require.NoError(t, err)
	lo, err := Optimal(context.Background(), prefix(t, 300), Options{LossOnly: true})
	require.NoError(t, err)
	assert.Nil(t, lo.B)
	assert.Nil(t, lo.C)
	assert.InEpsilon(t, full.Metrics.Loss, lo.Metrics.Loss, 2e-10)
	assert.Equal(t, lo.Metrics.Loss, lo.Metrics.FrobBSq)
	// MaxSE of the loss-only path (O(R) recurrences) against the largest
	// squared row norm of the dense B.
	assert.InEpsilon(t, full.Metrics.MaxSE, lo.Metrics.MaxSE, 1e-8)
}

func TestOptimalOptionsAndCancel(t *testing.T) {
	w := prefix(t, 50)
	for _, tol := range []float64{-1, math.NaN(), math.Inf(1)} {
		_, err := Optimal(context.Background(), w, Options{Tol: tol})
		requireParamError(t, err, "tol")
	}
	_, err := Optimal(context.Background(), w, Options{MaxIter: 2})
	var nc *NotConvergedError
	require.True(t, errors.As(err, &nc), "got %v", err)
	assert.Equal(t, 2, nc.Iter)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Optimal(ctx, w, Options{})
	assert.ErrorIs(t, err, context.Canceled)
}

// The certified loss at R = 100,000 (loss only, gap 1e-8) is gated: it takes
// about 20 s. Run with DPMF_LONG=1.
func TestOptimalLargeLossOnly(t *testing.T) {
	if testing.Short() || !longTests() {
		t.Skip("set DPMF_LONG=1")
	}
	f, err := Optimal(context.Background(), prefix(t, 100000), Options{LossOnly: true, Tol: 1e-8})
	require.NoError(t, err)
	assert.LessOrEqual(t, f.Gap, 1e-8)
	// Loss per round grows like log(R)^2: it lies between the square-root
	// factorization's bound and a tenth of it.
	assert.Less(t, f.Metrics.Loss, 100000*(1+math.Log(100000)/math.Pi)*(1+math.Log(100000)/math.Pi))
}

// noisyEvaluator perturbs phi by up to a relative 1e-6, as rounding would
// in an ill-conditioned dense evaluation, and reports (honest) or hides
// (dishonest) that error bound.
type noisyEvaluator struct {
	evaluator
	i      int
	honest bool
}

func (e *noisyEvaluator) phi(ctx context.Context, v, dst []float64) (float64, error) {
	eps, err := e.evaluator.phi(ctx, v, dst)
	for i := range dst {
		e.i++
		dst[i] *= 1 + 1e-6*math.Sin(float64(e.i))
	}
	if e.honest {
		eps += 1e-6
	}
	return eps, err
}

// An evaluation error above the target gap is reported at once, with the
// floor it puts on the certificate; noise that the evaluator does not report
// makes the gap stall, which is reported within the stall window instead of
// at the iteration limit.
func TestOptimalRoundingFloorAndStall(t *testing.T) {
	opt, _ := Options{}.withDefaults()
	var nc *NotConvergedError
	_, err := fixedPoint(context.Background(), &noisyEvaluator{evaluator: newStructuredEvaluator(prefix(t, 50)), honest: true}, 50, opt)
	require.True(t, errors.As(err, &nc), "got %v", err)
	assert.InDelta(t, 3e-6, nc.Floor, 1e-7)
	assert.Less(t, nc.Iter, 100)
	assert.ErrorContains(t, err, "rounding in the dense evaluation limits the certificate")
	// The advice, rounded up to one digit, is at least 3 Floor and the gap.
	tol, more := nc.Advice()
	assert.False(t, more)
	assert.GreaterOrEqual(t, tol, 3*nc.Floor)
	assert.GreaterOrEqual(t, tol, nc.Gap)
	assert.ErrorContains(t, err, fmt.Sprintf("use a tolerance of at least %.0e", tol))

	// A looser target is certified despite the noise.
	opt.Tol = 1e-4
	sol, err := fixedPoint(context.Background(), &noisyEvaluator{evaluator: newStructuredEvaluator(prefix(t, 50)), honest: true}, 50, opt)
	require.NoError(t, err)
	assert.LessOrEqual(t, sol.gap, 1e-4)
}

// The dense path's a-posteriori rounding bounds must cover its actual error
// at the optimum, where the certificate matters: errorBound's relative bound
// the largest relative error, and the sum of entryErrors (which is what
// enters the certificate) the summed absolute error. The actual error is
// measured against the double-double reference of refsqrt_test.go (its own
// error bound added), for the solver's v; with -short a few workloads,
// without it prefix sums R = 50..300, weighted prefix sums and momentum
// 0.5, 0.9, 0.95, 0.99 at R = 20, 40, 100, 200. The log is the table of
// the measurements, including the structured path's error against the
// bound it reports (relErr), for comparison; run
//
//	go test ./factorize/ -run TestDenseRoundingEstimate -v
func TestDenseRoundingEstimate(t *testing.T) {
	weighted := func(r int) *Workload {
		weights := make([]float64, r)
		for j := range weights {
			weights[j] = 1 / math.Sqrt(1+float64(j)/30)
		}
		w, err := WeightedPrefix(weights)
		require.NoError(t, err)
		return w
	}
	momentum := func(r int, beta float64) *Workload {
		w, err := Momentum(r, beta)
		require.NoError(t, err)
		return w
	}
	// A general workload with entries of both signs (cancellation in
	// A^T A) and no banded inverse.
	general := func(r int) *Workload {
		a := mat.NewTriDense(r, mat.Lower, nil)
		for i := 0; i < r; i++ {
			for j := 0; j <= i; j++ {
				x := 1 + math.Cos(float64(i))/2
				if j < i {
					x = math.Cos(float64(3*i+j*j)) / float64(1+i-j)
				}
				a.SetTri(i, j, x)
			}
		}
		w, err := NewWorkload(a)
		require.NoError(t, err)
		return w
	}
	ws := []*Workload{general(60)}
	if testing.Short() {
		ws = append(ws, prefix(t, 200), weighted(300), momentum(40, 0.5), momentum(40, 0.9), momentum(20, 0.99))
	} else {
		ws = append(ws, general(200))
		for _, r := range []int{50, 100, 200, 300} {
			ws = append(ws, prefix(t, r))
		}
		ws = append(ws, weighted(100), weighted(300))
		for _, beta := range []float64{0.5, 0.9, 0.95, 0.99} {
			for _, r := range []int{20, 40, 100, 200} {
				ws = append(ws, momentum(r, beta))
			}
		}
	}
	ctx := context.Background()
	t.Log("workload         R   cond(M) | max rel err   bound   ratio | sum abs err  sum bound  ratio | structured: max rel err, its bound")
	for _, w := range ws {
		n := w.R()
		name := w.Name()
		if name == "momentum" {
			inv, _ := w.InverseBand()
			name = fmt.Sprintf("momentum %.2f", inv.At(2, 0))
		}
		// The solver's v (the structured path's, whose certificate is
		// looser than its actual accuracy where it is ill-conditioned:
		// v only needs to be near the optimum).
		opt, _ := Options{}.withDefaults()
		newEv := func() evaluator { return newDenseEvaluator(w) }
		if _, ok := w.InverseBand(); ok {
			newEv = func() evaluator { return newStructuredEvaluator(w) }
		}
		sol, err := fixedPoint(ctx, newEv(), n, opt)
		if err != nil {
			opt.Tol = 1e-6
			sol, err = fixedPoint(ctx, newEv(), n, opt)
		}
		require.NoError(t, err, "%s R=%d", name, n)
		v := sol.vUpper
		ref, err := newRefSqrt(w.Matrix(), v)
		require.NoError(t, err, "%s R=%d", name, n)

		de := newDenseEvaluator(w)
		got := make([]float64, n)
		eps, err := de.phi(ctx, v, got)
		require.NoError(t, err)
		require.True(t, math.IsNaN(eps), "the dense path's bound needs a second evaluation")
		bound, err := de.errorBound(ctx, v, got)
		require.NoError(t, err)
		errs := de.entryErrors()
		st, stEps := make([]float64, n), math.NaN()
		// The structured path works with L = A^{-1} itself: its reference
		// is that of A = L^{-1} in double-double (newRefSqrtBand), not of
		// A's rounded float64 entries, which on the momentum workloads
		// differ from it by a relative several u.
		stRef := ref
		if _, ok := w.InverseBand(); ok {
			stRef, err = newRefSqrtBand(w, v)
			require.NoError(t, err, "%s R=%d", name, n)
			se := newStructuredEvaluator(w)
			stEps, err = se.phi(ctx, v, st)
			require.NoError(t, err)
			if math.IsNaN(stEps) { // the band case (k >= 2)
				stEps, err = se.errorBound(ctx, v, st)
				require.NoError(t, err)
			}
		}

		worst, sumErr, sumBound, stWorst := 0.0, 0.0, 0.0, math.NaN()
		// stLeast is a lower bound on the structured path's largest
		// relative error, stCoarse the reference's own relative error.
		stLeast, stCoarse := 0.0, 0.0
		if !math.IsNaN(stEps) {
			stWorst = 0
		}
		for i := range got {
			// Upper bounds on the actual errors.
			d := ref.absDiff(i, got[i]) + ref.absErr
			worst = math.Max(worst, d/(ref.phi[i]-ref.absErr))
			sumErr += d
			sumBound += errs[i]
			stWorst = math.Max(stWorst, (stRef.absDiff(i, st[i])+stRef.absErr)/(stRef.phi[i]-stRef.absErr))
			stLeast = math.Max(stLeast, (stRef.absDiff(i, st[i])-stRef.absErr)/(stRef.phi[i]+stRef.absErr))
			stCoarse = math.Max(stCoarse, stRef.absErr/(stRef.phi[i]-stRef.absErr))
		}
		if !math.IsNaN(stEps) {
			// No entry's error is proven above the bound; and where the
			// reference resolves the bound (its own error at most half
			// of it), every entry's error is proven below it. (At
			// momentum 0.99, R = 200, cond 1.5e13, the double-double
			// reference's own error, 1.3e-14, exceeds the bound, 1.1e-14,
			// while the difference from it is 2.6e-16.)
			assert.LessOrEqual(t, stLeast, stEps, "%s R=%d: the structured path's bound", name, n)
			if stCoarse <= stEps/2 {
				assert.LessOrEqual(t, stWorst, stEps, "%s R=%d: the structured path's bound", name, n)
			}
		}
		assert.LessOrEqual(t, worst, bound, "%s R=%d: largest relative error", name, n)
		assert.LessOrEqual(t, sumErr, sumBound, "%s R=%d: summed error", name, n)
		t.Logf("%-13s %4d %8.1e | %9.2e %9.2e %6.1f | %9.2e %9.2e %6.1f | %9.2e %9.2e", name, n, ref.cond,
			worst, bound, bound/worst, sumErr, sumBound, sumBound/sumErr, stWorst, stEps)
	}
}

// An evaluator whose error exceeds the bound it reports makes the best
// bounds cross at some point; the solver must then not certify a gap the
// error does not allow, but raise the error to what the crossing showed
// and report the floor (here noise of 1e-6 reported as 1e-14).
func TestCrossedBoundsRaiseTheError(t *testing.T) {
	opt, _ := Options{}.withDefaults()
	w := prefix(t, 50)
	_, err := fixedPoint(context.Background(), &noisyEvaluator{evaluator: newStructuredEvaluator(w), honest: false}, 50, opt)
	var nc *NotConvergedError
	require.True(t, errors.As(err, &nc), "a 1e-10 certificate from an evaluation with unreported 1e-6 errors: %v", err)
	assert.ErrorContains(t, err, "showed larger than its a-priori bound when they crossed")

	// At a target the raised error allows, the certified interval holds
	// the optimum (computed without noise).
	ref, err := fixedPoint(context.Background(), newStructuredEvaluator(w), 50, opt)
	require.NoError(t, err)
	opt.Tol = 1e-3
	sol, err := fixedPoint(context.Background(), &noisyEvaluator{evaluator: newStructuredEvaluator(w), honest: false}, 50, opt)
	require.NoError(t, err)
	assert.LessOrEqual(t, sol.lower, ref.upper)
	assert.GreaterOrEqual(t, sol.upper, ref.lower)
}

// Momentum 0.99 at R = 100: the structured path used to form T in float64,
// whose rounding (a relative u cond(L L^T) in phi) first made the best
// bounds cross (a negative gap reported as certified) and then, bounded,
// kept it from certifying 1e-10 at all (`mfsolve -R 1000 -workload
// momentum:0.99 -strategy optimal:tol=1e-10 -loss-only` stalled "without a
// finite duality gap"). With the double-word band kernel the structured
// path certifies the default tolerance itself, Auto takes it, and its
// certified interval [loss / (1 + gap), loss] and the dense path's
// intersect (the two solve the same problem up to the rounding of A's
// float64 entries, which the dense path reads: a relative 1e-15 or so).
// Below the floor (tol 1e-15) the error is one line with the gap reached
// and its cause. The momentum rows of TestCertifiedAgainstReference check the lower
// bound against an independent evaluation.
func TestMomentumNoCrossedCertificate(t *testing.T) {
	w, err := Momentum(100, 0.99)
	require.NoError(t, err)
	ctx := context.Background()
	f, err := Optimal(ctx, w, Options{LossOnly: true})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, f.Gap, 0.0)
	assert.LessOrEqual(t, f.Gap, DefaultTol)
	s, err := Optimal(ctx, w, Options{LossOnly: true, Method: Structured})
	require.NoError(t, err)
	assert.Equal(t, s.Metrics.Loss, f.Metrics.Loss, "Auto takes the structured path")
	d, err := Optimal(ctx, w, Options{LossOnly: true, Method: Dense})
	require.NoError(t, err)
	assert.LessOrEqual(t, s.Metrics.Loss/(1+s.Gap), d.Metrics.Loss*(1+1e-14))
	assert.LessOrEqual(t, d.Metrics.Loss/(1+d.Gap), s.Metrics.Loss*(1+1e-14))

	// Below what float64 allows, one line says the gap reached and why.
	_, err = Optimal(ctx, w, Options{LossOnly: true, Tol: 1e-15})
	var nc *NotConvergedError
	require.True(t, errors.As(err, &nc), "%v", err)
	assert.Greater(t, nc.Floor, 1e-15)
	assert.Less(t, nc.Floor, 1e-12)
	assert.ErrorContains(t, err, "certified only to a gap of")
	assert.ErrorContains(t, err, "rational approximation")
	assert.NotContains(t, err.Error(), "\n")
}

// The structured path's certified lower bound on momentum workloads
// (beta 0.5 to 0.99) holds against an independent upper bound on the
// optimum: the classical primal bound tr(M^{1/2}) max_i phi_i / v_i at the
// solver's own final multipliers, with phi from the double-double
// reference (newRefSqrtBand: Newton's iteration on M = D A^T A D, A = L^{-1}
// in double-double, certified by squaring back), its error bound
// subtracted. Conversely the solver's loss (its upper bound) is not below
// the reference's dual bound 2 tr(M^{1/2}) - sum(v) at the same v.
func TestCertifiedAgainstReference(t *testing.T) {
	ctx := context.Background()
	rs := []int{60, 150}
	if testing.Short() {
		rs = []int{60}
	}
	for _, beta := range []float64{0.5, 0.9, 0.99} {
		for _, n := range rs {
			w, err := Momentum(n, beta)
			require.NoError(t, err)
			opt, _ := Options{}.withDefaults()
			sol, err := fixedPoint(ctx, newStructuredEvaluator(w), n, opt)
			require.NoError(t, err, "beta=%g R=%d", beta, n)
			require.LessOrEqual(t, sol.gap, DefaultTol)
			v := sol.vUpper
			ref, err := newRefSqrtBand(w, v)
			require.NoError(t, err, "beta=%g R=%d", beta, n)
			tr, sumV, ratio := 0.0, 0.0, 0.0
			for i, p := range ref.phi {
				p += ref.phiLo[i]
				tr += p
				sumV += v[i]
				ratio = math.Max(ratio, (p+ref.absErr)/v[i])
			}
			absTr := float64(n) * ref.absErr
			upper := (tr + absTr) * ratio * (1 + 1e-14) // rounding of the float64 sums
			lower := (2*(tr-absTr) - sumV) * (1 - 1e-14)
			assert.LessOrEqual(t, sol.lower, upper, "beta=%g R=%d: certified lower bound above the reference's primal bound", beta, n)
			assert.GreaterOrEqual(t, sol.upper, lower, "beta=%g R=%d: certified loss below the reference's dual bound", beta, n)
			t.Logf("beta=%.2f R=%d: certified [%.15g, %.15g] (gap %.2g); reference primal bound at v %.15g (%.2g above the certified lower bound)",
				beta, n, sol.lower, sol.upper, sol.gap, upper, (upper-sol.lower)/sol.lower)
		}
	}
}

// A spectrum whose lower end cannot be proven positive while its upper end
// is well inside the float64 range is a numerically singular matrix (the
// dense path on momentum 0.99 at R = 1000, cond(A)^2 above 1/u), not a
// workload out of range: the error says so and names the structured path;
// a spectrum beyond the range keeps its message.
func TestSpectrumErrorSingular(t *testing.T) {
	w, err := Momentum(10, 0.99)
	require.NoError(t, err)
	ctx := context.Background()
	for _, c := range []struct {
		se   *spectrumError
		want string
	}{
		{&spectrumError{lo: 0, hi: 1.07e14}, "is numerically singular in float64), want a better-conditioned workload: the smallest eigenvalue is below float64 rounding"},
		{&spectrumError{lo: 0, hi: math.Inf(1)}, "want entries whose spread keeps them within the floating-point range"},
		{&spectrumError{lo: 1e-300, hi: 1e300}, "want entries whose spread keeps them within the floating-point range"},
	} {
		_, err := under(ctx, w, SingleParticipation(), false, func() (*Factorization, error) { return nil, c.se })
		var pe *ParamError
		require.True(t, errors.As(err, &pe), "%v", err)
		assert.ErrorContains(t, err, c.want)
		assert.NotContains(t, err.Error(), "\n")
	}
}
