package factorize

import (
	"context"
	"fmt"
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
	// an error if ctx is nil, the strategy does not support w or p is
	// invalid for w's rounds.
	Factorize(ctx context.Context, w *Workload, p Participation) (*Factorization, error)
}

// under checks ctx, and p against w, runs compute and returns its result
// with metrics under p.
func under(ctx context.Context, w *Workload, p Participation, compute func() (*Factorization, error)) (*Factorization, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
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
