package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/internal/optim"
	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/mat"
)

// DefaultBands is the number of bands of the banded strategies when Bands
// is 0.
// Streaming its noise keeps DefaultBands-1 past noise vectors.
const DefaultBands = 16

// StrategyBanded is the name of [BandedStrategy].
const StrategyBanded = "banded"

func init() {
	register(StrategyInfo{
		Name: StrategyBanded, rank: 50, Doc: "a lower-triangular C with few bands: certified optimal under minsep, a Toeplitz fit otherwise",
		Stream: "b - 1 (15 by default)",
		Workloads: "lower-triangular Toeplitz workloads with a positive diagonal (prefix sums, momentum, a Toeplitz matrix), " +
			"or under minsep:B any workload with a banded inverse (prefix sums, momentum, weighted prefix sums)",
		serves: func(_ Strategy, w *Workload, p Participation) bool {
			if p.Kind == KindMinSep {
				return hasBandedInverse(w) // OptimalBanded
			}
			return isToeplitz(w)
		},
		Settings: []Setting{
			bandsSetting("number of bands of C"),
			{Name: "tol", Type: "float", Default: "1e-08", Doc: docTol + " (minsep only)"},
			{Name: "max-iter", Type: "int", Default: "20000", Doc: docMaxIter + " (minsep only)"},
		},
		proto:       BandedStrategy{},
		lossOnly:    []ParticipationKind{KindSingle, KindMinSep},
		lossOnlyPtr: func(p any) *bool { return &p.(*BandedStrategy).LossOnly },
		solveBytes: func(s Strategy, r int, _ Participation, _ bool) float64 {
			if b := s.(BandedStrategy); b.LossOnly {
				// The banded solver's band arrays (about 10 b floats
				// per round) or the fit's operator, with a margin.
				return 8 * 16 * float64(bandsOrDefault(b.Bands)) * float64(r)
			}
			return denseSolveBytes(r)
		},
		cBands: func(s Strategy) int { return bandsOrDefault(s.(BandedStrategy).Bands) },
		checkUnder: func(s Strategy, p Participation) error {
			if b := s.(BandedStrategy); (b.Tol != 0 || b.MaxIter != 0) && p.Kind != KindMinSep {
				// The settings of the certified solver would be ignored.
				return &ParamError{Param: "strategy", Value: strconv.Quote(b.Spec()), Want: fmt.Sprintf("tol and max-iter only under participation minsep:B, where banded runs its certified solver, not %v", p)}
			}
			return nil
		},
		fields: []field{
			{ptr: func(p any) any { return &p.(*BandedStrategy).Bands }, lo: 1},
			{ptr: func(p any) any { return &p.(*BandedStrategy).Tol }, def: DefaultBandedTol},
			{ptr: func(p any) any { return &p.(*BandedStrategy).MaxIter }, lo: 1, keyless: true},
		},
		streamVectors: func(s Strategy, r int) int { return min(bandsOrDefault(s.(BandedStrategy).Bands), r) - 1 },
		progressPtr:   func(p any) *func(Progress) { return &p.(*BandedStrategy).Progress },
	})
}

// BandedStrategy is a lower-triangular factor with Bands bands. Under
// b-min-separation it is the certified optimal banded factor with unit
// column norms for that participation ([OptimalBanded]); under single
// participation and fixed epochs it is a Toeplitz fit.
//
// Outside min-separation, C is lower triangular with b bands
// (C[i][j] = 0 for i - j >= b, b = Bands, at most R), so that the noise C^{-1} Z can be streamed with b-1 buffers.
//
// The workload must be lower-triangular Toeplitz (prefix sums, momentum).
// Two candidates are formed and the one with the lower loss is returned:
//
//   - the banded square root of Kalinin and Lampert 2024 ("Banded Square
//     Root Matrix Factorization for Differentially Private Model
//     Training"): the Toeplitz matrix of the first b power-series
//     coefficients of A^{1/2};
//   - the banded Toeplitz C whose b coefficients minimise the exact loss
//     ||c||^2 ||A T_c^{-1}||_F^2 (BFGS from the banded square root; O(R b)
//     per evaluation for prefix sums). It is a local optimum.
//
// Each candidate's columns are scaled to unit norm (C stays banded, no
// longer Toeplitz, and B = A C^{-1} is recomputed) unless that raises its
// loss. The metrics are those of the returned B and C, computed by
// [ComputeMetrics]. With b = 1, C = I (the identity strategy); with b = R
// the first candidate is sqrt-normalized, so the loss is at most its loss.
//
// Banded factorizations are meant for multiple participations, where the
// bands bound how far apart two participations must be; for the single
// participation measured by [Metrics], few bands cost accuracy: for prefix
// sums with R = 800, 16 bands give about 3.5 times the loss of sqrt (see
// docs/mechanisms.md).
type BandedStrategy struct {
	// Bands is the number of bands; 0 means [DefaultBands], and under
	// b-min-separation min(DefaultBands, b), so that the factor's
	// sensitivity is exact.
	Bands int
	// Tol is the certified relative gap of [OptimalBanded] under
	// min-separation; 0 means [DefaultBandedTol]. Under other
	// participations it must be 0.
	Tol float64
	// MaxIter is the iteration limit of [OptimalBanded] under
	// min-separation; 0 means [DefaultMaxIter]. Under other
	// participations it must be 0.
	MaxIter int
	// LossOnly skips forming B and C: the result has only its metrics
	// (single participation, by the fit's coefficients in O(R^2) time and
	// O(R b) memory, prefix sums only; min-separation, by
	// [OptimalBanded]'s loss-only path).
	LossOnly bool
	// Progress, if not nil, is called after every iteration of
	// [OptimalBanded] under min-separation (its coarse levels included:
	// [Progress].Coarse); it is not part of the spec or the cache key.
	Progress func(Progress)
}

// Name returns "banded".
func (BandedStrategy) Name() string { return StrategyBanded }

// Spec returns the canonical spec, "banded:bands=B,tol=T,max-iter=N"
// without the settings left at their default.
func (s BandedStrategy) Spec() string { return specOf(s) }

// bandsFor returns the number of bands of a banded strategy with bands
// (0: default) under p.
func bandsFor(bands int, p Participation) int {
	if bands > 0 {
		return bands
	}
	if p.Kind == KindMinSep {
		return min(DefaultBands, p.B)
	}
	return DefaultBands
}

// Factorize returns, with metrics under p, [OptimalBanded](ctx, w, bands,
// p.K, Options{Tol: s.Tol, MaxIter: s.MaxIter}) for min-separation and
// the Toeplitz fit otherwise.
func (s BandedStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if err := checkBands(s.Bands); err != nil {
		return nil, err
	}
	if err := CheckUnder(s, p); err != nil {
		return nil, err
	}
	opt, err := Options{Tol: s.Tol, MaxIter: s.MaxIter, Progress: s.Progress}.withDefaults()
	if err != nil {
		return nil, err
	}
	if s.LossOnly {
		if err := checkContext(ctx); err != nil {
			return nil, err
		}
	}
	b := bandsFor(s.Bands, p)
	if p.Kind == KindMinSep {
		opt.Tol = s.Tol // 0: DefaultBandedTol
		opt.LossOnly = s.LossOnly
		if s.LossOnly {
			// The workload first: a nil one has no R to validate p
			// against (it panicked here).
			if err := checkWorkload(w); err != nil {
				return nil, err
			}
			if err := p.Validate(w.R()); err != nil {
				return nil, err
			}
			f, err := OptimalBanded(ctx, w, b, p.K, opt)
			if err != nil || f.Metrics.Participation == p {
				return checkedLossOnly(f, err)
			}
			return checkedLossOnly(bandedUnder(f, min(b, w.R()), p))
		}
		return under(ctx, w, p, true, func() (*Factorization, error) { return OptimalBanded(ctx, w, b, p.K, opt) })
	}
	if s.LossOnly {
		return checkedLossOnly(bandedFitLossOnly(ctx, w, b, p))
	}
	return under(ctx, w, p, true, func() (*Factorization, error) { return bandedFit(ctx, w, b) })
}

// bandedUnder returns the loss-only result f of [OptimalBanded] with b
// bands (unit columns) under the min-separation p instead: X is banded
// within b, so for b <= p.B the sensitivity is exact, sqrt(k) for the k
// participations that fit; b > p.B (the dense path's bound needs C) is an
// error.
func bandedUnder(f *Factorization, b int, p Participation) (*Factorization, error) {
	r := f.Workload.R()
	k := p.Participations(r)
	sens := Sensitivity{Value: math.Sqrt(float64(k)), Exact: true, Rule: RuleMinSepBanded}
	switch {
	case k == 1:
		sens.Rule = RuleColumnNorm
	case b > p.B:
		return nil, fmt.Errorf("factorize: loss-only %s under %v needs at most %d bands, not %d", StrategyBanded, p, p.B, b)
	}
	g := *f
	m := f.Metrics
	g.Metrics = metricsFrom(r, m.Gamma, p, sens, m.FrobBSq, m.MaxRowBSq)
	return &g, nil
}

// bandedFit returns the banded strategy's factorization outside
// min-separation, with b bands (at most R): see [BandedStrategy].
func bandedFit(ctx context.Context, w *Workload, bands int) (*Factorization, error) {
	tw, err := toeplitzOf(StrategyBanded, w)
	if err != nil {
		return nil, err
	}
	cands, b, err := bandedFitCandidates(ctx, tw, bands)
	if err != nil {
		return nil, err
	}
	var best *Factorization
	for _, c := range cands {
		if f, _ := toeplitzFactorization(StrategyBanded, w, tw, c, linalg.SeriesInverse(c[:b], w.R())); best == nil || f.Metrics.Loss < best.Metrics.Loss {
			best = f
		}
	}
	best.Operator = bandedOpOf(best.C, b)
	return best, nil
}

// bandedFitLossOnly returns the metrics-only result of [bandedFit] under
// single participation: the same candidates, their metrics by
// [toeplitzLossOnly] (O(R^2) time, O(R b) memory, prefix sums only when a
// candidate's columns are scaled).
func bandedFitLossOnly(ctx context.Context, w *Workload, bands int, p Participation) (*Factorization, error) {
	tw, err := checkLossOnly(StrategyBanded, w, bands, p)
	if err != nil {
		return nil, err
	}
	if p.Kind != KindSingle {
		return nil, &ParamError{Param: "participation", Value: p.String(), Want: "single or min-separation for a loss-only " + StrategyBanded}
	}
	cands, b, err := bandedFitCandidates(ctx, tw, bands)
	if err != nil {
		return nil, err
	}
	r := w.R()
	var best Metrics
	var bestC, bestScale []float64
	for _, c := range cands {
		m, scale, err := toeplitzLossOnly(tw, c, linalg.SeriesInverse(c[:b], r), nil, p)
		if err != nil {
			return nil, err
		}
		if bestC == nil || m.Loss < best.Loss {
			best, bestC, bestScale = m, c, scale
		}
	}
	return squareResult(StrategyBanded, scaledBandedOp(bestC, bestScale, b), w, best), nil
}

// bandedFitCandidates returns the first columns (length R, t_0 = 1) of
// the Toeplitz candidates of [bandedFit], the banded square root and the
// fit from it, and the number of bands, min(bands, R).
func bandedFitCandidates(ctx context.Context, tw toeplitzWorkload, bands int) ([][]float64, int, error) {
	r := len(tw.a)
	b := min(bands, r)
	s := tw.sqrt(b)
	bsr := make([]float64, r) // the banded square root, C's first column
	for k := 0; k < b; k++ {
		bsr[k] = s[k] / s[0]
	}
	cands := [][]float64{bsr}
	if b > 1 {
		// Optimise t_1..t_{b-1} with t_0 = 1 fixed (the loss is invariant
		// to scaling C).
		x, _, err := minimizeTail(ctx, bsr[:b], func(t []float64) float64 { return tw.loss(t, linalg.SeriesInverse(t, r)) })
		if err != nil {
			return nil, 0, err
		}
		c := make([]float64, r)
		c[0] = 1
		copy(c[1:], x)
		cands = append(cands, c)
	}
	return cands, b, nil
}

// toeplitzWorkload is a lower-triangular Toeplitz workload: A[i][j] =
// a[i-j]. It carries the helpers that the banded strategies and [BLT] share.
type toeplitzWorkload struct {
	a []float64
	// prefix is set for the prefix-sum workload (a all ones), whose
	// products are cumulative sums.
	prefix bool
}

// toeplitzOf returns w as a Toeplitz workload, or an error naming strategy
// if w is not Toeplitz.
func toeplitzOf(strategy string, w *Workload) (toeplitzWorkload, error) {
	if err := checkWorkload(w); err != nil {
		return toeplitzWorkload{}, err
	}
	r := w.R()
	if w.IsPrefix() {
		return toeplitzWorkload{a: ones(r), prefix: true}, nil
	}
	a := make([]float64, r)
	m := w.Matrix()
	scale := 0.0
	for i := 0; i < r; i++ {
		a[i] = m.At(i, 0)
		scale = math.Max(scale, math.Abs(a[i]))
	}
	for i := 1; i < r; i++ {
		for j := 1; j <= i; j++ {
			if math.Abs(m.At(i, j)-a[i-j]) > 1e-12*scale {
				return toeplitzWorkload{}, fmt.Errorf("factorize: strategy %q supports only Toeplitz workloads (such as prefix or momentum), not %q", strategy, w.Name())
			}
		}
	}
	if !(a[0] > 0) {
		return toeplitzWorkload{}, fmt.Errorf("factorize: strategy %q needs a workload with a positive diagonal, got %v", strategy, a[0])
	}
	return toeplitzWorkload{a: a}, nil
}

// sqrt returns the first n power-series coefficients of the square root of
// the workload's series a(x): s_0 = sqrt(a_0), s_k = (a_k - sum_{i=1}^{k-1}
// s_i s_{k-i}) / (2 s_0). For prefix sums these are [SqrtCoefficients].
func (tw toeplitzWorkload) sqrt(n int) []float64 {
	if tw.prefix {
		return SqrtCoefficients(n)
	}
	s := make([]float64, n)
	s[0] = math.Sqrt(tw.a[0])
	for k := 1; k < n; k++ {
		v := tw.a[k]
		for i := 1; i < k; i++ {
			v -= s[i] * s[k-i]
		}
		s[k] = v / (2 * s[0])
	}
	return s
}

// times returns the first column of A T_u, the convolution of a and u.
func (tw toeplitzWorkload) times(u []float64) []float64 {
	r := len(tw.a)
	out := make([]float64, r)
	if tw.prefix {
		s := 0.0
		for k := 0; k < r; k++ {
			s += u[k]
			out[k] = s
		}
		return out
	}
	for k := 0; k < r; k++ {
		v := 0.0
		for j := 0; j <= k; j++ {
			v += tw.a[k-j] * u[j]
		}
		out[k] = v
	}
	return out
}

// loss returns the loss of the Toeplitz factorization C = T_c, B = A T_u
// with u the series inverse of c: gamma^2 = sum_k c_k^2 (column 0 is the
// longest) times ||B||_F^2 = sum_k (R-k) beta_k^2, beta = a * u.
func (tw toeplitzWorkload) loss(c, u []float64) float64 {
	return columnNormSq(c[:min(len(tw.a), len(c))]) * tw.frobB(u)
}

// frobB returns ||A T_u||_F^2 = sum_k (R-k) beta_k^2, beta = a * u.
func (tw toeplitzWorkload) frobB(u []float64) float64 {
	r := len(tw.a)
	beta := tw.times(u)
	frob := 0.0
	for k, v := range beta {
		frob += float64(r-k) * v * v
	}
	return frob
}

// toeplitzFactorization returns the factorization C = T_c N^{-1},
// B = A N T_u, with T_c and T_u = T_c^{-1} lower-triangular Toeplitz and N
// the column norms of T_c (so C has unit columns), or with N = I if the
// column scaling does not lower the loss. Metrics are computed from the
// dense B and C. It also returns the scaling N used.
func toeplitzFactorization(strategy string, w *Workload, tw toeplitzWorkload, c, u []float64) (*Factorization, []float64) {
	r := w.R()
	norm := columnNorms(c[:r])
	scaled := toeplitzScaled(strategy, w, tw, c, u, norm)
	if plain := tw.loss(c, u); plain < scaled.Metrics.Loss {
		unit := ones(r)
		return toeplitzScaled(strategy, w, tw, c, u, unit), unit
	}
	return scaled, norm
}

// toeplitzScaled returns C = T_c diag(scale)^{-1}, B = A diag(scale) T_u.
func toeplitzScaled(strategy string, w *Workload, tw toeplitzWorkload, c, u, scale []float64) *Factorization {
	r := w.R()
	cm := mat.NewDense(r, r, nil)
	m := mat.NewDense(r, r, nil) // diag(scale) T_u = C^{-1}
	for i := 0; i < r; i++ {
		crow, mrow := cm.RawRowView(i), m.RawRowView(i)
		for j := 0; j <= i; j++ {
			crow[j] = c[i-j] / scale[j]
			mrow[j] = scale[i] * u[i-j]
		}
	}
	var b *mat.Dense
	if tw.prefix {
		b = m
		for i := 1; i < r; i++ {
			prev, row := b.RawRowView(i-1), b.RawRowView(i)
			for j := 0; j < i; j++ {
				row[j] += prev[j]
			}
		}
	} else {
		b = mat.NewDense(r, r, nil)
		b.Mul(w.Matrix(), m)
		// Zero the strict upper triangle exactly (it is zero up to
		// rounding) so that the factors are causal.
		for i := 0; i < r; i++ {
			row := b.RawRowView(i)
			for j := i + 1; j < r; j++ {
				row[j] = 0
			}
		}
	}
	return finish(strategy, toeplitzOpOf(cm), w, b, cm)
}

// minimizeSmooth minimises the smooth function f from x0 with dpmf's
// L-BFGS (internal/optim) using central finite-difference gradients. Its
// memory (1000 pairs) exceeds the iteration limit, so on these problems of
// at most a few dozen coefficients it keeps every curvature pair, as full
// BFGS does. It returns the best point found, stopping
// when the relative decrease of f stays below 1e-13 for 5 iterations, when
// no step decreases f, or after 1000 iterations; it returns ctx's error if
// ctx is done. f may return +Inf for points outside its domain.
func minimizeSmooth(ctx context.Context, f func([]float64) float64, x0 []float64) ([]float64, error) {
	grad := func(g, x []float64) { copy(g, fdGradient(f, x)) }
	return lbfgsBest(ctx, f, grad, x0, optim.Settings{StallTol: 1e-13, StallIters: 5, MaxIter: 1000, Memory: 1000}, "the coefficients")
}

// lbfgsBest runs [optim.LBFGS] from a copy of x0 and returns the best
// point found, also where the line search failed or the iteration limit
// was reached; it returns ctx's error if ctx is done, and other errors
// naming what was optimised.
func lbfgsBest(ctx context.Context, f func([]float64) float64, grad func(g, x []float64), x0 []float64, set optim.Settings, what string) ([]float64, error) {
	x := append([]float64(nil), x0...)
	_, err := optim.LBFGS(ctx, x, f, grad, set)
	switch {
	case err == nil, errors.Is(err, optim.ErrLineSearch), errors.Is(err, optim.ErrMaxIter):
		return x, nil // the best point found
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("factorize: optimisation of %s: %w", what, err)
}

// minimizeTail minimises log loss(t) by [minimizeSmooth] over t[1:],
// from t0 with t[0] = t0[0] fixed, and returns the minimiser of the tail
// and the objective it minimised (+Inf where the loss is not positive
// and finite), which reuses one scratch t.
func minimizeTail(ctx context.Context, t0 []float64, loss func(t []float64) float64) (tail []float64, obj func([]float64) float64, err error) {
	t := slices.Clone(t0)
	obj = func(x []float64) float64 {
		copy(t[1:], x)
		return logLoss(loss(t))
	}
	tail, err = minimizeSmooth(ctx, obj, slices.Clone(t0[1:]))
	return tail, obj, err
}

// logLoss returns log l, or +Inf where the loss l is not positive and
// finite (outside the domain of the minimisers).
func logLoss(l float64) float64 {
	if !(l > 0) || math.IsInf(l, 0) {
		return math.Inf(1)
	}
	return math.Log(l)
}

// fdGradient returns the central finite-difference gradient of f at x.
func fdGradient(f func([]float64) float64, x []float64) []float64 {
	g := make([]float64, len(x))
	xp := append([]float64(nil), x...)
	for i := range x {
		hi := 1e-6 * math.Max(1, math.Abs(x[i]))
		xp[i] = x[i] + hi
		fp := f(xp)
		xp[i] = x[i] - hi
		fm := f(xp)
		xp[i] = x[i]
		g[i] = (fp - fm) / (2 * hi)
	}
	return g
}

// scaledToeplitz is the factorization C = T_c diag(scale)^{-1},
// B = A diag(scale) T_u of a Toeplitz workload A, with T_c and
// T_u = T_c^{-1} lower-triangular Toeplitz (c and u of length R): the
// form of sqrt-normalized, bsr, banded's fit and blt. Its metrics come
// without forming B and C (see metrics).
type scaledToeplitz struct {
	tw          toeplitzWorkload
	c, u, scale []float64
	// expo, when set, is u as a sum of exponentials (a BLT's T_d: u_0 = 1,
	// u_k = sum_m w_m lambda_m^(k-1)), which lets normsB run in O(R K)
	// for prefix sums whatever the scales (normsExpo).
	expo *BLTParams
	// frob and maxRow cache ||B||_F^2 and max_i ||B[i, :]||^2 (set once
	// normsB has run).
	frob, maxRow float64
	normed       bool
}

// plain reports whether C is not scaled (scale all ones).
func (s *scaledToeplitz) plain() bool {
	return !slices.ContainsFunc(s.scale, func(v float64) bool { return v != 1 })
}

// colSq returns the squared column norms of C, O(R).
func (s *scaledToeplitz) colSq() []float64 {
	r := len(s.c)
	out := make([]float64, r)
	t := 0.0
	for k := 0; k < r; k++ {
		t += s.c[k] * s.c[k]
		j := r - 1 - k // column j holds c_0..c_{R-1-j}
		out[j] = t / (s.scale[j] * s.scale[j])
	}
	return out
}

// maxScaledTail is the longest tail of unequal column scales that
// normsB takes for a workload other than prefix sums (O(R L^2) time).
const maxScaledTail = 256

// normsB returns ||B||_F^2 and the largest squared row norm of B. With
// scale_t = s_0 for t < t0, the rows i < t0 are those of the Toeplitz
// s_0 A T_u, whose first column is s_0 beta, beta = a * u: row i has
// norm^2 s_0^2 sum_{m <= i} beta_m^2 (O(R) in all). The other L = R - t0
// rows (the last b - 1 for a banded C with unit columns, all but the
// first for sqrt-normalized) come column by column: for prefix sums by
// the dense path's recurrence B[i][j] = B[i-1][j] + scale_i u_{i-j} from
// row t0 - 1 (O(R L) time, O(R) memory); otherwise as s_0 beta_{i-j} plus
// sum_{t0 <= t <= i} a_{i-t} (scale_t - s_0) u_{t-j} (O(R L^2), for
// L <= maxScaledTail). For prefix sums with u a sum of exponentials (a
// BLT's, s.expo), normsExpo's recursion gives every row in O(R K).
func (s *scaledToeplitz) normsB() (frob, maxRow float64, err error) {
	if s.normed {
		return s.frob, s.maxRow, nil
	}
	r := len(s.c)
	s0 := s.scale[0]
	t0 := 1
	for t0 < r && s.scale[t0] == s0 {
		t0++
	}
	if t0 < r && !s.tw.prefix && r-t0 > maxScaledTail {
		return 0, 0, fmt.Errorf("factorize: loss-only metrics of a Toeplitz C with %d columns of other norms need the prefix-sum workload (or at most %d)", r-t0, maxScaledTail)
	}
	if t0 < r && s.tw.prefix && s.expo != nil {
		frob, maxRow = s.normsExpo()
		s.frob, s.maxRow, s.normed = frob, maxRow, true
		return frob, maxRow, nil
	}
	beta := s.tw.times(s.u[:r])
	run := 0.0
	for i := 0; i < t0; i++ {
		run += beta[i] * beta[i]
		v := s0 * s0 * run
		frob += v
		maxRow = math.Max(maxRow, v)
	}
	if t0 < r {
		row := make([]float64, r) // row[i]: ||B[i, :]||^2 for i >= t0
		if s.tw.prefix {
			for j := 0; j < r; j++ {
				b := 0.0
				if j < t0 {
					b = s0 * beta[t0-1-j]
				}
				for i := max(j, t0); i < r; i++ {
					b += s.scale[i] * s.u[i-j]
					row[i] += b * b
				}
			}
		} else {
			for i := t0; i < r; i++ {
				for j := 0; j <= i; j++ {
					v := s0 * beta[i-j]
					for t := max(j, t0); t <= i; t++ {
						v += s.tw.a[i-t] * (s.scale[t] - s0) * s.u[t-j]
					}
					row[i] += v * v
				}
			}
		}
		for _, v := range row[t0:] {
			frob += v
			maxRow = math.Max(maxRow, v)
		}
	}
	s.frob, s.maxRow, s.normed = frob, maxRow, true
	return frob, maxRow, nil
}

// normsExpo returns what normsB does for prefix sums when u is the sum of
// exponentials s.expo, in O(R K) time and O(K) memory beyond u (K the
// number of weights), where the column-by-column recurrence takes
// O(R L). Row i of B = A diag(scale) T_u is row i-1 plus scale_i times
// row i of T_u, so, with N_i = ||B[i, :]||^2,
//
//	N_i = N_{i-1} + 2 scale_i X_i + scale_i^2 sum_{t <= i} u_t^2,
//	X_i = sum_{j < i} B[i-1][j] u_{i-j} = sum_m w_m S_m(i),
//
// where S_m(i) = sum_{j < i} B[i-1][j] lambda_m^(i-1-j) (u_{i-j} =
// sum_m w_m lambda_m^(i-j-1) for i > j). Adding row i's new terms gives
// S_m(i+1) = lambda_m S_m(i) + scale_i V_m(i), V_m(i) = sum_{t <= i} u_t
// lambda_m^t. Every factor is in [0, 1] or a running sum, so nothing
// grows beyond the sums themselves (lambda_m^t underflows to zero for
// large t, which is its value to double precision).
//
// The running sums (S_m, V_m, sum u_t^2, X_i, N_i and their total) are
// carried in double-double (a float64 pair holding about 106 bits): in
// float64 their rounding errors, each carried on through the later rows,
// put the norms a relative 1e-12 (R = 3000) to 1e-11 (R = 10^4) away
// from the dense B's, growing about like R^2, where the column
// recurrence agrees to 1e-15 (TestNormsExpoDense); in double-double
// they agree to 1e-13.
func (s *scaledToeplitz) normsExpo() (frob, maxRow float64) {
	r := len(s.c)
	w, lam := s.expo.Weights, s.expo.Lambdas[:len(s.expo.Weights)]
	k := len(w)
	sm := make([]dd, k)      // S_m(i)
	vm := make([]dd, k)      // V_m(i)
	pw := make([]float64, k) // lambda_m^i
	for m := range pw {
		pw[m] = 1
	}
	var n, u2, fr dd
	for i := 0; i < r; i++ {
		ui := s.u[i]
		u2 = u2.add(ddProd(ui, ui))
		var x dd
		for m := range k {
			x = x.add(sm[m].mulF(w[m]))
		}
		si := s.scale[i]
		n = n.add(x.mulF(2 * si)).add(u2.mulF(si).mulF(si))
		fr = fr.add(n)
		maxRow = math.Max(maxRow, n.hi+n.lo)
		for m := range k {
			vm[m] = vm[m].add(ddProd(ui, pw[m]))
			pw[m] *= lam[m]
			sm[m] = sm[m].mulF(lam[m]).add(vm[m].mulF(si))
		}
	}
	return fr.hi + fr.lo, maxRow
}

// dd is a double-double number, the unevaluated sum hi + lo with |lo| at
// most half an ulp of hi, for normsExpo's running sums.
type dd struct{ hi, lo float64 }

// ddProd returns a b exactly as a dd (a fused multiply-add gives the
// rounding error of the product).
func ddProd(a, b float64) dd {
	return ddNorm(ddfloat.TwoProd(a, b))
}

// ddNorm returns s + e renormalized (Fast2Sum: |e| <= |s| or s = 0).
func ddNorm(s, e float64) dd {
	h, l := ddfloat.FastTwoSum(s, e)
	return dd{h, l}
}

// add returns a + b to within about 2^-104 (|a| + |b|) (Knuth's TwoSum
// of the high parts, the low parts added to its error).
func (a dd) add(b dd) dd {
	s, e := ddfloat.TwoSum(a.hi, b.hi)
	h, l := ddfloat.FastTwoSum(s, e+a.lo+b.lo)
	return dd{h, l}
}

// mulF returns a f to within 3u^2 |a f| (u = 2^-53; ddfloat.MulFloat).
func (a dd) mulF(f float64) dd {
	h, l := ddfloat.MulFloat(a.hi, a.lo, f)
	return dd{h, l}
}

// gramRows produces the rows of X = C^T C from the last to the first in
// O(R^2) time and O(R) memory: with G = T_c^T T_c, G(i, j) =
// G(i+1, j+1) + c_{R-1-i} c_{R-1-j} (the sums over t >= max(i, j) of
// c_{t-i} c_{t-j} lose their last term), and X_ij = G(i, j) /
// (scale_i scale_j).
func (s *scaledToeplitz) gramRows(visit func(i int, row []float64)) {
	r := len(s.c)
	g := make([]float64, r)
	x := make([]float64, r)
	inv := make([]float64, r)
	for j, v := range s.scale {
		inv[j] = 1 / v
	}
	for i := r - 1; i >= 0; i-- {
		a := s.c[r-1-i]
		si := inv[i]
		for j := 0; j < r-1; j++ {
			v := g[j+1] + a*s.c[r-1-j]
			g[j] = v
			x[j] = v * si * inv[j]
		}
		g[r-1] = a * s.c[0]
		x[r-1] = g[r-1] * si * inv[r-1]
		visit(i, x)
	}
}

// minSep returns the sensitivity of C under b-min-separation with k >= 2
// participations (b <= R, k at most ceil(R/b)), by the rule
// [SensitivityOf] takes for the dense C: the Toeplitz rule for a plain C
// with non-negative non-increasing coefficients, the banded rule when C
// has at most b bands (columns b apart have disjoint supports), else the
// dynamic-programming bound over X's rows ([minSepBoundRows], O(R^2)).
func (s *scaledToeplitz) minSep(b, k int, colSq []float64) (Sensitivity, error) {
	r := len(s.c)
	mono := s.plain() // and c non-negative and non-increasing
	for i := 0; mono && i < r; i++ {
		mono = !(s.c[i] < 0 || (i > 0 && s.c[i] > s.c[i-1]))
	}
	if mono {
		v, err := ToeplitzMinSepSensitivity(s.c, b, k)
		return Sensitivity{Value: v, Exact: true, Rule: RuleMinSepToeplitz}, err
	}
	bands := 0
	for i, v := range s.c {
		if v != 0 {
			bands = i + 1
		}
	}
	if bands <= b {
		return Sensitivity{Value: math.Sqrt(bestSeparated(colSq, b, k)), Exact: true, Rule: RuleMinSepBanded}, nil
	}
	return Sensitivity{Value: minSepBoundRows(r, b, k, s.gramRows), Rule: RuleMinSepBound}, nil
}

// metrics returns the metrics of the factorization under p (single
// participation or min-separation).
func (s *scaledToeplitz) metrics(p Participation) (Metrics, error) {
	r := len(s.c)
	colSq := s.colSq()
	gamma := math.Sqrt(slices.Max(colSq))
	frob, maxRow, err := s.normsB()
	if err != nil {
		return Metrics{}, err
	}
	sens := Sensitivity{Value: gamma, Exact: true, Rule: RuleColumnNorm}
	if k := p.Participations(r); p.Kind == KindMinSep && k > 1 {
		if sens, err = s.minSep(min(p.B, r), k, colSq); err != nil {
			return Metrics{}, err
		}
	}
	return metricsFrom(r, gamma, p, sens, frob, maxRow), nil
}

// toeplitzLossOnly returns the scaling that [toeplitzFactorization] picks
// for c and u (column norms unless they do not lower the loss, else ones)
// and the metrics under p of the factorization it picks, without forming
// it.
func toeplitzLossOnly(tw toeplitzWorkload, c, u []float64, expo *BLTParams, p Participation) (Metrics, []float64, error) {
	r := len(tw.a)
	scaled := &scaledToeplitz{tw: tw, c: c[:r], u: u, scale: columnNorms(c[:r]), expo: expo}
	ms, err := scaled.metrics(SingleParticipation())
	if err != nil {
		return Metrics{}, nil, err
	}
	if plain := tw.loss(c, u); plain < ms.Loss {
		scaled = &scaledToeplitz{tw: tw, c: c[:r], u: u, scale: ones(r)}
	}
	m, err := scaled.metrics(p)
	return m, scaled.scale, err
}

// scaledBandedOp returns the banded operator of C = T_c diag(scale)^{-1}
// with b bands (c's first b coefficients), O(R b) memory.
func scaledBandedOp(c, scale []float64, b int) bandedOp {
	r := len(scale)
	o := bandedOp{bands: b, diag: make([]float64, r), sub: make([][]float64, r)}
	for i := 0; i < r; i++ {
		o.diag[i] = c[0] / scale[i]
		o.sub[i] = make([]float64, min(b-1, i))
		for d := range o.sub[i] {
			o.sub[i][d] = c[d+1] / scale[i-d-1]
		}
	}
	return o
}
