package secagg

import (
	"errors"
	"fmt"
)

// MaxLearners is the largest N a Context accepts: Shamir shares over GF(2^8)
// use the x-coordinates 1..255.
const MaxLearners = 255

// MaxDim is the largest vector length a Context accepts (2^28 entries, 2 GiB
// of uint64), a bound on what the aggregator allocates.
const MaxDim = 1 << 28

// ErrTooFew is wrapped by every phase close that has fewer than T learners:
// the run fails.
var ErrTooFew = errors.New("secagg: fewer learners than the threshold")

// Context names one run of the protocol: the run's id, the round, the
// attempt (one run of the protocol for the round), the number of learners N,
// the threshold T and the vector length Dim. Every key derivation, associated
// data and signature covers its encoding.
type Context struct {
	Run     [16]byte
	Round   int
	Attempt uint32
	N, T    int
	Dim     int
}

// Validate reports the first field out of range: Round >= 0,
// 2 <= N <= MaxLearners, N/2 < T <= N, 1 <= Dim <= MaxDim.
func (c Context) Validate() error {
	switch {
	case c.Round < 0:
		return fmt.Errorf("secagg: Context.Round is %d, want >= 0", c.Round)
	case c.N < 2 || c.N > MaxLearners:
		return fmt.Errorf("secagg: Context.N is %d, want 2..%d learners", c.N, MaxLearners)
	case 2*c.T <= c.N || c.T > c.N:
		return fmt.Errorf("secagg: Context.T is %d, want N/2 < T <= N (N = %d)", c.T, c.N)
	case c.Dim < 1 || c.Dim > MaxDim:
		return fmt.Errorf("secagg: Context.Dim is %d, want 1..%d", c.Dim, MaxDim)
	}
	return nil
}

// Phase is the phase an Aggregator is in: the messages it accepts next.
type Phase int

// The phases, in order; PhaseDone after Finish, PhaseFailed after a close
// with fewer than T learners.
const (
	PhaseAdvertise Phase = iota
	PhaseShares
	PhaseMasked
	PhaseConsistency
	PhaseUnmask
	PhaseDone
	PhaseFailed
)

var phaseNames = [...]string{"advertise", "share-keys", "masked-input", "consistency", "unmask", "done", "failed"}

// String returns the phase's name.
func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}
