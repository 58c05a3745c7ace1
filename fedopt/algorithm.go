package fedopt

import (
	"fmt"
	"strconv"
)

// Algorithm selects the server update of the online federated optimiser.
type Algorithm int

const (
	// Correlated is Algorithm 1 of Zhang, Zhu and Johansson: tau local
	// steps per learner, averaged, plus round r's vector of a correlated
	// noise mechanism.
	Correlated Algorithm = iota
	// Independent is the paper's baseline (its reference Liu et al. 2023,
	// equation (paper-batch)): gradients at x^r summed over local samples,
	// averaged over learners, one noisy server step with independent
	// Gaussian noise.
	Independent
	// NonPrivate is Algorithm 1 without noise.
	NonPrivate
	// BaselineCorrelated is the baseline's update (the clipped gradients
	// of the round's samples taken at x^r, summed over local samples and
	// averaged over learners, no local steps) with round r's vector of a
	// correlated noise mechanism, as in Algorithm 1. It keeps the
	// baseline's sensitivity per row and gets the factorization's noise
	// reduction (see plan.Plan.Calibrate).
	BaselineCorrelated
)

// algorithmNames are the algorithms' names, by value.
var algorithmNames = []string{Correlated: "correlated", Independent: "independent", NonPrivate: "nonprivate", BaselineCorrelated: "baseline-correlated"}

// String returns "correlated", "independent", "nonprivate" or
// "baseline-correlated".
func (a Algorithm) String() string {
	if a >= 0 && int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// Private reports whether the algorithm adds noise.
func (a Algorithm) Private() bool {
	return a == Correlated || a == Independent || a == BaselineCorrelated
}

// LocalSteps reports whether learners take local steps (Algorithm 1 and
// its noise-free version). Otherwise every gradient of a round is taken at
// the released model x^r and the server steps along their sum over local
// samples (the baseline's update).
func (a Algorithm) LocalSteps() bool { return a == Correlated || a == NonPrivate }

// Algorithms returns every algorithm, in the order of their values.
func Algorithms() []Algorithm {
	return []Algorithm{Correlated, Independent, NonPrivate, BaselineCorrelated}
}

// ParseAlgorithm parses the names String returns.
func ParseAlgorithm(s string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if s == a.String() {
			return a, nil
		}
	}
	return 0, &ParamError{Param: "algorithm", Value: strconv.Quote(s), Want: "correlated, independent, nonprivate or baseline-correlated"}
}
