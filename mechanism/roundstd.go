package mechanism

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
)

// RoundStd returns the standard deviation of each coordinate of round r's
// noise vector of m, for a round r in [0, Rounds()), numbered from the
// operator's round 0 as Round() counts them (a stream started later by
// [WithStartRound] numbers its rounds the same way): Std() times the Euclidean norm of row r of the noise operator M that m
// applies (C^{-1} for square factors, A^{-1} B in general; round r's
// vector is row r of M Z, the entries of Z N(0, Std()^2) and independent).
// It is computed from the operator's structure, never from dense factors
// (factorize.OperatorRowNorm); it draws nothing and leaves m as it was.
// Rounds differ: under the identity every round gets Std(), under the
// binary tree round r gets Std() sqrt(1 + t), t the number of trailing
// zeros of r + 1.
//
// m must be made by [New], or wrap such a Mechanism with a method
// Unwrap() Mechanism (as [FactorizationOf] reads it); the std is the one
// New was given. It is an error for another Mechanism, for r out of range,
// and where the row norm (beyond the float64 range only for coefficients
// assembled by hand) or the product is not finite.
func RoundStd(m Mechanism, r int) (float64, error) {
	s, err := streamOf(m)
	if err != nil {
		return 0, err
	}
	if r < 0 || r >= s.rounds {
		return 0, &ParamError{Param: "round", Value: r, Want: fmt.Sprintf("a round in [0, %d)", s.rounds)}
	}
	v, err := factorize.OperatorRowNorm(s.op, r)
	if err != nil {
		return 0, err
	}
	std := s.std * v
	if math.IsInf(std, 0) {
		return 0, fmt.Errorf("mechanism: round %d's noise std %v x %v overflows", r, s.std, v)
	}
	return std, nil
}

// RoundStds returns [RoundStd] of every round of m, 0 to Rounds()-1, in
// one pass over the operator's structure (factorize.OperatorRowNorms: O(R)
// memory and, for the strategies' structured operators, time linear in R
// times the operator's size per round, such as O(R K^2) for K state
// vectors); its errors are RoundStd's.
func RoundStds(m Mechanism) ([]float64, error) {
	s, err := streamOf(m)
	if err != nil {
		return nil, err
	}
	norms, err := factorize.OperatorRowNorms(s.op)
	if err != nil {
		return nil, err
	}
	for r, v := range norms {
		if norms[r] = s.std * v; math.IsInf(norms[r], 0) {
			return nil, fmt.Errorf("mechanism: round %d's noise std %v x %v overflows", r, s.std, v)
		}
	}
	return norms, nil
}

// streamOf returns the stream of New that m is or wraps.
func streamOf(m Mechanism) (*stream, error) {
	for range 64 { // wrappers nest a few deep; a cycle ends here
		if s, ok := m.(*stream); ok && s != nil {
			return s, nil
		}
		w, ok := m.(interface{ Unwrap() Mechanism })
		if !ok {
			break
		}
		m = w.Unwrap()
	}
	return nil, &ParamError{Param: "mechanism", Want: "a Mechanism from New, or one that wraps it (Unwrap() Mechanism)"}
}
