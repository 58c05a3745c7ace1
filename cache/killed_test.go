package cache_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestCacheStatesAfterKilledWriters builds the directory that writers
// killed at each point of a store leave (there is no index or budget
// file: the budget is the sum of the entries' sizes, read from the
// directory), and checks the cache against fresh solves:
//
//   - killed while writing the temporary file: a partial
//     ".KEY.dpmf.tmp-..." (the entry is a miss);
//   - killed after the temporary file is complete, before the rename: a
//     complete one (a miss too: temporary files are never read);
//   - killed after the rename, before the entry is marked used: an entry
//     with an old time (loaded, equal to a fresh solve bit for bit);
//   - killed before or while trimming: the entries over the budget.
//
// The listing counts only the entries, the next store brings them within
// the budget, and the stale temporary files go.
func TestCacheStatesAfterKilledWriters(t *testing.T) {
	ctx := context.Background()
	s := strat(factorize.StrategyIdentity, factorize.Options{})
	p := factorize.SingleParticipation()
	// The bytes of the entry for R = r, as a complete store writes them.
	entry := func(r int) (key string, data []byte) {
		c := &cache.Cache{Dir: t.TempDir(), Budget: cache.Unlimited}
		w := cacheWorkload(t, r)
		_, _, err := c.Compute(ctx, s, w, p, nil)
		require.NoError(t, err)
		key, err = cache.Key(s, w, p)
		require.NoError(t, err)
		data, err = os.ReadFile(c.Path(key))
		require.NoError(t, err)
		return key, data
	}
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	place := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		require.NoError(t, os.Chtimes(path, old, old))
		return path
	}
	var sizes int64
	for _, r := range []int{20, 21} {
		key, data := entry(r)
		place(key+".dpmf", data)
		sizes += int64(len(data))
	}
	partialKey, partial := entry(22)
	place("."+partialKey+".dpmf.tmp-0123456789abcdef", partial[:len(partial)/2])
	completeKey, complete := entry(23)
	place("."+completeKey+".dpmf.tmp-fedcba9876543210", complete)
	renamedKey, renamed := entry(24)
	place(renamedKey+".dpmf", renamed)
	sizes += int64(len(renamed))

	// The budget holds two entries and a half: three are over it.
	budget := sizes * 5 / 6
	c := &cache.Cache{Dir: dir, Budget: budget}
	list, err := c.List()
	require.NoError(t, err)
	var total int64
	for _, e := range list {
		assert.Empty(t, e.Problem, e.Path)
		total += e.Size
	}
	assert.Len(t, list, 3, "only the entries are listed")
	assert.Equal(t, sizes, total, "the temporary files are not counted")

	for _, tc := range []struct {
		r    int
		miss bool
	}{{22, true}, {23, true}, {24, false}, {20, false}} {
		w := cacheWorkload(t, tc.r)
		got, err := c.Load(s, w, p)
		if tc.miss {
			assert.True(t, errors.Is(err, cache.ErrMiss), "R = %d: %v", tc.r, err)
			continue
		}
		require.NoError(t, err, "R = %d", tc.r)
		fresh, err := s.Factorize(ctx, w, p)
		require.NoError(t, err)
		requireSameFactorization(t, fresh, got)
	}

	// The next store trims the entries to the budget and removes the
	// stale temporary files.
	_, cached, err := c.Compute(ctx, s, cacheWorkload(t, 25), p, nil)
	require.NoError(t, err)
	require.False(t, cached)
	list, err = c.List()
	require.NoError(t, err)
	total = 0
	for _, e := range list {
		total += e.Size
	}
	assert.LessOrEqual(t, total, budget)
	for _, name := range cacheDirNames(t, dir) {
		assert.False(t, strings.Contains(name, ".tmp-"), "stale temporary file %s left", name)
	}
}
