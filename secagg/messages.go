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

func header(kind byte) []byte { return []byte{'S', 'A', wireVersion, kind} }

func putID(b []byte, what string, id int) ([]byte, error) {
	if id < 0 || id >= MaxLearners {
		return nil, fmt.Errorf("secagg: %s is %d, want 0..%d", what, id, MaxLearners-1)
	}
	return binary.BigEndian.AppendUint16(b, uint16(id)), nil
}

func putFixed(b []byte, what string, field []byte, size int) ([]byte, error) {
	if len(field) != size {
		return nil, fmt.Errorf("secagg: %s is %d bytes, want %d", what, len(field), size)
	}
	return append(b, field...), nil
}

func putCount(b []byte, what string, n int) ([]byte, error) {
	if n > 1<<16-1 {
		return nil, fmt.Errorf("secagg: %s has %d entries, want at most %d", what, n, 1<<16-1)
	}
	return binary.BigEndian.AppendUint16(b, uint16(n)), nil
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

func (r *reader) id(field string) int {
	id := r.u16(field)
	if r.err == nil && id >= MaxLearners {
		r.fail("%s is %d, want 0..%d", field, id, MaxLearners-1)
	}
	return id
}

func (r *reader) fixed(n int, field string) []byte {
	b := r.take(n, field)
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// count reads a list length and checks that many entries of at least
// minSize bytes each fit in what is left.
func (r *reader) count(field string, minSize int) int {
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

func (m Advertise) appendTo(b []byte) ([]byte, error) {
	b, err := putID(b, "Advertise.From", m.From)
	for _, f := range []struct {
		name string
		v    []byte
	}{{"Advertise.CPub", m.CPub}, {"Advertise.SPub", m.SPub}, {"Advertise.SigPub", m.SigPub}} {
		if err == nil {
			b, err = putFixed(b, f.name, f.v, KeySize)
		}
	}
	return b, err
}

func (m *Advertise) read(r *reader) {
	m.From = r.id("From")
	m.CPub = r.fixed(KeySize, "CPub")
	m.SPub = r.fixed(KeySize, "SPub")
	m.SigPub = r.fixed(KeySize, "SigPub")
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Advertise) MarshalBinary() ([]byte, error) { return m.appendTo(header(kindAdvertise)) }

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Advertise) UnmarshalBinary(data []byte) error {
	r := newReader(data, kindAdvertise)
	var v Advertise
	v.read(r)
	if err := r.end(); err != nil {
		return err
	}
	*m = v
	return nil
}

const encryptedShareSize = 4 + BoxSize + CommitSize

func (m EncryptedShare) appendTo(b []byte) ([]byte, error) {
	b, err := putID(b, "EncryptedShare.From", m.From)
	if err == nil {
		b, err = putID(b, "EncryptedShare.To", m.To)
	}
	if err == nil {
		b, err = putFixed(b, "EncryptedShare.Box", m.Box, BoxSize)
	}
	if err == nil {
		b, err = putFixed(b, "EncryptedShare.Commit", m.Commit, CommitSize)
	}
	return b, err
}

func (m *EncryptedShare) read(r *reader) {
	m.From = r.id("From")
	m.To = r.id("To")
	m.Box = r.fixed(BoxSize, "Box")
	m.Commit = r.fixed(CommitSize, "Commit")
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m EncryptedShare) MarshalBinary() ([]byte, error) {
	return m.appendTo(header(kindEncryptedShare))
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *EncryptedShare) UnmarshalBinary(data []byte) error {
	r := newReader(data, kindEncryptedShare)
	var v EncryptedShare
	v.read(r)
	if err := r.end(); err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Shares) MarshalBinary() ([]byte, error) {
	b, err := putID(header(kindShares), "Shares.From", m.From)
	if err == nil {
		b, err = putCount(b, "Shares.Boxes", len(m.Boxes))
	}
	for _, e := range m.Boxes {
		if err != nil {
			break
		}
		b, err = e.appendTo(b)
	}
	return b, err
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Shares) UnmarshalBinary(data []byte) error {
	r := newReader(data, kindShares)
	var v Shares
	v.From = r.id("From")
	n := r.count("Boxes", encryptedShareSize)
	if n > 0 {
		v.Boxes = make([]EncryptedShare, n)
		for i := range v.Boxes {
			v.Boxes[i].read(r)
		}
	}
	if err := r.end(); err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Signature) MarshalBinary() ([]byte, error) {
	b, err := putID(header(kindSignature), "Signature.From", m.From)
	if err == nil {
		b, err = putFixed(b, "Signature.Sig", m.Sig, SigSize)
	}
	return b, err
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Signature) UnmarshalBinary(data []byte) error {
	r := newReader(data, kindSignature)
	var v Signature
	v.From = r.id("From")
	v.Sig = r.fixed(SigSize, "Sig")
	if err := r.end(); err != nil {
		return err
	}
	*m = v
	return nil
}

func appendKeyShares(b []byte, what string, s []KeyShare) ([]byte, error) {
	b, err := putCount(b, what, len(s))
	for _, k := range s {
		if err != nil {
			break
		}
		b, err = putID(b, what+".Of", k.Of)
		if err == nil {
			b, err = putFixed(b, what+".Share", k.Share, ShareSize)
		}
	}
	return b, err
}

func readKeyShares(r *reader, what string) []KeyShare {
	n := r.count(what, 2+ShareSize)
	if n == 0 {
		return nil
	}
	s := make([]KeyShare, n)
	for i := range s {
		s[i].Of = r.id(what + ".Of")
		s[i].Share = r.fixed(ShareSize, what+".Share")
	}
	return s
}

// MarshalBinary encodes m; fields of the wrong size are an error.
func (m Unmask) MarshalBinary() ([]byte, error) {
	b, err := putID(header(kindUnmask), "Unmask.From", m.From)
	if err == nil {
		b, err = appendKeyShares(b, "Unmask.Self", m.Self)
	}
	if err == nil {
		b, err = appendKeyShares(b, "Unmask.Secret", m.Secret)
	}
	return b, err
}

// UnmarshalBinary decodes data into m; a truncated, oversized or foreign
// encoding is an error.
func (m *Unmask) UnmarshalBinary(data []byte) error {
	r := newReader(data, kindUnmask)
	var v Unmask
	v.From = r.id("From")
	v.Self = readKeyShares(r, "Self")
	v.Secret = readKeyShares(r, "Secret")
	if err := r.end(); err != nil {
		return err
	}
	*m = v
	return nil
}
