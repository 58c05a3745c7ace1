package secagg

import (
	"bytes"
	"crypto/ecdh"
	"errors"
	"slices"
	"testing"
)

// The aggregator takes from a learner of U4 only a share of b_v for each
// v in U3 and a share of s_v^SK for each v in U2 \ U3, each in its place:
// a hostile learner that holds valid shares of both secrets of every
// learner (its decrypted boxes) cannot make it take a share of a
// survivor's masking key, of a dropped learner's self-mask, of a learner
// outside U2, or one secret's share in the other's place. Were one such
// share taken from T learners, the server would hold both secrets of one
// learner and could unmask its input. After the refusals the learner's
// honest answer is taken and the sum is the plain sum over U3.
func TestUnmaskRevealsOnlyTheAgreedSecrets(t *testing.T) {
	ctx := testContext(5, 3, 16)
	s := newSession(t, ctx, 9)
	s.advertise(t)
	s.share(t)
	// Learner 4 drops before its masked input: U3 = {0..3}, U2 \ U3 = {4}.
	for u, c := range s.clients[:4] {
		y, err := c.MaskedInput(s.agg.Inbox(u), s.in[u])
		must(t, err)
		must(t, s.agg.Masked(u, y))
	}
	var err error
	s.u3, err = s.agg.CloseMasked()
	must(t, err)
	s.clients = s.clients[:4]
	s.sign(t)
	h := s.clients[0] // the hostile learner
	honest, err := h.Unmask(s.u3, s.sigs)
	must(t, err)
	sShare := func(v int) KeyShare { return KeyShare{Of: v, Share: slices.Clone(h.held[v][0])} }
	bShare := func(v int) KeyShare { return KeyShare{Of: v, Share: slices.Clone(h.held[v][1])} }
	self := []KeyShare{bShare(0), bShare(1), bShare(2), bShare(3)}
	for _, c := range []struct {
		name, want   string
		self, secret []KeyShare
	}{
		{"a survivor's masking key in place of the dropped learner's", "Secret[0] is a share of 1, want 4", self, []KeyShare{sShare(1)}},
		{"a survivor's masking key besides the dropped learner's", "Secret holds 2 shares, want 1", self, []KeyShare{sShare(4), sShare(1)}},
		{"the dropped learner's self-mask in a survivor's place", "Self[3] is a share of 4, want 3", []KeyShare{bShare(0), bShare(1), bShare(2), bShare(4)}, []KeyShare{sShare(4)}},
		{"the dropped learner's self-mask besides the survivors'", "Self holds 5 shares, want 4", append(slices.Clone(self), bShare(4)), []KeyShare{sShare(4)}},
		{"a survivor's masking key in place of its self-mask", "share of 1 does not match its dealer's commitment", []KeyShare{bShare(0), sShare(1), bShare(2), bShare(3)}, []KeyShare{sShare(4)}},
		{"the dropped learner's self-mask in place of its masking key", "share of 4 does not match its dealer's commitment", self, []KeyShare{bShare(4)}},
		{"a learner outside U2", "Secret[0] is a share of 9, want 4", self, []KeyShare{{Of: 9, Share: make([]byte, ShareSize)}}},
		{"a short share", "share of 4 is 3 bytes", self, []KeyShare{{Of: 4, Share: make([]byte, 3)}}},
	} {
		refused(t, c.name, s.agg.Unmasked(Unmask{From: 0, Self: c.self, Secret: c.secret}), c.want)
	}
	must(t, s.agg.Unmasked(honest))
	for _, c := range s.clients[1:] {
		m, err := c.Unmask(s.u3, s.sigs)
		must(t, err)
		must(t, s.agg.Unmasked(m))
	}
	sum, u3, err := s.agg.Finish()
	must(t, err)
	if !slices.Equal(u3, []int{0, 1, 2, 3}) || !slices.Equal(sum, plainSum(s.in, u3)) {
		t.Fatalf("after the refusals: survivors %v and a sum other than the plain sum over U3", u3)
	}
}

// The aggregator takes from a learner of U1 only one box of the right
// size from it for each learner of U1, sorted by recipient: a Shares
// message with a box for a learner outside U1 (in place of one or
// besides), out of range, a recipient twice, a box from another learner,
// a short box or a box missing is refused, and the learner's honest
// message is taken afterwards; the run then sums its inputs exactly.
func TestSharesRefused(t *testing.T) {
	ctx := testContext(5, 3, 16)
	s := newSession(t, ctx, 11)
	// Learner 4 does not advertise: U1 = {0..3}.
	for _, c := range s.clients[:4] {
		m, err := c.Advertise()
		must(t, err)
		must(t, s.agg.Advertised(m))
	}
	var err error
	s.roster, err = s.agg.CloseAdvertise()
	must(t, err)
	s.clients, s.in = s.clients[:4], s.in[:4]
	honest, err := s.clients[0].ShareKeys(s.roster)
	must(t, err)
	edit := func(f func(b []EncryptedShare) []EncryptedShare) Shares {
		b := make([]EncryptedShare, len(honest.Boxes))
		for i, e := range honest.Boxes {
			b[i] = EncryptedShare{From: e.From, To: e.To, Box: slices.Clone(e.Box), Commit: slices.Clone(e.Commit)}
		}
		return Shares{From: 0, Boxes: f(b)}
	}
	for _, c := range []struct {
		name, want string
		m          Shares
	}{
		{"a box for a learner outside U1 in place of one", "box 3 is for 4, want the learners of U1", edit(func(b []EncryptedShare) []EncryptedShare { b[3].To = 4; return b })},
		{"a box for a learner outside U1 besides", "holds 5 boxes, want one for each of the 4 learners of U1", edit(func(b []EncryptedShare) []EncryptedShare {
			return append(b, EncryptedShare{From: 0, To: 4, Box: b[3].Box, Commit: b[3].Commit})
		})},
		{"a box for a learner out of range", "box 3 is for 9", edit(func(b []EncryptedShare) []EncryptedShare { b[3].To = 9; return b })},
		{"a box for a learner out of range below", "box 0 is for -1", edit(func(b []EncryptedShare) []EncryptedShare { b[0].To = -1; return b })},
		{"a recipient twice", "box 2 is for 1", edit(func(b []EncryptedShare) []EncryptedShare { b[2].To = 1; return b })},
		{"a box from another learner", "holds a box from learner 2", edit(func(b []EncryptedShare) []EncryptedShare { b[1].From = 2; return b })},
		{"a short box", "box for 1 is", edit(func(b []EncryptedShare) []EncryptedShare { b[1].Box = b[1].Box[:10]; return b })},
		{"a box missing", "holds 3 boxes", edit(func(b []EncryptedShare) []EncryptedShare { return b[:3] })},
	} {
		refused(t, c.name, s.agg.Shared(c.m), c.want)
	}
	must(t, s.agg.Shared(honest))
	s.shares = []Shares{honest}
	for _, c := range s.clients[1:] {
		m, err := c.ShareKeys(s.roster)
		must(t, err)
		must(t, s.agg.Shared(m))
	}
	s.u2, err = s.agg.CloseShares()
	must(t, err)
	s.mask(t)
	s.sign(t)
	s.unmask(t)
	sum, u3, err := s.agg.Finish()
	must(t, err)
	if !slices.Equal(u3, []int{0, 1, 2, 3}) || !slices.Equal(sum, plainSum(s.in, u3)) {
		t.Fatalf("after the refusals: survivors %v and a sum other than the plain sum over U1", u3)
	}
}

// X25519 reads a public key's 32 bytes as a number modulo p = 2^255 - 19
// with the top bit ignored (RFC 7748, section 5): the bytes of a key with
// the top bit set, and those of u + p for u < 19, name the same key as
// u's canonical bytes, which crypto/ecdh's PublicKey.Bytes gives. A
// byte-wise check of "no key twice" passes such an alias of another
// learner's key: the aggregator and the learners refuse every X25519 key
// that is not in canonical encoding, so that two learners of a roster
// never share a key (the paper's check, and what doc.go states).
func TestAliasedKeysRefused(t *testing.T) {
	ctx := testContext(4, 3, 8)
	s := newSession(t, ctx, 13)
	advs := make([]Advertise, ctx.N)
	for u, c := range s.clients {
		var err error
		advs[u], err = c.Advertise()
		must(t, err)
	}
	alias := func(k []byte) []byte { a := slices.Clone(k); a[31] |= 0x80; return a }
	// p + 9: the alias of 9, the base point's u (not of low order).
	pPlus9 := bytes.Repeat([]byte{0xff}, KeySize)
	pPlus9[0], pPlus9[31] = 0xf6, 0x7f
	nine := make([]byte, KeySize)
	nine[0] = 9
	// The premise, checked apart from the code under test: each alias
	// agrees with any private key as the key it aliases.
	priv, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{3}, KeySize))
	must(t, err)
	for _, p := range [][2][]byte{{advs[0].SPub, alias(advs[0].SPub)}, {nine, pPlus9}} {
		a, errA := ecdh.X25519().NewPublicKey(p[0])
		b, errB := ecdh.X25519().NewPublicKey(p[1])
		must(t, errors.Join(errA, errB))
		sa, errA := priv.ECDH(a)
		sb, errB := priv.ECDH(b)
		must(t, errors.Join(errA, errB))
		if !bytes.Equal(sa, sb) || bytes.Equal(p[0], p[1]) {
			t.Fatalf("%x and %x: not two encodings of one key", p[0], p[1])
		}
	}

	must(t, s.agg.Advertised(advs[0]))
	with := func(cpub, spub []byte) Advertise {
		return Advertise{From: 1, CPub: cpub, SPub: spub, SigPub: advs[1].SigPub}
	}
	for _, c := range []struct {
		name string
		m    Advertise
	}{
		{"learner 0's masking key, top bit set, as learner 1's", with(advs[1].CPub, alias(advs[0].SPub))},
		{"learner 0's encryption key, top bit set, as learner 1's", with(alias(advs[0].CPub), advs[1].SPub)},
		{"its own encryption key, top bit set, as its masking key", with(advs[1].CPub, alias(advs[1].CPub))},
		{"p + 9 as its masking key", with(advs[1].CPub, pPlus9)},
	} {
		refused(t, c.name, s.agg.Advertised(c.m), "not the canonical encoding")
	}
	for _, m := range advs[1:] {
		must(t, s.agg.Advertised(m))
	}
	s.roster, err = s.agg.CloseAdvertise()
	must(t, err)

	// A roster in which learner 2's keys alias learner 1's (as a server
	// could relay it) is refused by the learners.
	for _, c := range []struct {
		name string
		edit func(r []Advertise)
	}{
		{"masking key", func(r []Advertise) { r[2].SPub = alias(r[1].SPub) }},
		{"encryption key", func(r []Advertise) { r[2].CPub = alias(r[1].CPub) }},
		{"p + 9", func(r []Advertise) { r[2].SPub = pPlus9 }},
	} {
		r := slices.Clone(s.roster)
		c.edit(r)
		_, err := s.clients[0].ShareKeys(r)
		refused(t, "roster with an aliased "+c.name, err, "not the canonical encoding")
	}
	s.share(t)
	s.mask(t)
	s.sign(t)
	s.unmask(t)
	sum, u3, err := s.agg.Finish()
	must(t, err)
	if !slices.Equal(sum, plainSum(s.in, u3)) {
		t.Fatal("after the refusals: a sum other than the plain sum")
	}
}
