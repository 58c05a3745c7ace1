package factorize

import (
	"context"
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
	// overflow (a workload with entries near the top of the float64 range).
	Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error)
}

// under checks ctx, p against w, and, for a computation that forms the
// dense factors, that they can fit in memory (checkDenseFits), runs compute and returns its result
// with metrics under p; metrics that overflow (a workload with entries
// near the top of the float64 range) are a *ParamError naming the
// workload, never a result with an infinite loss.
func under(ctx context.Context, w *Workload, p Participation, dense bool, compute func() (*Factorization, error)) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := checkWorkload(w); err != nil {
		return nil, err
	}
	if err := p.Validate(w.R()); err != nil {
		return nil, err
	}
	if dense {
		if err := checkDenseFits(w.R()); err != nil {
			return nil, err
		}
	}
	f, err := compute()
	if err == nil && p != f.Metrics.Participation {
		f, err = f.WithParticipation(p)
	}
	if err != nil {
		return nil, err
	}
	if err := checkMetrics(f, w); err != nil {
		return nil, err
	}
	return f, nil
}

// checkMetrics returns a *ParamError naming the workload when a metric of
// f is not finite (the first of them, by name): the workload's entries are
// too large for float64.
func checkMetrics(f *Factorization, w *Workload) error {
	m := f.Metrics
	for _, x := range []struct {
		name string
		v    float64
	}{{"unit sensitivity", m.UnitSensitivity.Value}, {"gamma", m.Gamma}, {"loss", m.Loss}, {"||B||_F^2", m.FrobBSq},
		{"RMSE", m.RMSE}, {"MaxSE", m.MaxSE}, {"max_i ||B[i, :]||^2", m.MaxRowBSq}} {
		if !(x.v >= 0) || math.IsInf(x.v, 0) {
			return &ParamError{Param: "workload", Value: fmt.Sprintf("%s (the %s factorization's %s is %v)", w.Name(), f.Strategy, x.name, x.v),
				Want: "entries whose metrics fit in float64 (rescale it)"}
		}
	}
	return nil
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
