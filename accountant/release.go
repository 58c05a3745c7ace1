package accountant

import (
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/dpmf/dpmf/internal/param"
)

// Relation is the neighbouring relation a privacy guarantee is stated
// for: which pairs of data sets must be indistinguishable.
type Relation int

const (
	// AddRemove: the data sets differ by adding or removing one sample
	// (one client's data). The default of the reference libraries.
	AddRemove Relation = iota
	// ReplaceOne: the data sets have the same size and differ in one
	// sample. A replace-one change is an add and a remove, so its
	// sensitivity is at most twice the add/remove one.
	ReplaceOne
)

var relationNames = [...]string{AddRemove: "add-remove", ReplaceOne: "replace-one"}

// String returns "add-remove" or "replace-one".
func (r Relation) String() string {
	if r >= 0 && int(r) < len(relationNames) {
		return relationNames[r]
	}
	return fmt.Sprintf("Relation(%d)", int(r))
}

// ParseRelation parses "add-remove" or "replace-one".
func ParseRelation(s string) (Relation, error) {
	if i := slices.Index(relationNames[:], s); i >= 0 {
		return Relation(i), nil
	}
	return 0, fmt.Errorf("accountant: neighbouring relation %s, want add-remove or replace-one", param.Quote(s))
}

// ReleaseSensitivity returns the L2 sensitivity of a release C G whose row r
// is the average, over n learners, of the learners' round-r contributions,
// each contribution a function of the learner's samples whose change under
// one sample is bounded in norm by the clipping:
//
//	add/remove:   one sample's presence changes its learner's contribution
//	              by at most clip (from a clipped vector to nothing), the
//	              average by clip / n;
//	replace-one:  by at most 2 clip (two clipped vectors), the average by
//	              2 clip / n.
//
// The average must divide by the fixed n, not by the number of learners
// present. unitSens is the sensitivity of C under the participation of one
// sample when each row it takes part in changes by norm at most 1
// (factorize.SensitivityOf, or Metrics.UnitSensitivity of a
// factorization; gamma, the largest column norm, for single
// participation). The result is
//
//	(2 for replace-one, 1 for add/remove) x clip / n x unitSens.
//
// For a sum rather than an average use n = 1. Parameters are checked here:
// clip and unitSens finite and > 0, n >= 1, a known relation. A result
// that overflows, or that is below the normal float64 range (2.2e-308,
// where a float64 loses relative precision), is a *ParamError with Param
// "release sensitivity" that gives clip, n and unitSens.
func ReleaseSensitivity(clip float64, n int, rel Relation, unitSens float64) (float64, error) {
	if err := checkPositive("clip", clip); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, &ParamError{Param: "learners", Value: float64(n), Want: "an integer >= 1"}
	}
	if err := checkPositive("unit sensitivity", unitSens); err != nil {
		return 0, err
	}
	var factor float64
	switch rel {
	case AddRemove:
		factor = 1
	case ReplaceOne:
		factor = 2
	default:
		return 0, &ParamError{Param: "relation", Value: float64(rel), Want: "add-remove or replace-one"}
	}
	// Rounded up at every step (a sensitivity rounded down calibrates too
	// little noise): a float64 n above 2^53 may exceed the integer, so
	// the divisor is taken one step below it.
	nf := float64(n)
	if int64(n) > 1<<53 {
		nf = math.Nextafter(nf, 0)
	}
	var s float64
	if d := divUp(factor*clip, nf); d >= smallestNormal || math.IsInf(d, 0) {
		// An overflowing factor clip is refused as overflowing (the
		// commands' -clip checks rest on it: clip 1e308 overflows the
		// updates' sums long before the sensitivity).
		s = mulUp(d, unitSens)
	} else {
		// factor clip / n falls below the normal range, where the
		// float64 quotient keeps few bits (rounded up, it was up to
		// 10^18 times the product: ReleaseSensitivity(5e-324, 2^62,
		// ReplaceOne, 1e300) gave 4.9e-24 for 2.1e-42): the product is
		// formed exactly and rounded up once.
		s = releaseExact(factor*0.5, clip, n, unitSens)
	}
	if math.IsInf(s, 0) || !(s >= smallestNormal) {
		return 0, &ParamError{Param: "release sensitivity", Value: s,
			Want: "finite and at least 2.2e-308, the normal float64 range (clip = " + ftoa(clip) + " / learners = " + itoa(n) + " x unit sensitivity = " + ftoa(unitSens) + " overflows or falls below it)"}
	}
	return s, nil
}

// releaseExact returns 2 half clip unitSens / n (half 0.5 or 1) rounded
// up to a float64: the smallest float64 at least the exact value where
// that is in the normal range; +Inf above it, and below it that float64
// kept below 2.2e-308 (which ReleaseSensitivity refuses).
func releaseExact(half, clip float64, n int, unitSens float64) float64 {
	p := new(big.Float).SetPrec(128).SetFloat64(clip)
	p.Mul(p, new(big.Float).SetFloat64(unitSens)) // 106 bits: exact
	p.Mul(p, new(big.Float).SetFloat64(2*half))   // a power of two: exact
	q := new(big.Float).SetPrec(53).SetMode(big.ToPositiveInf)
	q.Quo(p, new(big.Float).SetInt64(int64(n)))
	if q.Cmp(new(big.Float).SetFloat64(math.MaxFloat64)) > 0 {
		return math.Inf(1)
	}
	if q.Cmp(new(big.Float).SetFloat64(smallestNormal)) < 0 {
		// For the error: the value rounded up (5e-324 for less), kept
		// below the normal range.
		v, acc := q.Float64()
		if acc == big.Below {
			v = math.Nextafter(v, math.Inf(1))
		}
		return math.Min(v, math.Nextafter(smallestNormal, 0))
	}
	s, _ := q.Float64() // 53 bits within the normal range: exact
	return s
}
