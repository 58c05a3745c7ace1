package secagg

// Aggregator is the server's side of one run (one Context). Its memory is
// O(Dim + N^2) whatever peers send.
type Aggregator struct {
	ctx   Context
	phase Phase
}

// NewAggregator returns the aggregator of ctx, in PhaseAdvertise.
func NewAggregator(ctx Context) (*Aggregator, error) { return nil, errNotImplemented }

// Phase returns the phase the aggregator is in.
func (a *Aggregator) Phase() Phase { return a.phase }

// Advertised records a learner's phase-0 message.
func (a *Aggregator) Advertised(m Advertise) error { return errNotImplemented }

// CloseAdvertise closes phase 0 and returns the roster U1, sorted by id.
func (a *Aggregator) CloseAdvertise() ([]Advertise, error) { return nil, errNotImplemented }

// Shared records a learner's phase-1 upload.
func (a *Aggregator) Shared(m Shares) error { return errNotImplemented }

// CloseShares closes phase 1 and returns U2, sorted.
func (a *Aggregator) CloseShares() ([]int, error) { return nil, errNotImplemented }

// Inbox returns what learner to receives after phase 1: the shares
// addressed to it by the learners of U2, sorted by sender.
func (a *Aggregator) Inbox(to int) []EncryptedShare { return nil }

// Masked adds learner from's masked input y into the running sum.
func (a *Aggregator) Masked(from int, y []uint64) error { return errNotImplemented }

// CloseMasked closes phase 2 and returns U3, sorted.
func (a *Aggregator) CloseMasked() ([]int, error) { return nil, errNotImplemented }

// Signed verifies and records a learner's phase-3 signature.
func (a *Aggregator) Signed(m Signature) error { return errNotImplemented }

// CloseConsistency closes phase 3 and returns the signatures of U4, sorted
// by signer.
func (a *Aggregator) CloseConsistency() ([]Signature, error) { return nil, errNotImplemented }

// Unmasked records a learner's phase-4 shares.
func (a *Aggregator) Unmasked(m Unmask) error { return errNotImplemented }

// Finish reconstructs the secrets, removes the masks and returns the sum
// over U3 of the inputs in Z_{2^64}, with U3.
func (a *Aggregator) Finish() (sum []uint64, survivors []int, err error) {
	return nil, nil, errNotImplemented
}

// MarshalBinary snapshots the aggregator (the masked sum included).
func (a *Aggregator) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// RestoreAggregator returns the aggregator a snapshot describes.
func RestoreAggregator(data []byte) (*Aggregator, error) { return nil, errNotImplemented }
