package accountant_test

import (
	"fmt"
	"log"

	"github.com/dpmf/dpmf/accountant"
)

// ReleaseSensitivity is the L2 sensitivity of the release C G of an average
// of n learners' clipped updates: 2 clip / n x unitSens for replace-one
// neighbours, half that for add/remove. With clip 1, 10 learners and the
// tree's gamma sqrt(10) (R = 1000, single participation):
func ExampleReleaseSensitivity() {
	for _, rel := range []accountant.Relation{accountant.ReplaceOne, accountant.AddRemove} {
		s, err := accountant.ReleaseSensitivity(1, 10, rel, 3.1622776601683795)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%v: %.4f\n", rel, s)
	}
	// Output:
	// replace-one: 0.6325
	// add-remove: 0.3162
}
