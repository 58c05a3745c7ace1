package cache_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
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

// publicVector is the fixed vector factorize's entry checks used before
// they drew a random one (a linear congruential sequence in its source):
// what an attacker who reads the code can aim a forgery at.
func publicVector(n int) []float64 {
	x := make([]float64, n)
	s := uint64(0x9e3779b97f4a7c15)
	for i := range x {
		s = s*6364136223846793005 + 1442695040888963407
		x[i] = float64(s>>11)/(1<<53)*2 - 1
	}
	return x
}

// A resealed entry whose structured operator streams another C' than the
// entry's factors, with C' x = C x for the public vector x, is refused.
// The forgery: C' = C + t D with D lower bidiagonal, D[r][r] = x[r-1],
// D[r][r-1] = -x[r] (so D x = 0), t = 1e6. Its noise C'^{-1} Z is about
// (Z_0 / C_00 x_0) x plus O(1/t): one Gaussian shared by every round, the
// rest of the noise gone, while the metrics (of the honest B and C) claim
// full privacy. A check of the operator on a fixed, public vector accepts
// it; a check on a vector drawn at load time does not.
func TestCacheForgedOperatorRefused(t *testing.T) {
	ctx := context.Background()
	const r, bands = 30, 16
	w := cacheWorkload(t, r)
	s := factorize.BandedToeplitzStrategy{}
	p := factorize.SingleParticipation()
	c := &cache.Cache{Dir: t.TempDir()}
	want, _, err := c.Compute(ctx, s, w, p, nil)
	require.NoError(t, err)
	form, ok := factorize.FormOf(want.Operator)
	require.True(t, ok)
	require.Equal(t, []int{r, bands}, form.Ints)
	key, err := cache.Key(s, w, p)
	require.NoError(t, err)
	e := readEntry(t, c.Path(key))
	x := publicVector(r)
	const tt = 1e6
	op := 2 * r * r // the operator's floats follow B and C: the diagonal, then row i's min(bands-1, i) subdiagonal entries
	set := func(i int, v float64) {
		old := math.Float64frombits(binary.LittleEndian.Uint64(e.floats[8*(op+i):]))
		binary.LittleEndian.PutUint64(e.floats[8*(op+i):], math.Float64bits(old+v))
	}
	sub := r
	for i := 1; i < r; i++ {
		set(i, tt*x[i-1])  // C'[i][i]
		set(sub, -tt*x[i]) // C'[i][i-1]
		sub += min(bands-1, i)
	}
	writeEntry(t, c.Path(key), e)

	_, err = c.Load(s, w, p)
	var ce *cache.CorruptError
	require.ErrorAs(t, err, &ce, "a forged operator was loaded")
	assert.Contains(t, ce.Reason, "the operator does not stream C^{-1}")
}

// A loss-only entry that streams (its structured operator, without B and
// C) is checked against that operator: an edit of the coefficients that
// lowers the noise, or of the metadata that lowers the sensitivity with
// consistent metrics, is refused (with a valid checksum), not streamed.
func TestCacheLeanOperatorEditsRefused(t *testing.T) {
	ctx := context.Background()
	const r = 30
	scale := func(lo, hi int, s float64) func(e *entry, k int) {
		return func(e *entry, _ int) { scaleFloats(e.floats, lo, hi, s) }
	}
	for _, tc := range []struct {
		spec   string
		edit   func(e *entry, k int) // k: the operator's second size
		reason string
	}{
		// banded form: C's diagonal first.
		{"banded-toeplitz", scale(0, r, 1e3), ""},
		{"bsr", scale(0, r, 1e3), ""},
		// banded-inverse form: the coefficients of C^{-1}.
		{"bisr", scale(0, 1, 1e-3), ""},
		{"bandinv", func(e *entry, k int) { scaleFloats(e.floats, 0, k, 1e-3) }, ""},
		// blt form: weights, decays, then the scales of C^{-1}.
		{"blt", func(e *entry, k int) { scaleFloats(e.floats, 2*k, 2*k+r, 1e-3) }, ""},
		// toeplitz form: the coefficients of T^{-1}, then C's diagonal
		// (coefficients that are not the square root's are not checked:
		// refused).
		{"sqrt", scale(r, 2*r, 1e3), ""},
		{"sqrt-normalized", scale(0, r, 1e-3), "cannot be checked"},
		// tree: no coefficients; the sensitivity lowered to 1 with the
		// metrics made consistent (loss = sens^2 ||B||_F^2).
		{"tree", func(e *entry, _ int) {
			m := e.meta["metrics"].(map[string]any)
			g, _ := m["gamma"].(json.Number).Float64()
			for _, key := range []string{"loss", "max_se"} {
				v, _ := m[key].(json.Number).Float64()
				m[key] = v / (g * g)
			}
			v, _ := m["rmse"].(json.Number).Float64()
			m["rmse"] = v / g
			m["gamma"], m["unit_sensitivity"] = 1.0, 1.0
		}, ""},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := factorize.ParseStrategy(tc.spec)
			require.NoError(t, err)
			s, err = factorize.WithLossOnly(s, true)
			require.NoError(t, err)
			w := cacheWorkload(t, r)
			c := &cache.Cache{Dir: t.TempDir()}
			f, _, err := c.Compute(ctx, s, w, factorize.SingleParticipation(), nil)
			require.NoError(t, err)
			require.Nil(t, f.B)
			form, ok := factorize.FormOf(f.Operator)
			require.True(t, ok, "a loss-only %s result with a structured operator", tc.spec)
			k := 0
			if len(form.Ints) > 1 {
				k = form.Ints[1]
			}
			key, err := cache.Key(s, w, factorize.SingleParticipation())
			require.NoError(t, err)
			e := readEntry(t, c.Path(key))
			tc.edit(&e, k)
			writeEntry(t, c.Path(key), e)
			_, err = c.Load(s, w, factorize.SingleParticipation())
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce, "an edited loss-only %s entry was loaded", tc.spec)
			if tc.reason == "" {
				tc.reason = "not that of the operator"
			}
			assert.Contains(t, ce.Reason, tc.reason)
		})
	}
}

// A loss-only entry that streams under min-separation cannot claim less
// than the sensitivity of the C its operator streams: its sensitivity
// lowered to gamma (the single-participation value), the metrics made
// consistent and the checksum resealed, is refused. Before, only
// "sensitivity >= gamma" was checked, so the stream would have been
// calibrated for sqrt(k) times less sensitivity than it has.
func TestCacheLeanMinSepSensitivityEditRefused(t *testing.T) {
	ctx := context.Background()
	const r = 24
	p := factorize.MinSeparation(4, 0)
	for _, spec := range []string{"tree", "sqrt", "sqrt-normalized", "banded:bands=4", "bsr:bands=4", "banded-toeplitz:bands=4", "bisr:bands=4", "bandinv:bands=3", "blt:buffers=2"} {
		t.Run(spec, func(t *testing.T) {
			s, err := factorize.ParseStrategy(spec)
			require.NoError(t, err)
			s, err = factorize.WithLossOnly(s, true)
			require.NoError(t, err)
			w := cacheWorkload(t, r)
			c := &cache.Cache{Dir: t.TempDir()}
			f, _, err := c.Compute(ctx, s, w, p, nil)
			require.NoError(t, err)
			require.NotNil(t, f.Operator)
			// The honest entry loads.
			_, err = c.Load(s, w, p)
			require.NoError(t, err)
			key, err := cache.Key(s, w, p)
			require.NoError(t, err)
			e := readEntry(t, c.Path(key))
			m := e.meta["metrics"].(map[string]any)
			sens, _ := m["unit_sensitivity"].(json.Number).Float64()
			g, _ := m["gamma"].(json.Number).Float64()
			require.Greater(t, sens, 1.5*g, "a minsep sensitivity well above gamma")
			q := g / sens
			for _, key := range []string{"loss", "max_se"} {
				v, _ := m[key].(json.Number).Float64()
				m[key] = v * q * q
			}
			v, _ := m["rmse"].(json.Number).Float64()
			m["rmse"] = v * q
			m["unit_sensitivity"] = g
			writeEntry(t, c.Path(key), e)
			_, err = c.Load(s, w, p)
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce, "a loss-only %s entry with its minsep sensitivity lowered was loaded", spec)
			assert.Contains(t, ce.Reason, "not that of the operator")
		})
	}
}

// No strategy computes a loss-only result under fixed epochs, so an entry
// that claims one with an operator (a single-participation entry refiled
// under epochs:2, its metadata edited to match and its checksum resealed)
// is refused rather than streamed with a sensitivity nothing checked.
func TestCacheLeanEpochsEntryRefused(t *testing.T) {
	ctx := context.Background()
	const r = 16
	s, err := factorize.WithLossOnly(factorize.TreeStrategy{}, true)
	require.NoError(t, err)
	w := cacheWorkload(t, r)
	c := &cache.Cache{Dir: t.TempDir()}
	_, _, err = c.Compute(ctx, s, w, factorize.SingleParticipation(), nil)
	require.NoError(t, err)
	k1, err := cache.Key(s, w, factorize.SingleParticipation())
	require.NoError(t, err)
	epochs := factorize.FixedEpochs(2)
	k2, err := cache.Key(s, w, epochs)
	require.NoError(t, err)
	e := readEntry(t, c.Path(k1))
	e.meta["key"], e.meta["participation"] = k2, epochs.String()
	writeEntry(t, c.Path(k2), e)
	_, err = c.Load(s, w, epochs)
	var ce *cache.CorruptError
	require.ErrorAs(t, err, &ce, "a loss-only entry with an operator under epochs was loaded")
	assert.Contains(t, ce.Reason, "with an operator under epochs:2")
}
