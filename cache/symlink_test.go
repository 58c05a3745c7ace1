package cache_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestSymlinkedEntryIsNotUsed: an entry's name that is a symbolic link
// (here to a valid entry moved out of the directory) was followed and
// loaded, although List, Clear, Trim and the budget see only regular
// files: after Clear ("removed 0 entries") the cache still served it. A
// symbolic link is now refused as a FIFO is (TestCacheEntryNotARegularFile):
// not a regular file, one warning, the factorization computed afresh, the
// link left in place and its target untouched (its modification time too,
// which load's access record changed through the link).
func TestSymlinkedEntryIsNotUsed(t *testing.T) {
	ctx := context.Background()
	dir, elsewhere := t.TempDir(), t.TempDir()
	c := &cache.Cache{Dir: dir}
	s, w := strat(factorize.StrategyTree, factorize.Options{}), cacheWorkload(t, 20)
	_, _, err := c.Compute(ctx, s, w, factorize.Participation{}, nil)
	require.NoError(t, err)
	key, err := cache.Key(s, w, factorize.Participation{})
	require.NoError(t, err)
	target := filepath.Join(elsewhere, "entry")
	require.NoError(t, os.Rename(c.Path(key), target))
	if err := os.Symlink(target, c.Path(key)); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	before, err := os.Stat(target)
	require.NoError(t, err)

	entries, err := c.List()
	require.NoError(t, err)
	require.Empty(t, entries, "List does not show the link")

	var warn bytes.Buffer
	_, cached, err := c.Compute(ctx, s, w, factorize.Participation{}, &warn)
	require.NoError(t, err)
	assert.False(t, cached, "the symbolic link was followed")
	assert.Contains(t, warn.String(), "not a regular file")
	fi, err := os.Lstat(c.Path(key))
	require.NoError(t, err)
	assert.True(t, fi.Mode()&os.ModeSymlink != 0, "the link is left as it was")
	after, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, before.ModTime(), after.ModTime(), "the link's target was touched")

	_, err = c.Load(s, w, factorize.Participation{})
	var ce *cache.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "symbolic link")
}
