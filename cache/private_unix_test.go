//go:build unix

package cache_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestCacheDirWritableByOthers: a cache directory that its group or others
// may write (where another local user could plant an entry: a wrong
// factorization, so wrong noise) is not used: Load refuses it with a
// *cache.UntrustedError, Compute computes, warns in one line and stores
// nothing there, Store refuses it. Before, it was used as any other.
func TestCacheDirWritableByOthers(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, os.ModeSticky | 0o777} {
		dir := filepath.Join(t.TempDir(), "cache")
		c := &cache.Cache{Dir: dir}
		s := strat(factorize.StrategyIdentity, factorize.Options{})
		w := cacheWorkload(t, 4)
		_, _, err := c.Compute(context.Background(), s, w, factorize.Participation{}, nil)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(dir, mode))
		_, err = c.Load(s, w, factorize.Participation{})
		var ue *cache.UntrustedError
		require.True(t, errors.As(err, &ue), "mode %v: %v", mode, err)
		assert.Equal(t, dir, ue.Path)
		assert.Contains(t, err.Error(), "writable by")
		before := cacheDirNames(t, dir)
		var warn bytes.Buffer
		w5 := cacheWorkload(t, 5)
		f, cached, err := c.Compute(context.Background(), s, w5, factorize.Participation{}, &warn)
		require.NoError(t, err)
		assert.False(t, cached)
		assert.Equal(t, 5, f.Workload.R())
		assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())
		assert.Contains(t, warn.String(), "the cache is not used")
		assert.Equal(t, before, cacheDirNames(t, dir), "nothing stored in the directory")
		f, cached, err = c.Compute(context.Background(), s, w, factorize.Participation{}, nil)
		require.NoError(t, err)
		assert.False(t, cached, "the entry stored before is not loaded")
		err = c.Store(f, s)
		assert.True(t, errors.As(err, &ue), "Store: %v", err)
	}
}

// TestCacheEntryWritableByOthers: an entry that its group or others may
// write, in a private directory, is not loaded: Compute warns, computes
// and replaces it with a private one (0600), which the next run loads.
func TestCacheEntryWritableByOthers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c := &cache.Cache{Dir: dir}
	s := strat(factorize.StrategyIdentity, factorize.Options{})
	w := cacheWorkload(t, 4)
	_, _, err := c.Compute(context.Background(), s, w, factorize.Participation{}, nil)
	require.NoError(t, err)
	names := cacheDirNames(t, dir)
	require.Len(t, names, 1)
	entry := filepath.Join(dir, names[0])
	require.NoError(t, os.Chmod(entry, 0o666))
	_, err = c.Load(s, w, factorize.Participation{})
	var ue *cache.UntrustedError
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.Equal(t, entry, ue.Path)
	var warn bytes.Buffer
	_, cached, err := c.Compute(context.Background(), s, w, factorize.Participation{}, &warn)
	require.NoError(t, err)
	assert.False(t, cached)
	assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())
	assert.Contains(t, warn.String(), "recomputing")
	fi, err := os.Stat(entry)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	_, cached, err = c.Compute(context.Background(), s, w, factorize.Participation{}, nil)
	require.NoError(t, err)
	assert.True(t, cached)
	if os.Geteuid() == 0 {
		// An entry of another user, in a private directory.
		require.NoError(t, os.Chown(entry, 4242, -1))
		_, err = c.Load(s, w, factorize.Participation{})
		require.True(t, errors.As(err, &ue), "%v", err)
		assert.Contains(t, err.Error(), "owned by another user")
	}
}

// TestCacheDirUnderWritableParent: a private cache directory inside a
// directory that others may write without the sticky bit is not used
// either (another user could rename it away and put a directory of their
// own, with planted entries, in its place): Load refuses it with a
// *cache.UntrustedError naming the directory above, Compute computes and
// warns in one line. Under a sticky parent (as /tmp), it is used. Before,
// only the cache directory itself was checked.
func TestCacheDirUnderWritableParent(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(shared, 0o700))
	dir := filepath.Join(shared, "cache")
	c := &cache.Cache{Dir: dir}
	s := strat(factorize.StrategyIdentity, factorize.Options{})
	w := cacheWorkload(t, 4)
	_, _, err := c.Compute(context.Background(), s, w, factorize.Participation{}, nil)
	require.NoError(t, err)
	for _, mode := range []os.FileMode{0o777, 0o770, 0o703} {
		require.NoError(t, os.Chmod(shared, mode))
		_, err = c.Load(s, w, factorize.Participation{})
		var ue *cache.UntrustedError
		require.True(t, errors.As(err, &ue), "parent mode %v: %v", mode, err)
		assert.True(t, ue.Dir)
		assert.Equal(t, dir, ue.Path)
		assert.Contains(t, err.Error(), "is under "+shared+", which is writable by")
		var warn bytes.Buffer
		_, cached, err := c.Compute(context.Background(), s, w, factorize.Participation{}, &warn)
		require.NoError(t, err)
		assert.False(t, cached, "parent mode %v: the entry was loaded", mode)
		assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())
		assert.Contains(t, warn.String(), "the cache is not used")
	}
	require.NoError(t, os.Chmod(shared, os.ModeSticky|0o777))
	_, cached, err := c.Compute(context.Background(), s, w, factorize.Participation{}, nil)
	require.NoError(t, err)
	assert.True(t, cached, "under a sticky parent the cache is used")
}
