package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/testutil"
)

// entry is a decoded cache file: its metadata as a generic JSON object
// and the raw float bytes of B, C and the operator's coefficients.
type entry struct {
	meta   map[string]any
	floats []byte
}

// readEntry decodes the cache file at path (format in cache.go).
func readEntry(t *testing.T, path string) entry {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint32(b[12:16])
	var e entry
	d := json.NewDecoder(bytes.NewReader(b[16 : 16+n]))
	d.UseNumber()
	require.NoError(t, d.Decode(&e.meta))
	e.floats = bytes.Clone(b[16+n : len(b)-sha256.Size])
	return e
}

// writeEntry encodes e with a valid checksum, as someone who edits the
// cache by hand (or maliciously) can.
func writeEntry(t *testing.T, path string, e entry) {
	t.Helper()
	js, err := json.Marshal(e.meta)
	require.NoError(t, err)
	var out bytes.Buffer
	out.WriteString("DPMFFACT")
	binary.Write(&out, binary.LittleEndian, uint32(5)) // the cache format version
	binary.Write(&out, binary.LittleEndian, uint32(len(js)))
	out.Write(js)
	out.Write(e.floats)
	sum := sha256.Sum256(out.Bytes())
	out.Write(sum[:])
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
}

// scaleFloats multiplies the float64 values in b[lo:hi] (float indices) by s.
func scaleFloats(b []byte, lo, hi int, s float64) {
	for i := lo; i < hi; i++ {
		v := math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v*s))
	}
}

func TestCacheEditedMetadataIsNotTrusted(t *testing.T) {
	// Each edit keeps the checksum valid. The entry must be rejected
	// (with one warning) and recomputed, never used and never a panic.
	ctx := context.Background()
	const r = 30
	metrics := func(e entry) map[string]any { return e.meta["metrics"].(map[string]any) }
	tests := []struct {
		name     string
		strategy string
		opt      factorize.Options
		edit     func(e *entry)
		reason   string
	}{
		{"sensitivity halved", factorize.StrategyOptimal, factorize.Options{},
			func(e *entry) { metrics(*e)["unit_sensitivity"] = 0.5; metrics(*e)["gamma"] = 0.5 }, "not those of the operator"},
		{"sensitivity halved with factors", factorize.StrategySqrtNormalized, factorize.Options{},
			func(e *entry) { metrics(*e)["unit_sensitivity"] = 0.5; metrics(*e)["gamma"] = 0.5 }, "not those of the factors"},
		{"quasiseparable C scaled, metrics kept", factorize.StrategyOptimal, factorize.Options{},
			func(e *entry) {
				// The operator's floats are P, A, Q (R x K each) and
				// the diagonal (R): doubling C's diagonal doubles gamma.
				n := len(e.floats) / 8
				scaleFloats(e.floats, n-r, n, 2)
			}, "not those of the operator"},
		{"quasiseparable order changed", factorize.StrategyOptimal, factorize.Options{},
			func(e *entry) { e.meta["operator"].(map[string]any)["ints"].([]any)[1] = json.Number("3") }, "bytes, want"},
		{"loss lowered", factorize.StrategySqrt, factorize.Options{},
			func(e *entry) { metrics(*e)["loss"] = 1.0 }, "not those of the factors: loss 1, computed"},
		// The reason names the metric edited and both values (before it
		// gave the sensitivity and the loss, equal on both sides here).
		{"rmse edited alone", factorize.StrategySqrt, factorize.Options{},
			func(e *entry) { metrics(*e)["rmse"] = 123.0 }, "not those of the factors: rmse 123, computed"},
		{"rmse edited alone, structured", factorize.StrategyOptimal, factorize.Options{},
			func(e *entry) { metrics(*e)["rmse"] = 123.0 }, "not those of the operator: rmse 123, computed"},
		{"loss lowered by a relative 1e-9", factorize.StrategySqrt, factorize.Options{},
			func(e *entry) {
				v, _ := metrics(*e)["loss"].(json.Number).Float64()
				metrics(*e)["loss"] = v * (1 - 1e-9)
			}, "not those of the factors"},
		{"availability shifted", factorize.StrategySqrtNormalized, factorize.Options{},
			func(e *entry) {
				av := e.meta["available"].([]any)
				av[3] = json.Number("0")
			}, "depends on round"},
		{"availability out of range", factorize.StrategyTree, factorize.Options{},
			func(e *entry) { e.meta["available"].([]any)[0] = json.Number("1000000") }, "availability round 1000000"},
		{"availability negative", factorize.StrategySqrt, factorize.Options{},
			func(e *entry) { e.meta["available"].([]any)[0] = json.Number("-5") }, "availability round -5"},
		{"C halved, metrics consistent", factorize.StrategySqrtNormalized, factorize.Options{},
			func(e *entry) {
				// C is the second half of the floats; halving it halves
				// gamma. Recompute the metrics the way an attacker would.
				scaleFloats(e.floats, r*r, 2*r*r, 0.5)
				m := metrics(*e)
				m["unit_sensitivity"] = 0.5
				m["gamma"] = 0.5
				for _, k := range []string{"loss", "rmse", "max_se"} {
					v, _ := m[k].(json.Number).Float64()
					if k == "rmse" {
						m[k] = v * 0.5
					} else {
						m[k] = v * 0.25
					}
				}
			}, "does not reproduce the workload"},
		{"BLT buffers dropped", factorize.StrategyBLT, factorize.Options{},
			func(e *entry) { e.meta["operator"].(map[string]any)["ints"].([]any)[1] = json.Number("0") }, "operator form \"blt\" with sizes"},
		{"BLT decay changed", factorize.StrategyBLT, factorize.Options{},
			func(e *entry) {
				// After B and C: the DefaultBuffers weights, then the
				// decay rates.
				i := 2*r*r + factorize.DefaultBuffers
				binary.LittleEndian.PutUint64(e.floats[8*i:], math.Float64bits(0.5))
			}, "the operator does not stream C^{-1}"},
		{"operator kind changed", factorize.StrategyBandedToeplitz, factorize.Options{},
			func(e *entry) { e.meta["operator"].(map[string]any)["kind"] = "banded-inverse" }, "bytes, want"},
		{"operator coefficient changed", factorize.StrategyBandedToeplitz, factorize.Options{},
			func(e *entry) {
				i := 2*r*r + r + 1 // the first subdiagonal entry of row 1
				binary.LittleEndian.PutUint64(e.floats[8*i:], math.Float64bits(0))
			}, "the operator does not stream C^{-1}"},
		{"loss-only sensitivity", factorize.StrategyOptimal, factorize.Options{LossOnly: true},
			func(e *entry) { metrics(*e)["unit_sensitivity"] = 0.25 }, "sensitivity 0.25 of a loss-only optimal entry"},
		{"loss-only loss inconsistent", factorize.StrategyOptimal, factorize.Options{LossOnly: true},
			func(e *entry) { metrics(*e)["loss"] = 1.0 }, "inconsistent"},
		{"negative iterations", factorize.StrategyOptimal, factorize.Options{},
			func(e *entry) { e.meta["iterations"] = -1 }, "-1 iterations"},
		{"metadata of the wrong type", factorize.StrategyOptimal, factorize.Options{},
			func(e *entry) { e.meta["available"] = "all of them" }, "bad metadata"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := cacheWorkload(t, r)
			want, err := strat(tc.strategy, tc.opt).Factorize(ctx, w, factorize.Participation{})
			require.NoError(t, err)
			c := &cache.Cache{Dir: t.TempDir()}
			_, _, err = c.Compute(ctx, strat(tc.strategy, tc.opt), w, factorize.Participation{}, nil)
			require.NoError(t, err)
			key, err := cache.Key(strat(tc.strategy, tc.opt), w, factorize.Participation{})
			require.NoError(t, err)
			path := c.Path(key)
			e := readEntry(t, path)
			tc.edit(&e)
			writeEntry(t, path, e)

			_, err = c.Load(strat(tc.strategy, tc.opt), w, factorize.Participation{})
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Reason, tc.reason)

			var warn bytes.Buffer
			f, cached, err := c.Compute(ctx, strat(tc.strategy, tc.opt), w, factorize.Participation{}, &warn)
			require.NoError(t, err)
			assert.False(t, cached)
			assert.Equal(t, want.Metrics.Gamma, f.Metrics.Gamma)
			assert.Equal(t, want.Metrics.Loss, f.Metrics.Loss)
			assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())
			assert.Contains(t, warn.String(), "is corrupt")
			// Repaired: the next load uses the entry.
			_, err = c.Load(strat(tc.strategy, tc.opt), w, factorize.Participation{})
			require.NoError(t, err)
		})
	}
}

func TestCacheRemovesStaleTemporaries(t *testing.T) {
	// A writer killed outright leaves its temporary file; it is never
	// read, and the next store removes it once it is an hour old.
	dir := t.TempDir()
	stale := filepath.Join(dir, "."+strings.Repeat("01", 32)+".dpmf.tmp-deadbeef")
	fresh := filepath.Join(dir, "."+strings.Repeat("45", 32)+".dpmf.tmp-cafe")
	require.NoError(t, os.WriteFile(stale, []byte("DPMFFACT partial"), 0o600))
	require.NoError(t, os.WriteFile(fresh, []byte("DPMFFACT partial"), 0o600))
	long := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(stale, long, long))
	c := &cache.Cache{Dir: dir}
	w := cacheWorkload(t, 4)
	_, _, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{}, nil)
	require.NoError(t, err)
	key, err := cache.Key(strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{key + ".dpmf", filepath.Base(fresh)}, cacheDirNames(t, dir))
}

func TestCacheEntryNotARegularFile(t *testing.T) {
	// A FIFO or a directory planted under an entry's name is neither
	// opened in a blocking way nor replaced: one warning, the result is
	// computed, the run goes on.
	plants := []func(path string) error{
		func(path string) error { return testutil.Mkfifo(path, 0o600) },
		func(path string) error { return os.Mkdir(path, 0o700) },
	}
	if !testutil.HaveFIFO {
		plants = plants[1:]
	}
	for _, plant := range plants {
		c := &cache.Cache{Dir: t.TempDir()}
		w := cacheWorkload(t, 5)
		key, err := cache.Key(strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{})
		require.NoError(t, err)
		require.NoError(t, plant(c.Path(key)))
		var warn bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			f, cached, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{}, &warn)
			assert.NoError(t, err)
			assert.False(t, cached)
			assert.Equal(t, 15.0, f.Metrics.Loss) // 5*6/2
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("blocked on the planted entry")
		}
		assert.Contains(t, warn.String(), "is corrupt (not a regular file); recomputing")
	}
}

// TestCacheLeavesOtherTemporaryFiles: a -cache directory may hold files of
// others (mfsolve -cache . in a project), and "files in the directory that
// are not entries are left alone" (docs/cli.md). Only the temporary files
// of entry writers (".KEY.dpmf.tmp-RANDOM") are removed once stale, by a
// store and by Clear; another program's ".notes.tmp-1" of the same age,
// or a dpmf output's ".B.npy.tmp-...", is kept. Before the fix both were
// deleted, by any file name starting with "." and holding ".tmp-".
func TestCacheLeavesOtherTemporaryFiles(t *testing.T) {
	long := time.Now().Add(-2 * time.Hour)
	key := strings.Repeat("ab", 32)
	for _, op := range []string{"store", "clear"} {
		dir := t.TempDir()
		entryTmp := "." + key + ".dpmf.tmp-0123456789abcdef"
		others := []string{".notes.tmp-1", ".B.npy.tmp-0123456789abcdef", "." + key + ".tmp-01", ".x" + key + ".dpmf.tmp-01"}
		for _, name := range append([]string{entryTmp}, others...) {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte("data"), 0o600))
			require.NoError(t, os.Chtimes(p, long, long))
		}
		c := &cache.Cache{Dir: dir}
		if op == "store" {
			_, _, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), cacheWorkload(t, 4), factorize.Participation{}, nil)
			require.NoError(t, err)
		} else {
			_, _, err := c.Clear()
			require.NoError(t, err)
		}
		names := cacheDirNames(t, dir)
		assert.NotContains(t, names, entryTmp, "%s: a stale entry temporary file is left", op)
		for _, name := range others {
			assert.Contains(t, names, name, "%s removed a file that is not the cache's", op)
		}
	}
}
