package cache_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/atomicfile/atomicfiletest"
)

// TestCacheStoreFileOperationFails fails each file operation of an
// entry's write, one at a time (atomicfiletest): Compute still returns
// the factorization, with one warning line, and the directory holds no
// entry and no temporary file; the next Compute stores the entry, and the
// one after loads it. A directory sync that fails after the rename is
// ignored: the entry is complete and in place.
func TestCacheStoreFileOperationFails(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("injected failure")
	w := cacheWorkload(t, 12)
	s := strat(factorize.StrategySqrt, factorize.Options{})
	want, err := s.Factorize(ctx, w, factorize.Participation{})
	require.NoError(t, err)
	for _, op := range []string{"create", "chmod", "write", "fsync", "close", "rename", "syncdir"} {
		t.Run(op, func(t *testing.T) {
			c := &cache.Cache{Dir: t.TempDir()}
			if op == "chmod" {
				// chmod is made only over an existing file: the entry
				// stored first, which then stays as it was.
				_, _, err := c.Compute(ctx, s, w, factorize.Participation{}, nil)
				require.NoError(t, err)
			}
			before := cacheDirNames(t, c.Dir)
			failed := false
			restore := atomicfiletest.FailOps(func(o, _ string) error {
				if o == op && !failed {
					failed = true
					return boom
				}
				return nil
			})
			var warn bytes.Buffer
			// Store directly: Compute would load the chmod case's
			// entry instead of writing it.
			err := c.Store(want, s)
			restore()
			require.True(t, failed, "the operation was never made")
			if op == "syncdir" {
				require.NoError(t, err)
				assert.Len(t, cacheDirNames(t, c.Dir), 1)
				return
			}
			require.ErrorIs(t, err, boom)
			assert.Equal(t, before, cacheDirNames(t, c.Dir), "no new entry, no temporary file")

			if op != "chmod" {
				restore = atomicfiletest.FailOps(func(o, _ string) error {
					if o == op {
						return boom
					}
					return nil
				})
				f, cached, err := c.Compute(ctx, s, w, factorize.Participation{}, &warn)
				restore()
				require.NoError(t, err)
				assert.False(t, cached)
				assert.Equal(t, want.Metrics, f.Metrics)
				msg := warn.String()
				assert.Equal(t, 1, strings.Count(msg, "\n"), "%q", msg)
				assert.True(t, strings.HasPrefix(msg, "cannot write the cache: ") && strings.HasSuffix(msg, "injected failure; the result is not cached\n"), "%q", msg)
				assert.Empty(t, cacheDirNames(t, c.Dir), "no entry, no temporary file")
			}
			for _, wantCached := range []bool{op == "chmod", true} {
				_, cached, err := c.Compute(ctx, s, w, factorize.Participation{}, nil)
				require.NoError(t, err)
				assert.Equal(t, wantCached, cached)
			}
		})
	}
}
