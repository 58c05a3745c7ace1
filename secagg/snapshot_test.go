package secagg

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// TestSnapshotRestore snapshots and restores the aggregator after every
// call, with a learner dropping before its masked input and one before
// unmasking, and gets the plain sum; an aggregator restored from a snapshot
// taken before the last message finishes the same way.
func TestSnapshotRestore(t *testing.T) {
	const n, th, d = 6, 4, 300
	ctx := testContext(n, th, d)
	s := newSession(t, ctx, 21)
	step := func(err error) {
		t.Helper()
		must(t, err)
		b, err := s.agg.MarshalBinary()
		must(t, err)
		r, err := RestoreAggregator(b)
		must(t, err)
		if r.Phase() != s.agg.Phase() {
			t.Fatalf("restored phase %s, want %s", r.Phase(), s.agg.Phase())
		}
		b2, err := r.MarshalBinary()
		must(t, err)
		if !slices.Equal(b, b2) {
			t.Fatal("a restored aggregator snapshots to other bytes")
		}
		s.agg = r
	}
	step(nil)
	for _, c := range s.clients {
		m, err := c.Advertise()
		must(t, err)
		step(s.agg.Advertised(m))
	}
	roster, err := s.agg.CloseAdvertise()
	step(err)
	for _, c := range s.clients {
		m, err := c.ShareKeys(roster)
		must(t, err)
		step(s.agg.Shared(m))
	}
	_, err = s.agg.CloseShares()
	step(err)
	for u, c := range s.clients[:n-1] { // learner 5 drops
		y, err := c.MaskedInput(s.agg.Inbox(u), s.in[u])
		must(t, err)
		step(s.agg.Masked(u, y))
	}
	u3, err := s.agg.CloseMasked()
	step(err)
	for _, u := range u3 {
		m, err := s.clients[u].Sign(u3)
		must(t, err)
		step(s.agg.Signed(m))
	}
	sigs, err := s.agg.CloseConsistency()
	step(err)
	var before []byte
	for _, u := range u3[1:] { // learner 0 drops before unmasking
		m, err := s.clients[u].Unmask(u3, sigs)
		must(t, err)
		if u == u3[len(u3)-1] {
			before, _ = s.agg.MarshalBinary()
		}
		step(s.agg.Unmasked(m))
	}
	want := plainSum(s.in, u3)
	sum, surv, err := s.agg.Finish()
	must(t, err)
	if !slices.Equal(surv, []int{0, 1, 2, 3, 4}) || !slices.Equal(sum, want) {
		t.Fatalf("after restores: survivors %v, sum equal %v; want 0..4 and the plain sum", surv, slices.Equal(sum, want))
	}
	// A server killed before the last Unmask resumes from its snapshot; the
	// learner answers again with the same message.
	r, err := RestoreAggregator(before)
	must(t, err)
	last := u3[len(u3)-1]
	m, err := s.clients[last].Unmask(u3, sigs)
	must(t, err)
	must(t, r.Unmasked(m))
	sum2, _, err := r.Finish()
	must(t, err)
	if !slices.Equal(sum2, want) {
		t.Fatal("a resumed aggregator gives another sum")
	}
}

func TestRestoreRefuses(t *testing.T) {
	a, err := NewAggregator(testContext(3, 2, 4))
	must(t, err)
	b, err := a.MarshalBinary()
	must(t, err)
	_, err = RestoreAggregator(b[:len(b)-1])
	refused(t, "truncated snapshot", err, "truncated")
	_, err = RestoreAggregator(append(slices.Clone(b), 0))
	refused(t, "snapshot with trailing bytes", err, "trailing")
	bad := slices.Clone(b)
	bad[2] = 9
	_, err = RestoreAggregator(bad)
	refused(t, "snapshot of another version", err, "format version 9")
	adv, err := (Advertise{From: 0, CPub: make([]byte, 32), SPub: make([]byte, 32), SigPub: make([]byte, 32)}).MarshalBinary()
	must(t, err)
	_, err = RestoreAggregator(adv)
	refused(t, "a message for a snapshot", err, "message kind")
}

// A snapshot's round is a uint64 on the wire: one beyond the platform's
// int (2^32 + 5 on 386, where int has 32 bits) is refused, never read as
// another round (5); on 64-bit platforms it reads back as written.
func TestRestoreRoundBeyondInt(t *testing.T) {
	a, err := NewAggregator(testContext(3, 2, 4))
	must(t, err)
	b, err := a.MarshalBinary()
	must(t, err)
	const round = 1<<32 + 5
	binary.BigEndian.PutUint64(b[4+16:], round) // after the header and the run
	r, err := RestoreAggregator(b)
	switch {
	case err != nil && math.MaxInt >= round:
		t.Fatalf("round %d refused on a 64-bit platform: %v", uint64(round), err)
	case err != nil:
		refused(t, "round beyond int", err, "out of range")
	case uint64(r.Context().Round) != round:
		t.Fatalf("round %d restored as round %d", uint64(round), r.Context().Round)
	}
}

// A snapshot that announces a masked sum of Dim = MaxDim entries and holds
// none is refused as truncated before anything is allocated for it; on
// 386, where 8 MaxDim overflows int, the length check passed and the
// decoder allocated 2 GiB for a snapshot of a few hundred bytes.
func TestRestoreTruncatedSumAtMaxDim(t *testing.T) {
	a, err := NewAggregator(testContext(3, 2, MaxDim))
	must(t, err)
	b, err := a.MarshalBinary() // ends with the sum flag 0: no sum
	must(t, err)
	b[len(b)-1] = 1 // a sum of Dim entries follows, but none does
	_, err = RestoreAggregator(b)
	refused(t, "a sum flag with no sum", err, "truncated in the sum")
}
