package secagg

import (
	"fmt"
	"io"
)

// DropPlan says which learner stops before which phase: learner id sends
// nothing in that phase or any later one (PhaseAdvertise: it never takes
// part). A learner not in the plan never drops.
type DropPlan map[int]Phase

// Event is one message the aggregator received in Run: Message is an
// Advertise, Shares, []uint64 (From's masked input y), Signature or Unmask.
type Event struct {
	Phase   Phase
	From    int
	Message any
}

// Run runs the protocol in process: learner u's input is inputs[u] (N
// inputs of Dim entries each), learners drop by drop, every key and seed is
// read from rand, and hook (if not nil) sees every message the aggregator
// receives, before it does. It returns the sum over the survivors U3 of
// their inputs in Z_{2^64} and U3; a phase that closes with fewer than T
// learners gives an error wrapping ErrTooFew.
func Run(ctx Context, inputs [][]uint64, drop DropPlan, rand io.Reader, hook func(Event)) ([]uint64, []int, error) {
	agg, err := NewAggregator(ctx) // it validates ctx
	if err != nil {
		return nil, nil, err
	}
	if len(inputs) != ctx.N {
		return nil, nil, fmt.Errorf("secagg: Run has %d inputs, want N = %d", len(inputs), ctx.N)
	}
	for u, x := range inputs {
		if len(x) != ctx.Dim {
			return nil, nil, fmt.Errorf("secagg: Run's input %d has %d entries, want Dim = %d", u, len(x), ctx.Dim)
		}
	}
	for u, p := range drop {
		if err := checkID("DropPlan's learner", u, ctx.N); err != nil {
			return nil, nil, err
		}
		if p < PhaseAdvertise || p > PhaseUnmask {
			return nil, nil, fmt.Errorf("secagg: DropPlan drops learner %d before %s, want a phase from %s to %s", u, p, PhaseAdvertise, PhaseUnmask)
		}
	}
	if hook == nil {
		hook = func(Event) {}
	}
	clients := make([]*Client, ctx.N)
	for u := range clients {
		if clients[u], err = NewClient(ctx, u, rand); err != nil {
			return nil, nil, err
		}
	}
	all := make([]int, ctx.N)
	for u := range all {
		all[u] = u
	}
	err = step(PhaseAdvertise, all, drop, hook, func(u int) (Advertise, error) { return clients[u].Advertise() },
		func(_ int, m Advertise) error { return agg.Advertised(m) })
	if err != nil {
		return nil, nil, err
	}
	roster, err := agg.CloseAdvertise()
	if err != nil {
		return nil, nil, err
	}

	err = step(PhaseShares, agg.Accepted(PhaseAdvertise), drop, hook, func(u int) (Shares, error) { return clients[u].ShareKeys(roster) },
		func(_ int, m Shares) error { return agg.Shared(m) })
	if err != nil {
		return nil, nil, err
	}
	u2, err := agg.CloseShares()
	if err != nil {
		return nil, nil, err
	}

	err = step(PhaseMasked, u2, drop, hook, func(u int) ([]uint64, error) { return clients[u].MaskedInput(agg.Inbox(u), inputs[u]) },
		agg.Masked)
	if err != nil {
		return nil, nil, err
	}
	u3, err := agg.CloseMasked()
	if err != nil {
		return nil, nil, err
	}

	err = step(PhaseConsistency, u3, drop, hook, func(u int) (Signature, error) { return clients[u].Sign(u3) },
		func(_ int, m Signature) error { return agg.Signed(m) })
	if err != nil {
		return nil, nil, err
	}
	sigs, err := agg.CloseConsistency()
	if err != nil {
		return nil, nil, err
	}

	err = step(PhaseUnmask, agg.Accepted(PhaseConsistency), drop, hook, func(u int) (Unmask, error) { return clients[u].Unmask(u3, sigs) },
		func(_ int, m Unmask) error { return agg.Unmasked(m) })
	if err != nil {
		return nil, nil, err
	}
	return agg.Finish()
}

// step runs phase p of Run: each learner of set that has not dropped by p
// sends its message, which hook sees before the aggregator receives it.
func step[M any](p Phase, set []int, drop DropPlan, hook func(Event), send func(u int) (M, error), receive func(u int, m M) error) error {
	for _, u := range set {
		if d, ok := drop[u]; ok && d <= p {
			continue
		}
		m, err := send(u)
		if err != nil {
			return err
		}
		hook(Event{p, u, m})
		if err := receive(u, m); err != nil {
			return err
		}
	}
	return nil
}
