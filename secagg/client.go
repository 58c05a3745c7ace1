package secagg

import (
	"bytes"
	"cmp"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Client is one learner's side of one run (one Context). Each step runs
// once, in order; repeating a step with the same input returns the same
// answer (a restarted server may ask again; the answer reveals nothing
// new), with a different input it is an error (the server changed its
// story). A Client is not safe for concurrent use.
type Client struct {
	ctx    Context
	ctxEnc []byte
	id     int
	rand   io.Reader
	step   int // steps done: 1 Advertise, 2 ShareKeys, 3 MaskedInput, 4 Sign, 5 Unmask

	cKey, sKey *ecdh.PrivateKey
	sigKey     ed25519.PrivateKey
	adv        Advertise

	roster      []Advertise // indexed by id; From < 0 for learners not in U1
	agreed      [][]byte    // agreed[v]: X25519(c_u, c_v), for v in U1 (ShareKeys computes it, openBox reuses it)
	inU1        []bool
	rosterHash  [32]byte
	shares      Shares
	selfSeed    []byte
	held        [][2][]byte // held[v]: this learner's shares of s_v^SK and b_v, for v in U2
	inU2        []bool
	maskedHash  [32]byte
	survivors   []int
	signature   Signature
	unmaskHash  [32]byte
	unmaskReply Unmask
}

// NewClient returns learner id's client for ctx, drawing every key and seed
// from rand.
func NewClient(ctx Context, id int, rand io.Reader) (*Client, error) {
	if err := cmp.Or(ctx.Validate(), checkID("learner id", id, ctx.N)); err != nil {
		return nil, err
	}
	if rand == nil {
		return nil, errors.New("secagg: NewClient's rand is nil, want a source of randomness (crypto/rand.Reader)")
	}
	return &Client{ctx: ctx, ctxEnc: encodeContext(ctx), id: id, rand: rand}, nil
}

func (c *Client) order(step int, name string) error {
	if c.step < step-1 {
		return fmt.Errorf("secagg: learner %d: %s before the previous step", c.id, name)
	}
	return nil
}

func (c *Client) read(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(c.rand, b); err != nil {
		return nil, fmt.Errorf("secagg: learner %d: reading randomness: %w", c.id, err)
	}
	return b, nil
}

// Advertise returns the phase-0 message: fresh public keys.
func (c *Client) Advertise() (Advertise, error) {
	if c.step >= 1 {
		return c.adv, nil
	}
	seed, err := c.read(3 * 32)
	if err != nil {
		return Advertise{}, err
	}
	if c.cKey, err = ecdh.X25519().NewPrivateKey(seed[:32]); err != nil {
		return Advertise{}, err
	}
	if c.sKey, err = ecdh.X25519().NewPrivateKey(seed[32:64]); err != nil {
		return Advertise{}, err
	}
	c.sigKey = ed25519.NewKeyFromSeed(seed[64:])
	clear(seed)
	c.adv = Advertise{From: c.id, CPub: c.cKey.PublicKey().Bytes(), SPub: c.sKey.PublicKey().Bytes(),
		SigPub: bytes.Clone(c.sigKey.Public().(ed25519.PublicKey))}
	c.step = 1
	return c.adv, nil
}

// digest hashes the encodings of ms, a message that does not encode
// contributing nothing; err is the first such failure.
func digest[M encoding.BinaryMarshaler](ms []M) (h [32]byte, err error) {
	d := sha256.New()
	for _, m := range ms {
		b, e := m.MarshalBinary()
		if err == nil {
			err = e
		}
		d.Write(b)
	}
	d.Sum(h[:0])
	return h, err
}

// ShareKeys checks the roster U1 (sorted by id, ids in range, at least T
// learners, this learner with the keys it sent, X25519 keys in canonical
// encoding, no key twice) and returns
// the encrypted shares of its masking key and self-mask seed for every
// learner of the roster, itself included.
func (c *Client) ShareKeys(roster []Advertise) (Shares, error) {
	if err := c.order(2, "ShareKeys"); err != nil {
		return Shares{}, err
	}
	h, _ := digest(roster) // a malformed entry is refused below
	if c.step >= 2 {
		if h != c.rosterHash {
			return Shares{}, fmt.Errorf("secagg: learner %d: ShareKeys asked again with a different roster", c.id)
		}
		return c.shares, nil
	}
	if len(roster) < c.ctx.T {
		return Shares{}, fmt.Errorf("secagg: learner %d: roster of %d learners, threshold %d: %w", c.id, len(roster), c.ctx.T, ErrTooFew)
	}
	seen := map[string]bool{}
	inU1 := make([]bool, c.ctx.N)
	byID := make([]Advertise, c.ctx.N)
	for i, a := range roster {
		switch err := checkID("roster id", a.From, c.ctx.N); {
		case err != nil:
			return Shares{}, err
		case i > 0 && a.From <= roster[i-1].From:
			return Shares{}, fmt.Errorf("secagg: learner %d: roster not sorted by id or id %d twice", c.id, a.From)
		case len(a.CPub) != KeySize || len(a.SPub) != KeySize || len(a.SigPub) != KeySize:
			return Shares{}, fmt.Errorf("secagg: learner %d: roster entry %d has keys of the wrong size, want %d bytes", c.id, a.From, KeySize)
		case !canonicalX25519(a.CPub) || !canonicalX25519(a.SPub):
			// Else an alias of another entry's key passes the check below.
			return Shares{}, fmt.Errorf("secagg: learner %d: roster entry %d has an X25519 key that is not the canonical encoding of one (below 2^255 - 19)", c.id, a.From)
		}
		if err := checkEd25519Key(a.SigPub); err != nil {
			return Shares{}, fmt.Errorf("secagg: learner %d: roster entry %d: SigPub is %v", c.id, a.From, err)
		}
		for _, k := range a.keys() {
			if seen[string(k)] {
				return Shares{}, fmt.Errorf("secagg: learner %d: roster entry %d repeats a key of another entry", c.id, a.From)
			}
			seen[string(k)] = true
		}
		inU1[a.From] = true
		byID[a.From] = a
	}
	if !inU1[c.id] {
		return Shares{}, fmt.Errorf("secagg: learner %d: not in the roster", c.id)
	}
	if me := byID[c.id]; !bytes.Equal(me.CPub, c.adv.CPub) || !bytes.Equal(me.SPub, c.adv.SPub) || !bytes.Equal(me.SigPub, c.adv.SigPub) {
		return Shares{}, fmt.Errorf("secagg: learner %d: the roster's keys for this learner are not the ones it advertised", c.id)
	}

	secret, err := c.read(SecretSize)
	if err != nil {
		return Shares{}, err
	}
	sShares, err := split(c.sKey.Bytes(), c.ctx.T, c.ctx.N, c.rand)
	if err != nil {
		return Shares{}, err
	}
	bShares, err := split(secret, c.ctx.T, c.ctx.N, c.rand)
	if err != nil {
		return Shares{}, err
	}
	out := Shares{From: c.id, Boxes: make([]EncryptedShare, 0, len(roster))}
	agreed := make([][]byte, c.ctx.N)
	for _, a := range roster {
		v := a.From
		shared, err := agree(c.cKey, a.CPub)
		if err != nil {
			return Shares{}, fmt.Errorf("secagg: learner %d: key agreement with learner %d: %v", c.id, v, err)
		}
		agreed[v] = shared
		key := deriveKey(shared, c.ctxEnc, "share", c.id, v)
		plain := appendIDs(nil, c.id, v)
		plain = append(append(plain, sShares[v]...), bShares[v]...)
		nonce, err := c.read(nonceSize)
		if err != nil {
			return Shares{}, err
		}
		box := gcm(key).Seal(nonce, nonce, plain, appendIDs(bytes.Clone(c.ctxEnc), c.id, v))
		cs, cb := commit(c.ctxEnc, 's', c.id, v, sShares[v]), commit(c.ctxEnc, 'b', c.id, v, bShares[v])
		out.Boxes = append(out.Boxes, EncryptedShare{From: c.id, To: v, Box: box, Commit: append(cs[:], cb[:]...)})
		clear(plain)
	}
	c.roster, c.agreed, c.inU1, c.rosterHash, c.shares, c.selfSeed = byID, agreed, inU1, h, out, secret
	c.step = 2
	return out, nil
}

// openBox checks and decrypts e, a box addressed to this learner, and
// returns the shares of s and b it holds.
func (c *Client) openBox(e EncryptedShare) (s, b []byte, err error) {
	u := e.From
	switch {
	case e.To != c.id:
		return nil, nil, fmt.Errorf("secagg: learner %d: inbox holds a box for learner %d", c.id, e.To)
	case u < 0 || u >= c.ctx.N || !c.inU1[u]:
		return nil, nil, fmt.Errorf("secagg: learner %d: inbox holds a box from %d, not in the roster", c.id, u)
	case len(e.Box) != BoxSize || len(e.Commit) != CommitSize:
		return nil, nil, fmt.Errorf("secagg: learner %d: box from %d has the wrong size", c.id, u)
	}
	// The box key of u's shares for this learner: the same X25519 secret
	// as this learner's box for u (ShareKeys agreed it), derived for the
	// other direction.
	key := deriveKey(c.agreed[u], c.ctxEnc, "share", u, c.id)
	plain, err := gcm(key).Open(nil, e.Box[:nonceSize], e.Box[nonceSize:], appendIDs(bytes.Clone(c.ctxEnc), u, c.id))
	if err != nil {
		return nil, nil, fmt.Errorf("secagg: learner %d: box from %d does not decrypt under this run's context", c.id, u)
	}
	if int(binary.BigEndian.Uint16(plain)) != u || int(binary.BigEndian.Uint16(plain[2:])) != c.id {
		return nil, nil, fmt.Errorf("secagg: learner %d: box from %d names other learners", c.id, u)
	}
	s, b = plain[4:4+ShareSize], plain[4+ShareSize:]
	cs, cb := commit(c.ctxEnc, 's', u, c.id, s), commit(c.ctxEnc, 'b', u, c.id, b)
	if subtle.ConstantTimeCompare(e.Commit, append(cs[:], cb[:]...)) != 1 {
		return nil, nil, fmt.Errorf("secagg: learner %d: box from %d does not match its commitment", c.id, u)
	}
	return s, b, nil
}

// MaskedInput decrypts the shares addressed to the client (their senders
// form U2, which must hold this learner and at least T learners) and returns
// x masked: y = x + PRG(b_u) + sum_{v in U2, v > u} PRG(s_uv) -
// sum_{v in U2, v < u} PRG(s_uv) in Z_{2^64}. x must have Dim entries.
func (c *Client) MaskedInput(inbox []EncryptedShare, x []uint64) ([]uint64, error) {
	if err := c.order(3, "MaskedInput"); err != nil {
		return nil, err
	}
	if len(x) != c.ctx.Dim {
		return nil, fmt.Errorf("secagg: learner %d: input has %d entries, want Dim = %d", c.id, len(x), c.ctx.Dim)
	}
	hin, err := digest(inbox)
	if err != nil {
		return nil, fmt.Errorf("secagg: learner %d: inbox: %v", c.id, err)
	}
	hsh := sha256.New()
	hsh.Write(hin[:])
	buf := make([]byte, 0, 8<<10)
	for rest := x; len(rest) > 0; {
		m := min(len(rest), cap(buf)/8)
		buf = buf[:0]
		for _, v := range rest[:m] {
			buf = binary.LittleEndian.AppendUint64(buf, v)
		}
		hsh.Write(buf)
		rest = rest[m:]
	}
	var h [32]byte
	hsh.Sum(h[:0])
	if c.step >= 3 {
		if h != c.maskedHash {
			return nil, fmt.Errorf("secagg: learner %d: MaskedInput asked again with a different inbox or input", c.id)
		}
		return c.mask(x)
	}
	held := make([][2][]byte, c.ctx.N)
	inU2 := make([]bool, c.ctx.N)
	for i, e := range inbox {
		if i > 0 && e.From <= inbox[i-1].From {
			return nil, fmt.Errorf("secagg: learner %d: inbox not sorted by sender or sender %d twice", c.id, e.From)
		}
		s, b, err := c.openBox(e)
		if err != nil {
			return nil, err
		}
		held[e.From] = [2][]byte{s, b}
		inU2[e.From] = true
	}
	if !inU2[c.id] {
		return nil, fmt.Errorf("secagg: learner %d: its own shares are not in the inbox (not in U2)", c.id)
	}
	if len(inbox) < c.ctx.T {
		return nil, fmt.Errorf("secagg: learner %d: inbox from %d learners, threshold %d: %w", c.id, len(inbox), c.ctx.T, ErrTooFew)
	}
	c.held, c.inU2, c.maskedHash = held, inU2, h
	y, err := c.mask(x)
	if err != nil {
		return nil, err
	}
	c.step = 3
	return y, nil
}

// mask returns x plus this learner's masks over U2.
func (c *Client) mask(x []uint64) ([]uint64, error) {
	ms := []mask{{key: selfKey(c.selfSeed, c.ctxEnc, c.id)}}
	for v, ok := range c.inU2 {
		if !ok || v == c.id {
			continue
		}
		k, err := maskKey(c.sKey, c.roster[v].SPub, c.ctxEnc, c.id, v)
		if err != nil {
			return nil, fmt.Errorf("secagg: learner %d: key agreement with learner %d: %v", c.id, v, err)
		}
		ms = append(ms, mask{key: k, neg: v < c.id})
	}
	y := slices.Clone(x)
	applyMasks(y, ms)
	return y, nil
}

// consistencyMessage is what a learner signs in phase 3.
func consistencyMessage(ctx []byte, survivors []int) []byte {
	m := append([]byte(domain+" consistency"), ctx...)
	m = binary.BigEndian.AppendUint16(m, uint16(len(survivors)))
	return appendIDs(m, survivors...)
}

// checkSurvivors checks that survivors is a sorted set of at least T ids of
// U2.
func (c *Client) checkSurvivors(survivors []int) error {
	if len(survivors) < c.ctx.T {
		return fmt.Errorf("secagg: learner %d: %d survivors, threshold %d: %w", c.id, len(survivors), c.ctx.T, ErrTooFew)
	}
	for i, u := range survivors {
		switch err := checkID("survivor id", u, c.ctx.N); {
		case err != nil:
			return err
		case i > 0 && u <= survivors[i-1]:
			return fmt.Errorf("secagg: learner %d: survivors not sorted or id %d twice", c.id, u)
		case !c.inU2[u]:
			return fmt.Errorf("secagg: learner %d: survivor %d is not in U2", c.id, u)
		}
	}
	return nil
}

// Sign checks the survivor set U3 (sorted, at least T learners, a subset of
// U2) and signs it with the context.
func (c *Client) Sign(survivors []int) (Signature, error) {
	if err := c.order(4, "Sign"); err != nil {
		return Signature{}, err
	}
	if c.step >= 4 {
		if !slices.Equal(survivors, c.survivors) {
			return Signature{}, fmt.Errorf("secagg: learner %d: Sign asked again with different survivors", c.id)
		}
		return c.signature, nil
	}
	if err := c.checkSurvivors(survivors); err != nil {
		return Signature{}, err
	}
	c.survivors = slices.Clone(survivors)
	c.signature = Signature{From: c.id, Sig: ed25519.Sign(c.sigKey, consistencyMessage(c.ctxEnc, survivors))}
	c.step = 4
	return c.signature, nil
}

// Unmask checks that survivors is the set this learner signed and that sigs
// hold at least T valid signatures on it from distinct learners of it (any
// invalid one is an error), then returns this learner's shares: of b_v for v
// in U3, of s_v^SK for v in U2 but not U3.
func (c *Client) Unmask(survivors []int, sigs []Signature) (Unmask, error) {
	if err := c.order(5, "Unmask"); err != nil {
		return Unmask{}, err
	}
	if !slices.Equal(survivors, c.survivors) {
		return Unmask{}, fmt.Errorf("secagg: learner %d: Unmask's survivors are not the set it signed", c.id)
	}
	h, err := digest(sigs)
	if err != nil {
		return Unmask{}, fmt.Errorf("secagg: learner %d: %v", c.id, err)
	}
	if c.step >= 5 {
		if h != c.unmaskHash {
			return Unmask{}, fmt.Errorf("secagg: learner %d: Unmask asked again with different signatures", c.id)
		}
		return c.unmaskReply, nil
	}
	inU3 := make([]bool, c.ctx.N)
	for _, u := range survivors {
		inU3[u] = true
	}
	msg := consistencyMessage(c.ctxEnc, survivors)
	signed := make([]bool, c.ctx.N)
	for _, s := range sigs {
		switch err := checkID("signer id", s.From, c.ctx.N); {
		case err != nil:
			return Unmask{}, err
		case !inU3[s.From]:
			return Unmask{}, fmt.Errorf("secagg: learner %d: signature of %d, not a survivor", c.id, s.From)
		case signed[s.From]:
			return Unmask{}, fmt.Errorf("secagg: learner %d: two signatures of %d", c.id, s.From)
		case len(s.Sig) != SigSize || !ed25519.Verify(c.roster[s.From].SigPub, msg, s.Sig):
			return Unmask{}, fmt.Errorf("secagg: learner %d: signature of %d does not verify on these survivors and context", c.id, s.From)
		}
		signed[s.From] = true
	}
	// Every signature is valid here (an invalid one is refused above).
	if len(sigs) < c.ctx.T {
		return Unmask{}, fmt.Errorf("secagg: learner %d: %d valid signatures on the survivors, threshold %d: %w", c.id, len(sigs), c.ctx.T, ErrTooFew)
	}
	out := Unmask{From: c.id}
	for v, ok := range c.inU2 {
		switch {
		case !ok:
		case inU3[v]:
			out.Self = append(out.Self, KeyShare{Of: v, Share: bytes.Clone(c.held[v][1])})
		default:
			out.Secret = append(out.Secret, KeyShare{Of: v, Share: bytes.Clone(c.held[v][0])})
		}
	}
	c.unmaskHash, c.unmaskReply = h, out
	c.step = 5
	return out, nil
}
