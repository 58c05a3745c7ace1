package accountant

import "context"

// This file holds the variants of the PLD constructors that a context
// stops: a PLD on a fine grid takes seconds to minutes to discretise
// (SampledGaussianPLD at the interval 6e-7, about 7e6 points a direction:
// 12 to 18 s on a loaded two-core machine).

// SampledGaussianPLDContext is [SampledGaussianPLD] stopped by ctx: it
// returns ctx.Err() at once for a done ctx, and while it discretises the
// loss distributions it checks ctx every 1024 grid cells and returns
// ctx.Err() soon after ctx is done (the replace-one pair's compositions
// of its two directions run to their end). Its PLD is bit for bit
// SampledGaussianPLD's; its special cases and errors are
// SampledGaussianPLD's, and a nil ctx is an error.
func SampledGaussianPLDContext(ctx context.Context, q, sigma float64, r Relation, o PLDOptions) (*PLD, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.ctx = ctx
	return SampledGaussianPLD(q, sigma, r, o)
}

// SampledGaussianContext is [SampledGaussian] stopped by ctx: it returns
// ctx.Err() at once for a done ctx, and within milliseconds once ctx is
// done while it works. The work runs on its own goroutine, which checks
// ctx every 1024 grid cells while it discretises a step and between the
// transforms of the composition and within its double-word sums, and
// stops at the next check: within about one FFT of up to 2^24 points,
// which cannot be interrupted (1 to 2.5 s at 10^9 steps on a loaded
// two-core machine), after SampledGaussianContext has returned. Its PLD is
// bit for bit SampledGaussian's; its special cases and errors are
// SampledGaussian's, and a nil ctx is an error.
func SampledGaussianContext(ctx context.Context, q, sigma float64, steps int, rel Relation) (*PLD, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		p   *PLD
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := sampledGaussian(q, sigma, steps, rel, sampledOpts{budget: gridBudget, ctx: ctx})
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		return r.p, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
