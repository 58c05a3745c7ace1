package secagg

import "io"

// Client is one learner's side of one run (one Context). Each step runs
// once, in order; repeating a step with the same input returns the same
// answer, with a different input it is an error.
type Client struct {
	ctx  Context
	id   int
	rand io.Reader
}

// NewClient returns learner id's client for ctx, drawing every key and seed
// from rand.
func NewClient(ctx Context, id int, rand io.Reader) (*Client, error) {
	return nil, errNotImplemented
}

// Advertise returns the phase-0 message: fresh public keys.
func (c *Client) Advertise() (Advertise, error) { return Advertise{}, errNotImplemented }

// ShareKeys checks the roster U1 and returns the encrypted shares of the
// client's masking key and self-mask seed for every other learner of it.
func (c *Client) ShareKeys(roster []Advertise) (Shares, error) { return Shares{}, errNotImplemented }

// MaskedInput decrypts the shares addressed to the client (their senders
// and the client form U2) and returns x masked: y = x + PRG(b_u) + pairwise
// masks, in Z_{2^64}.
func (c *Client) MaskedInput(inbox []EncryptedShare, x []uint64) ([]uint64, error) {
	return nil, errNotImplemented
}

// Sign signs the survivor set U3.
func (c *Client) Sign(survivors []int) (Signature, error) { return Signature{}, errNotImplemented }

// Unmask checks at least T valid signatures on survivors (U3) and returns
// the client's shares for the aggregator's reconstruction.
func (c *Client) Unmask(survivors []int, sigs []Signature) (Unmask, error) {
	return Unmask{}, errNotImplemented
}
