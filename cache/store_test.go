package cache_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestStoreRefusesOtherSettings: Store files a factorization only under
// the key of the strategy, with its settings, that computed it, under the
// participation it was computed for. Before, it checked the strategy's
// name only: the factorization of banded:bands=4 was stored under
// banded's key (bands 16), and a later Load or Compute of banded returned
// the 4-band factors (another loss, another noise stream, another
// sensitivity) as if they were banded's. Each pair below differs in one
// setting that changes the result; each is refused with a *ParamError
// naming the factorization, and nothing is written. The same settings,
// a setting outside the key (max-iter) and an entry loaded back are
// accepted.
func TestStoreRefusesOtherSettings(t *testing.T) {
	ctx := context.Background()
	w, err := factorize.Prefix(16)
	require.NoError(t, err)
	parse := func(spec string, lossOnly bool) factorize.Strategy {
		s, err := factorize.ParseStrategy(spec)
		require.NoError(t, err)
		s, err = factorize.WithLossOnly(s, lossOnly)
		require.NoError(t, err)
		return s
	}
	single := factorize.SingleParticipation()
	for _, tc := range []struct {
		computed, stored factorize.Strategy
		p                factorize.Participation
	}{
		{parse("banded:bands=4", false), parse("banded", false), single},
		{parse("bsr:bands=2", false), parse("bsr", false), single},
		{parse("blt:buffers=2", false), parse("blt", false), single},
		{parse("bisr:bands=3", false), parse("bisr", false), single},
		{parse("optimal:tol=1e-4", false), parse("optimal", false), single},
		{parse("optimal:path=dense", false), parse("optimal", false), single},
		{parse("optimal", true), parse("optimal", false), single},
		{parse("optimal", false), parse("optimal", true), single},
		{parse("semiseparable:buffers=2", false), parse("semiseparable", false), single},
		{parse("banded:bands=4,tol=1e-6", false), parse("banded:bands=4", false), factorize.MinSeparation(4, 0)},
	} {
		f, err := tc.computed.Factorize(ctx, w, tc.p)
		require.NoError(t, err, tc.computed.Spec())
		dir := t.TempDir()
		err = (&cache.Cache{Dir: dir}).Store(f, tc.stored)
		var pe *cache.ParamError
		if assert.True(t, errors.As(err, &pe), "%s (loss-only %v) stored as %s (loss-only %v): %v", tc.computed.Spec(), factorize.IsLossOnly(tc.computed), tc.stored.Spec(), factorize.IsLossOnly(tc.stored), err) {
			assert.Equal(t, "factorization", pe.Param)
			assert.Contains(t, err.Error(), factorize.CacheKey(tc.stored))
		}
		assert.Empty(t, cacheDirNames(t, dir), "nothing written")
	}

	// Moved to another participation, the single-participation optimum is
	// not the optimum for epochs:2 that optimal computes there.
	f, err := parse("optimal", false).Factorize(ctx, w, single)
	require.NoError(t, err)
	moved, err := f.WithParticipation(factorize.FixedEpochs(2))
	require.NoError(t, err)
	assert.Error(t, (&cache.Cache{Dir: t.TempDir()}).Store(moved, parse("optimal", false)), "moved to epochs:2")
	// Built by hand: its settings are unknown.
	hand := &factorize.Factorization{Strategy: factorize.StrategyIdentity, Workload: w, Metrics: f.Metrics}
	assert.Error(t, (&cache.Cache{Dir: t.TempDir()}).Store(hand, factorize.IdentityStrategy{}), "built by hand")

	// Accepted: the same settings, a max-iter (outside the key), and an
	// entry loaded back from the cache, stored again.
	c := &cache.Cache{Dir: t.TempDir()}
	f, err = parse("banded:bands=4", false).Factorize(ctx, w, single)
	require.NoError(t, err)
	require.NoError(t, c.Store(f, parse("banded:bands=4", false)))
	f, err = parse("optimal:max-iter=5000", false).Factorize(ctx, w, single)
	require.NoError(t, err)
	require.NoError(t, c.Store(f, parse("optimal", false)))
	got, cached, err := c.Compute(ctx, parse("optimal", false), w, single, nil)
	require.NoError(t, err)
	require.True(t, cached)
	require.NoError(t, (&cache.Cache{Dir: t.TempDir()}).Store(got, parse("optimal", false)))
}
