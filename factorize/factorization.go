package factorize

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Factorization is a factorization A = B C of a workload, with the metrics
// that every strategy reports.
//
// C is m x R and B is R x m: m = R for square strategies, m > R for the
// tree. B and C are nil for a loss-only result of [Optimal] (see
// [Options.LossOnly]); the metrics are then still exact.
type Factorization struct {
	// Strategy names the strategy that produced the factorization (for
	// display; code that needs the structure uses Operator).
	Strategy string
	// Operator streams the noise M Z (M = A^{-1} B, C^{-1} for square
	// factors) with the structure the strategy computed; mechanism.New
	// applies it. Nil for a metrics-only result (see [Options.LossOnly]).
	Operator Operator
	// Workload is the factorized workload A.
	Workload *Workload
	// B is the R x m decoder and C the m x R encoder, when the strategy
	// formed them densely; nil for a structured result that streams
	// without them (the optimal and semiseparable factorizations of
	// workloads with a bidiagonal inverse, loss-only results): use
	// [Factorization.Factors] to get them in every case.
	B, C *mat.Dense
	// Available[j] is the first round (0-based) whose release uses row j of
	// the noise, that is, the round by which noise row j must be drawn.
	// For square causal factors Available[j] = j.
	Available []int
	// Metrics holds gamma, the sensitivity, loss, RMSE and MaxSE under a
	// participation (single unless the strategy was given another, or
	// [Factorization.WithParticipation] was used).
	Metrics Metrics
	// Iterations is the number of fixed-point iterations (0 for closed forms).
	Iterations int
	// Evaluations is the number of matrix square roots the solver took:
	// one per iteration, plus, on the dense path, one per iteration whose
	// rounding error had to be bounded to certify the gap, and one for the
	// product M^{-1/2} of its second-order bound on those iterations (about
	// a third of a square root's cost).
	Evaluations int
	// Gap is the certified relative duality gap (0 for closed forms).
	Gap float64
	// Semisep holds the causal factor of a [SemisepStrategy] factorization
	// in quasiseparable form (nil for other strategies).
	Semisep *SemisepParams

	// key is the [CacheKey] of the strategy whose Factorize computed it
	// ([Factorization.StrategyKey]).
	key string
}

// StrategyKey returns the [CacheKey] of the strategy, with its settings,
// whose Factorize computed f under f.Metrics.Participation (kept by
// [Record] and [Record.Restore]), or "" for a factorization that no
// strategy's Factorize returned so (one built by hand, by a function such
// as [Optimal] or [BLT], or moved to another participation by
// [Factorization.WithParticipation]). A cache stores f only under that
// strategy's key.
func (f *Factorization) StrategyKey() string {
	if f == nil {
		return ""
	}
	return f.key
}

// keyed records the cache key of s in the factorization *f that a
// strategy's Factorize returns without error (*err nil).
func keyed(s Strategy, f **Factorization, err *error) {
	if *err == nil && *f != nil {
		(*f).key = CacheKey(s)
	}
}

// Metrics are the quality measures shared by every strategy, under the
// participation they were computed for, with noise of unit standard
// deviation per unit sensitivity of C.
type Metrics struct {
	// Gamma is the largest column norm of C: its sensitivity under single
	// participation.
	Gamma float64
	// Participation is the pattern the sensitivity, loss, RMSE and MaxSE
	// are computed under.
	Participation Participation
	// UnitSensitivity is the sensitivity of C G under Participation when
	// each row of G a sample takes part in changes by norm at most 1 (see
	// [Sensitivity]); it equals Gamma for single participation. A
	// release's L2 sensitivity is this times the bound on one row's change
	// (accountant.ReleaseSensitivity).
	UnitSensitivity Sensitivity
	// FrobBSq is ||B||_F^2 and MaxRowBSq is max_r ||B[r, :]||^2.
	// MaxRowBSq (and so MaxSE) is 0 where it is not computed: the
	// loss-only results of the banded strategy under min-separation
	// ([OptimalBanded]) and of the multi-epoch optimum
	// ([OptimalEpochs]); every real value is at least FrobBSq / R > 0.
	FrobBSq, MaxRowBSq float64
	// Loss is sens^2 ||B||_F^2 (sens = UnitSensitivity.Value): the total
	// squared error over all rounds when the noise is calibrated to the
	// sensitivity.
	Loss float64
	// RMSE is sqrt(Loss / R).
	RMSE float64
	// MaxSE is sens^2 max_r ||B[r, :]||^2, the worst round's squared error
	// (0 where MaxRowBSq is not computed).
	MaxSE float64
}

// ComputeMetrics returns the metrics of the factors b (R x m) and c (m x R)
// under participation p. A nil factor, factors whose shapes do not fit, a
// NaN or infinite entry ("B[i][j]", "C[i][j]") and a participation invalid
// for R rounds are errors (a *[ParamError] for the factors). Metrics that
// overflow (factors with entries near the top of the float64 range) are
// +Inf, which [FiniteMetrics] reports; a strategy's Factorize refuses them.
func ComputeMetrics(b, c mat.Matrix, p Participation) (Metrics, error) {
	if isNilMatrix(b) {
		return Metrics{}, &ParamError{Param: "B", Want: "an R x m matrix"}
	}
	if isNilMatrix(c) {
		return Metrics{}, &ParamError{Param: "C", Want: "an m x R matrix"}
	}
	r, m := b.Dims()
	m2, r2 := c.Dims()
	if m != m2 || r != r2 || r == 0 || m == 0 {
		return Metrics{}, &ParamError{Param: "C", Value: fmt.Sprintf("%d x %d", m2, r2), Want: fmt.Sprintf("%d x %d for B of %d x %d", m, r, r, m)}
	}
	maxB, err := checkFinite("B", b)
	if err != nil {
		return Metrics{}, err
	}
	sens, err := SensitivityOf(c, p)
	if err != nil {
		return Metrics{}, err
	}
	// B's squares are summed as they are unless its largest entry is far
	// from 1, where they would underflow or overflow: then over B / 2^e
	// (exact), and the loss as (sens 2^e)^2 ||B / 2^e||_F^2, so that a
	// tiny B with a huge C (1e-200 and 1e200) has its loss, not 0 times
	// +Inf = NaN (the scale of SensitivityOf, scaleExponent).
	scale := math.Ldexp(1, scaleExponent(maxB))
	frob, maxRow := 0.0, 0.0
	row := rowReader(b)
	for i := 0; i < r; i++ {
		s := 0.0
		for _, v := range row(i) {
			v /= scale
			s += v * v
		}
		frob += s
		maxRow = math.Max(maxRow, s)
	}
	g := sens.Value // single participation: Gamma(C)
	if p.Kind != KindSingle {
		g = Gamma(c)
	}
	if scale == 1 {
		return metricsFrom(r, g, p, sens, frob, maxRow), nil
	}
	met := metricsFrom(r, g, p, sens, scale*scale*frob, scale*scale*maxRow)
	ss := sens.Value * scale
	met.Loss = ss * ss * frob
	met.RMSE = math.Sqrt(met.Loss / float64(r))
	met.MaxSE = ss * ss * maxRow
	return met, nil
}

// metricsFrom assembles Metrics from gamma, the sensitivity under p and the
// squared norms of B.
func metricsFrom(r int, gamma float64, p Participation, sens Sensitivity, frobB, maxRowB float64) Metrics {
	s2 := sens.Value * sens.Value
	loss := s2 * frobB
	return Metrics{
		Gamma:           gamma,
		Participation:   p,
		UnitSensitivity: sens,
		FrobBSq:         frobB,
		MaxRowBSq:       maxRowB,
		Loss:            loss,
		RMSE:            math.Sqrt(loss / float64(r)),
		MaxSE:           s2 * maxRowB,
	}
}

// singleMetrics returns the metrics under single participation of factors
// with largest column norm gamma.
func singleMetrics(r int, gamma, frobB, maxRowB float64) Metrics {
	return metricsFrom(r, gamma, SingleParticipation(), Sensitivity{Value: gamma, Exact: true, Rule: RuleColumnNorm}, frobB, maxRowB)
}

// WithParticipation returns a copy of f (sharing its factors) whose metrics
// are computed under p. It is an error if p is invalid for f's rounds, or
// if f is a loss-only result and p is not single participation (the
// sensitivity needs C), or f is the loss-only multi-epoch optimum (its
// loss is the dual's upper bound under epochs; its single-participation
// metrics need C). A C in quasiseparable form (the semiseparable and
// structured optimal factorizations) is not formed under min-separation:
// the sensitivity comes from its generators in O(R^2 K) time and O(R K)
// memory.
func (f *Factorization) WithParticipation(p Participation) (*Factorization, error) {
	if f == nil || f.Workload == nil {
		return nil, &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	g := *f
	if p == f.Metrics.Participation {
		return &g, nil
	}
	// No strategy computed it under p: the strategy may compute another
	// factorization there (optimal under epochs:K, banded under minsep).
	g.key = ""
	if q, ok := f.Operator.(quasiSepOp); ok && f.C == nil && p.Kind == KindMinSep {
		// The quasiseparable C gives the rows of C^T C one at a time:
		// the sensitivity without forming C (quasiSepMinSep).
		if err := p.Validate(f.Workload.R()); err != nil {
			return nil, err
		}
		m := f.Metrics
		g.Metrics = metricsFrom(f.Workload.R(), m.Gamma, p, quasiSepMinSep(q.c, p), m.FrobBSq, m.MaxRowBSq)
		return &g, nil
	}
	if f.C == nil && f.Operator != nil && p.Kind != KindSingle {
		b, c, err := f.Factors()
		if err != nil {
			return nil, err
		}
		g.B, g.C = b, c
	}
	if g.C == nil {
		if p.Kind != KindSingle {
			return nil, fmt.Errorf("factorize: %s is a loss-only result: its sensitivity under %v needs C", f.Strategy, p)
		}
		if err := p.Validate(f.Workload.R()); err != nil {
			return nil, err
		}
		m := f.Metrics
		if q := m.Participation; q.Kind == KindEpochs && q.K > 1 {
			// The loss-only multi-epoch optimum ([OptimalEpochs]) holds
			// the dual's bounds under its epochs (before 2026-11-27 its
			// Gamma was only the bound 1, then claimed here as the exact
			// largest column norm): its single-participation sensitivity
			// and loss need C.
			return nil, fmt.Errorf("factorize: %s is a loss-only result under %v: its metrics under %v need C", f.Strategy, q, p)
		}
		g.Metrics = singleMetrics(f.Workload.R(), m.Gamma, m.FrobBSq, m.MaxRowBSq)
		return &g, nil
	}
	m, err := ComputeMetrics(g.B, g.C, p)
	if err != nil {
		return nil, err
	}
	g.Metrics = m
	return &g, nil
}

// CheckCausal returns an error if the factorization cannot be used online:
// if a release at round r would use noise row j with Available[j] > r (a
// nonzero B[r][j]), or if noise row j would depend on data of a round after
// Available[j] (a nonzero C[j][t] with t > Available[j]). It is an error
// too if B is not R x m and C m x R for the workload's R, or if an
// availability round is outside [0, R) (before, a factorization assembled
// by hand with a C of fewer columns or a negative round panicked here). A
// nil factorization or one without factors (a loss-only result) is a
// *[ParamError].
func (f *Factorization) CheckCausal() error {
	if f == nil {
		return &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	b, c, err := f.Factors()
	if err != nil {
		return &ParamError{Param: "factorization", Value: "a loss-only result", Want: "one with factors B and C"}
	}
	r, m := b.Dims()
	if mc, rc := c.Dims(); r != f.Workload.R() || mc != m || rc != r {
		return fmt.Errorf("factorize: factors B of %d x %d and C of %d x %d for R = %d, want R x m and m x R", r, m, mc, rc, f.Workload.R())
	}
	if len(f.Available) != m {
		return fmt.Errorf("factorize: %d availability rounds for %d noise rows", len(f.Available), m)
	}
	for j := 0; j < m; j++ {
		av := f.Available[j]
		if av < 0 || av >= r {
			return fmt.Errorf("factorize: availability round %d of noise row %d, want 0 <= round < %d", av, j, r)
		}
		for i := 0; i < av && i < r; i++ {
			if b.At(i, j) != 0 {
				return fmt.Errorf("factorize: B[%d][%d] = %v uses noise row %d before round %d", i, j, b.At(i, j), j, av)
			}
		}
		for t := av + 1; t < r; t++ {
			if c.At(j, t) != 0 {
				return fmt.Errorf("factorize: C[%d][%d] = %v: noise row %d, used from round %d, depends on round %d", j, t, c.At(j, t), j, av, t)
			}
		}
	}
	return nil
}

// squareAvailable returns 0, 1, ..., r-1.
func squareAvailable(r int) []int {
	av := make([]int, r)
	for i := range av {
		av[i] = i
	}
	return av
}

// ones returns n ones: the scales of a C whose columns are not scaled.
func ones(n int) []float64 { return slices.Repeat([]float64{1}, n) }

// finish fills in single-participation metrics and availability of
// square factors.
func finish(strategy string, op Operator, w *Workload, b, c *mat.Dense) *Factorization {
	f := squareResult(strategy, op, w, mustMetrics(b, c))
	f.B, f.C = b, c
	return f
}

// squareResult returns the factorization of w that op streams with square
// causal factors (Available[j] = j) and metrics m, without dense factors:
// a metrics-only or structured result.
func squareResult(strategy string, op Operator, w *Workload, m Metrics) *Factorization {
	return &Factorization{Strategy: strategy, Operator: op, Workload: w, Available: squareAvailable(w.R()), Metrics: m}
}

// mustMetrics returns the single-participation metrics of b and c; +Inf
// metrics where an entry of b or c is not finite (B = A C^{-1} overflowed
// for a workload with entries near the top of the float64 range), which a
// strategy's Factorize refuses (checkMetrics) with an error naming the
// workload. Before, it panicked.
func mustMetrics(b, c mat.Matrix) Metrics {
	m, err := ComputeMetrics(b, c, SingleParticipation())
	if err != nil {
		inf := math.Inf(1)
		r, _ := b.Dims()
		return metricsFrom(r, inf, SingleParticipation(), Sensitivity{Value: inf, Rule: RuleColumnNorm}, inf, inf)
	}
	return m
}

// Factors returns the dense factors B (R x m) and C (m x R): f.B and f.C
// when the strategy formed them, otherwise formed now from the structured
// form (O(R^2) memory; for a quasiseparable C, O(R^2 K) time) without
// changing f. It is an error for a metrics-only result, whose factors
// were never computed.
func (f *Factorization) Factors() (b, c *mat.Dense, err error) {
	lb, lc, err := f.FactorsLazily()
	if err != nil {
		return nil, nil, err
	}
	b, c = formBoth(lb.Form, lc.Form)
	return b, c, nil
}

// LazyFactor is one of the dense factors of a [Factorization] before it
// is formed: its shape and the function that forms it.
type LazyFactor struct {
	// Rows and Cols are the factor's shape.
	Rows, Cols int
	// Form returns the factor, formed on each call unless the
	// factorization holds it (then it is that matrix, not a copy).
	Form func() *mat.Dense
}

// FactorsLazily is [Factorization.Factors] in two halves that can run
// apart: it checks f as Factors does, forming nothing, and returns B and
// C as [LazyFactor] values. Where f holds the factors, their Form returns
// f.B and f.C. For a quasiseparable C (the structured optimum and the
// semiseparable strategy), B's rows come from C's generators, so each
// Form builds its factor alone (O(R^2 K), over the available cores); a
// caller that writes the factors to files (cmd/mfsolve) forms and writes
// each on its own goroutine, so that one is written while the other is
// still being formed. The results are those of Factors, bit for bit.
func (f *Factorization) FactorsLazily() (b, c LazyFactor, err error) {
	if f == nil || f.Workload == nil {
		return b, c, &ParamError{Param: "factorization", Want: "a factorization computed by this package"}
	}
	if f.B != nil && f.C != nil {
		fb, fc := f.B, f.C
		b.Rows, b.Cols = fb.Dims()
		c.Rows, c.Cols = fc.Dims()
		b.Form = func() *mat.Dense { return fb }
		c.Form = func() *mat.Dense { return fc }
		return b, c, nil
	}
	if q, ok := f.Operator.(quasiSepOp); ok {
		n, w := q.c.N, f.Workload
		b = LazyFactor{Rows: n, Cols: n, Form: func() *mat.Dense { return quasiSepB(q.c, w) }}
		c = LazyFactor{Rows: n, Cols: n, Form: func() *mat.Dense { return quasiSepC(q.c) }}
		return b, c, nil
	}
	return b, c, &ParamError{Param: "factorization", Value: fmt.Sprintf("%q without factors (a loss-only result)", f.Strategy), Want: "one with B and C"}
}
