package factorize_test

import (
	"context"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/factorize"
)

// BLT fits a buffered linear Toeplitz factorization; its operator holds
// the parameters mechanism.New streams it from (k buffers, decay rates in
// (0, 1)).
func ExampleBLT() {
	w, err := factorize.Prefix(100)
	if err != nil {
		log.Fatal(err)
	}
	f, err := factorize.BLT(context.Background(), w, 2)
	if err != nil {
		log.Fatal(err)
	}
	p, ok := f.Operator.(*factorize.BLTParams)
	inRange := true
	for _, l := range p.Lambdas {
		inRange = inRange && l > 0 && l < 1
	}
	fmt.Println(ok, len(p.Weights), inRange, len(p.Scale))
	fmt.Printf("loss %.1f (identity %d)\n", f.Metrics.Loss, 100*101/2)
	// Output:
	// true 2 true 100
	// loss 512.7 (identity 5050)
}

// The banded strategy under single participation returns a
// lower-triangular Toeplitz C with b bands: the better of the banded
// square root and an optimised banded C.
func ExampleBandedStrategy() {
	w, err := factorize.Prefix(100)
	if err != nil {
		log.Fatal(err)
	}
	f, err := factorize.BandedStrategy{Bands: 16}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: loss %.3f, gamma %.4f\n", f.Strategy, f.Metrics.Loss, f.Metrics.Gamma)
	// Output: banded: loss 701.001, gamma 1.0000
}
