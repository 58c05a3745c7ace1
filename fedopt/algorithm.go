package fedopt

import "fmt"

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
)

// String returns "correlated", "independent" or "nonprivate".
func (a Algorithm) String() string {
	switch a {
	case Correlated:
		return "correlated"
	case Independent:
		return "independent"
	case NonPrivate:
		return "nonprivate"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// Private reports whether the algorithm adds noise.
func (a Algorithm) Private() bool { return a == Correlated || a == Independent }

// ParseAlgorithm parses "correlated", "independent" or "nonprivate".
func ParseAlgorithm(s string) (Algorithm, error) {
	for _, a := range []Algorithm{Correlated, Independent, NonPrivate} {
		if s == a.String() {
			return a, nil
		}
	}
	return 0, fmt.Errorf("fedopt: algorithm %q, want correlated, independent or nonprivate", s)
}
