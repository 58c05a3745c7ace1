package cache_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// A loss-only result is stored in the cache and read back with the same
// metrics, without a warning; the full result is a different entry.
func TestBandedInverseLossOnlyCache(t *testing.T) {
	ctx := context.Background()
	w := cacheWorkload(t, 50)
	c := &cache.Cache{Dir: t.TempDir()}
	for _, s := range []factorize.Strategy{factorize.BISRStrategy{LossOnly: true}, factorize.BandInvStrategy{Bands: 4, LossOnly: true}, factorize.BandedToeplitzStrategy{LossOnly: true}, factorize.BISRStrategy{}} {
		var warn strings.Builder
		first, cached, err := c.Compute(ctx, s, w, factorize.MinSeparation(10, 0), &warn)
		if err != nil || cached {
			t.Fatalf("%s: first compute: cached %v, %v", factorize.CacheKey(s), cached, err)
		}
		again, cached, err := c.Compute(ctx, s, w, factorize.MinSeparation(10, 0), &warn)
		if err != nil || !cached || warn.Len() != 0 {
			t.Fatalf("%s: second compute: cached %v, %v, warnings %q", factorize.CacheKey(s), cached, err, warn.String())
		}
		if again.Metrics.Loss != first.Metrics.Loss || again.Metrics.UnitSensitivity != first.Metrics.UnitSensitivity {
			t.Errorf("%s: cached metrics %+v, computed %+v", factorize.CacheKey(s), again.Metrics, first.Metrics)
		}
	}
}

// Bad arguments are *factorize.ParamError naming them, never panics.
func TestCacheParamErrors(t *testing.T) {
	check := func(err error, param string) {
		t.Helper()
		var pe *factorize.ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("error %v, want a ParamError about %q", err, param)
		}
	}
	w := cacheWorkload(t, 3)
	zero := &factorize.Workload{}
	c := &cache.Cache{Dir: t.TempDir()}
	_, err := cache.Key(nil, w, factorize.Participation{})
	check(err, "strategy")
	_, err = cache.Key(factorize.OptimalStrategy{}, zero, factorize.Participation{})
	check(err, "workload")
	_, err = c.Load(factorize.OptimalStrategy{}, zero, factorize.Participation{})
	check(err, "workload")
	_, _, err = c.Compute(context.Background(), factorize.OptimalStrategy{}, zero, factorize.Participation{}, nil)
	check(err, "workload")
	var nilCtx context.Context
	_, _, err = c.Compute(nilCtx, factorize.OptimalStrategy{}, w, factorize.Participation{}, nil)
	check(err, "ctx")
	err = c.Store(&factorize.Factorization{Strategy: factorize.StrategyIdentity, Workload: zero}, factorize.IdentityStrategy{})
	check(err, "workload")
	check(c.Store(nil, factorize.IdentityStrategy{}), "factorization")
	// A factorization stored under another strategy (before, an error
	// without a Param, reading "storing a  factorization" for an empty
	// name).
	check(c.Store(&factorize.Factorization{Workload: w}, factorize.IdentityStrategy{}), "factorization")

	// Every method that can return an error refuses a nil *Cache (before,
	// a nil pointer dereference).
	var nilCache *cache.Cache
	s := factorize.IdentityStrategy{}
	_, err = nilCache.Load(s, w, factorize.SingleParticipation())
	check(err, "cache")
	_, _, err = nilCache.Compute(context.Background(), s, w, factorize.SingleParticipation(), nil)
	check(err, "cache")
	check(nilCache.Store(&factorize.Factorization{Strategy: factorize.StrategyIdentity, Workload: w}, s), "cache")
	_, err = nilCache.List()
	check(err, "cache")
	_, _, err = nilCache.Clear()
	check(err, "cache")
	_, _, err = nilCache.Trim()
	check(err, "cache")
}
