package cache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestCacheKeyBindsPath checks that the optimal strategy's path is part of
// the key: the structured and the dense path certify the same optimum to
// within the tolerance, but they are different factorizations (a dense or
// a quasiseparable noise operator, a loss-only MaxSE computed or left 0),
// so an entry of one path must never be handed to a request for the
// other. Each request, made after an entry of every other path was
// stored, must give exactly what the same request gives without a cache,
// and, independently of the code, a loss-only MaxSE that it computes is at
// least the mean squared error loss / R (a maximum is at least the mean),
// where it is reported at all (not 0 for the structured path).
func TestCacheKeyBindsPath(t *testing.T) {
	ctx := context.Background()
	w := cacheWorkload(t, 40)
	methods := []factorize.Method{factorize.Auto, factorize.Structured, factorize.Dense}
	for _, lossOnly := range []bool{false, true} {
		for _, want := range methods {
			t.Run(fmt.Sprintf("%v/lossOnly=%v", want, lossOnly), func(t *testing.T) {
				c := &cache.Cache{Dir: t.TempDir()}
				for _, other := range methods {
					if other == want {
						continue
					}
					_, _, err := c.Compute(ctx, factorize.OptimalStrategy{Options: factorize.Options{Method: other, LossOnly: lossOnly}}, w, factorize.Participation{}, nil)
					require.NoError(t, err)
				}
				s := factorize.OptimalStrategy{Options: factorize.Options{Method: want, LossOnly: lossOnly}}
				got, cached, err := c.Compute(ctx, s, w, factorize.Participation{}, nil)
				require.NoError(t, err)
				require.False(t, cached, "the %v path was served another path's entry", want)
				fresh, err := s.Factorize(ctx, w, factorize.Participation{})
				require.NoError(t, err)
				requireSameFactorization(t, fresh, got)
				if lossOnly && want != factorize.Dense {
					m := got.Metrics
					require.GreaterOrEqual(t, m.MaxSE, m.Loss/float64(w.R()), "MaxSE below the mean squared error")
				}
				// And the entry it stored is its own.
				again, cached, err := c.Compute(ctx, s, w, factorize.Participation{}, nil)
				require.NoError(t, err)
				require.True(t, cached)
				requireSameFactorization(t, fresh, again)
			})
		}
	}
}
