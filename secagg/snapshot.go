package secagg

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// MarshalBinary snapshots the aggregator after any call: the context, the
// phase, every accepted message and the masked sum, in the versioned format
// of the messages. RestoreAggregator reads it back.
func (a *Aggregator) MarshalBinary() ([]byte, error) {
	w := newWriter(kindSnapshot)
	// The context (Run, Round, Attempt, N, T, Dim) as encodeContext
	// writes it, without the domain; the phase; the member sets, a byte
	// (0 or 1) per learner.
	w.b = append(append(w.b, a.ctxEnc[len(domain):]...), byte(a.phase))
	for _, set := range a.in {
		for _, ok := range set {
			flag := byte(0)
			if ok {
				flag = 1
			}
			w.b = append(w.b, flag)
		}
	}
	a.accepted(w, func(string, ...any) {})
	if w.err != nil {
		return nil, w.err
	}
	b := w.b
	switch {
	case a.sum == nil:
		b = append(b, 0)
	case !slices.ContainsFunc(a.sum, func(v uint64) bool { return v != 0 }):
		// The sum before any masked input: all zero, written as a flag
		// (a d-word snapshot at the close of phase 1 costs a server
		// 8 d bytes of durable writes in every round).
		b = append(b, 2)
	default:
		b = append(b, 1)
		b = slices.Grow(b, 8*len(a.sum))
		for _, v := range a.sum {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	return b, nil
}

// accepted walks the accepted messages of every learner, in the
// snapshot's order, for c: MarshalBinary writes them, RestoreAggregator
// reads them into place. misfiled reports a message stored under other
// ids than its own (a corrupt snapshot; the reader's fail, which keeps
// the first error, and never called while writing an aggregator's own
// messages).
func (a *Aggregator) accepted(c codec, misfiled func(format string, args ...any)) {
	for u := range a.ctx.N {
		if a.in[PhaseAdvertise][u] {
			a.adv[u].fields(c)
			if a.adv[u].From != u {
				misfiled("Advertise of %d stored for %d", a.adv[u].From, u)
			}
		}
		if a.in[PhaseShares][u] {
			a.boxes[u] = resize(a.boxes[u], a.ctx.N)
			for v := range a.ctx.N {
				if a.in[PhaseAdvertise][v] {
					a.boxes[u][v].fields(c)
					if e := a.boxes[u][v]; e.From != u || e.To != v {
						misfiled("box %d->%d stored for %d->%d", e.From, e.To, u, v)
					}
				}
			}
		}
		if a.in[PhaseConsistency][u] {
			a.sigs[u].From = u
			c.bytes(&a.sigs[u].Sig, SigSize, "Sig")
		}
		if a.in[PhaseUnmask][u] {
			c.bytes(&a.shares[u], a.ctx.N*ShareSize, "shares")
		}
	}
}

// RestoreAggregator returns the aggregator a snapshot of MarshalBinary
// describes; a truncated, foreign or inconsistent snapshot is an error.
func RestoreAggregator(data []byte) (*Aggregator, error) {
	r := newReader(data, kindSnapshot)
	var ctx Context
	copy(ctx.Run[:], r.take(16, "Run"))
	round := r.u64("Round")
	if round > math.MaxInt {
		r.fail("Round is %d, out of range (at most %d)", round, math.MaxInt)
	}
	ctx.Round = int(round)
	if b := r.take(4, "Attempt"); b != nil {
		ctx.Attempt = binary.BigEndian.Uint32(b)
	}
	ctx.N, ctx.T = r.u16("N"), r.u16("T")
	dim := r.u64("Dim")
	if dim > MaxDim {
		r.fail("Dim is %d, want at most %d", dim, MaxDim)
	}
	ctx.Dim = int(dim)
	if r.err != nil {
		return nil, r.err
	}
	if err := ctx.Validate(); err != nil {
		return nil, fmt.Errorf("secagg: Aggregator snapshot: %w", err)
	}
	a, _ := NewAggregator(ctx)
	phase := Phase(0)
	if b := r.take(1, "phase"); b != nil {
		phase = Phase(b[0])
	}
	if phase > PhaseFailed {
		r.fail("phase %d out of range", phase)
	}
	for k := range a.in {
		for u, f := range r.take(ctx.N, "member sets") {
			if f > 1 || (f == 1 && k > 0 && !a.in[k-1][u]) {
				r.fail("member sets inconsistent at learner %d", u)
			}
			a.in[k][u] = f == 1
		}
	}
	a.accepted(r, r.fail)
	switch b := r.take(1, "sum flag"); {
	case b == nil, b[0] == 0:
	case b[0] == 2:
		a.sum = make([]uint64, ctx.Dim)
	case b[0] != 1:
		r.fail("sum flag %d, want 0, 1 or 2", b[0])
	case len(r.b)/8 < ctx.Dim: // not 8*ctx.Dim, which overflows a 32-bit int at MaxDim
		r.fail("truncated in the sum (%d bytes left, want %d)", len(r.b), 8*uint64(ctx.Dim))
	default:
		a.sum = make([]uint64, ctx.Dim)
		for i := range a.sum {
			a.sum[i] = binary.LittleEndian.Uint64(r.take(8, "sum"))
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	// The phase must agree with the sets: a later phase's set is empty
	// before it opens, and the sum exists from phase 2 on.
	for k := range a.in {
		if Phase(k) > phase && phase != PhaseFailed && phase != PhaseDone && len(a.ids(Phase(k))) > 0 {
			return nil, fmt.Errorf("secagg: Aggregator snapshot: learners in phase %s's set during phase %s", Phase(k), phase)
		}
	}
	if (a.sum != nil) != (phase >= PhaseMasked && phase != PhaseFailed) && !(phase == PhaseFailed && a.sum != nil) {
		return nil, fmt.Errorf("secagg: Aggregator snapshot: masked sum present = %v in phase %s", a.sum != nil, phase)
	}
	a.phase = phase
	return a, nil
}
