package secagg

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
)

// Aggregator is the server's side of one run (one Context). Its memory is
// O(Dim + N^2) whatever peers send: it keeps the roster, the boxes and
// commitments of phase 1, one running sum of the masked inputs, the
// signatures and the phase-4 shares. It is not safe for concurrent use.
type Aggregator struct {
	ctx    Context
	ctxEnc []byte
	phase  Phase

	adv    []Advertise        // indexed by id
	boxes  [][]EncryptedShare // boxes[u][v]: u's box for v
	sum    []uint64
	sigs   []Signature
	shares [][]byte // shares[holder]: N*ShareSize bytes, the holder's share of each v in U2
	// in[k][u]: u's message of phase k (0 Advertise .. 4 Unmask) was accepted.
	in [5][]bool
}

// probeKey is a fixed X25519 key to test advertised keys with.
var probeKey, _ = ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{7}, 32))

// NewAggregator returns the aggregator of ctx, in PhaseAdvertise.
func NewAggregator(ctx Context) (*Aggregator, error) {
	if err := ctx.Validate(); err != nil {
		return nil, err
	}
	a := &Aggregator{ctx: ctx, ctxEnc: encodeContext(ctx), adv: make([]Advertise, ctx.N),
		boxes: make([][]EncryptedShare, ctx.N), sigs: make([]Signature, ctx.N), shares: make([][]byte, ctx.N)}
	for k := range a.in {
		a.in[k] = make([]bool, ctx.N)
	}
	return a, nil
}

// Phase returns the phase the aggregator is in.
func (a *Aggregator) Phase() Phase { return a.phase }

// Context returns the aggregator's context.
func (a *Aggregator) Context() Context { return a.ctx }

// Accepted returns, sorted, the learners whose message of phase p
// (PhaseAdvertise to PhaseUnmask) was accepted: once p has closed, the
// set it closed with (U1 to U5).
func (a *Aggregator) Accepted(p Phase) []int {
	if p < PhaseAdvertise || p > PhaseUnmask {
		return nil
	}
	return a.ids(p)
}

// Roster returns U1's advertisements sorted by id, as CloseAdvertise did.
func (a *Aggregator) Roster() []Advertise { return pick(a.adv, a.ids(PhaseAdvertise)) }

// Signatures returns U4's signatures sorted by signer, as
// CloseConsistency did.
func (a *Aggregator) Signatures() []Signature { return pick(a.sigs, a.ids(PhaseConsistency)) }

// pick returns the entries of byID at ids, in order.
func pick[E any](byID []E, ids []int) []E {
	out := make([]E, len(ids))
	for i, u := range ids {
		out[i] = byID[u]
	}
	return out
}

// accept checks a phase-p message from learner from: the aggregator's phase,
// the id's range, membership of the previous phase's set, no duplicate.
func (a *Aggregator) accept(p Phase, what string, from int) error {
	switch err := checkID(what+".From", from, a.ctx.N); {
	case a.phase != p:
		return fmt.Errorf("secagg: %s from learner %d in phase %s, want phase %s", what, from, a.phase, p)
	case err != nil:
		return err
	case p > PhaseAdvertise && !a.in[p-1][from]:
		return fmt.Errorf("secagg: %s from learner %d, not a survivor of phase %s", what, from, p-1)
	case a.in[p][from]:
		return fmt.Errorf("secagg: %s from learner %d again (replayed or duplicate)", what, from)
	}
	return nil
}

// close ends phase p: at least T learners sent its message, else the run
// fails.
func (a *Aggregator) close(p Phase) ([]int, error) {
	if a.phase != p {
		return nil, fmt.Errorf("secagg: closing phase %s in phase %s", p, a.phase)
	}
	ids := a.ids(p)
	if len(ids) < a.ctx.T {
		a.phase = PhaseFailed
		return nil, fmt.Errorf("secagg: phase %s closed with %d learners, threshold %d: %w", p, len(ids), a.ctx.T, ErrTooFew)
	}
	a.phase = p + 1
	return ids, nil
}

// Advertised records a learner's phase-0 message: refused in another
// phase, twice from one learner, with an id out of range, with keys of the
// wrong size, X25519 keys not in canonical encoding or of low order, an
// Ed25519 key not in canonical encoding, not on the curve or of small
// order (checkEd25519Key), or repeating a key already advertised.
func (a *Aggregator) Advertised(m Advertise) error {
	if err := a.accept(PhaseAdvertise, "Advertise", m.From); err != nil {
		return err
	}
	keys := m.keys()
	for _, k := range keys {
		if len(k) != KeySize {
			return fmt.Errorf("secagg: Advertise from learner %d has a key of %d bytes, want %d", m.From, len(k), KeySize)
		}
	}
	for i, name := range []string{"CPub", "SPub"} { // keys[i]
		// An alias of a key (top bit set, or u + p) passes the byte-wise
		// check below as another key.
		if !canonicalX25519(keys[i]) {
			return fmt.Errorf("secagg: Advertise from learner %d: %s is not the canonical encoding of an X25519 public key (below 2^255 - 19)", m.From, name)
		}
		// A low-order point makes every key agreement with it fail: one
		// learner would stop the run for all.
		if _, err := agree(probeKey, keys[i]); err != nil {
			return fmt.Errorf("secagg: Advertise from learner %d: %s is not a usable X25519 public key (%v)", m.From, name, err)
		}
	}
	if err := checkEd25519Key(m.SigPub); err != nil {
		return fmt.Errorf("secagg: Advertise from learner %d: SigPub is %v", m.From, err)
	}
	for i, k := range keys {
		equal := func(o []byte) bool { return bytes.Equal(o, k) }
		if slices.ContainsFunc(keys[:i], equal) {
			return fmt.Errorf("secagg: Advertise from learner %d repeats one of its keys", m.From)
		}
		for u, ok := range a.in[PhaseAdvertise] {
			if ok && slices.ContainsFunc(a.adv[u].keys(), equal) {
				return fmt.Errorf("secagg: Advertise from learner %d repeats a key of learner %d", m.From, u)
			}
		}
	}
	a.adv[m.From] = Advertise{From: m.From, CPub: bytes.Clone(m.CPub), SPub: bytes.Clone(m.SPub), SigPub: bytes.Clone(m.SigPub)}
	a.in[PhaseAdvertise][m.From] = true
	return nil
}

// CloseAdvertise closes phase 0 and returns the roster U1, sorted by id; an
// error wrapping ErrTooFew if fewer than T learners advertised.
func (a *Aggregator) CloseAdvertise() ([]Advertise, error) {
	ids, err := a.close(PhaseAdvertise)
	if err != nil {
		return nil, err
	}
	return pick(a.adv, ids), nil
}

// Shared records a learner's phase-1 upload: refused in another phase,
// twice, from a learner not in U1, or unless it holds exactly one box of the
// right size from it for every learner of U1 (itself included), sorted by
// recipient.
func (a *Aggregator) Shared(m Shares) error {
	if err := a.accept(PhaseShares, "Shares", m.From); err != nil {
		return err
	}
	u1 := a.in[PhaseAdvertise]
	n := len(a.ids(PhaseAdvertise))
	if len(m.Boxes) != n {
		return fmt.Errorf("secagg: Shares from learner %d holds %d boxes, want one for each of the %d learners of U1", m.From, len(m.Boxes), n)
	}
	for i, e := range m.Boxes {
		switch {
		case e.From != m.From:
			return fmt.Errorf("secagg: Shares from learner %d holds a box from learner %d", m.From, e.From)
		case e.To < 0 || e.To >= a.ctx.N || !u1[e.To] || (i > 0 && e.To <= m.Boxes[i-1].To):
			return fmt.Errorf("secagg: Shares from learner %d: box %d is for %d, want the learners of U1 in increasing order", m.From, i, e.To)
		case len(e.Box) != BoxSize || len(e.Commit) != CommitSize:
			return fmt.Errorf("secagg: Shares from learner %d: box for %d is %d+%d bytes, want %d+%d", m.From, e.To, len(e.Box), len(e.Commit), BoxSize, CommitSize)
		}
	}
	row := make([]EncryptedShare, a.ctx.N)
	for _, e := range m.Boxes {
		row[e.To] = EncryptedShare{From: e.From, To: e.To, Box: bytes.Clone(e.Box), Commit: bytes.Clone(e.Commit)}
	}
	a.boxes[m.From] = row
	a.in[PhaseShares][m.From] = true
	return nil
}

// CloseShares closes phase 1 and returns U2, sorted; an error wrapping
// ErrTooFew if fewer than T learners shared.
func (a *Aggregator) CloseShares() ([]int, error) {
	ids, err := a.close(PhaseShares)
	if err == nil {
		a.sum = make([]uint64, a.ctx.Dim)
	}
	return ids, err
}

// Inbox returns what learner to receives after phase 1: the boxes addressed
// to it by the learners of U2, sorted by sender (nil before phase 1 closes
// or for an id out of range).
func (a *Aggregator) Inbox(to int) []EncryptedShare {
	if a.phase < PhaseMasked || a.phase == PhaseFailed || to < 0 || to >= a.ctx.N {
		return nil
	}
	var out []EncryptedShare
	for u, ok := range a.in[PhaseShares] {
		if ok && a.boxes[u][to].Box != nil {
			out = append(out, a.boxes[u][to])
		}
	}
	return out
}

// Masked adds learner from's masked input y (Dim entries) into the running
// sum and keeps no copy of it: refused in another phase, twice, or from a
// learner not in U2.
func (a *Aggregator) Masked(from int, y []uint64) error {
	if err := a.accept(PhaseMasked, "masked input", from); err != nil {
		return err
	}
	if len(y) != a.ctx.Dim {
		return fmt.Errorf("secagg: masked input from learner %d has %d entries, want Dim = %d", from, len(y), a.ctx.Dim)
	}
	AddRing(a.sum, y)
	a.in[PhaseMasked][from] = true
	return nil
}

// CloseMasked closes phase 2 and returns U3, sorted; an error wrapping
// ErrTooFew if fewer than T learners sent a masked input.
func (a *Aggregator) CloseMasked() ([]int, error) { return a.close(PhaseMasked) }

func (a *Aggregator) ids(p Phase) []int {
	var ids []int
	for u, ok := range a.in[p] {
		if ok {
			ids = append(ids, u)
		}
	}
	return ids
}

// Signed verifies and records a learner's phase-3 signature on the context
// and U3: refused in another phase, twice, from a learner not in U3, or if
// it does not verify under the key the learner advertised.
func (a *Aggregator) Signed(m Signature) error {
	if err := a.accept(PhaseConsistency, "Signature", m.From); err != nil {
		return err
	}
	if len(m.Sig) != SigSize || !ed25519.Verify(a.adv[m.From].SigPub, consistencyMessage(a.ctxEnc, a.ids(PhaseMasked)), m.Sig) {
		return fmt.Errorf("secagg: Signature from learner %d does not verify on this context and U3", m.From)
	}
	a.sigs[m.From] = Signature{From: m.From, Sig: bytes.Clone(m.Sig)}
	a.in[PhaseConsistency][m.From] = true
	return nil
}

// CloseConsistency closes phase 3 and returns the signatures of U4, sorted
// by signer; an error wrapping ErrTooFew if fewer than T learners signed.
func (a *Aggregator) CloseConsistency() ([]Signature, error) {
	if _, err := a.close(PhaseConsistency); err != nil {
		return nil, err
	}
	return a.Signatures(), nil
}

// Unmasked records a learner's phase-4 shares: refused in another phase,
// twice, from a learner not in U4, unless Self holds one share for each
// learner of U3 and Secret one for each learner of U2 not in U3 (both sorted
// by Of), or if a share does not match the commitment its dealer sent in
// phase 1 (forged, or of another run).
func (a *Aggregator) Unmasked(m Unmask) error {
	if err := a.accept(PhaseUnmask, "Unmask", m.From); err != nil {
		return err
	}
	var self, secret []int
	for v, ok := range a.in[PhaseShares] {
		if ok && a.in[PhaseMasked][v] {
			self = append(self, v)
		} else if ok {
			secret = append(secret, v)
		}
	}
	row := make([]byte, a.ctx.N*ShareSize)
	// Commit holds the commitment to the share of s, then to that of b.
	for _, part := range []struct {
		name string
		kind byte
		off  int // of the kind's commitment in Commit
		want []int
		got  []KeyShare
	}{{"Self", 'b', sha256.Size, self, m.Self}, {"Secret", 's', 0, secret, m.Secret}} {
		if len(part.got) != len(part.want) {
			return fmt.Errorf("secagg: Unmask from learner %d: %s holds %d shares, want %d", m.From, part.name, len(part.got), len(part.want))
		}
		for i, k := range part.got {
			v := part.want[i]
			if k.Of != v {
				return fmt.Errorf("secagg: Unmask from learner %d: %s[%d] is a share of %d, want %d", m.From, part.name, i, k.Of, v)
			}
			if len(k.Share) != ShareSize {
				return fmt.Errorf("secagg: Unmask from learner %d: share of %d is %d bytes, want %d", m.From, v, len(k.Share), ShareSize)
			}
			c := commit(a.ctxEnc, part.kind, v, m.From, k.Share)
			if subtle.ConstantTimeCompare(c[:], a.boxes[v][m.From].Commit[part.off:part.off+len(c)]) != 1 {
				return fmt.Errorf("secagg: Unmask from learner %d: share of %d does not match its dealer's commitment", m.From, v)
			}
			copy(row[v*ShareSize:], k.Share)
		}
	}
	a.shares[m.From] = row
	a.in[PhaseUnmask][m.From] = true
	return nil
}

// reconstructor interpolates every learner's secret from the shares of
// the learners of U5: the first T give the secret, and every share beyond
// them must lie on the same polynomial (a dealer who sent shares of no
// single secret is caught).
type reconstructor struct {
	a      *Aggregator
	first  []int    // the first T learners of U5
	rest   []int    // the others
	atZero interp   // from the first T to the secret
	atRest []interp // from the first T to each of the others
}

func newReconstructor(a *Aggregator, u5 []int) *reconstructor {
	r := &reconstructor{a: a, first: u5[:a.ctx.T], rest: u5[a.ctx.T:]}
	xs := make([]byte, len(r.first))
	for i, h := range r.first {
		xs[i] = byte(h + 1)
	}
	r.atZero = newInterp(xs, 0)
	for _, h := range r.rest {
		r.atRest = append(r.atRest, newInterp(xs, byte(h+1)))
	}
	return r
}

func (r *reconstructor) secret(v int) ([]byte, error) {
	ys := make([][]byte, len(r.first))
	for i, h := range r.first {
		ys[i] = r.a.shares[h][v*ShareSize : (v+1)*ShareSize]
	}
	var check [ShareSize]byte
	for i, h := range r.rest {
		r.atRest[i].eval(ys, check[:])
		if !bytes.Equal(check[:], r.a.shares[h][v*ShareSize:(v+1)*ShareSize]) {
			return nil, fmt.Errorf("secagg: the shares of learner %d are inconsistent (its dealer sent shares of no single secret)", v)
		}
	}
	out := make([]byte, ShareSize)
	r.atZero.eval(ys, out)
	return out, nil
}

// Finish closes phase 4 (at least T learners unmasked, else an error
// wrapping ErrTooFew), reconstructs b_v for v in U3 and s_v^SK for v in U2
// but not U3, removes their masks and returns the sum over U3 of the inputs
// in Z_{2^64}, with U3. The sum is a fresh slice.
func (a *Aggregator) Finish() (sum []uint64, survivors []int, err error) {
	u5, err := a.close(PhaseUnmask)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) ([]uint64, []int, error) {
		a.phase = PhaseFailed
		return nil, nil, err
	}
	u3 := a.ids(PhaseMasked)
	rec := newReconstructor(a, u5)
	var ms []mask
	for v, ok := range a.in[PhaseShares] {
		if !ok {
			continue
		}
		secret, err := rec.secret(v)
		if err != nil {
			return fail(err)
		}
		if a.in[PhaseMasked][v] {
			ms = append(ms, mask{key: selfKey(secret, a.ctxEnc, v), neg: true})
			continue
		}
		sk, err := ecdh.X25519().NewPrivateKey(secret)
		if err != nil || !bytes.Equal(sk.PublicKey().Bytes(), a.adv[v].SPub) {
			return fail(fmt.Errorf("secagg: the masking key reconstructed for learner %d does not match its advertised key", v))
		}
		for _, u := range u3 {
			k, err := maskKey(sk, a.adv[u].SPub, a.ctxEnc, u, v)
			if err != nil {
				return fail(fmt.Errorf("secagg: key agreement of learners %d and %d: %v", u, v, err))
			}
			// y_u holds +PRG(s_uv) if v > u, -PRG(s_uv) if v < u.
			ms = append(ms, mask{key: k, neg: v > u})
		}
	}
	out := slices.Clone(a.sum)
	applyMasks(out, ms)
	a.phase = PhaseDone
	return out, u3, nil
}
