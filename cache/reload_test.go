package cache_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// Every entry the cache writes for a request that Factorize accepts is
// loaded back, without a warning and with the same operator: the cache
// must not refuse its own entries as corrupt and recompute them each
// time. The requests are the corner cases found refused: a one-round BLT
// (no buffers, as BLT fits at most R-1) and the structured optimal
// factorization under min-separation (its quasiseparable operator, with
// the sensitivity from the generators and no dense factors).
func TestCacheReloadsItsOwnEntries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		spec string
		r    int
		p    factorize.Participation
	}{
		{"blt", 1, factorize.SingleParticipation()},
		{"blt:buffers=1", 1, factorize.MinSeparation(1, 2)},
		{"optimal", 12, factorize.MinSeparation(3, 0)},
		{"optimal", 12, factorize.MinSeparation(1, 2)},
	} {
		s, err := factorize.ParseStrategy(tc.spec)
		require.NoError(t, err)
		w := cacheWorkload(t, tc.r)
		c := &cache.Cache{Dir: t.TempDir()}
		var warn bytes.Buffer
		fresh, cached, err := c.Compute(ctx, s, w, tc.p, &warn)
		require.NoError(t, err, tc.spec)
		require.False(t, cached)
		got, cached, err := c.Compute(ctx, s, w, tc.p, &warn)
		require.NoError(t, err, tc.spec)
		assert.True(t, cached, "%s R=%d %v: recomputed instead of loaded", tc.spec, tc.r, tc.p)
		assert.Empty(t, warn.String(), "%s R=%d %v", tc.spec, tc.r, tc.p)
		assert.Equal(t, fresh.Metrics, got.Metrics, tc.spec)
		want, _ := factorize.FormOf(fresh.Operator)
		have, ok := factorize.FormOf(got.Operator)
		require.True(t, ok, tc.spec)
		assert.Equal(t, want, have, "%s: the loaded operator's form", tc.spec)
	}
}

// A structured optimal entry under min-separation, now loaded, is still
// checked: a sensitivity lowered in the metadata (checksum resealed) is
// refused, because the metrics are recomputed from the generators under
// the entry's participation, and the entry is recomputed.
func TestCacheMinSepQuasiSepEditRefused(t *testing.T) {
	ctx := context.Background()
	w := cacheWorkload(t, 12)
	p := factorize.MinSeparation(3, 0)
	s := factorize.OptimalStrategy{}
	c := &cache.Cache{Dir: t.TempDir()}
	want, _, err := c.Compute(ctx, s, w, p, nil)
	require.NoError(t, err)
	key, err := cache.Key(s, w, p)
	require.NoError(t, err)
	e := readEntry(t, c.Path(key))
	m := e.meta["metrics"].(map[string]any)
	m["unit_sensitivity"] = 1.0 // the bound under minsep:3 is above gamma = 1
	writeEntry(t, c.Path(key), e)

	_, err = c.Load(s, w, p)
	var ce *cache.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "not those of the operator")
	var warn bytes.Buffer
	got, cached, err := c.Compute(ctx, s, w, p, &warn)
	require.NoError(t, err)
	assert.False(t, cached)
	assert.Equal(t, want.Metrics, got.Metrics)
	assert.Contains(t, warn.String(), "recomputing")
}
