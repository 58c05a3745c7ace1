//go:build unix

package cache_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

func TestCachePrivateModes(t *testing.T) {
	// Under a permissive umask the cache directory is still 0700 and the
	// entries 0600: they hold factors of private computations.
	// t.TempDir is made first: under umask 0 its directory is 0777, which
	// the cache would refuse as a directory above it that others may write.
	dir := filepath.Join(t.TempDir(), "a", "cache")
	old := unix.Umask(0)
	defer unix.Umask(old)
	c := &cache.Cache{Dir: dir}
	_, _, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), cacheWorkload(t, 4), factorize.Participation{}, nil)
	require.NoError(t, err)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	names := cacheDirNames(t, dir)
	require.Len(t, names, 1)
	fi, err = os.Stat(filepath.Join(dir, names[0]))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
