package mechanism_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// New applies the operator the factorization's strategy built; MemoryOf
// says whether an operator that reads past noise rows (Toeplitz, dense)
// keeps them or regenerates them (WithMemory chooses).
func ExampleNew() {
	ctx := context.Background()
	w, err := factorize.Prefix(100)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range []factorize.Strategy{factorize.BLTStrategy{}, factorize.OptimalStrategy{}, factorize.SqrtStrategy{}} {
		f, err := s.Factorize(ctx, w, factorize.SingleParticipation())
		if err != nil {
			log.Fatal(err)
		}
		for _, mem := range []mechanism.Memory{mechanism.MemoryKeep, mechanism.MemoryRegenerate} {
			m, err := mechanism.New(f, 1000, 1.0, mechanism.WithSeed(1), mechanism.WithMemory(mem))
			if err != nil {
				log.Fatal(err)
			}
			mode, _, ok := mechanism.MemoryOf(m)
			if !ok {
				fmt.Printf("%s: %v, no past rows\n", f.Strategy, m)
				break
			}
			fmt.Printf("%s: %v rows\n", f.Strategy, mode)
		}
	}
	// Output:
	// blt: blt(k=4), no past rows
	// optimal: semiseparable(K=29), no past rows
	// sqrt: keep rows
	// sqrt: regenerate rows
}

// WithStartRound resumes a stream after a checkpoint: with the same key,
// round r's vector is the one the uninterrupted stream draws.
func ExampleWithStartRound() {
	w, err := factorize.Prefix(10)
	if err != nil {
		log.Fatal(err)
	}
	f, err := factorize.BLT(context.Background(), w, 2)
	if err != nil {
		log.Fatal(err)
	}
	full, err := mechanism.New(f, 3, 1.0, mechanism.WithSeed(42))
	if err != nil {
		log.Fatal(err)
	}
	want := make([]float64, 3)
	for range 7 { // rounds 0..6
		if err := full.Next(want); err != nil {
			log.Fatal(err)
		}
	}
	resumed, err := mechanism.New(f, 3, 1.0, mechanism.WithSeed(42), mechanism.WithStartRound(6))
	if err != nil {
		log.Fatal(err)
	}
	got := make([]float64, 3)
	if err := resumed.Next(got); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resumed.Round(), slices.Equal(got, want))
	// Output: 7 true
}

// WithDense streams any factorization through the dense mechanism, the
// reference the structured ones are compared with: for the tree, whose C
// has more rows than columns, row r of A^{-1} B Z formed from the dense
// factors, the same noise as the tree's buffers give (to rounding) from a
// different implementation.
func ExampleWithDense() {
	w, err := factorize.Prefix(16)
	if err != nil {
		log.Fatal(err)
	}
	f, err := factorize.TreeStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		log.Fatal(err)
	}
	for _, opts := range [][]mechanism.Option{nil, {mechanism.WithDense()}} {
		m, err := mechanism.New(f, 2, 1.0, append(opts, mechanism.WithSeed(1))...)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(m)
	}
	// Output:
	// tree(buffers=4)
	// dense(keep)
}
