package mechanism

import "errors"

// ErrExhausted is returned by [Mechanism.Next] after the last round.
var ErrExhausted = errors.New("mechanism: all rounds have been drawn")

// Mechanism is a stream of per-round noise vectors of dimension d. Round r's
// vector is row r of M Z, where Z has independent N(0, std^2) entries (one
// row of dimension d per noise row of the factorization) and M is the
// factorization's noise operator (C^{-1} for square factors; A^{-1} B in
// general). Adding round r's vector to round r's (clipped, averaged) update
// makes the released prefix sums A G + B Z.
//
// A Mechanism is not safe for concurrent use; its output depends only on its
// construction (strategy, std, seed), never on scheduling.
type Mechanism interface {
	// Next writes the next round's noise vector into dst, which must have
	// length Dim() (another length is a bug in the calling program, and
	// panics, as an index out of range would), and advances the round. After the last round it returns
	// ErrExhausted and leaves dst unchanged. A round whose noise is not
	// finite (std near the float64 maximum) is an *OverflowError: dst is
	// zeroed, never filled with Inf or NaN.
	Next(dst []float64) error
	// Round returns the number of rounds drawn so far (0 before the first).
	Round() int
	// Rounds returns R, the number of rounds the mechanism can serve.
	Rounds() int
	// Dim returns d, the dimension of each noise vector.
	Dim() int
	// Std returns the standard deviation V of the entries of Z.
	Std() float64
	// StateBytes returns the bytes of noise state the mechanism holds:
	// the operator's state vectors and buffers of past noise, which grow
	// with d, and in keep mode the slice headers that index the kept
	// rows; the factorization itself is not counted.
	StateBytes() int64
}
