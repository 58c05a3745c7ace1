package factorize

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// A Strategy is a way to factorize a workload, carrying its own options
// (for example [OptimalStrategy]; [Registry] lists them all, each defined
// and registered in its own file). Every strategy reports its [Metrics]
// under the participation it is given.
type Strategy interface {
	// Name returns the strategy's name (one of [Strategies]).
	Name() string
	// Spec returns the strategy's canonical spec, which [ParseStrategy]
	// reads back to an equal value: the name, then the settings that are
	// not at their default ("banded:bands=64"). Options that do not choose
	// the factorization (a progress callback, whether B and C are formed:
	// [WithLossOnly]) are not part of it.
	Spec() string
	// Factorize factorizes w, with metrics under participation p. It is
	// an error if ctx is nil, the strategy does not support w, p is
	// invalid for w's rounds, the dense factors (unless the strategy is
	// loss-only) cannot fit in the machine's memory, or the metrics
	// overflow or underflow (a workload with entries near the top of the
	// float64 range, or below about 1e-154, whose squares are subnormal).
	Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error)
}

// under checks ctx, p against w, and, for a computation that forms the
// dense factors, that they can fit in memory (checkDenseFits), runs compute and returns its result
// with metrics under p; metrics that overflow or underflow (a workload
// with entries near the top of the float64 range or below about 1e-154)
// are a *ParamError naming the workload, never a result with an infinite
// loss or a loss of 0.
func under(ctx context.Context, w *Workload, p Participation, dense bool, compute func() (*Factorization, error)) (*Factorization, error) {
	if err := checkArgs(ctx, w, p); err != nil {
		return nil, err
	}
	if dense {
		if err := checkDenseFits(w.R()); err != nil {
			return nil, err
		}
	}
	f, err := compute()
	var se *spectrumError
	if errors.As(err, &se) && se.singular() {
		return nil, &ParamError{Param: "workload", Value: fmt.Sprintf("%s (the optimal solver's fixed-point map's matrix, with eigenvalues in [0, %g], is numerically singular in float64)", w.Name(), se.hi),
			Want: "a better-conditioned workload: the smallest eigenvalue is below float64 rounding of the largest (the dense path forms A^T A, squaring cond(A); a workload with a banded inverse, such as momentum, can take the structured path, which does not)"}
	}
	if errors.As(err, &se) {
		return nil, &ParamError{Param: "workload", Value: fmt.Sprintf("%s (the eigenvalues of the optimal solver's fixed-point map lie in [%g, %g])", w.Name(), se.lo, se.hi),
			Want: "entries whose spread keeps them within the floating-point range (nearer each other in magnitude)"}
	}
	if err == nil && p != f.Metrics.Participation {
		f, err = f.checkedUnder(p)
	}
	if err != nil {
		return nil, err
	}
	if err := checkMetrics(f, w); err != nil {
		return nil, err
	}
	return f, nil
}

// checkArgs checks the arguments of a factorization: ctx, w, and p for
// w's rounds.
func checkArgs(ctx context.Context, w *Workload, p Participation) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if err := checkWorkload(w); err != nil {
		return err
	}
	return p.Validate(w.R())
}

// checkedUnder returns f with its metrics under p, or the *ParamError of
// checkMetrics naming the workload when f's metrics overflowed already:
// WithParticipation would name an infinite entry of B instead (B = A
// C^{-1} overflows for a workload with entries near the top of the
// float64 range).
func (f *Factorization) checkedUnder(p Participation) (*Factorization, error) {
	if err := checkMetrics(f, f.Workload); err != nil {
		return nil, err
	}
	return f.WithParticipation(p)
}

// checkedLossOnly returns f, or a *ParamError naming the workload when
// f's metrics overflow (checkMetrics): the check that under makes, for the
// loss-only paths that do not go through it.
func checkedLossOnly(f *Factorization, err error) (*Factorization, error) {
	if err != nil {
		return nil, err
	}
	if err := checkMetrics(f, f.Workload); err != nil {
		return nil, err
	}
	return f, nil
}

// checkMetrics returns a *ParamError naming the workload when a metric of
// f is not finite, or when the loss, ||B||_F^2, RMSE, MaxSE or
// max_i ||B[i, :]||^2 underflows below the smallest normal float64 (the
// first of them, by name; MaxSE and the row norm may be 0, "not
// computed"): the workload's entries are too large or too small for
// float64 (a loss of 0, or one that lost its precision in the subnormal
// range, from entries near 1e-160).
func checkMetrics(f *Factorization, w *Workload) error {
	m := f.Metrics
	for _, x := range []struct {
		name  string
		v     float64
		small bool // below 2^-1022 is refused (0 too, unless zero is set)
		zero  bool
	}{{"unit sensitivity", m.UnitSensitivity.Value, false, false}, {"gamma", m.Gamma, false, false},
		{"loss", m.Loss, true, false}, {"||B||_F^2", m.FrobBSq, true, false}, {"RMSE", m.RMSE, true, false},
		{"MaxSE", m.MaxSE, true, true}, {"max_i ||B[i, :]||^2", m.MaxRowBSq, true, true}} {
		tiny := x.small && x.v < 0x1p-1022 && !(x.zero && x.v == 0)
		if !(x.v >= 0) || math.IsInf(x.v, 0) || tiny {
			is := fmt.Sprintf("is %v", x.v)
			if x.v == 0 {
				is = "underflows to 0"
			} else if tiny {
				is = fmt.Sprintf("underflows below 2^-1022 (%v)", x.v)
			}
			return &ParamError{Param: "workload", Value: fmt.Sprintf("%s (the %s factorization's %s %s)", w.Name(), f.Strategy, x.name, is),
				Want: "entries whose metrics fit in float64 (rescale it)"}
		}
	}
	// A square causal factorization (C lower-triangular, |C[i][i]| <= gamma
	// <= sens) has B[i][i] = A[i][i] / C[i][i], so its loss sens^2 ||B||_F^2
	// is at least sum_i A[i][i]^2. A loss below it was computed wrongly:
	// the loss-only banded solver lost the rounds of the large weights of
	// weighted prefix sums with weights 5, 4e-131, 1.4375 (a loss of 2.07,
	// below 27.07), in cancellation.
	if f.Strategy != StrategyTree && (f.Operator == nil || f.Operator.NoiseRows() == w.R()) {
		if d := diagSq(w); m.Loss < d*(1-1e-6) {
			return &ParamError{Param: "workload", Value: fmt.Sprintf("%s (the %s factorization's loss %.6g is below sum_i A[i][i]^2 = %.6g, which every causal factorization's is at least)", w.Name(), f.Strategy, m.Loss, d),
				Want: "entries of a narrower range (a loss computed in cancellation)"}
		}
	}
	return nil
}

// diagSq returns sum_i A[i][i]^2 of w (A[i][i] = 1 / A^{-1}[i][i]).
func diagSq(w *Workload) float64 {
	s := 0.0
	for i := 0; i < w.R(); i++ {
		var a float64
		if w.a != nil {
			a = w.a.At(i, i)
		} else {
			a = 1 / w.inv.At(i, i)
		}
		s += a * a
	}
	return s
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
