package factorize_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
)

// The sensitivity of a small C under each participation pattern, from a
// spec as a command line gives it. Every value is checked by hand with
// X = C^T C (X00 = 5, X11 = X22 = 2, X33 = 36, X01 = 2, X12 = 1, X23 = -6,
// the others 0): one round, the largest column norm, 6; two epochs of
// period 2, the worse residue class {1, 3}, sqrt(X11 + X33 + 2 X13) =
// sqrt(38), exact since X13 >= 0; at most two rounds at least 2 apart, the
// pattern {0, 3}, sqrt(X00 + X33) = sqrt(41), exact since X is banded
// within 2. The identity of 16 rounds under 4 epochs has sensitivity
// sqrt(4).
func ExampleSensitivityOf() {
	c := mat.NewDense(4, 4, []float64{
		1, 0, 0, 0,
		2, 1, 0, 0,
		0, 1, 1, 0,
		0, 0, 1, -6,
	})
	for _, spec := range []string{"single", "epochs:2", "minsep:2"} {
		p, err := factorize.ParseParticipation(spec)
		if err != nil {
			panic(err)
		}
		s, err := factorize.SensitivityOf(c, p)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-8s %.6f exact=%v\n", spec, s.Value, s.Exact)
	}
	id := mat.NewDiagDense(16, nil)
	for i := range 16 {
		id.SetDiag(i, 1)
	}
	s, err := factorize.SensitivityOf(id, factorize.FixedEpochs(4))
	if err != nil {
		panic(err)
	}
	fmt.Printf("identity, 4 epochs: %.6f exact=%v\n", s.Value, s.Exact)
	// A pattern that does not fit the rounds is an error naming it.
	_, err = factorize.SensitivityOf(c, factorize.FixedEpochs(3))
	fmt.Println(err)
	// Output:
	// single   6.000000 exact=true
	// epochs:2 6.164414 exact=true
	// minsep:2 6.403124 exact=true
	// identity, 4 epochs: 2.000000 exact=true
	// dpmf: participation = epochs:3, want a number of epochs that divides the rounds (4 rounds are not a whole number of 3 epochs)
}
