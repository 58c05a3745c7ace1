package secagg

import (
	"encoding/binary"
	"fmt"
)

// Advertise is a learner's phase-0 message: its X25519 public keys for share
// encryption (CPub) and masking (SPub) and its Ed25519 public key (SigPub),
// all fresh for this Context and KeySize bytes each.
type Advertise struct {
	From               int
	CPub, SPub, SigPub []byte
}

// keys returns the advertised keys: CPub, SPub and SigPub.
func (m Advertise) keys() [][]byte { return [][]byte{m.CPub, m.SPub, m.SigPub} }

// EncryptedShare is learner From's pair of Shamir shares (of its masking key
// and of its self-mask seed) for learner To, sealed with AES-256-GCM (Box,
// BoxSize bytes), with Commit the SHA-256 commitments to the two shares
// (CommitSize bytes) that the aggregator checks phase-4 shares against. A
// learner also sends one box to itself.
type EncryptedShare struct {
	From, To int
	Box      []byte
	Commit   []byte
}

// Shares is a learner's phase-1 upload: one EncryptedShare for every
// learner of the roster, itself included, sorted by To.
type Shares struct {
	From  int
	Boxes []EncryptedShare
}

// Signature is a learner's phase-3 message: its Ed25519 signature (SigSize
// bytes) on the context and the survivor set U3.
type Signature struct {
	From int
	Sig  []byte
}

// Unmask is a learner's phase-4 message: its shares of the self-mask seeds
// of the learners in U3 (Self) and of the masking keys of the learners in
// U2 but not U3 (Secret), each sorted by Of.
type Unmask struct {
	From         int
	Self, Secret []KeyShare
}

// KeyShare is one Shamir share (ShareSize bytes) of learner Of's secret.
type KeyShare struct {
	Of    int
	Share []byte
}

// The wire format: "SA", format version, message kind, then the fields;
// ids are big-endian uint16, byte fields have fixed sizes, lists a uint16
// count. Decoding checks every count against the bytes left before
// allocating.
const wireVersion = 1

const (
	kindAdvertise byte = iota + 1
	kindEncryptedShare
	kindShares
	kindSignature
	kindUnmask
	kindSnapshot
)

var kindNames = map[byte]string{kindAdvertise: "Advertise", kindEncryptedShare: "EncryptedShare",
	kindShares: "Shares", kindSignature: "Signature", kindUnmask: "Unmask", kindSnapshot: "Aggregator snapshot"}

// codec is one pass over a message's fields in wire order: the writer
// appends them, the reader decodes them into place. Each message lists its
// fields once (its fields method), for both directions, so the encoding and
// the decoding cannot drift apart. Both keep the first error and skip every
// later field.
type codec interface {
	// id is a learner id: a big-endian uint16 below MaxLearners.
	id(v *int, field string)
	// bytes is a field of exactly size bytes.
	bytes(v *[]byte, size int, field string)
	// list is a list's length n (the writer's; the reader returns what it
	// read), each entry at least minSize bytes on the wire.
	list(n, minSize int, field string) int
}

// writer encodes; a field of the wrong size or an id out of range is an
// error naming it (what.field).
type writer struct {
	b    []byte
	what string
	err  error
}

func newWriter(kind byte) *writer {
	return &writer{b: []byte{'S', 'A', wireVersion, kind}, what: kindNames[kind]}
}

func (w *writer) fail(field, format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("secagg: %s.%s "+format, append([]any{w.what, field}, args...)...)
	}
}

func (w *writer) id(v *int, field string) {
	if *v < 0 || *v >= MaxLearners {
		w.fail(field, "is %d, want 0..%d", *v, MaxLearners-1)
	} else if w.err == nil {
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(*v))
	}
}

func (w *writer) bytes(v *[]byte, size int, field string) {
	if len(*v) != size {
		w.fail(field, "is %d bytes, want %d", len(*v), size)
	} else if w.err == nil {
		w.b = append(w.b, *v...)
	}
}

func (w *writer) list(n, _ int, field string) int {
	if n > 1<<16-1 {
		w.fail(field, "has %d entries, want at most %d", n, 1<<16-1)
	} else if w.err == nil {
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(n))
	}
	return n
}

// reader decodes with a sticky error: the first failure is kept and every
// later read returns zero values.
type reader struct {
	b    []byte
	what string
	err  error
}

func newReader(data []byte, kind byte) *reader {
	r := &reader{b: data, what: kindNames[kind]}
	if len(data) < 4 || data[0] != 'S' || data[1] != 'A' {
		r.err = fmt.Errorf("secagg: %s: not a secagg message", r.what)
	} else if data[2] != wireVersion {
		r.err = fmt.Errorf("secagg: %s: format version %d, want %d", r.what, data[2], wireVersion)
	} else if data[3] != kind {
		r.err = fmt.Errorf("secagg: %s: message kind %d, want %d (%s)", r.what, data[3], kind, r.what)
	} else {
		r.b = data[4:]
	}
	return r
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("secagg: %s: "+format, append([]any{r.what}, args...)...)
	}
}

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("truncated in %s (%d bytes left, want %d)", field, len(r.b), n)
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u16(field string) int {
	b := r.take(2, field)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

func (r *reader) u64(field string) uint64 {
	b := r.take(8, field)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func (r *reader) id(v *int, field string) {
	*v = r.u16(field)
	if r.err == nil && *v >= MaxLearners {
		r.fail("%s is %d, want 0..%d", field, *v, MaxLearners-1)
	}
}

func (r *reader) bytes(v *[]byte, size int, field string) {
	if b := r.take(size, field); b != nil {
		*v = append([]byte(nil), b...)
	}
}

// list reads a list length and checks that many entries of at least
// minSize bytes each fit in what is left.
func (r *reader) list(_, minSize int, field string) int {
	n := r.u16(field)
	if r.err == nil && n*minSize > len(r.b) {
		r.fail("%s claims %d entries, only %d bytes left", field, n, len(r.b))
		return 0
	}
	return n
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

// encode is the MarshalBinary of every message: m's fields after the
// header of kind; nil and the first error if a field is refused.
func encode[T any](kind byte, m T, fields func(*T, codec)) ([]byte, error) {
	w := newWriter(kind)
	fields(&m, w)
	if w.err != nil {
		return nil, w.err
	}
	return w.b, nil
}

// decode is the UnmarshalBinary of every message: *m is set only if data
// is a whole, valid message of kind.
func decode[T any](data []byte, kind byte, m *T, fields func(*T, codec)) error {
	r := newReader(data, kind)
	var v T
	fields(&v, r)
	if err := r.end(); err != nil {
		return err
	}
	*m = v
	return nil
}

// resize returns s if it has n entries (encoding), else n new ones
// (decoding; nil for none).
func resize[E any](s []E, n int) []E {
	if len(s) == n {
		return s
	}
	return make([]E, n)
}

func (m *Advertise) fields(c codec) {
	c.id(&m.From, "From")
	c.bytes(&m.CPub, KeySize, "CPub")
	c.bytes(&m.SPub, KeySize, "SPub")
	c.bytes(&m.SigPub, KeySize, "SigPub")
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Advertise) MarshalBinary() ([]byte, error) {
	return encode(kindAdvertise, m, (*Advertise).fields)
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Advertise) UnmarshalBinary(data []byte) error {
	return decode(data, kindAdvertise, m, (*Advertise).fields)
}

const encryptedShareSize = 4 + BoxSize + CommitSize

func (m *EncryptedShare) fields(c codec) { m.fieldsIn(c, "") }

// fieldsIn names the fields with prefix in (a list's name).
func (m *EncryptedShare) fieldsIn(c codec, in string) {
	c.id(&m.From, in+"From")
	c.id(&m.To, in+"To")
	c.bytes(&m.Box, BoxSize, in+"Box")
	c.bytes(&m.Commit, CommitSize, in+"Commit")
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m EncryptedShare) MarshalBinary() ([]byte, error) {
	return encode(kindEncryptedShare, m, (*EncryptedShare).fields)
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *EncryptedShare) UnmarshalBinary(data []byte) error {
	return decode(data, kindEncryptedShare, m, (*EncryptedShare).fields)
}

func (m *Shares) fields(c codec) {
	c.id(&m.From, "From")
	m.Boxes = resize(m.Boxes, c.list(len(m.Boxes), encryptedShareSize, "Boxes"))
	for i := range m.Boxes {
		m.Boxes[i].fieldsIn(c, "Boxes.")
	}
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Shares) MarshalBinary() ([]byte, error) { return encode(kindShares, m, (*Shares).fields) }

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Shares) UnmarshalBinary(data []byte) error {
	return decode(data, kindShares, m, (*Shares).fields)
}

func (m *Signature) fields(c codec) {
	c.id(&m.From, "From")
	c.bytes(&m.Sig, SigSize, "Sig")
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Signature) MarshalBinary() ([]byte, error) {
	return encode(kindSignature, m, (*Signature).fields)
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Signature) UnmarshalBinary(data []byte) error {
	return decode(data, kindSignature, m, (*Signature).fields)
}

func keyShares(c codec, s *[]KeyShare, what string) {
	*s = resize(*s, c.list(len(*s), 2+ShareSize, what))
	for i := range *s {
		c.id(&(*s)[i].Of, what+".Of")
		c.bytes(&(*s)[i].Share, ShareSize, what+".Share")
	}
}

func (m *Unmask) fields(c codec) {
	c.id(&m.From, "From")
	keyShares(c, &m.Self, "Self")
	keyShares(c, &m.Secret, "Secret")
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Unmask) MarshalBinary() ([]byte, error) { return encode(kindUnmask, m, (*Unmask).fields) }

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Unmask) UnmarshalBinary(data []byte) error {
	return decode(data, kindUnmask, m, (*Unmask).fields)
}
