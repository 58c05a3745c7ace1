package factorize

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/linalg"
)

// DefaultMaxExcess is the relative excess over the certified optimal loss
// that [SemisepStrategy] aims for when the number of state vectors is not
// given.
const DefaultMaxExcess = 1e-3

// MaxSemisepBuffers bounds the number of state vectors [SemisepStrategy]
// tries when it chooses it by the target loss.
const MaxSemisepBuffers = 64

// StrategySemisep is the name of [SemisepStrategy].
const StrategySemisep = "semiseparable"

func init() {
	register(StrategyInfo{
		Name: StrategySemisep, rank: 110, Doc: "the optimum's semiseparable structure with K state vectors",
		Stream:    "K (by default the fewest within 0.1% of the optimum)",
		Workloads: "workloads with a bidiagonal inverse and R >= 2 only (prefix sums, weighted prefix sums)",
		serves:    func(_ Strategy, w *Workload, _ Participation) bool { return w.bidiagonalInverse() },
		Settings: []Setting{
			{Name: "buffers", Type: "int", Default: "the fewest within max-excess of the optimum", Doc: fmt.Sprintf("number K of state vectors (at most %d)", MaxSemisepBuffers)},
			{Name: "max-excess", Type: "float", Default: strconv.FormatFloat(DefaultMaxExcess, 'g', -1, 64), Doc: "relative excess over the optimal loss allowed when choosing K"},
			{Name: "tol", Type: "float", Default: strconv.FormatFloat(DefaultTol, 'g', -1, 64), Doc: docTol},
			{Name: "max-iter", Type: "int", Default: strconv.Itoa(DefaultMaxIter), Doc: docMaxIter},
		},
		lossOnly: []ParticipationKind{KindSingle},
		proto:    SemisepStrategy{},
		checkUnder: func(s Strategy, _ Participation) error {
			if ss := s.(SemisepStrategy); ss.Buffers > 0 && ss.MaxExcess != 0 {
				// max-excess chooses K: with K given it would be ignored.
				return &ParamError{Param: "strategy", Value: strconv.Quote(ss.Spec()), Want: "max-excess only without buffers (it is the excess allowed when choosing the number of buffers)"}
			}
			return nil
		},
		fields: []field{
			{ptr: func(p any) any { return &p.(*SemisepStrategy).Buffers }, lo: 1, hi: MaxSemisepBuffers},
			{ptr: func(p any) any { return &p.(*SemisepStrategy).MaxExcess }, def: DefaultMaxExcess},
			{ptr: func(p any) any { return &p.(*SemisepStrategy).Tol }, def: DefaultTol},
			{ptr: func(p any) any { return &p.(*SemisepStrategy).MaxIter }, lo: 1, keyless: true},
		},
		// A count <= 0 (chosen by the solve) reads as the largest.
		streamVectors: func(s Strategy, _ int) int { return cmp.Or(max(s.(SemisepStrategy).Buffers, 0), MaxSemisepBuffers) },
		solveBytes: func(s Strategy, r int, _ Participation, _ bool) float64 {
			// The optimal solver's O(R) vectors, then the generators
			// (3 R K floats, K <= MaxSemisepBuffers) and the factors if
			// formed.
			need := 8 * float64(lossOnlyFloatsPerRound+3*MaxSemisepBuffers) * float64(r)
			if s.(SemisepStrategy).Factors {
				need += factorBytes(r, r)
			}
			return need
		},
		lossOnlyPtr: func(p any) *bool { return &p.(*SemisepStrategy).Factors },
		factorsPtr:  true,
		progressPtr: func(p any) *func(Progress) { return &p.(*SemisepStrategy).Progress },
	})
}

// SemisepParams is the streaming description of a [SemisepStrategy]
// factorization: its causal factor C in quasiseparable form of order
// C.K (see [linalg.QuasiSep]). C^{-1} Z is applied round by round by
// forward substitution ([linalg.QuasiSep.SolveStep]) with K state vectors
// of the noise's dimension.
type SemisepParams struct {
	// C is the R x R lower-triangular causal factor.
	C linalg.QuasiSep
	// OptimalLower is the certified lower bound on the optimal loss the
	// factorization was compared with, and Excess = Loss / OptimalLower - 1.
	OptimalLower, Excess float64
}

// semiseparable returns the semiseparable factorization with k state
// vectors (see [SemisepStrategy]).
func semiseparable(ctx context.Context, w *Workload, k int, maxExcess float64, factors bool, opt Options) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if k < 0 || k > MaxSemisepBuffers {
		return nil, &ParamError{Param: "buffers", Value: k, Want: fmt.Sprintf("between 1 and %d (or 0 to choose by the target loss)", MaxSemisepBuffers)}
	}
	maxExcess = cmp.Or(maxExcess, DefaultMaxExcess)
	if !(maxExcess > 0) || math.IsInf(maxExcess, 0) {
		return nil, &ParamError{Param: "max excess", Value: maxExcess, Want: "a finite number > 0"}
	}
	if !w.bidiagonalInverse() {
		return nil, fmt.Errorf("factorize: strategy %q needs a workload with a bidiagonal inverse (prefix or weighted prefix sums) and R >= 2, not %q with R = %d", StrategySemisep, w.Name(), w.R())
	}
	opt.LossOnly = true
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	// As in Optimal: the optimal X of t A is that of A.
	t := w.balance()
	ws := w
	if t != 1 {
		ws = w.scaledBy(t)
	}
	ev := newStructuredEvaluator(ws)
	sol, err := fixedPoint(ctx, ev, ws.R(), opt)
	if err != nil {
		return nil, err
	}
	if err := ev.setup(sol.vUpper, quadTol); err != nil {
		return nil, err
	}
	lo, hi := ev.bi.Bounds(ev.lo)
	if err := checkSpectrum(lo, hi); err != nil {
		return nil, err
	}
	optLower := sol.lower / t / t
	try := func(k int) (*Factorization, error) {
		q := linalg.NewInvSqrtRationalN(lo, hi, k)
		cf, err := ev.semisepX(sol.vUpper, q, false).ReverseCholesky()
		if err != nil {
			return nil, fmt.Errorf("factorize: semiseparable factor with %d state vectors: %w", k, err)
		}
		f := quasiSepResult(StrategySemisep, w, ws, t, cf)
		f.Semisep = &SemisepParams{C: cf, OptimalLower: optLower, Excess: f.Metrics.Loss/optLower - 1}
		return f, nil
	}
	var f *Factorization
	if k > 0 {
		if f, err = try(k); err != nil {
			return nil, err
		}
	} else {
		for k = 1; ; k++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if f, err = try(k); err != nil {
				return nil, err
			}
			if f.Semisep.Excess <= maxExcess {
				break
			}
			if k == MaxSemisepBuffers && sol.gap > maxExcess {
				// The excess is measured against the certified lower
				// bound, which the solve left up to a relative gap
				// below the optimum: no K can be certified.
				return nil, &ParamError{Param: "tol", Value: opt.Tol, Want: fmt.Sprintf("a solver tolerance below max-excess = %g: the excess over the optimum is measured against its certified lower bound, which the solve left within a gap of %.3g (no factor with at most %d state vectors came within %g of it; the best is %.3g above it)", maxExcess, sol.gap, MaxSemisepBuffers, maxExcess, f.Semisep.Excess)}
			}
			if k == MaxSemisepBuffers {
				return nil, fmt.Errorf("factorize: no semiseparable factor with at most %d state vectors is within %g of the optimal loss (the best is %.3g above it)", MaxSemisepBuffers, maxExcess, f.Semisep.Excess)
			}
		}
	}
	f.Iterations, f.Evaluations, f.Gap = sol.iter, sol.evals, sol.gap
	if factors {
		f.B, f.C = quasiSepFactors(f.Semisep.C, w)
	}
	return f, nil
}

// quasiSepResult returns the factorization, without dense factors, of the
// causal factor cf of workload w (cf computed for ws = t w), streamed from
// cf's generators, with its single-participation metrics computed from
// them in O(R K^2).
func quasiSepResult(strategy string, w, ws *Workload, t float64, cf linalg.QuasiSep) *Factorization {
	n := w.R()
	inv, _ := ws.InverseBand()
	ldiag, lsub := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		ldiag[i] = inv.At(i, i)
		if i > 0 {
			lsub[i] = inv.At(i, i-1)
		}
	}
	// Three sequential recursions of O(R K^2): C's column norms beside B's
	// column and row norms (themselves two goroutines).
	colSq, bCol, bRow := make([]float64, n), make([]float64, n), make([]float64, n)
	par.Both(float64(n)*float64(cf.K*cf.K), func() { cf.ColNormsSq(colSq) }, func() { cf.BidiagSolveNormsSq(ldiag, lsub, bCol, bRow) })
	gamma2 := slices.Max(colSq)
	frob, maxRow := 0.0, 0.0
	for i := 0; i < n; i++ {
		frob += bCol[i]
		maxRow = math.Max(maxRow, bRow[i])
	}
	frob, maxRow = frob/t/t, maxRow/t/t
	return squareResult(strategy, quasiSepOp{cf}, w, singleMetrics(n, math.Sqrt(gamma2), frob, maxRow))
}

// SemisepStrategy is a factorization whose C^{-1} can be streamed with
// k = Buffers state vectors per coordinate, built from the structure of the optimum
// (docs/solver.md): with the certified optimal multipliers v (gap
// Tol) and T = D^{-1} A^{-1} A^{-T} D^{-1}, the optimal X is
// D^{-1} T^{-1/2} D^{-1}; replacing T^{-1/2} by the k-term rational
// approximation r_k(T) = sum_t w_t (T + s_t I)^{-1} on T's spectrum gives a
// positive definite X_k that is quasiseparable of order k. It is scaled to
// unit largest diagonal with its diagonal raised to 1, and C is its causal
// (reverse Cholesky) factor, in O(R k^2).
//
// The metrics are those of the operator actually used, never assumed: the
// sensitivity is the largest column norm of C and the loss
// gamma^2 ||A C^{-1}||_F^2, both computed from C's generators in
// O(R k^2) ([linalg.QuasiSep.ColNormsSq],
// [linalg.QuasiSep.BidiagSolveNormsSq]). With k = 0 the smallest k whose
// loss is within a relative MaxExcess of the
// certified optimal lower bound is used (at most [MaxSemisepBuffers]).
//
// B and C are formed densely (O(R^2) memory) only with Factors;
// otherwise B and C are nil and f.Semisep carries the streaming form
// (O(R k) memory), which f.Operator streams. The workload must have a
// bidiagonal inverse (prefix or weighted prefix sums) and R >= 2.
type SemisepStrategy struct {
	// Buffers is the number K of state vectors; 0 chooses the smallest
	// within MaxExcess of the optimum.
	Buffers int
	// MaxExcess is the target relative excess over the optimal loss when
	// Buffers is 0; 0 means [DefaultMaxExcess]. Set with Buffers > 0 it
	// would be ignored, and Factorize refuses it.
	MaxExcess float64
	// Factors forms B and C densely (O(R^2) memory); without it only the
	// streaming form and the metrics are computed.
	Factors bool
	// Tol is the optimal solver's certified relative gap; 0 means
	// [DefaultTol].
	Tol float64
	// MaxIter is the optimal solver's iteration limit; 0 means
	// [DefaultMaxIter].
	MaxIter int
	// Progress, if not nil, is called after every iteration of the
	// optimal solver.
	Progress func(Progress)
}

// Name returns "semiseparable".
func (SemisepStrategy) Name() string { return StrategySemisep }

// Spec returns the canonical spec,
// "semiseparable:buffers=K,max-excess=E,tol=T,max-iter=N" without the
// settings left at their default. Factors and Progress are not part of it
// (see [WithLossOnly]).
func (s SemisepStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization with metrics under p. Other
// participations than single need the factors (s.Factors) to compute
// their sensitivity.
func (s SemisepStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if err := checkArgs(ctx, w, p); err != nil {
		return nil, err // before the refusal below, which names a valid p
	}
	if err := CheckUnder(s, p); err != nil {
		return nil, err
	}
	if !s.Factors && p != SingleParticipation() {
		return nil, fmt.Errorf("factorize: strategy %q computes metrics under participation %v only with its factors formed (Factors)", StrategySemisep, p)
	}
	return under(ctx, w, p, s.Factors, func() (*Factorization, error) {
		return semiseparable(ctx, w, s.Buffers, s.MaxExcess, s.Factors, Options{Tol: s.Tol, MaxIter: s.MaxIter, Progress: s.Progress})
	})
}
