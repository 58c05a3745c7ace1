package mechanism_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// This is the shape of a private training loop with correlated noise: each
// round, add the mechanism's vector to the clipped, averaged update before
// applying it. The sum of the noisy updates over rounds 0..r is then the
// true prefix sum plus row r of B Z.
func Example() {
	const (
		rounds = 8   // training rounds R
		dim    = 5   // model parameters d
		clip   = 1.0 // per-round update norm bound
		mult   = 2.0 // noise multiplier, from a privacy accountant
		lr     = 0.1
	)
	w, err := factorize.Prefix(rounds)
	if err != nil {
		log.Fatal(err)
	}
	f, err := factorize.Compute(context.Background(), factorize.StrategyBLT, w, factorize.Options{Buffers: 2})
	if err != nil {
		log.Fatal(err)
	}
	// Calibrate to the sensitivity of C G. Leave out WithSeed in real use:
	// the key then comes from crypto/rand.
	std := mult * clip * f.Metrics.Sensitivity
	m, err := mechanism.New(f, dim, std, mechanism.WithSeed(1))
	if err != nil {
		log.Fatal(err)
	}
	model := make([]float64, dim)
	update := make([]float64, dim)
	noise := make([]float64, dim)
	for {
		for i := range update {
			update[i] = 0.01 // your clipped, averaged update for this round
		}
		if err := m.Next(noise); errors.Is(err, mechanism.ErrExhausted) {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		for i := range model {
			model[i] -= lr * (update[i] + noise[i])
		}
	}
	fmt.Printf("%v: %d of %d rounds, d = %d, %d bytes of noise state\n", m, m.Round(), m.Rounds(), m.Dim(), m.StateBytes())
	// Output: blt(k=2): 8 of 8 rounds, d = 5, 80 bytes of noise state
}

// NoiseMatrix draws a whole stream as a matrix, one row per round, for
// inspection or for tools that add noise offline.
func ExampleNoiseMatrix() {
	w, _ := factorize.Prefix(4)
	f, _ := factorize.Tree(w)
	m, err := mechanism.New(f, 3, 1.0, mechanism.WithSeed(7))
	if err != nil {
		log.Fatal(err)
	}
	z, err := mechanism.NoiseMatrix(m)
	if err != nil {
		log.Fatal(err)
	}
	r, c := z.Dims()
	fmt.Println(m, r, c)
	// Output: tree(buffers=2) 4 3
}
