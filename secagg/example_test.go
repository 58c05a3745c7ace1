package secagg_test

import (
	"crypto/rand"
	"fmt"
	"log"

	"github.com/dpmf/dpmf/secagg"
)

// The protocol step by step, as a networked server and its learners drive
// it: each aggregator call is what the server does with a message received,
// each close ends a phase (on a deadline, in a real server).
func Example() {
	ctx := secagg.Context{Run: [16]byte{1}, Round: 0, Attempt: 0, N: 3, T: 2, Dim: 4}
	inputs := [][]uint64{{1, 2, 3, 4}, {10, 20, 30, 40}, {100, 200, 300, 400}}
	agg, err := secagg.NewAggregator(ctx)
	check(err)
	learners := make([]*secagg.Client, ctx.N)
	for u := range learners {
		learners[u], err = secagg.NewClient(ctx, u, rand.Reader)
		check(err)
		adv, err := learners[u].Advertise()
		check(err)
		check(agg.Advertised(adv))
	}
	roster, err := agg.CloseAdvertise()
	check(err)
	for _, l := range learners {
		shares, err := l.ShareKeys(roster)
		check(err)
		check(agg.Shared(shares))
	}
	_, err = agg.CloseShares()
	check(err)
	for u, l := range learners[:2] { // learner 2 drops out before its masked input
		y, err := l.MaskedInput(agg.Inbox(u), inputs[u])
		check(err)
		check(agg.Masked(u, y))
	}
	u3, err := agg.CloseMasked()
	check(err)
	for _, u := range u3 {
		sig, err := learners[u].Sign(u3)
		check(err)
		check(agg.Signed(sig))
	}
	sigs, err := agg.CloseConsistency()
	check(err)
	for _, s := range sigs {
		m, err := learners[s.From].Unmask(u3, sigs)
		check(err)
		check(agg.Unmasked(m))
	}
	sum, survivors, err := agg.Finish()
	check(err)
	fmt.Println(sum, survivors)
	// Output: [11 22 33 44] [0 1]
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
