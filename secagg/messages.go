package secagg

import "errors"

var errNotImplemented = errors.New("secagg: not implemented")

// Advertise is a learner's phase-0 message: its X25519 public keys for share
// encryption (CPub) and masking (SPub) and its Ed25519 public key (SigPub),
// all fresh for this Context.
type Advertise struct {
	From               int
	CPub, SPub, SigPub []byte
}

// EncryptedShare is learner From's pair of Shamir shares (of its masking key
// and of its self-mask seed) for learner To, sealed with AES-256-GCM (Box),
// with Commit the SHA-256 commitments to the two shares (CommitSize bytes)
// that the aggregator checks phase-4 shares against.
type EncryptedShare struct {
	From, To int
	Box      []byte
	Commit   []byte
}

// Shares is a learner's phase-1 upload: one EncryptedShare for every other
// learner of the roster.
type Shares struct {
	From  int
	Boxes []EncryptedShare
}

// Signature is a learner's phase-3 message: its Ed25519 signature on the
// context and the survivor set U3.
type Signature struct {
	From int
	Sig  []byte
}

// Unmask is a learner's phase-4 message: its shares of the self-mask seeds
// of the learners in U3 (Self) and of the masking keys of the learners in
// U2 but not U3 (Secret).
type Unmask struct {
	From         int
	Self, Secret []KeyShare
}

// KeyShare is one Shamir share (ShareSize bytes) of learner Of's secret.
type KeyShare struct {
	Of    int
	Share []byte
}

// MarshalBinary encodes m.
func (m Advertise) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalBinary decodes data into m.
func (m *Advertise) UnmarshalBinary(data []byte) error { return errNotImplemented }

// MarshalBinary encodes m.
func (m EncryptedShare) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalBinary decodes data into m.
func (m *EncryptedShare) UnmarshalBinary(data []byte) error { return errNotImplemented }

// MarshalBinary encodes m.
func (m Shares) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalBinary decodes data into m.
func (m *Shares) UnmarshalBinary(data []byte) error { return errNotImplemented }

// MarshalBinary encodes m.
func (m Signature) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalBinary decodes data into m.
func (m *Signature) UnmarshalBinary(data []byte) error { return errNotImplemented }

// MarshalBinary encodes m.
func (m Unmask) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalBinary decodes data into m.
func (m *Unmask) UnmarshalBinary(data []byte) error { return errNotImplemented }
