package secagg

import (
	"fmt"
	"io"
	"slices"
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
	if err := ctx.Validate(); err != nil {
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
	agg, err := NewAggregator(ctx)
	if err != nil {
		return nil, nil, err
	}
	clients := make([]*Client, ctx.N)
	for u := range clients {
		if clients[u], err = NewClient(ctx, u, rand); err != nil {
			return nil, nil, err
		}
	}
	// active lists the learners of set that take part in phase p.
	active := func(p Phase, set []int) []int {
		return slices.DeleteFunc(slices.Clone(set), func(u int) bool {
			d, ok := drop[u]
			return ok && d <= p
		})
	}
	all := make([]int, ctx.N)
	for u := range all {
		all[u] = u
	}

	for _, u := range active(PhaseAdvertise, all) {
		m, err := clients[u].Advertise()
		if err != nil {
			return nil, nil, err
		}
		hook(Event{PhaseAdvertise, u, m})
		if err := agg.Advertised(m); err != nil {
			return nil, nil, err
		}
	}
	roster, err := agg.CloseAdvertise()
	if err != nil {
		return nil, nil, err
	}
	u1 := make([]int, len(roster))
	for i, a := range roster {
		u1[i] = a.From
	}

	for _, u := range active(PhaseShares, u1) {
		m, err := clients[u].ShareKeys(roster)
		if err != nil {
			return nil, nil, err
		}
		hook(Event{PhaseShares, u, m})
		if err := agg.Shared(m); err != nil {
			return nil, nil, err
		}
	}
	u2, err := agg.CloseShares()
	if err != nil {
		return nil, nil, err
	}

	for _, u := range active(PhaseMasked, u2) {
		y, err := clients[u].MaskedInput(agg.Inbox(u), inputs[u])
		if err != nil {
			return nil, nil, err
		}
		hook(Event{PhaseMasked, u, y})
		if err := agg.Masked(u, y); err != nil {
			return nil, nil, err
		}
	}
	u3, err := agg.CloseMasked()
	if err != nil {
		return nil, nil, err
	}

	for _, u := range active(PhaseConsistency, u3) {
		m, err := clients[u].Sign(u3)
		if err != nil {
			return nil, nil, err
		}
		hook(Event{PhaseConsistency, u, m})
		if err := agg.Signed(m); err != nil {
			return nil, nil, err
		}
	}
	sigs, err := agg.CloseConsistency()
	if err != nil {
		return nil, nil, err
	}

	for _, s := range sigs {
		u := s.From
		if d, ok := drop[u]; ok && d <= PhaseUnmask {
			continue
		}
		m, err := clients[u].Unmask(u3, sigs)
		if err != nil {
			return nil, nil, err
		}
		hook(Event{PhaseUnmask, u, m})
		if err := agg.Unmasked(m); err != nil {
			return nil, nil, err
		}
	}
	return agg.Finish()
}
