package secagg

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func testContext(n, t, dim int) Context {
	return Context{Run: [16]byte{'t', 'e', 's', 't'}, Round: 7, Attempt: 1, N: n, T: t, Dim: dim}
}

// randomInputs returns n vectors of dim uniformly random ring elements.
func randomInputs(seed uint64, n, dim int) [][]uint64 {
	rng := testRand(seed)
	in := make([][]uint64, n)
	for u := range in {
		in[u] = make([]uint64, dim)
		for i := range in[u] {
			in[u][i] = rng.Uint64()
		}
	}
	return in
}

// plainSum is the ring sum of the inputs of members, entry by entry.
func plainSum(inputs [][]uint64, members []int) []uint64 {
	s := make([]uint64, len(inputs[0]))
	for _, u := range members {
		for i, v := range inputs[u] {
			s[i] += v
		}
	}
	return s
}

func TestRunSumExact(t *testing.T) {
	seed := uint64(10)
	for _, n := range []int{2, 3, 5, 10} {
		ts := []int{n/2 + 1, (2*n)/3 + 1, n}
		for _, th := range slices.Compact(ts) {
			seed++
			rng := testRand(seed)
			dim := 1 + int(rng.Uint64()%3000)
			in := randomInputs(seed, n, dim)
			sum, surv, err := Run(testContext(n, th, dim), in, nil, rng, nil)
			if err != nil {
				t.Fatalf("n=%d T=%d: %v", n, th, err)
			}
			all := make([]int, n)
			for u := range all {
				all[u] = u
			}
			if !slices.Equal(surv, all) || !slices.Equal(sum, plainSum(in, all)) {
				t.Fatalf("n=%d T=%d d=%d: the unmasked sum differs from the plain ring sum", n, th, dim)
			}
		}
	}
}

func TestRunDropouts(t *testing.T) {
	const n, th, dim = 7, 5, 100
	in := randomInputs(3, n, dim)
	for p := PhaseAdvertise; p <= PhaseUnmask; p++ {
		for k := 0; k <= n-th+1; k++ {
			t.Run(fmt.Sprintf("%d before %s", k, p), func(t *testing.T) {
				drop := DropPlan{}
				for i := 0; i < k; i++ {
					drop[(3*i+1)%n] = p // spread the dropouts over the ids
				}
				sum, surv, err := Run(testContext(n, th, dim), in, drop, testRand(uint64(100*int(p)+k)), nil)
				if n-k < th {
					if !errors.Is(err, ErrTooFew) {
						t.Fatalf("%d survivors of %d with threshold %d: err %v, want ErrTooFew", n-k, n, th, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var want []int
				for u := 0; u < n; u++ {
					// A learner who dropped after its masked input is counted.
					if d, ok := drop[u]; !ok || d > PhaseMasked {
						want = append(want, u)
					}
				}
				if !slices.Equal(surv, want) {
					t.Fatalf("survivors %v, want %v", surv, want)
				}
				if !slices.Equal(sum, plainSum(in, want)) {
					t.Fatal("the unmasked sum differs from the plain sum over the survivors")
				}
			})
		}
	}
}

// session drives one run step by step for the tests that tamper with it.
type session struct {
	ctx     Context
	clients []*Client
	agg     *Aggregator
	in      [][]uint64
	roster  []Advertise
	shares  []Shares
	u2, u3  []int
	ys      [][]uint64
	sigs    []Signature
	unmasks []Unmask
}

func newSession(t *testing.T, ctx Context, seed uint64) *session {
	t.Helper()
	s := &session{ctx: ctx, in: randomInputs(seed, ctx.N, ctx.Dim)}
	rng := testRand(seed)
	var err error
	for u := 0; u < ctx.N; u++ {
		c, err := NewClient(ctx, u, rng)
		if err != nil {
			t.Fatal(err)
		}
		s.clients = append(s.clients, c)
	}
	if s.agg, err = NewAggregator(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// refused checks that err is an error whose text holds want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted, want an error about %q", what, want)
	} else if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q, want one about %q", what, err, want)
	}
}

func (s *session) advertise(t *testing.T) {
	for _, c := range s.clients {
		m, err := c.Advertise()
		must(t, err)
		must(t, s.agg.Advertised(m))
	}
	var err error
	s.roster, err = s.agg.CloseAdvertise()
	must(t, err)
}

func (s *session) share(t *testing.T) {
	for _, c := range s.clients {
		m, err := c.ShareKeys(s.roster)
		must(t, err)
		s.shares = append(s.shares, m)
		must(t, s.agg.Shared(m))
	}
	var err error
	s.u2, err = s.agg.CloseShares()
	must(t, err)
}

func (s *session) mask(t *testing.T) {
	for u, c := range s.clients {
		y, err := c.MaskedInput(s.agg.Inbox(u), s.in[u])
		must(t, err)
		s.ys = append(s.ys, y)
		must(t, s.agg.Masked(u, y))
	}
	var err error
	s.u3, err = s.agg.CloseMasked()
	must(t, err)
}

func (s *session) sign(t *testing.T) {
	for _, c := range s.clients {
		m, err := c.Sign(s.u3)
		must(t, err)
		must(t, s.agg.Signed(m))
	}
	var err error
	s.sigs, err = s.agg.CloseConsistency()
	must(t, err)
}

func (s *session) unmask(t *testing.T) {
	for _, c := range s.clients {
		m, err := c.Unmask(s.u3, s.sigs)
		must(t, err)
		s.unmasks = append(s.unmasks, m)
		must(t, s.agg.Unmasked(m))
	}
}

func TestReplayedAndReordered(t *testing.T) {
	ctx := testContext(4, 3, 16)
	s := newSession(t, ctx, 5)
	adv, _ := s.clients[0].Advertise()
	must(t, s.agg.Advertised(adv))
	refused(t, "Advertise replayed", s.agg.Advertised(adv), "again")
	refused(t, "Shares during advertise", s.agg.Shared(Shares{From: 0}), "phase advertise")
	refused(t, "masked input during advertise", s.agg.Masked(0, make([]uint64, 16)), "phase advertise")
	refused(t, "Advertise with an id out of range", s.agg.Advertised(Advertise{From: 4}), "0..3")
	adv1, _ := s.clients[1].Advertise()
	adv1.SPub = adv.SPub
	refused(t, "Advertise repeating another learner's key", s.agg.Advertised(adv1), "repeats a key")
	adv1, _ = s.clients[1].Advertise()
	lowOrder := Advertise{From: 1, CPub: make([]byte, KeySize), SPub: adv1.SPub, SigPub: adv1.SigPub}
	lowOrder.CPub[0] = 1 // the point u = 1 has order 4
	refused(t, "Advertise with a low-order key", s.agg.Advertised(lowOrder), "not a usable X25519 public key")
	for _, c := range s.clients[1:] {
		m, _ := c.Advertise()
		must(t, s.agg.Advertised(m))
	}
	var err error
	s.roster, err = s.agg.CloseAdvertise()
	must(t, err)
	refused(t, "Advertise after the close", s.agg.Advertised(adv), "phase share-keys")
	s.share(t)
	refused(t, "Shares replayed", s.agg.Shared(s.shares[0]), "phase masked-input")
	s.mask(t)
	refused(t, "masked input replayed", s.agg.Masked(0, s.ys[0]), "phase consistency")
	sig, err := s.clients[0].Sign(s.u3)
	must(t, err)
	must(t, s.agg.Signed(sig))
	refused(t, "Signature replayed", s.agg.Signed(sig), "again")
	refused(t, "Unmask during consistency", s.agg.Unmasked(Unmask{From: 0}), "phase consistency")
	for _, c := range s.clients[1:] {
		m, _ := c.Sign(s.u3)
		must(t, s.agg.Signed(m))
	}
	s.sigs, err = s.agg.CloseConsistency()
	must(t, err)
	um, err := s.clients[0].Unmask(s.u3, s.sigs)
	must(t, err)
	must(t, s.agg.Unmasked(um))
	refused(t, "Unmask replayed", s.agg.Unmasked(um), "again")
	for _, c := range s.clients[1:] {
		m, _ := c.Unmask(s.u3, s.sigs)
		must(t, s.agg.Unmasked(m))
	}
	sum, _, err := s.agg.Finish()
	must(t, err)
	if !slices.Equal(sum, plainSum(s.in, []int{0, 1, 2, 3})) {
		t.Error("sum after the refused messages differs from the plain sum")
	}
	_, _, err = s.agg.Finish()
	refused(t, "Finish twice", err, "phase done")
}

// TestForeignAndForged refuses messages of another run, round or attempt
// (GCM's associated data, the commitments and the signatures bind the
// context) and forged ones.
func TestForeignAndForged(t *testing.T) {
	ctx := testContext(4, 3, 16)
	otherRun, otherRound, otherAttempt := ctx, ctx, ctx
	otherRun.Run[15] = 1
	otherRound.Round++
	otherAttempt.Attempt++
	for name, other := range map[string]Context{"run": otherRun, "round": otherRound, "attempt": otherAttempt} {
		t.Run("other "+name, func(t *testing.T) { testForeignAndForged(t, ctx, other) })
	}
}

func testForeignAndForged(t *testing.T, ctx, other Context) {
	// Same seed: the foreign clients draw the very same keys and shares, so
	// only the context tells their messages apart.
	s, f := newSession(t, ctx, 6), newSession(t, other, 6)
	s.advertise(t)
	f.advertise(t)
	s.share(t)
	f.share(t)
	if !slices.Equal(s.roster[0].CPub, f.roster[0].CPub) {
		t.Fatal("the two sessions should share keys")
	}
	// A box of the other attempt: GCM's associated data binds the context.
	inbox := s.agg.Inbox(0)
	inbox[1] = f.agg.Inbox(0)[1]
	_, err := s.clients[0].MaskedInput(inbox, s.in[0])
	refused(t, "box of another attempt", err, "does not decrypt under this run's context")
	inbox = s.agg.Inbox(0)
	inbox[2].Box = slices.Clone(inbox[2].Box)
	inbox[2].Box[20] ^= 1
	_, err = s.clients[0].MaskedInput(inbox, s.in[0])
	refused(t, "forged box", err, "does not decrypt")
	inbox = s.agg.Inbox(0)
	inbox[2].Commit = slices.Clone(inbox[2].Commit)
	inbox[2].Commit[0] ^= 1
	_, err = s.clients[0].MaskedInput(inbox, s.in[0])
	refused(t, "forged commitment", err, "does not match its commitment")
	_, err = s.clients[0].MaskedInput(s.agg.Inbox(0)[1:], s.in[0])
	refused(t, "inbox without the learner's own box", err, "not in U2")

	s.mask(t)
	f.mask(t)
	fsig, err := f.clients[0].Sign(f.u3)
	must(t, err)
	refused(t, "signature of another attempt", s.agg.Signed(fsig), "does not verify")
	sig, err := s.clients[0].Sign(s.u3)
	must(t, err)
	forged := Signature{From: 0, Sig: slices.Clone(sig.Sig)}
	forged.Sig[5] ^= 1
	refused(t, "forged signature", s.agg.Signed(forged), "does not verify")
	must(t, s.agg.Signed(sig))
	for _, c := range s.clients[1:] {
		m, _ := c.Sign(s.u3)
		must(t, s.agg.Signed(m))
	}
	s.sigs, err = s.agg.CloseConsistency()
	must(t, err)
	f.sign(t)
	// A signature set of the other attempt does not verify for this client.
	_, err = s.clients[0].Unmask(s.u3, f.sigs)
	refused(t, "signatures of another attempt", err, "does not verify")
	// An Unmask of the other attempt: with the same seed its shares are this
	// attempt's very shares (and harmless); a run of other randomness gives
	// other shares, refused by the commitments.
	g := newSession(t, other, 8)
	g.advertise(t)
	g.share(t)
	g.mask(t)
	g.sign(t)
	gum, err := g.clients[1].Unmask(g.u3, g.sigs)
	must(t, err)
	refused(t, "Unmask of another attempt", s.agg.Unmasked(gum), "does not match its dealer's commitment")
	um, err := s.clients[1].Unmask(s.u3, s.sigs)
	must(t, err)
	bad := Unmask{From: 1, Self: slices.Clone(um.Self)}
	bad.Self[2] = KeyShare{Of: bad.Self[2].Of, Share: slices.Clone(um.Self[2].Share)}
	bad.Self[2].Share[0] ^= 1
	refused(t, "forged share", s.agg.Unmasked(bad), "does not match its dealer's commitment")
	refused(t, "Unmask with a share missing", s.agg.Unmasked(Unmask{From: 1, Self: um.Self[1:]}), "holds 3 shares, want 4")
	must(t, s.agg.Unmasked(um))
}

func TestClientRefuses(t *testing.T) {
	ctx := testContext(5, 3, 8)
	s := newSession(t, ctx, 7)
	c := s.clients[0]
	_, err := c.ShareKeys(nil)
	refused(t, "ShareKeys before Advertise", err, "before the previous step")
	s.advertise(t)
	short := slices.Clone(s.roster[:2])
	_, err = c.ShareKeys(short)
	refused(t, "roster below the threshold", err, "threshold")
	swapped := slices.Clone(s.roster)
	swapped[0].SPub = s.roster[1].SPub
	_, err = c.ShareKeys(swapped)
	refused(t, "roster with a repeated key", err, "repeats a key")
	stolen := slices.Clone(s.roster)
	stolen[0].CPub = make([]byte, KeySize)
	stolen[0].CPub[0] = 9
	_, err = c.ShareKeys(stolen)
	refused(t, "roster with other keys for this learner", err, "not the ones it advertised")
	s.share(t)
	again, err := c.ShareKeys(s.roster)
	must(t, err)
	if !slices.EqualFunc(again.Boxes, s.shares[0].Boxes, func(a, b EncryptedShare) bool { return slices.Equal(a.Box, b.Box) }) {
		t.Error("ShareKeys asked again with the same roster gave another answer")
	}
	_, err = c.ShareKeys(s.roster[1:])
	refused(t, "ShareKeys asked again with another roster", err, "different roster")

	// Drop learner 4 from phase 2: U3 = {0..3}.
	for u, cl := range s.clients[:4] {
		y, err := cl.MaskedInput(s.agg.Inbox(u), s.in[u])
		must(t, err)
		must(t, s.agg.Masked(u, y))
		if u == 0 {
			y2, err := cl.MaskedInput(s.agg.Inbox(u), s.in[u])
			must(t, err)
			if !slices.Equal(y, y2) {
				t.Error("MaskedInput asked again with the same input gave another answer")
			}
			x := slices.Clone(s.in[u])
			x[0]++
			_, err = cl.MaskedInput(s.agg.Inbox(u), x)
			refused(t, "MaskedInput asked again with another input", err, "different inbox or input")
		}
	}
	s.u3, err = s.agg.CloseMasked()
	must(t, err)
	_, err = c.Sign([]int{0, 1, 7})
	refused(t, "survivor id out of range", err, "0..4")
	_, err = c.Sign([]int{0, 1})
	refused(t, "survivors below the threshold", err, "threshold")
	_, err = c.Sign([]int{1, 0, 2})
	refused(t, "unsorted survivors", err, "not sorted")
	sigs := make([]Signature, 0, 4)
	for _, cl := range s.clients[:4] {
		m, err := cl.Sign(s.u3)
		must(t, err)
		sigs = append(sigs, m)
	}
	_, err = c.Sign([]int{0, 1, 2})
	refused(t, "Sign asked again with other survivors", err, "different survivors")
	// The server asks for b_4's share by claiming 4 survived: a set the
	// client did not sign, so it could hold both shares of learner 4.
	_, err = c.Unmask([]int{0, 1, 2, 3, 4}, sigs)
	refused(t, "Unmask with survivors it did not sign", err, "not the set it signed")
	_, err = c.Unmask(s.u3, sigs[:2])
	refused(t, "Unmask with fewer than T signatures", err, "threshold")
	_, err = c.Unmask(s.u3, []Signature{sigs[0], sigs[1], sigs[1]})
	refused(t, "Unmask with a signature twice", err, "two signatures")
	bad := slices.Clone(sigs)
	bad[2] = Signature{From: 2, Sig: sigs[3].Sig}
	_, err = c.Unmask(s.u3, bad)
	refused(t, "Unmask with a forged signature", err, "does not verify")
	um, err := c.Unmask(s.u3, sigs)
	must(t, err)
	if len(um.Self) != 4 || len(um.Secret) != 1 || um.Secret[0].Of != 4 {
		t.Errorf("Unmask reveals b of %d learners and s of %v, want b of 0..3 and s of 4 only", len(um.Self), um.Secret)
	}
	_, err = c.Unmask(s.u3, sigs[1:])
	refused(t, "Unmask asked again with other signatures", err, "different signatures")
}

func TestContextValidate(t *testing.T) {
	for _, c := range []struct {
		ctx  Context
		want string
	}{
		{Context{Round: -1, N: 3, T: 2, Dim: 1}, "Context.Round"},
		{Context{N: 1, T: 1, Dim: 1}, "Context.N"},
		{Context{N: 256, T: 200, Dim: 1}, "Context.N"},
		{Context{N: 4, T: 2, Dim: 1}, "Context.T"},
		{Context{N: 4, T: 5, Dim: 1}, "Context.T"},
		{Context{N: 4, T: 3, Dim: 0}, "Context.Dim"},
		{Context{N: 4, T: 3, Dim: MaxDim + 1}, "Context.Dim"},
	} {
		refused(t, fmt.Sprint(c.ctx), c.ctx.Validate(), c.want)
	}
	must(t, Context{N: 255, T: 128, Dim: MaxDim}.Validate())
	_, err := NewClient(testContext(3, 2, 1), 3, testRand(1))
	refused(t, "client id out of range", err, "learner id is 3")
	_, _, err = Run(testContext(3, 2, 4), randomInputs(1, 3, 5), nil, testRand(1), nil)
	refused(t, "Run with inputs of the wrong length", err, "want Dim = 4")
	_, _, err = Run(testContext(3, 2, 4), randomInputs(1, 3, 4), DropPlan{3: PhaseMasked}, testRand(1), nil)
	refused(t, "DropPlan with an id out of range", err, "DropPlan's learner is 3")
	_, _, err = Run(testContext(3, 2, 4), randomInputs(1, 3, 4), DropPlan{1: PhaseDone}, testRand(1), nil)
	refused(t, "DropPlan with a phase out of range", err, "before done")
}

// TestInconsistentDealer: a dealer whose shares lie on no single polynomial
// (here one share changed after the commitments, as a cheating dealer would
// have committed to it) is caught when the aggregator has more than T
// shares, instead of silently giving a wrong sum.
func TestInconsistentDealer(t *testing.T) {
	s := newSession(t, testContext(5, 3, 8), 9)
	s.advertise(t)
	s.share(t)
	s.mask(t)
	s.sign(t)
	s.unmask(t)
	s.agg.shares[4][2*ShareSize+7] ^= 0x40 // holder 4's share of learner 2's b
	_, _, err := s.agg.Finish()
	refused(t, "inconsistent shares", err, "the shares of learner 2 are inconsistent")
	if s.agg.Phase() != PhaseFailed {
		t.Errorf("phase %s after a failed Finish, want failed", s.agg.Phase())
	}
}

// TestRunMaxLearners runs the largest context, N = 255, with dropouts
// before the masked input and before unmasking (not with -short: seconds).
func TestRunMaxLearners(t *testing.T) {
	if testing.Short() {
		t.Skip("N = 255 takes seconds")
	}
	const n, th, d = MaxLearners, 2*MaxLearners/3 + 1, 64
	in := randomInputs(12, n, d)
	drop := DropPlan{}
	for u := 0; u < 40; u++ {
		drop[u*6] = PhaseMasked + Phase(u%3) // before phase 2, 3 or 4
	}
	sum, surv, err := Run(testContext(n, th, d), in, drop, testRand(12), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for u := 0; u < n; u++ {
		if p, ok := drop[u]; !ok || p > PhaseMasked {
			want = append(want, u)
		}
	}
	if !slices.Equal(surv, want) || !slices.Equal(sum, plainSum(in, want)) {
		t.Fatal("N = 255: survivors or sum differ from the plain sum")
	}
}

// The accessors give the sets and messages the closes gave: here learner
// 3 advertises and then drops, so U1 = {0, 1, 2, 3} and U2 = U3 = U4 =
// {0, 1, 2}.
func TestAccessors(t *testing.T) {
	ctx := testContext(4, 3, 8)
	s := newSession(t, ctx, 11)
	s.advertise(t)
	if got := s.agg.Context(); got != ctx {
		t.Errorf("Context() = %+v, want %+v", got, ctx)
	}
	for u, c := range s.clients[:3] {
		m, err := c.ShareKeys(s.roster)
		must(t, err)
		must(t, s.agg.Shared(m))
		if u == 0 && !slices.Equal(s.agg.Accepted(PhaseShares), []int{0}) {
			t.Errorf("Accepted(PhaseShares) in the open phase = %v, want [0]", s.agg.Accepted(PhaseShares))
		}
	}
	_, err := s.agg.CloseShares()
	must(t, err)
	for u, c := range s.clients[:3] {
		y, err := c.MaskedInput(s.agg.Inbox(u), s.in[u])
		must(t, err)
		must(t, s.agg.Masked(u, y))
	}
	u3, err := s.agg.CloseMasked()
	must(t, err)
	for _, c := range s.clients[:3] {
		m, err := c.Sign(u3)
		must(t, err)
		must(t, s.agg.Signed(m))
	}
	sigs, err := s.agg.CloseConsistency()
	must(t, err)
	for p, want := range map[Phase][]int{PhaseAdvertise: {0, 1, 2, 3}, PhaseShares: {0, 1, 2}, PhaseMasked: {0, 1, 2}, PhaseConsistency: {0, 1, 2}, PhaseUnmask: nil, PhaseDone: nil, -1: nil} {
		if got := s.agg.Accepted(p); !slices.Equal(got, want) {
			t.Errorf("Accepted(%v) = %v, want %v", p, got, want)
		}
	}
	roster := s.agg.Roster()
	if len(roster) != 4 {
		t.Fatalf("Roster() has %d advertisements, want 4", len(roster))
	}
	for k, a := range roster {
		if a.From != k || !bytes.Equal(a.CPub, s.roster[k].CPub) || !bytes.Equal(a.SPub, s.roster[k].SPub) || !bytes.Equal(a.SigPub, s.roster[k].SigPub) {
			t.Errorf("Roster()[%d] = %+v, want learner %d's advertisement %+v", k, a, k, s.roster[k])
		}
	}
	got := s.agg.Signatures()
	if len(got) != 3 || len(sigs) != 3 {
		t.Fatalf("Signatures() has %d, CloseConsistency %d signatures, want 3", len(got), len(sigs))
	}
	for k := range got {
		if got[k].From != k || !bytes.Equal(got[k].Sig, sigs[k].Sig) {
			t.Errorf("Signatures()[%d] from learner %d, want learner %d's signature", k, got[k].From, k)
		}
	}
}

// TestRunMixedDropouts: learners drop out at different phases in one run.
// Every pattern of N = 4, T = 3 (each learner stays or drops before one of
// the five phases: 6^4 patterns; every 7th with -short), and 150 random
// patterns of N = 7, T = 4 (50 with -short).
// The expected outcome is counted independently of the protocol: the run
// fails with ErrTooFew exactly when some phase keeps fewer than T
// learners; otherwise U3 is the learners that did not drop before their
// masked input, and the sum is the plain ring sum of their inputs.
func TestRunMixedDropouts(t *testing.T) {
	check := func(t *testing.T, n, th int, in [][]uint64, drop DropPlan, seed uint64) {
		t.Helper()
		fails := false
		for p := PhaseAdvertise; p <= PhaseUnmask; p++ {
			alive := 0
			for u := 0; u < n; u++ {
				if d, ok := drop[u]; !ok || d > p {
					alive++
				}
			}
			fails = fails || alive < th
		}
		sum, surv, err := Run(testContext(n, th, len(in[0])), in, drop, testRand(seed), nil)
		if fails {
			if !errors.Is(err, ErrTooFew) {
				t.Fatalf("drops %v: err %v, want ErrTooFew", drop, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("drops %v: %v", drop, err)
		}
		var want []int
		for u := 0; u < n; u++ {
			if d, ok := drop[u]; !ok || d > PhaseMasked {
				want = append(want, u)
			}
		}
		if !slices.Equal(surv, want) || !slices.Equal(sum, plainSum(in, want)) {
			t.Fatalf("drops %v: survivors %v (want %v) or a sum other than their plain sum", drop, surv, want)
		}
	}
	t.Run("all N=4", func(t *testing.T) {
		const n, th = 4, 3
		in := randomInputs(41, n, 9)
		step := 1
		if testing.Short() {
			step = 7 // coprime with 6: every learner's phase still varies
		}
		for code := 0; code < 6*6*6*6; code += step {
			drop := DropPlan{}
			for u, c := 0, code; u < n; u, c = u+1, c/6 {
				if p := Phase(c % 6); p <= PhaseUnmask {
					drop[u] = p
				}
			}
			check(t, n, th, in, drop, uint64(code))
		}
	})
	t.Run("random N=7", func(t *testing.T) {
		const n, th = 7, 4
		in := randomInputs(42, n, 33)
		rng := testRand(43)
		trials := 150
		if testing.Short() {
			trials = 50
		}
		for trial := range trials {
			drop := DropPlan{}
			for u := 0; u < n; u++ {
				if rng.Uint64()%2 == 0 {
					drop[u] = Phase(rng.Uint64() % 5)
				}
			}
			check(t, n, th, in, drop, uint64(2000+trial))
		}
	})
}
