package cache_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// TestCacheNonFiniteValuesRefused: an entry with a NaN or an infinity in
// B, in C, in a structured operator's coefficients, or a metric beyond
// the float64 range in its metadata, under a valid checksum, is refused
// as corrupt with one warning line and recomputed, never used (a NaN
// compares false with everything, so a check written as "x < bound"
// would pass it).
func TestCacheNonFiniteValuesRefused(t *testing.T) {
	ctx := context.Background()
	const r = 20
	setFloat := func(i int, v float64) func(e *entry) {
		return func(e *entry) { binary.LittleEndian.PutUint64(e.floats[8*i:], math.Float64bits(v)) }
	}
	tests := []struct {
		name     string
		strategy string
		edit     func(e *entry)
	}{
		{"NaN in B", factorize.StrategySqrt, setFloat(r+1, math.NaN())},
		{"+Inf in B", factorize.StrategySqrt, setFloat(0, math.Inf(1))},
		{"NaN in C", factorize.StrategySqrtNormalized, setFloat(r*r+r, math.NaN())}, // C[1][0]
		{"-Inf in C", factorize.StrategySqrtNormalized, setFloat(r*r, math.Inf(-1))},
		// The optimal strategy keeps a quasiseparable operator after B
		// and C: its last R floats are C's diagonal.
		{"NaN in the operator", factorize.StrategyOptimal, func(e *entry) {
			setFloat(len(e.floats)/8-1, math.NaN())(e)
		}},
		{"+Inf in the operator", factorize.StrategyOptimal, func(e *entry) {
			setFloat(len(e.floats)/8-r, math.Inf(1))(e)
		}},
		{"loss beyond float64", factorize.StrategySqrt, func(e *entry) {
			e.meta["metrics"].(map[string]any)["loss"] = json.Number("1e999")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := cacheWorkload(t, r)
			s := strat(tc.strategy, factorize.Options{})
			want, err := s.Factorize(ctx, w, factorize.Participation{})
			require.NoError(t, err)
			c := &cache.Cache{Dir: t.TempDir()}
			_, _, err = c.Compute(ctx, s, w, factorize.Participation{}, nil)
			require.NoError(t, err)
			key, err := cache.Key(s, w, factorize.Participation{})
			require.NoError(t, err)
			e := readEntry(t, c.Path(key))
			tc.edit(&e)
			writeEntry(t, c.Path(key), e)

			_, err = c.Load(s, w, factorize.Participation{})
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)

			var warn bytes.Buffer
			f, cached, err := c.Compute(ctx, s, w, factorize.Participation{}, &warn)
			require.NoError(t, err)
			assert.False(t, cached)
			assert.Equal(t, want.Metrics, f.Metrics)
			assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())
			assert.Contains(t, warn.String(), "is corrupt")
			_, err = c.Load(s, w, factorize.Participation{})
			require.NoError(t, err, "the entry is replaced by a good one")
		})
	}
}
