package factorize

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// Strategy names, the registered strategies of [Registry].
const (
	StrategyIdentity       = "identity"
	StrategyTree           = "tree"
	StrategySqrt           = "sqrt"
	StrategySqrtNormalized = "sqrt-normalized"
	StrategyOptimal        = "optimal"
	StrategyBanded         = "banded"
	StrategyBLT            = "blt"
	StrategyBSR            = "bsr"
	StrategySemisep        = "semiseparable"
)

// A Strategy is a way to factorize a workload, carrying its own options:
// [IdentityStrategy], [TreeStrategy], [SqrtStrategy], [BandedStrategy],
// [BSRStrategy], [BandedToeplitzStrategy], [BISRStrategy],
// [BandInvStrategy], [BLTStrategy], [SemisepStrategy] and [OptimalStrategy]. Every strategy reports its
// [Metrics] under the participation it is given.
type Strategy interface {
	// Name returns the strategy's name (one of [Strategies]).
	Name() string
	// Spec returns the strategy's canonical spec, which [ParseStrategy]
	// reads back to an equal value: the name, then the settings that are
	// not at their default ("banded:bands=64"). Options that do not choose
	// the factorization (a progress callback, whether B and C are formed:
	// [WithLossOnly]) are not part of it.
	Spec() string
	// Key returns a string that identifies the strategy and every option
	// that changes its result (the cache key, see [CacheKey]); options
	// that do not change the result, such as a progress callback, are
	// left out.
	Key() string
	// Factorize factorizes w, with metrics under participation p. It is
	// an error if ctx is nil, the strategy does not support w or p is
	// invalid for w's rounds.
	Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error)
}

// under checks p against w, runs compute and returns its result with
// metrics under p.
func under(w *Workload, p Participation, compute func() (*Factorization, error)) (*Factorization, error) {
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if err := p.Validate(w.R()); err != nil {
		return nil, err
	}
	f, err := compute()
	if err != nil {
		return nil, err
	}
	if p == f.Metrics.Participation {
		return f, nil
	}
	return f.WithParticipation(p)
}

// IdentityStrategy is C = I, B = A (see [Identity]).
type IdentityStrategy struct{}

// Name returns "identity".
func (IdentityStrategy) Name() string { return StrategyIdentity }

// Key returns "identity".
func (IdentityStrategy) Key() string { return StrategyIdentity }

// Factorize returns [Identity](w) with metrics under p.
func (IdentityStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	return under(w, p, func() (*Factorization, error) { return Identity(w) })
}

// TreeStrategy is binary-tree aggregation (see [Tree]).
type TreeStrategy struct{}

// Name returns "tree".
func (TreeStrategy) Name() string { return StrategyTree }

// Key returns "tree".
func (TreeStrategy) Key() string { return StrategyTree }

// Factorize returns [Tree](w) with metrics under p.
func (TreeStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	return under(w, p, func() (*Factorization, error) { return Tree(w) })
}

// SqrtStrategy is the square root of the prefix-sum matrix (see [Sqrt]),
// with unit column norms when Normalized (see [SqrtNormalized]).
type SqrtStrategy struct {
	// Normalized scales C's columns to unit norm.
	Normalized bool
}

// Name returns "sqrt" or "sqrt-normalized".
func (s SqrtStrategy) Name() string {
	if s.Normalized {
		return StrategySqrtNormalized
	}
	return StrategySqrt
}

// Key returns the name.
func (s SqrtStrategy) Key() string { return s.Name() }

// Factorize returns [Sqrt](w) or [SqrtNormalized](w) with metrics under p.
func (s SqrtStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if s.Normalized {
		return under(w, p, func() (*Factorization, error) { return SqrtNormalized(w) })
	}
	return under(w, p, func() (*Factorization, error) { return Sqrt(w) })
}

// BandedStrategy is a lower-triangular factor with Bands bands. Under
// b-min-separation it is the certified optimal banded factor with unit
// column norms for that participation ([OptimalBanded]); under single
// participation and fixed epochs it is the Toeplitz fit of [Banded].
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
}

// Name returns "banded".
func (BandedStrategy) Name() string { return StrategyBanded }

// Key returns "banded/bands=B" ("banded/bands=0" for the default, which
// depends on the participation, also part of the cache key), followed by
// "/tol=T" (exact bits) when Tol is set: MaxIter does not change a
// certified result.
func (s BandedStrategy) Key() string {
	key := StrategyBanded + "/bands=" + strconv.Itoa(s.Bands)
	if s.Tol != 0 {
		key += "/tol=" + strconv.FormatUint(math.Float64bits(s.Tol), 16)
	}
	return key
}

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
// [Banded](ctx, w, bands) otherwise.
func (s BandedStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if s.Bands < 0 {
		return nil, &ParamError{Param: "bands", Value: s.Bands, Want: fmt.Sprintf(">= 1 (or 0 for the default %d)", DefaultBands)}
	}
	if err := CheckUnder(s, p); err != nil {
		return nil, err
	}
	opt, err := Options{Tol: s.Tol, MaxIter: s.MaxIter}.withDefaults()
	if err != nil {
		return nil, err
	}
	b := bandsFor(s.Bands, p)
	if p.Kind == KindMinSep {
		opt.Tol = s.Tol // 0: DefaultBandedTol
		return under(w, p, func() (*Factorization, error) { return OptimalBanded(ctx, w, b, p.K, opt) })
	}
	return under(w, p, func() (*Factorization, error) { return Banded(ctx, w, b) })
}

// BSRStrategy is the banded square root with unit column norms (see
// [BandedSqrt]; Kalinin and Lampert 2024), a closed form for
// min-separation.
type BSRStrategy struct {
	// Bands is the number of bands; 0 means [DefaultBands], and under
	// b-min-separation min(DefaultBands, b).
	Bands int
}

// Name returns "bsr".
func (BSRStrategy) Name() string { return StrategyBSR }

// Key returns "bsr/bands=B" (0 for the default).
func (s BSRStrategy) Key() string { return StrategyBSR + "/bands=" + strconv.Itoa(s.Bands) }

// Factorize returns [BandedSqrt](w, bands, 0) with metrics under p.
func (s BSRStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if s.Bands < 0 {
		return nil, fmt.Errorf("factorize: bands %d, want >= 1 (or 0 for the default %d)", s.Bands, DefaultBands)
	}
	b := bandsFor(s.Bands, p)
	return under(w, p, func() (*Factorization, error) {
		f, err := BandedSqrt(w, b, 0)
		if err != nil {
			return nil, err
		}
		f.Strategy = StrategyBSR
		return f, nil
	})
}

// BLTStrategy is a buffered-linear-Toeplitz factorization with Buffers
// buffers: fitted to the loss under b-min-separation for that
// participation ([BLTMinSep]), and to the single-participation loss
// otherwise ([BLT]).
type BLTStrategy struct {
	// Buffers is the number of buffers; 0 means [DefaultBuffers].
	Buffers int
}

// Name returns "blt".
func (BLTStrategy) Name() string { return StrategyBLT }

// Key returns "blt/buffers=K" with the defaulted number of buffers.
func (s BLTStrategy) Key() string {
	k := s.Buffers
	if k == 0 {
		k = DefaultBuffers
	}
	return StrategyBLT + "/buffers=" + strconv.Itoa(k)
}

// Factorize returns, with metrics under p, [BLTMinSep](ctx, w, s.Buffers,
// p.B, p.K) for min-separation and [BLT](ctx, w, s.Buffers) otherwise.
func (s BLTStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if p.Kind == KindMinSep {
		return under(w, p, func() (*Factorization, error) { return BLTMinSep(ctx, w, s.Buffers, p.B, p.K) })
	}
	return under(w, p, func() (*Factorization, error) { return BLT(ctx, w, s.Buffers) })
}

// OptimalStrategy is the certified optimal factorization for single
// participation (see [Optimal]) with its options.
type OptimalStrategy struct {
	Options
}

// Name returns "optimal".
func (OptimalStrategy) Name() string { return StrategyOptimal }

// Key returns "optimal/tol=T/loss_only=L" with the defaulted tolerance,
// as exact bits: Method, MaxIter and Progress do not change a certified
// result.
func (s OptimalStrategy) Key() string {
	tol := s.Tol
	if tol == 0 {
		tol = DefaultTol
	}
	return StrategyOptimal + "/tol=" + strconv.FormatUint(math.Float64bits(tol), 16) + "/loss_only=" + strconv.FormatBool(s.LossOnly)
}

// Factorize returns the certified optimal factorization for p: for fixed
// epochs [OptimalEpochs](ctx, w, p.K, s.Options) (sensitivity exactly 1
// under p), otherwise [Optimal](ctx, w, s.Options), the optimum for single
// participation, with its metrics under p (for min-separation this is a
// good factorization, not the optimal one).
func (s OptimalStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := CheckUnder(s, p); err != nil {
		return nil, err
	}
	if p.Kind == KindEpochs && p.K > 1 {
		return under(w, p, func() (*Factorization, error) { return OptimalEpochs(ctx, w, p.K, s.Options) })
	}
	return under(w, p, func() (*Factorization, error) { return Optimal(ctx, w, s.Options) })
}

// requirePrefix returns an error if w is not the prefix-sum workload.
func requirePrefix(strategy string, w *Workload) error {
	if err := checkWorkload(w); err != nil {
		return err
	}
	if !w.IsPrefix() {
		return fmt.Errorf("factorize: strategy %q supports only the prefix-sum workload, not %q", strategy, w.Name())
	}
	return nil
}
