package secagg

import "errors"

// The tests' reference reconstruction: the aggregator interpolates with
// newInterp directly (reconstructor), so combine lives beside the tests.

// errShares is returned by combine for malformed input.
var errShares = errors.New("secagg: shares with repeated or zero x-coordinates or unequal lengths")

// combine interpolates the secret f(0) from shares at the x-coordinates xs.
func combine(xs []byte, shares [][]byte) ([]byte, error) {
	if len(xs) != len(shares) || len(xs) == 0 {
		return nil, errShares
	}
	var seen [256]bool
	for i, x := range xs {
		if x == 0 || seen[x] || len(shares[i]) != len(shares[0]) {
			return nil, errShares
		}
		seen[x] = true
	}
	out := make([]byte, len(shares[0]))
	newInterp(xs, 0).eval(shares, out)
	return out, nil
}
