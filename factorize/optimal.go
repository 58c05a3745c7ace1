package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime/debug"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// StrategyOptimal is the name of [OptimalStrategy].
const StrategyOptimal = "optimal"

func init() {
	register(StrategyInfo{
		Name: StrategyOptimal, rank: 120, Doc: "the certified optimum (single participation; the multi-epoch optimum under epochs:K)",
		Stream:    "K (about 11 + 3 log2 R; R, or regenerated, under epochs:K or path=dense)",
		Workloads: "every workload, but under epochs:K (1 < K < R) or with path=structured only those with a banded inverse (prefix sums, momentum, weighted prefix sums)",
		serves: func(s Strategy, w *Workload, p Participation) bool {
			// The multi-epoch solver of 1 < K < R and the structured path.
			return hasBandedInverse(w) || !(p.Kind == KindEpochs && p.K > 1 && p.K < w.R()) && s.(OptimalStrategy).Method != Structured
		},
		Settings: []Setting{
			{Name: "tol", Type: "float", Default: strconv.FormatFloat(DefaultTol, 'g', -1, 64), Doc: docTol},
			{Name: "max-iter", Type: "int", Default: strconv.Itoa(DefaultMaxIter), Doc: docMaxIter},
			{Name: "path", Type: "auto|structured|dense", Default: "auto", Doc: "structured (workloads with a banded inverse: O(R) per iteration) or dense (any workload: O(R^3) per iteration)"},
		},
		lossOnly: []ParticipationKind{KindSingle, KindEpochs},
		proto:    OptimalStrategy{},
		fields: []field{
			{ptr: func(p any) any { return &p.(*OptimalStrategy).Tol }, def: DefaultTol},
			{ptr: func(p any) any { return &p.(*OptimalStrategy).MaxIter }, lo: 1, keyless: true},
			{ptr: func(p any) any { return &p.(*OptimalStrategy).Method }},
		},
		// The structured path streams the causal factor in quasiseparable
		// form; the dense path's operator keeps (or regenerates) the R past
		// rows.
		streamVectors: func(s Strategy, r int) int {
			if s.(OptimalStrategy).Method == Dense {
				return r
			}
			return optimalStates(r)
		},
		pastRows: func(s Strategy, p Participation) bool {
			// The fixed-epoch solver and the dense path form dense
			// factors, which stream through their dense operator.
			return s.(OptimalStrategy).Method == Dense || (p.Kind == KindEpochs && p.K > 1)
		},
		solveBytes: func(s Strategy, r int, p Participation, bandedInverse bool) float64 {
			o := s.(OptimalStrategy)
			rf := float64(r)
			bandedInverse = bandedInverse && o.Method != Dense
			switch {
			case o.LossOnly && p.Kind == KindEpochs && p.K > 1 && p.K < r && !bandedInverse:
				// No banded inverse: OptimalEpochs refuses the workload;
				// counted as a dense solve, as before.
				return denseSolveBytes(r)
			case o.LossOnly && p.Kind == KindEpochs && p.K > 1 && p.K < r:
				// The fixed-epoch solver's band arrays of order R with
				// about (4 q + 1) k + 1 diagonals, q the inverse's
				// subdiagonals (1 for prefix sums; 2 taken), 24 of them
				// counted (12 to 22 measured, garbage included; momentum's
				// double-word L L^T and kernel work add 4 more), and the
				// in-class Newton blocks, twice: k (k - 1) / 2 squared for
				// each of the R / k classes, and 2 MiB for the rest
				// (1.5 MB measured at R = 96 with 8 epochs).
				w := float64(min(r, 9*p.K+1))
				np := float64(p.K) * float64(p.K-1) / 2 // in float64: K may be near MaxInt
				return 8*(24*w*rf+2*np*np*math.Ceil(rf/float64(p.K))) + 1<<21
			case o.LossOnly && p.Kind == KindEpochs && p.K > 1:
				return 8 * 8 * rf // one class: in closed form
			case o.LossOnly && bandedInverse:
				return 8 * lossOnlyFloatsPerRound * rf
			case o.LossOnly:
				// S, M and its reduction, two R x R work matrices and the
				// workload.
				return 8 * 6 * rf * rf
			}
			return denseSolveBytes(r)
		},
		checkUnder: func(s Strategy, p Participation) error {
			if o := s.(OptimalStrategy); o.Method != Auto && p.Kind == KindEpochs && p.K > 1 {
				// The fixed-epoch solver has one path.
				return &ParamError{Param: "strategy", Value: strconv.Quote(o.Spec()), Want: fmt.Sprintf("path only under single participation or minsep:B, not %v (its solver has one path)", p)}
			}
			_, err := s.(OptimalStrategy).withDefaults()
			return err
		},
		lossOnlyPtr: func(p any) *bool { return &p.(*OptimalStrategy).LossOnly },
		progressPtr: func(p any) *func(Progress) { return &p.(*OptimalStrategy).Progress },
	})
}

// OptimalStrategy is the certified optimal factorization for single
// participation (see [Optimal]) with its options.
type OptimalStrategy struct {
	Options
}

// Name returns "optimal".
func (OptimalStrategy) Name() string { return StrategyOptimal }

// Spec returns the canonical spec, "optimal:tol=T,max-iter=N,path=P"
// without the settings left at their default. LossOnly and Progress are
// not part of it (see [WithLossOnly]).
func (s OptimalStrategy) Spec() string { return specOf(s) }

// Factorize returns the certified optimal factorization for p: for fixed
// epochs [OptimalEpochs](ctx, w, p.K, s.Options) (sensitivity exactly 1
// under p), otherwise [Optimal](ctx, w, s.Options), the optimum for single
// participation, with its metrics under p (for min-separation this is a
// good factorization, not the optimal one).
func (s OptimalStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if err := CheckUnder(s, p); err != nil {
		return nil, err
	}
	if p.Kind == KindEpochs && p.K > 1 {
		return under(ctx, w, p, !s.Options.LossOnly, func() (*Factorization, error) { return OptimalEpochs(ctx, w, p.K, s.Options) })
	}
	// Optimal checks that its dense factors fit where it forms them.
	return under(ctx, w, p, false, func() (*Factorization, error) { return Optimal(ctx, w, s.Options) })
}

// optimalStates estimates, from above, the number K of state vectors of
// the optimal factorization's quasiseparable factor at R = r rounds: K is
// the number of nodes of the solver's rational approximation of x^{-1/2},
// which grows with the logarithm of the condition number of its matrix.
// Measured on the prefix workload: K = 11 at R = 2, 25 at R = 40, 29 at
// R = 100, 38 at R = 1000, 44 at R = 4000, 57 at R = 10^5, about
// 11 + 3 log2 R; the estimate 16 + 4 log2 R leaves a margin.
func optimalStates(r int) int { return 16 + 4*bits.Len(uint(max(r, 1))) }

// lossOnlyFloatsPerRound bounds the float64 vectors of length R that the
// structured loss-only solver keeps: about 25 measured (peak RSS 193 MB for
// mfsolve -R 1000000 -strategy optimal:max-iter=3 -loss-only), with a
// margin; about 39 for momentum (two subdiagonals: the double-word band
// kernel's L L^T, factor and sums; 312 MB with -workload momentum:0.9),
// within it.
const lossOnlyFloatsPerRound = 40

// evaluator evaluates the fixed-point map of the optimal factorization for
// one workload: phi(v) = diag((D S D)^{1/2}) with D = diag(sqrt(v)) and
// S = A^T A.
type evaluator interface {
	// phi writes phi(v) into dst and returns a bound on the relative error
	// of each entry, or NaN when a bound needs the extra work of
	// errorBound.
	phi(ctx context.Context, v, dst []float64) (relErr float64, err error)
	// errorBound returns a bound on the relative error of ph = phi(v), the
	// values its last call to phi returned for v.
	errorBound(ctx context.Context, v, ph []float64) (float64, error)
	// root returns (D S D)^{1/2} as a row-major n x n matrix whose upper
	// triangle (at least) is filled.
	root(ctx context.Context, v []float64) ([]float64, error)
}

// Optimal returns the factorization that minimises the loss ||A C^{-1}||_F^2
// subject to every column of C having unit norm, for any full-rank
// lower-triangular workload A (Denisov, McMahan, Rush, Smith and Thakurta,
// "Improved differential privacy for SGD via optimal private linear
// operators on adaptive streams", NeurIPS 2022, Theorem 3.2).
//
// # Algorithm
//
// With S = A^T A and X = C^T C, the problem is min tr(S X^{-1}) subject to
// diag(X) = 1. Its Lagrange dual, over multipliers v > 0 with
// D = diag(sqrt(v)), is
//
//	g(v) = 2 tr((D S D)^{1/2}) - sum(v),
//
// a lower bound on the optimal loss for every v. The optimum is the fixed
// point v = phi(v) = diag((D S D)^{1/2}), where the loss is sum(v). For any
// v, X(v) = D^{-1} (D S D)^{1/2} D^{-1} scaled by c = max_i phi_i / v_i and
// with its diagonal raised to 1 is feasible and has loss at most
// tr((D S D)^{1/2}) c: an upper bound. The solver iterates
// v <- phi(v) with Anderson acceleration (Walker and Ni 2011) on log v, and
// stops when the relative gap (upper - lower) / lower between the best bounds
// seen is at most Options.Tol: the answer is certified, not the result of an
// iteration count.
//
// # Structured path
//
// When A^{-1} is banded (prefix sums, momentum, weighted prefix sums),
// S^{-1} = A^{-1} A^{-T} is banded and (D S D)^{1/2} = T^{-1/2} with
// T = D^{-1} S^{-1} D^{-1}. The diagonal of T^{-1/2} is evaluated as a sum of
// shifted inverses (linalg.InvSqrtRational, about 30 to 50 shifts), each of
// whose diagonals costs O(R) for a bidiagonal A^{-1}: an iteration costs
// O(R) time and memory, and no dense matrix is formed unless the factors are
// requested. Its error bound enters the certificate, which then holds up to
// rounding in O(R)-term sums.
//
// # Dense path
//
// For any other workload (or with Options.Method = Dense) the dense path
// forms S = A^T A once and, each iteration, reduces M = D S D to
// tridiagonal form (blocked Householder on both cores, O(R^3)) and takes
// the square root of the tridiagonal matrix through the same rational
// approximation of its inverse square root; no eigendecomposition is
// computed. It certifies with a second-order primal bound (the feasible X
// scaled to unit diagonal rather than by its largest diagonal entry, whose
// loss is exact up to a quadratic term computed on the iterations that may
// certify), which needs about half the iterations of the classical bound,
// and from R = 512 it starts from the solution of a coarse workload of
// order R / 8. Its rounding error, which grows with the condition number
// of S, is bounded a posteriori by a second evaluation in another ordering
// of M on the iterations close enough to certify, and enters the
// certificate: on an ill-conditioned workload the dense path may not reach
// a small Tol and says so with a *NotConvergedError. See docs/solver.md.
//
// # Scale
//
// A workload whose entries are far from 1 (beyond 2^64 or below 2^-64, say
// 1e40 or 1e-40) is solved as t A with t a power of two that brings it near
// 1, so that no eigenvalue of the fixed-point map over- or underflows: the
// optimal X of t A is that of A, so C is unchanged and B and the metrics are
// scaled back exactly. Every loop of the solver is bounded and checks ctx
// (the eigenvalue searches of package linalg end for every input, a
// spectrum outside the floating-point range being an error).
//
// # Output
//
// The factors are the causal ones: C = P chol(P X P)^T P, lower-triangular
// with C^T C = X (P the exchange matrix), and B = A C^{-1}. Unless
// Options.LossOnly is set, B and C are formed densely (O(R^2) memory): for a
// bidiagonal A^{-1} (prefix and weighted prefix sums) in O(R^2 K) time from
// the quasiseparable structure of X (K the number of shifts, about 50;
// docs/solver.md), otherwise in O(R^3) time by a dense triangular
// factorization and inverse; their metrics are then
// computed from the factors themselves and the loss lies within the
// certified bounds. With LossOnly, the metrics are those of the feasible
// X(v) scaled to unit largest diagonal: Metrics.Loss is the certified upper
// bound, FrobBSq equals it and the sensitivity is 1. MaxSE is computed in
// O(R) per shift for prefix and weighted-prefix workloads, and is 0 (not
// computed) for the others.
//
// Cancelling ctx stops the solver with ctx's error. Reaching Options.MaxIter
// before the gap is certified returns a *NotConvergedError.
//
// Dense factors that cannot fit in the machine's memory (B and C of at
// least R x R float64 each, more than its physical memory and swap) are a
// *[ParamError] naming R, not an out-of-memory crash. The structured path
// on a bidiagonal inverse forms none: C in quasiseparable form streams
// with K state vectors.
func Optimal(ctx context.Context, w *Workload, opt Options) (*Factorization, error) {
	return checkedBalanced(ctx, w, opt, optimalFormsDense, func(w *Workload, opt Options) (*Factorization, error) { return optimal(ctx, w, opt) })
}

// optimalFormsDense reports whether [Optimal] forms dense B and C for w:
// all but the structured path's result on a bidiagonal inverse (prefix
// sums, weighted or not), which is C in quasiseparable form (see the end
// of optimal), and a loss-only result.
func optimalFormsDense(w *Workload, opt Options) bool {
	return !opt.LossOnly && (opt.Method == Dense || !w.bidiagonalInverse())
}

// checkedBalanced checks ctx, w and, where dense(w, opt) says the result
// holds dense factors of order R, that they fit in memory: the checks
// [Optimal] and [OptimalEpochs] share. It returns solve(w, opt) through
// [balancedBy] at w's balancing scale.
func checkedBalanced(ctx context.Context, w *Workload, opt Options, dense func(*Workload, Options) bool, solve func(*Workload, Options) (*Factorization, error)) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if dense(w, opt) {
		if err := checkDenseFits(w.R()); err != nil {
			return nil, err
		}
	}
	return balancedBy(w, w.balance(), opt, solve)
}

// balancedBy returns solve(w, opt) for t = 1 (a workload of moderate
// scale, t = w.balance()), and otherwise solves t A, t a power of two, and
// scales the result back. The optimal X of t A is that of A (the
// constraint diag(X) = 1 does not change, and the loss tr(t^2 S X^{-1}) is
// t^2 times A's, under any participation), so C is the same and
// B = A C^{-1} scales by 1/t: B, the bounds reported to Progress, a
// NotConvergedError's lower bound and the metrics are scaled back exactly.
func balancedBy(w *Workload, t float64, opt Options, solve func(*Workload, Options) (*Factorization, error)) (*Factorization, error) {
	if t == 1 {
		return solve(w, opt)
	}
	if p := opt.Progress; p != nil {
		opt.Progress = func(pr Progress) {
			pr.Lower, pr.Upper = pr.Lower/t/t, pr.Upper/t/t
			p(pr)
		}
	}
	f, err := solve(w.scaledBy(t), opt)
	if err != nil {
		var nc *NotConvergedError
		if errors.As(err, &nc) {
			nc.LastLower = nc.LastLower / t / t
		}
		return nil, err
	}
	f.Workload = w
	if f.B != nil {
		f.B.Scale(1/t, f.B)
	}
	if _, ok := f.Operator.(*denseOp); ok {
		f.Operator = newDenseOp(w, f.B, f.Available)
	}
	m := &f.Metrics
	m.FrobBSq, m.MaxRowBSq = m.FrobBSq/t/t, m.MaxRowBSq/t/t
	m.Loss, m.MaxSE, m.RMSE = m.Loss/t/t, m.MaxSE/t/t, m.RMSE/t
	return f, nil
}

// optimal is [Optimal] for a workload of moderate scale.
func optimal(ctx context.Context, w *Workload, opt Options) (*Factorization, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	_, banded := w.InverseBand()
	var ev evaluator
	var sol *solution
	switch m := opt.Method; {
	case m == Structured && !banded:
		return nil, fmt.Errorf("factorize: the structured method needs a workload with a banded inverse, not %q", w.Name())
	case m == Structured || (m == Auto && banded):
		ev = newStructuredEvaluator(w)
		sol, err = certify(ctx, w, ev, structuredWarmStart, opt)
	case m == Dense || m == Auto:
		ev = newDenseEvaluator(w)
		sol, err = certify(ctx, w, ev, denseWarmStart, opt)
	default:
		return nil, &ParamError{Param: "method", Value: m, Want: "Auto, Structured or Dense"}
	}
	if err != nil {
		return nil, err
	}
	if opt.LossOnly {
		maxRow := 0.0
		if se, ok := ev.(*structuredEvaluator); ok {
			se.releaseIteration()
			if w.R() > 100000 {
				// Let the iteration's buffers be reused for rowSq's.
				debug.FreeOSMemory()
			}
			for _, x := range se.rowSq(sol.vUpper) {
				maxRow = math.Max(maxRow, sol.scale*x)
			}
		}
		return optimalLossOnly(w, singleMetrics(w.R(), 1, sol.upper, maxRow), sol.iter, sol.evals, sol.gap), nil
	}
	var f *Factorization
	if se, ok := ev.(*structuredEvaluator); ok && se.k == 1 {
		// The causal factor in quasiseparable form streams with K state
		// vectors; its metrics are those of the C streamed.
		cf, err := se.optimalFactor(sol.vUpper, sol.normalized)
		if err != nil {
			return nil, err
		}
		f = quasiSepResult(StrategyOptimal, w, w, 1, cf)
	} else {
		y, err := ev.root(ctx, sol.vUpper)
		if err != nil {
			return nil, err
		}
		b, c, err := factorsFromRoot(w, y, sol.vUpper, sol.normalized)
		if err != nil {
			return nil, err
		}
		f = optimalDense(w, b, c, denseMetrics(b, c))
	}
	f.Iterations, f.Evaluations, f.Gap = sol.iter, sol.evals, sol.gap
	return f, nil
}

// certify runs the certified iteration of ev on w (see fixedPointFrom)
// from warm's start, or from v = 1 where warm gives none.
func certify(ctx context.Context, w *Workload, ev evaluator, warm func(context.Context, *Workload) ([]float64, error), opt Options) (*solution, error) {
	x0, err := warm(ctx, w)
	if err != nil {
		return nil, err
	}
	if x0 == nil {
		x0 = make([]float64, w.R()) // v = 1
	} else if w.R() > 100000 {
		// Return the coarse levels' buffers before the fine ones
		// are made, so that they do not add to the peak.
		debug.FreeOSMemory()
	}
	return fixedPointFrom(ctx, ev, x0, opt)
}

// optimalLossOnly returns the result of an optimal solver without
// factors: its metrics m and the iterations, evaluations and gap of its
// certificate.
func optimalLossOnly(w *Workload, m Metrics, iter, evals int, gap float64) *Factorization {
	return &Factorization{Strategy: StrategyOptimal, Workload: w, Metrics: m, Iterations: iter, Evaluations: evals, Gap: gap}
}

// solution is the result of the certified fixed-point iteration.
type solution struct {
	iter         int
	evals        int // evaluations of the matrix square root
	lower, upper float64
	gap          float64
	// vUpper is the multiplier vector whose primal bound is upper, and
	// scale is its max_i phi_i / v_i: X(vUpper) / scale is feasible with
	// loss upper.
	vUpper []float64
	scale  float64
	// normalized says that upper is the second-order bound of
	// [secondOrder]: the feasible point is X(vUpper) with its rows and
	// columns scaled to unit diagonal, not X(vUpper) / scale.
	normalized bool
}

// accuracySetter is an evaluator whose accuracy (and cost) can be
// lowered for iterates far from the fixed point.
type accuracySetter interface {
	setAccuracy(relErr float64)
	// residualFraction is the accuracy to ask, relative to the last
	// residual.
	residualFraction() float64
}

// fixedPoint runs the accelerated fixed-point iteration until the
// certified relative gap is at most opt.Tol.
func fixedPoint(ctx context.Context, ev evaluator, n int, opt Options) (*solution, error) {
	return fixedPointFrom(ctx, ev, make([]float64, n), opt) // v = 1 to start
}

// fixedPointFrom is fixedPoint started from log v = x (overwritten).
func fixedPointFrom(ctx context.Context, ev evaluator, x []float64, opt Options) (*solution, error) {
	n := len(x)
	v := make([]float64, n)
	ph := make([]float64, n)
	best := &solution{lower: math.Inf(-1), upper: math.Inf(1), gap: math.Inf(1), vUpper: make([]float64, n)}
	memory := andersonMemory
	if _, ok := ev.(*denseEvaluator); ok {
		memory = denseAndersonMemory
	} else if n >= largeAndersonOrder {
		memory = largeAndersonMemory
	}
	and := newAnderson(n, memory)
	// The gap must halve at least once every stallWindow iterations; when
	// it does not, rounding in the evaluation of phi has taken over (the
	// dense path on an ill-conditioned workload), and iterating longer
	// would not certify a smaller gap.
	const stallWindow = 150
	stallGap, stallIter := math.Inf(1), 0
	// The rounding floor is an estimate that varies from iterate to
	// iterate: give up on it only after floorPatience certified iterations
	// in a row find it above the target.
	const floorPatience = 5
	floorHits := 0
	// An evaluator with an adjustable accuracy is asked for a fraction
	// (1e-2, or 1e-1 for the bidiagonal structured path from R = 65,536
	// on) of the last
	// residual (max_i |log(phi_i / v_i)|), and never less than
	// needed to certify the target: the bounds always carry the error of
	// the evaluation actually made, so this only saves work (at R = 10^5,
	// gap 1e-8, 1e-2: about 27 shifts per iteration on average instead of
	// 45, with as many iterations). The bidiagonal structured evaluator rounds the node count up to whole groups of 16
	// shifts, which gives more accuracy than asked; with it, at R = 10^6
	// and gap 1e-10, 1e-1 of the residual took 251 groups over 65
	// iterations, 1e-2 took 311 over 74 and 3e-1 245 over 68 (at
	// R = 10^5: 159, 199 and 164 groups).
	acc, _ := ev.(accuracySetter)
	qe, _ := ev.(quadEvaluator)
	// Per-entry error bounds are kept only where something reads them
	// (the second-order bound, or an evaluator's own bounds, made when
	// first reported); otherwise only their sum is (the bidiagonal
	// structured path: no n-vector written every iteration, and 8 R bytes
	// less).
	var delta, errs []float64
	if qe != nil {
		delta, errs = make([]float64, n), make([]float64, n)
	}
	res := math.Inf(1)
	lastRound := 0.0  // the rounding part of the last certified gap
	crossFloor := 0.0 // the relative error crossed bounds proved, if any
	for it := 1; it <= opt.MaxIter; it++ {
		effEps := math.NaN()
		bounded := false // errorBound ran on this iterate
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		forChunks(n, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				v[i] = math.Exp(x[i])
			}
		})
		coarse := false
		if acc != nil {
			want := math.Max(opt.Tol/20, acc.residualFraction()*res)
			coarse = want > opt.Tol/20
			acc.setAccuracy(want)
		}
		eps, err := ev.phi(ctx, v, ph)
		if err != nil {
			return nil, err
		}
		best.evals++
		// tr, sum(v), max phi_i / v_i and the first bad entry, by chunks.
		part := chunkParts(n, 4, func(lo, hi int, out []float64) {
			tr, sumV, ratio := 0.0, 0.0, 0.0
			out[3] = -1
			for i := lo; i < hi; i++ {
				p := ph[i]
				if !(p > 0) || math.IsInf(p, 0) {
					out[3] = float64(i)
					return
				}
				tr += p
				sumV += v[i]
				if r := p / v[i]; r > ratio {
					ratio = r
				}
			}
			out[0], out[1], out[2] = tr, sumV, ratio
		})
		tr, sumV, ratio := 0.0, 0.0, 0.0
		for c := 0; c < len(part); c += 4 {
			if i := int(part[c+3]); i >= 0 {
				return nil, fmt.Errorf("factorize: fixed-point map gave phi[%d] = %v at iteration %d: numerical breakdown", i, ph[i], it)
			}
			tr += part[c]
			sumV += part[c+1]
			ratio = math.Max(ratio, part[c+2])
		}
		// gap0 is this iterate's gap without rounding bounds. Where a
		// bound costs an extra evaluation, it is paid only when the
		// iterate is close enough to certify.
		gap0 := (tr*ratio - (2*tr - sumV)) / (2*tr - sumV)
		// The second-order primal bound (see secondOrder): its linear part
		// now, its quadratic part only when it may certify.
		var so *secondOrder
		if qe != nil {
			so = newSecondOrder(v, ph, delta)
		}
		if math.IsNaN(eps) && 2*tr > sumV && (gap0 <= 10*opt.Tol || (so != nil && so.predictedGap(tr, sumV) <= attemptBelow(opt.Tol, lastRound))) {
			if so != nil {
				if so.q, so.errScale, so.lambda, err = qe.quadTerm(ctx, v, delta); err != nil {
					return nil, err
				}
				so.have = true
				best.evals++
			}
			if eps, err = ev.errorBound(ctx, v, ph); err != nil {
				return nil, err
			}
			bounded = true
			best.evals++
		}
		best.iter = it
		if !math.IsNaN(eps) {
			// Absolute error bounds of phi: eps phi_i, or the evaluator's
			// own per-entry bounds, which enter only through sums.
			// Bounds that crossed earlier proved the error larger than
			// its bound: crossFloor is the relative error they showed.
			eps = math.Max(eps, crossFloor)
			ee, _ := ev.(entryErrorer)
			own := ee != nil && ee.entryErrors() != nil && bounded
			if own {
				if errs == nil {
					errs = make([]float64, n)
				}
				copy(errs, ee.entryErrors())
			}
			sumErr := sumChunks(n, 1, func(lo, hi int, out []float64) {
				for i := lo; i < hi; i++ {
					e := eps * ph[i]
					if own {
						e = math.Max(errs[i], crossFloor*ph[i])
					}
					if own || qe != nil {
						errs[i] = e
					}
					out[0] += e
				}
			})[0]
			effEps = sumErr / tr
			lastRound = 3 * effEps
			lower := 2*(tr-sumErr) - sumV
			upper := tr * (1 + eps) * ratio * (1 + eps)
			normalized := false
			if so != nil && so.have {
				if u := so.upper(v, ph, errs, eps); u < upper {
					upper, normalized = u, true
				}
			}
			if lower > best.lower {
				best.lower = lower
			}
			if upper < best.upper {
				best.upper = upper
				best.scale = ratio
				best.normalized = normalized
				copy(best.vUpper, v)
			}
			best.gap = (best.upper - best.lower) / best.lower
			// Valid bounds never cross: if they do, the evaluation's
			// error exceeds the bound it reported (by at least about a
			// quarter of the crossing). Every bound so far is then
			// suspect: forget them and carry on with the error raised to
			// twice the crossing (at least doubling), so that the
			// certificate, or the rounding floor reported, is honest.
			if best.lower > best.upper {
				crossing := (best.lower - best.upper) / best.upper
				crossFloor = math.Max(2*crossing, 2*crossFloor)
				best.lower, best.upper, best.gap = math.Inf(-1), math.Inf(1), math.Inf(1)
				floorHits = 0
			}
		}
		if opt.Progress != nil {
			p := Progress{Iter: it, Lower: best.lower, Upper: best.upper, Gap: best.gap, Tol: opt.Tol}
			if math.IsInf(best.gap, 1) || math.IsNaN(best.gap) {
				p.Lower, p.Upper, p.Gap = 2*tr-sumV, tr*ratio, gap0
			}
			opt.Progress(p)
		}
		if best.lower > 0 && best.gap <= opt.Tol {
			return best, nil
		}
		// The bounds carry the evaluation's relative error eps, so the gap
		// cannot fall below about 3 eps (eps the mean relative error, sum of the
		// error bounds over tr): once it is near that floor and the
		// floor is above the target, say so instead of iterating on.
		if floor := 3 * effEps; !coarse && floor > opt.Tol && best.gap < 10*floor {
			if floorHits++; floorHits >= floorPatience {
				nc := &NotConvergedError{Iter: it, Gap: best.gap, Tol: opt.Tol, LastLower: best.lower, Stalled: true, Floor: floor}
				if crossFloor > 0 {
					nc.Cause = "the evaluation's rounding, which the certified bounds showed larger than its a-priori bound when they crossed,"
				} else if rc, ok := ev.(interface{ roundingCause() string }); ok {
					nc.Cause = rc.roundingCause()
				}
				return nil, nc
			}
		} else if !math.IsNaN(eps) {
			floorHits = 0
		}
		if g := math.Min(best.gap, gap0); g <= stallGap/2 {
			stallGap, stallIter = g, it
		} else if it-stallIter >= stallWindow {
			nc := &NotConvergedError{Iter: it, Gap: best.gap, Tol: opt.Tol, LastLower: best.lower, Stalled: true}
			if crossFloor > 0 {
				nc.Cause = "the evaluation's rounding, which the certified bounds showed larger than its a-priori bound when they crossed, limits the certificate for this workload"
			}
			return nil, nc
		}
		// ph becomes g = log phi, the map's value in the log variables;
		// the same pass writes the acceleration's residual f = g - x and
		// its squared norm (as anderson.next would, one pass fewer).
		g, f := ph, and.residual()
		part = chunkParts(n, 2, func(lo, hi int, out []float64) {
			s := 0.0
			for i := lo; i < hi; i++ {
				g[i] = math.Log(ph[i])
				f[i] = g[i] - x[i]
				s += f[i] * f[i]
				if d := math.Abs(f[i]); d > out[0] {
					out[0] = d
				}
			}
			out[1] = s
		})
		res = 0
		sq := 0.0
		for c := 0; c < len(part); c += 2 {
			res = math.Max(res, part[c])
			sq += part[c+1]
		}
		and.step(x, g, math.Sqrt(sq))
	}
	return nil, &NotConvergedError{Iter: opt.MaxIter, Gap: best.gap, Tol: opt.Tol, LastLower: best.lower}
}

// attemptBelow is the predicted second-order gap (without rounding) below
// which an iterate is worth certifying, when the last certification
// attempt found a rounding part lastRound of the gap: what is left of tol
// after it, with a margin of a factor 3 for the prediction's error. A
// rounding part above half of tol leaves the margin to tol / 3, so that the
// attempts go on and the rounding floor is reported.
func attemptBelow(tol, lastRound float64) float64 {
	if lastRound > tol/2 {
		return tol / 3
	}
	return (tol - lastRound) / 3
}

// factorsFromRoot returns the causal factors B and C of the optimal
// factorization from Y = (D S D)^{1/2} (row-major, upper triangle filled) and
// v: X = D^{-1} Y D^{-1}, scaled so that its largest diagonal entry is 1 and
// with its diagonal then raised to 1 (which can only lower the loss), or,
// when normalized (the second-order bound was certified, see secondOrder),
// with every row and column scaled to unit diagonal; then
// C = P chol(P X P)^T P and B = A C^{-1}. y is overwritten.
func factorsFromRoot(w *Workload, y []float64, v []float64, normalized bool) (b, c *mat.Dense, err error) {
	n := w.R()
	scale := make([]float64, n)
	for i := range scale {
		d := v[i]
		if normalized {
			// X = E D^{-1} Y D^{-1} E with unit diagonal (see
			// secondOrder): row i scaled by 1 / sqrt(Y_ii).
			d = y[i*n+i]
		}
		scale[i] = 1 / math.Sqrt(d)
	}
	// X = D^{-1} Y D^{-1}, mirrored into a full symmetric matrix.
	cmax := 0.0
	for i := 0; i < n; i++ {
		row := y[i*n : i*n+n]
		for j := i; j < n; j++ {
			row[j] *= scale[i] * scale[j]
		}
		cmax = math.Max(cmax, row[i])
	}
	if normalized {
		cmax = 1 // the diagonal is 1 up to rounding, and set to 1 below
	}
	for i := 0; i < n; i++ {
		row := y[i*n : i*n+n]
		for j := i + 1; j < n; j++ {
			row[j] /= cmax
			y[j*n+i] = row[j]
		}
		row[i] = 1
	}
	return factorsFromX(w, y)
}

// applyWorkload returns A M for a lower-triangular n x n M held row-major
// with stride ld (its strict upper triangle is ignored).
func applyWorkload(w *Workload, m []float64, ld int) *mat.Dense {
	n := w.R()
	out := mat.NewDense(n, n, nil)
	if inv, ok := w.InverseBand(); ok {
		// Solve A^{-1} Out = M by forward substitution with the band.
		_, k, _ := inv.TriBand()
		for i := 0; i < n; i++ {
			row := out.RawRowView(i)
			copy(row[:i+1], m[i*ld:i*ld+i+1])
			for p := max(0, i-k); p < i; p++ {
				l := inv.At(i, p)
				prev := out.RawRowView(p)
				for j := 0; j <= p; j++ {
					row[j] -= l * prev[j]
				}
			}
			d := inv.At(i, i)
			for j := 0; j <= i; j++ {
				row[j] /= d
			}
		}
		return out
	}
	lower := mat.NewTriDense(n, mat.Lower, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			lower.SetTri(i, j, m[i*ld+j])
		}
	}
	var t mat.TriDense
	t.MulTri(w.Matrix(), lower)
	out.Copy(&t)
	return out
}
