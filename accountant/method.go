package accountant

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dpmf/dpmf/internal/param"
)

// Method selects how a noise multiplier is calibrated to (eps, delta), or
// how eps is bounded for a given noise multiplier. The zero Method is Exact.
type Method int

// The calibration methods. Every method except Exact is an upper bound on
// the exact privacy curve, so each returns at least the noise Exact returns;
// see the package documentation for the formula and reference of each.
const (
	// Exact is the analytic Gaussian mechanism (Balle & Wang 2018), that is
	// the mu-GDP curve of Dong, Roth & Su: the least noise that is
	// (eps, delta)-DP.
	Exact Method = iota
	// Paper is the classical calibration used by Zhang, Zhu & Johansson
	// (following Denisov et al. 2022): sigma = sqrt(2 log(1/delta) + eps) / eps.
	// Conservative.
	Paper
	// ZCDP is zero-concentrated DP with the conversion of Bun & Steinke 2016:
	// eps = rho + 2 sqrt(rho log(1/delta)). The calibration of the paper's
	// baseline. Conservative.
	ZCDP
	// CKS is zero-concentrated DP with the tighter conversion of Canonne,
	// Kamath & Steinke 2020, optimised over all Renyi orders. Conservative.
	CKS
	// RDP is Renyi DP of the Gaussian converted with Balle et al. 2020
	// on the order grid of [RDPOrders]. Conservative.
	RDP
	// RDPMironov is Renyi DP of the Gaussian converted with Mironov 2017
	// (Proposition 3) on the order grid of [RDPOrders]. Conservative.
	RDPMironov
	// DworkRoth is sigma = sqrt(2 ln(1.25/delta)) / eps (Dwork & Roth 2014,
	// Theorem A.1), proven only for eps < 1 and refused for eps >= 1.
	DworkRoth

	numMethods
)

var methodNames = [numMethods]string{
	Exact:      "exact",
	Paper:      "paper",
	ZCDP:       "zcdp",
	CKS:        "cks",
	RDP:        "rdp",
	RDPMironov: "rdp-mironov",
	DworkRoth:  "dwork-roth",
}

// Methods returns every Method, Exact first.
func Methods() []Method {
	ms := make([]Method, numMethods)
	for i := range ms {
		ms[i] = Method(i)
	}
	return ms
}

// String returns the method's name as accepted by [ParseMethod], or
// "Method(n)" for a value that is not a Method.
func (m Method) String() string {
	if m.valid() {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

func (m Method) valid() bool { return m >= 0 && m < numMethods }

// ParseMethod returns the Method named s: one of exact, paper, zcdp, cks,
// rdp, rdp-mironov or dwork-roth. Any other string is an error that lists
// the names.
func ParseMethod(s string) (Method, error) {
	if m := slices.Index(methodNames[:], s); m >= 0 {
		return Method(m), nil
	}
	return 0, fmt.Errorf("accountant: unknown method %s, want one of %s", param.Quote(s), strings.Join(methodNames[:], ", "))
}

// MarshalText encodes m as its name, so a Method in a JSON record reads
// "exact" rather than 0. A value that is not a Method is an error.
func (m Method) MarshalText() ([]byte, error) {
	if !m.valid() {
		return nil, fmt.Errorf("accountant: invalid %v", m)
	}
	return []byte(methodNames[m]), nil
}

// UnmarshalText decodes a name accepted by [ParseMethod].
func (m *Method) UnmarshalText(text []byte) error {
	v, err := ParseMethod(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
