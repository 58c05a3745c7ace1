package secagg

import (
	"encoding"
	"encoding/binary"
	"slices"
	"testing"
)

// hostile returns ms after a hostile relay: their encodings, concatenated,
// have mask XORed in from byte offset off; entry i is left out when bit i of
// drop is set, and entries that no longer decode are left out too.
func hostile[M any, PM interface {
	*M
	encoding.BinaryUnmarshaler
	encoding.BinaryMarshaler
}](t *testing.T, ms []M, drop byte, off int, mask []byte) []M {
	var all []byte
	var ends []int
	for i := range ms {
		b, err := PM(&ms[i]).MarshalBinary()
		must(t, err)
		all = append(all, b...)
		ends = append(ends, len(all))
	}
	for k, x := range mask {
		if j := off + k; j < len(all) {
			all[j] ^= x
		}
	}
	var out []M
	start := 0
	for i, end := range ends {
		var m M
		if drop&(1<<(i%8)) == 0 && PM(&m).UnmarshalBinary(all[start:end]) == nil {
			out = append(out, m)
		}
		start = end
	}
	return out
}

// FuzzHostileSteps drives one run (N = 4, T = 3, learner 3 dropping
// before its masked input) with one message or message list altered by a
// hostile relay (bytes flipped, entries left out) at the step the first
// byte picks: a learner's roster, inbox, survivors or signatures (a hostile
// server), or the aggregator's Advertise, Shares, Signature or Unmask
// message of learner 0 (a hostile learner). Nothing may panic; a learner
// that answers the unmask phase reveals b only for U3 and s only for
// U2 \ U3; and if the aggregator takes the altered message and finishes,
// its sum is the plain sum of U3's inputs, computed apart.
func FuzzHostileSteps(f *testing.F) {
	for mode := range byte(8) {
		f.Add([]byte{mode, 0, 0, 0})
		f.Add([]byte{mode, 1, 0, 5, 0xff})
		f.Add([]byte{mode, 0, 0, 40, 1, 2, 3})
		f.Add([]byte{mode, 2, 0, 4, 0, 1})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		mode, drop, off, mask := data[0]%8, data[1], int(binary.BigEndian.Uint16(data[2:4])), data[4:]
		ctx := testContext(4, 3, 8)
		s := newSession(t, ctx, 5)
		c0 := s.clients[0]
		// Phase 0.
		for u, c := range s.clients {
			m, err := c.Advertise()
			must(t, err)
			if u == 0 && mode == 4 {
				bad := hostile(t, []Advertise{m}, drop, off, mask)
				if len(bad) == 1 && s.agg.Advertised(bad[0]) == nil {
					return // a learner may advertise any valid keys
				}
			}
			must(t, s.agg.Advertised(m))
		}
		var err error
		s.roster, err = s.agg.CloseAdvertise()
		must(t, err)
		if mode == 0 {
			c0.ShareKeys(hostile(t, s.roster, drop, off, mask))
			return
		}
		// Phase 1.
		for u, c := range s.clients {
			m, err := c.ShareKeys(s.roster)
			must(t, err)
			if u == 0 && mode == 5 {
				bad := hostile(t, []Shares{m}, drop, off, mask)
				if len(bad) == 1 && s.agg.Shared(bad[0]) == nil {
					return // the boxes are opaque to the aggregator
				}
			}
			must(t, s.agg.Shared(m))
		}
		s.u2, err = s.agg.CloseShares()
		must(t, err)
		if mode == 1 {
			c0.MaskedInput(hostile(t, s.agg.Inbox(0), drop, off, mask), s.in[0])
			return
		}
		// Phase 2: learner 3 drops.
		for u, c := range s.clients[:3] {
			y, err := c.MaskedInput(s.agg.Inbox(u), s.in[u])
			must(t, err)
			must(t, s.agg.Masked(u, y))
		}
		s.u3, err = s.agg.CloseMasked()
		must(t, err)
		if mode == 2 {
			var surv []int
			for k, x := range mask {
				if drop&(1<<(k%8)) == 0 {
					surv = append(surv, int(x%6))
				}
			}
			c0.Sign(surv)
			return
		}
		// Phase 3.
		for u, c := range s.clients[:3] {
			m, err := c.Sign(s.u3)
			must(t, err)
			if u == 0 && mode == 6 {
				bad := hostile(t, []Signature{m}, drop, off, mask)
				if len(bad) == 1 && s.agg.Signed(bad[0]) == nil {
					if bad[0].From != 0 || !slices.Equal(bad[0].Sig, m.Sig) {
						t.Fatalf("the aggregator took an altered signature (from %d)", bad[0].From)
					}
					continue // learner 0's own, taken
				}
			}
			must(t, s.agg.Signed(m))
		}
		s.sigs, err = s.agg.CloseConsistency()
		must(t, err)
		if mode == 3 {
			um, err := c0.Unmask(s.u3, hostile(t, s.sigs, drop, off, mask))
			if err == nil && (len(um.Self) != 3 || len(um.Secret) != 1 || um.Secret[0].Of != 3) {
				t.Fatalf("learner 0 revealed b of %d learners and s of %v, want b of U3 = {0, 1, 2} and s of 3 only", len(um.Self), um.Secret)
			}
			return
		}
		// Phase 4.
		for u, c := range s.clients[:3] {
			m, err := c.Unmask(s.u3, s.sigs)
			must(t, err)
			if u == 0 && mode == 7 {
				bad := hostile(t, []Unmask{m}, drop, off, mask)
				if len(bad) == 1 && s.agg.Unmasked(bad[0]) == nil {
					continue
				}
			}
			must(t, s.agg.Unmasked(m))
		}
		sum, u3, err := s.agg.Finish()
		must(t, err)
		if !slices.Equal(u3, []int{0, 1, 2}) || !slices.Equal(sum, plainSum(s.in, u3)) {
			t.Fatalf("survivors %v and a sum other than the plain sum of U3's inputs", u3)
		}
	})
}
