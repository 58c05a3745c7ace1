package mechanism

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestCachedStreamsAsFresh: a factorization loaded from the cache keeps its
// structured operator, so its noise is the fresh one's bit for bit, for
// every strategy (and the loss-only results that stream).
func TestCachedStreamsAsFresh(t *testing.T) {
	ctx := context.Background()
	w, err := factorize.Prefix(33)
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		s factorize.Strategy
		p factorize.Participation
	}
	var cases []tc
	for _, name := range factorize.Strategies() {
		s, err := factorize.ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{s, factorize.SingleParticipation()})
	}
	cases = append(cases,
		tc{factorize.BandedStrategy{}, factorize.MinSeparation(8, 0)},
		tc{factorize.BISRStrategy{LossOnly: true}, factorize.SingleParticipation()},
		tc{factorize.BandInvStrategy{Bands: 3, LossOnly: true}, factorize.MinSeparation(8, 0)},
		tc{factorize.BandedToeplitzStrategy{Bands: 3, LossOnly: true}, factorize.SingleParticipation()},
		tc{factorize.SemisepStrategy{Buffers: 3}, factorize.SingleParticipation()},
	)
	dir := t.TempDir()
	for _, c := range cases {
		fresh, err := c.s.Factorize(ctx, w, c.p)
		if err != nil {
			t.Fatalf("%s: %v", factorize.CacheKey(c.s), err)
		}
		if err := (&cache.Cache{Dir: dir}).Store(fresh, c.s); err != nil {
			t.Fatalf("%s: %v", factorize.CacheKey(c.s), err)
		}
		cached, err := (&cache.Cache{Dir: dir}).Load(c.s, w, c.p)
		if err != nil {
			t.Fatalf("%s: %v", factorize.CacheKey(c.s), err)
		}
		a := drain(t, fresh, 5, WithSeed(11))
		b := drain(t, cached, 5, WithSeed(11))
		if !sameBits(a, b) {
			t.Errorf("%s %v: cached noise differs from the fresh noise", factorize.CacheKey(c.s), c.p)
		}
		if fmt.Sprint(fresh.Operator) != fmt.Sprint(cached.Operator) {
			t.Errorf("%s: cached operator %v, fresh %v", factorize.CacheKey(c.s), cached.Operator, fresh.Operator)
		}
	}
}

// TestLossOnlyStreams: banded and banded-inverse results computed loss-only
// stream from their coefficients, with the noise of the same strategy
// computed with its factors (the explicit C^{-1} Z).
func TestLossOnlyStreams(t *testing.T) {
	ctx := context.Background()
	const r, dim = 30, 4
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]factorize.Strategy{
		{factorize.BISRStrategy{Bands: 5, LossOnly: true}, factorize.BISRStrategy{Bands: 5}},
		{factorize.BandInvStrategy{Bands: 4, LossOnly: true}, factorize.BandInvStrategy{Bands: 4}},
		{factorize.BandedToeplitzStrategy{Bands: 4, LossOnly: true}, factorize.BandedToeplitzStrategy{Bands: 4}},
	} {
		lean, err := pair[0].Factorize(ctx, w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		full, err := pair[1].Factorize(ctx, w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		if lean.B != nil {
			t.Fatalf("%s: factors formed", factorize.CacheKey(pair[0]))
		}
		if d := maxRelDiff(drain(t, lean, dim, WithSeed(2)), explicitNoise(t, full, dim, 1, 2)); d > 1e-12 {
			t.Errorf("%s: max relative difference %.3g from the explicit noise", factorize.CacheKey(pair[0]), d)
		}
	}
	// The optimal banded factorization under min-separation, loss-only:
	// the band of C from its Cholesky factor.
	lean, err := factorize.OptimalBanded(ctx, w, 4, 0, factorize.Options{LossOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	full, err := factorize.OptimalBanded(ctx, w, 4, 0, factorize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxRelDiff(drain(t, lean, dim, WithSeed(2)), explicitNoise(t, full, dim, 1, 2)); d > 1e-12 {
		t.Errorf("optimal banded, loss-only: max relative difference %.3g from the explicit noise", d)
	}
}
