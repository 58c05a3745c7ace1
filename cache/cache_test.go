package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
)

// cacheClosedForms are the strategies that need no solver.
var cacheClosedForms = []string{
	factorize.StrategyIdentity,
	factorize.StrategyTree,
	factorize.StrategySqrt,
	factorize.StrategySqrtNormalized,
}

// requireSameBits fails unless a and b hold the same floats bit for bit.
func requireSameBits(t *testing.T, want, got *mat.Dense, name string) {
	t.Helper()
	if want == nil || got == nil {
		require.True(t, want == nil && got == nil, "%s: want nil %v, got nil %v", name, want == nil, got == nil)
		return
	}
	wr, wc := want.Dims()
	gr, gc := got.Dims()
	require.Equal(t, [2]int{wr, wc}, [2]int{gr, gc}, "%s dims", name)
	for i := 0; i < wr; i++ {
		for j := 0; j < wc; j++ {
			if math.Float64bits(want.At(i, j)) != math.Float64bits(got.At(i, j)) {
				t.Fatalf("%s[%d][%d] = %v (bits %x), want %v (bits %x)", name, i, j,
					got.At(i, j), math.Float64bits(got.At(i, j)), want.At(i, j), math.Float64bits(want.At(i, j)))
			}
		}
	}
}

// requireSameFactorization compares every field of Factorization, found by
// reflection so that a field added later cannot be forgotten by the cache:
// floats bit for bit, matrices entry by entry, the workload by identity.
func requireSameFactorization(t *testing.T, want, got *factorize.Factorization) {
	t.Helper()
	requireSameValue(t, reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem(), "Factorization")
}

func requireSameValue(t *testing.T, want, got reflect.Value, name string) {
	t.Helper()
	switch want.Type() {
	case reflect.TypeFor[*mat.Dense]():
		requireSameBits(t, want.Interface().(*mat.Dense), got.Interface().(*mat.Dense), name)
		return
	case reflect.TypeFor[*factorize.Workload]():
		require.Same(t, want.Interface(), got.Interface(), name)
		return
	case reflect.TypeFor[factorize.Operator]():
		// The structured form, coefficients bit for bit; the dense
		// operator (no form) is rebuilt from B.
		require.Equal(t, want.IsNil(), got.IsNil(), "%s: nil", name)
		if want.IsNil() {
			return
		}
		wf, wok := factorize.FormOf(want.Interface().(factorize.Operator))
		gf, gok := factorize.FormOf(got.Interface().(factorize.Operator))
		require.Equal(t, wok, gok, "%s: structured", name)
		require.Equal(t, fmt.Sprint(want.Interface()), fmt.Sprint(got.Interface()), name)
		if wok {
			requireSameValue(t, reflect.ValueOf(wf), reflect.ValueOf(gf), name+" form")
		}
		return
	}
	switch want.Kind() {
	case reflect.Float64:
		require.Equal(t, math.Float64bits(want.Float()), math.Float64bits(got.Float()), "%s: got %v, want %v", name, got.Float(), want.Float())
	case reflect.Struct:
		for i := range want.NumField() {
			requireSameValue(t, want.Field(i), got.Field(i), name+"."+want.Type().Field(i).Name)
		}
	case reflect.Pointer:
		require.Equal(t, want.IsNil(), got.IsNil(), "%s: nil", name)
		if !want.IsNil() {
			requireSameValue(t, want.Elem(), got.Elem(), name)
		}
	case reflect.Slice:
		require.Equal(t, want.IsNil(), got.IsNil(), "%s: nil", name)
		require.Equal(t, want.Len(), got.Len(), "%s: length", name)
		for i := range want.Len() {
			requireSameValue(t, want.Index(i), got.Index(i), fmt.Sprintf("%s[%d]", name, i))
		}
	case reflect.String:
		// By String: an unexported field (the strategy key) has no
		// Interface.
		require.Equal(t, want.String(), got.String(), name)
	case reflect.Int, reflect.Bool:
		require.Equal(t, want.Interface(), got.Interface(), name)
	default:
		t.Fatalf("%s: requireSameValue does not know how to compare a %v", name, want.Type())
	}
}

// dirNames lists dir, to check for leftover temporary files.
func cacheDirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func cacheWorkload(t testing.TB, r int) *factorize.Workload {
	t.Helper()
	w, err := factorize.Prefix(r)
	require.NoError(t, err)
	return w
}

func TestCacheRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, strategy := range append(cacheClosedForms, factorize.StrategyBanded, factorize.StrategyBLT, factorize.StrategyOptimal) {
		t.Run(strategy, func(t *testing.T) {
			// R = 37 is not a power of two: the tree has m = 72 > R rows.
			w := cacheWorkload(t, 37)
			c := &cache.Cache{Dir: t.TempDir()}
			var warn bytes.Buffer
			want, cached, err := c.Compute(ctx, strat(strategy, factorize.Options{}), w, factorize.Participation{}, &warn)
			require.NoError(t, err)
			assert.False(t, cached)
			if slices.Contains(cacheClosedForms, strategy) {
				// The closed forms are deterministic: the cache returns
				// what Compute returns.
				direct, err := strat(strategy, factorize.Options{}).Factorize(ctx, w, factorize.Participation{})
				require.NoError(t, err)
				requireSameFactorization(t, direct, want)
			}

			// A second Cache on the same directory loads the entry.
			c2 := &cache.Cache{Dir: c.Dir}
			got, cached, err := c2.Compute(ctx, strat(strategy, factorize.Options{}), w, factorize.Participation{}, &warn)
			require.NoError(t, err)
			assert.True(t, cached)
			requireSameFactorization(t, want, got)
			assert.Empty(t, warn.String())

			key, err := cache.Key(strat(strategy, factorize.Options{}), w, factorize.Participation{})
			require.NoError(t, err)
			assert.Equal(t, []string{key + ".dpmf"}, cacheDirNames(t, c.Dir))
		})
	}
}

func TestCacheIdentityLoss(t *testing.T) {
	// Independent check of a loaded entry: the identity's loss on the
	// prefix-sum workload is R(R+1)/2 exactly.
	const r = 50
	c := &cache.Cache{Dir: t.TempDir()}
	for range 2 {
		f, _, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), cacheWorkload(t, r), factorize.Participation{}, nil)
		require.NoError(t, err)
		assert.Equal(t, float64(r*(r+1)/2), f.Metrics.Loss)
	}
}

func TestCacheLossOnlyOptimal(t *testing.T) {
	// R = 3: optimal loss 4.607861648 (notes section 3), computed and
	// then loaded without B and C.
	ctx := context.Background()
	c := &cache.Cache{Dir: t.TempDir()}
	opt := factorize.Options{LossOnly: true}
	want, cached, err := c.Compute(ctx, strat(factorize.StrategyOptimal, opt), cacheWorkload(t, 3), factorize.Participation{}, nil)
	require.NoError(t, err)
	require.False(t, cached)
	assert.InDelta(t, 4.607861648, want.Metrics.Loss, 1e-9)
	got, cached, err := c.Compute(ctx, strat(factorize.StrategyOptimal, opt), want.Workload, factorize.Participation{}, nil)
	require.NoError(t, err)
	require.True(t, cached)
	assert.Nil(t, got.B)
	requireSameFactorization(t, want, got)
}

func TestCacheLossOnly(t *testing.T) {
	// A loss-only result has no B, C or Available; only its metrics,
	// iterations and gap are stored. (Store takes only a factorization
	// that the strategy it is stored under computed.)
	w := cacheWorkload(t, 10)
	opt := factorize.Options{LossOnly: true}
	f, err := strat(factorize.StrategyOptimal, opt).Factorize(context.Background(), w, factorize.Participation{})
	require.NoError(t, err)
	require.Nil(t, f.B)
	c := &cache.Cache{Dir: t.TempDir()}
	require.NoError(t, c.Store(f, strat(factorize.StrategyOptimal, opt)))
	got, err := c.Load(strat(factorize.StrategyOptimal, opt), w, factorize.Participation{})
	require.NoError(t, err)
	requireSameFactorization(t, f, got)

	// The full factorization has another key.
	_, err = c.Load(strat(factorize.StrategyOptimal, factorize.Options{}), w, factorize.Participation{})
	assert.ErrorIs(t, err, cache.ErrMiss)
}

func TestCacheCorruptEntry(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		damage func(b []byte) []byte
		reason string
	}{
		{"middle byte", func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b }, "checksum mismatch"},
		{"last byte", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "checksum mismatch"},
		{"metadata byte", func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"strategy"`))
			b[i+1] = 'S'
			return b
		}, "checksum mismatch"},
		{"truncated half", func(b []byte) []byte { return b[:len(b)/2] }, "truncated"},
		{"truncated checksum", func(b []byte) []byte { return b[:len(b)-1] }, "truncated"},
		{"truncated header", func(b []byte) []byte { return b[:10] }, "truncated"},
		{"empty", func(b []byte) []byte { return b[:0] }, "truncated"},
		{"appended byte", func(b []byte) []byte { return append(b, 0) }, "length "},
		{"wrong magic", func(b []byte) []byte { copy(b, "NOTDPMF!"); return b }, "bad magic"},
		{"wrong version", func(b []byte) []byte { b[8] = 99; return b }, "format version 99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := cacheWorkload(t, 40)
			strategy := factorize.StrategySqrtNormalized
			want, err := strat(strategy, factorize.Options{}).Factorize(ctx, w, factorize.Participation{})
			require.NoError(t, err)
			c := &cache.Cache{Dir: t.TempDir()}
			_, _, err = c.Compute(ctx, strat(strategy, factorize.Options{}), w, factorize.Participation{}, nil)
			require.NoError(t, err)
			key, err := cache.Key(strat(strategy, factorize.Options{}), w, factorize.Participation{})
			require.NoError(t, err)
			path := c.Path(key)
			good, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tc.damage(bytes.Clone(good)), 0o644))

			_, err = c.Load(strat(strategy, factorize.Options{}), w, factorize.Participation{})
			var ce *cache.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Reason, tc.reason)

			var warn bytes.Buffer
			f, cached, err := c.Compute(ctx, strat(strategy, factorize.Options{}), w, factorize.Participation{}, &warn)
			require.NoError(t, err)
			assert.False(t, cached)
			requireSameFactorization(t, want, f)
			msg := warn.String()
			assert.Equal(t, 1, strings.Count(msg, "\n"), "one warning line: %q", msg)
			assert.Contains(t, msg, "cache entry "+path+" is corrupt ("+tc.reason)
			assert.True(t, strings.HasSuffix(msg, "); recomputing\n"), msg)

			// The entry was repaired: byte for byte the good one again.
			repaired, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(good, repaired), "entry not repaired")
			assert.Equal(t, []string{key + ".dpmf"}, cacheDirNames(t, c.Dir))
		})
	}
}

func TestCacheMisfiledEntry(t *testing.T) {
	// A complete, checksummed entry under the wrong name (as a hash
	// collision would produce) must not be used.
	ctx := context.Background()
	c := &cache.Cache{Dir: t.TempDir()}
	w5, w6 := cacheWorkload(t, 5), cacheWorkload(t, 6)
	_, _, err := c.Compute(ctx, strat(factorize.StrategyIdentity, factorize.Options{}), w5, factorize.Participation{}, nil)
	require.NoError(t, err)
	k5, err := cache.Key(strat(factorize.StrategyIdentity, factorize.Options{}), w5, factorize.Participation{})
	require.NoError(t, err)
	k6, err := cache.Key(strat(factorize.StrategyIdentity, factorize.Options{}), w6, factorize.Participation{})
	require.NoError(t, err)
	require.NoError(t, os.Rename(c.Path(k5), c.Path(k6)))

	var warn bytes.Buffer
	f, cached, err := c.Compute(ctx, strat(factorize.StrategyIdentity, factorize.Options{}), w6, factorize.Participation{}, &warn)
	require.NoError(t, err)
	assert.False(t, cached)
	assert.Equal(t, 6, f.Workload.R())
	assert.Equal(t, 21.0, f.Metrics.Loss) // 6*7/2
	assert.Contains(t, warn.String(), "does not match the request")
}

func TestCacheKey(t *testing.T) {
	w := cacheWorkload(t, 20)
	base, err := cache.Key(strat(factorize.StrategyOptimal, factorize.Options{}), w, factorize.Participation{})
	require.NoError(t, err)
	assert.Len(t, base, 64)

	mom, err := factorize.Momentum(20, 0.9)
	require.NoError(t, err)
	tests := []struct {
		name     string
		strategy factorize.Strategy
		w        *factorize.Workload
		p        factorize.Participation
		same     bool
	}{
		{"tol 0 is the default", factorize.OptimalStrategy{Options: factorize.Options{Tol: factorize.DefaultTol}}, w, factorize.Participation{}, true},
		{"max iter", factorize.OptimalStrategy{Options: factorize.Options{MaxIter: 7}}, w, factorize.Participation{}, true},
		{"method", factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Dense}}, w, factorize.Participation{}, false},
		{"structured", factorize.OptimalStrategy{Options: factorize.Options{Method: factorize.Structured}}, w, factorize.Participation{}, false},
		{"progress", factorize.OptimalStrategy{Options: factorize.Options{Progress: func(factorize.Progress) {}}}, w, factorize.Participation{}, true},
		{"tol", factorize.OptimalStrategy{Options: factorize.Options{Tol: 1e-8}}, w, factorize.Participation{}, false},
		{"loss only", factorize.OptimalStrategy{Options: factorize.Options{LossOnly: true}}, w, factorize.Participation{}, false},
		{"strategy", factorize.IdentityStrategy{}, w, factorize.Participation{}, false},
		{"R", factorize.OptimalStrategy{}, cacheWorkload(t, 21), factorize.Participation{}, false},
		{"workload", factorize.OptimalStrategy{}, mom, factorize.Participation{}, false},
		{"participation", factorize.OptimalStrategy{}, w, factorize.FixedEpochs(2), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := cache.Key(tc.strategy, tc.w, tc.p)
			require.NoError(t, err)
			if tc.same {
				assert.Equal(t, base, k)
			} else {
				assert.NotEqual(t, base, k)
			}
		})
	}
	// Banded and BLT keys include their options.
	kb, _ := cache.Key(factorize.BandedStrategy{}, w, factorize.Participation{})
	kb3, _ := cache.Key(factorize.BandedStrategy{Bands: 3}, w, factorize.Participation{})
	kbs, _ := cache.Key(factorize.BSRStrategy{Bands: 3}, w, factorize.Participation{})
	assert.NotEqual(t, kb, kb3)
	assert.NotEqual(t, kb3, kbs)
	kt, _ := cache.Key(factorize.BLTStrategy{}, w, factorize.Participation{})
	kt2, _ := cache.Key(factorize.BLTStrategy{Buffers: 2}, w, factorize.Participation{})
	assert.NotEqual(t, kt, kt2)
	_, err = cache.Key(factorize.IdentityStrategy{}, w, factorize.FixedEpochs(3))
	assert.ErrorContains(t, err, "epochs")

	_, err = cache.Key(strat(factorize.StrategyOptimal, factorize.Options{Tol: math.NaN()}), w, factorize.Participation{})
	assert.Error(t, err)
}

func TestCacheDifferentTolIsStoredSeparately(t *testing.T) {
	ctx := context.Background()
	c := &cache.Cache{Dir: t.TempDir()}
	w := cacheWorkload(t, 8)
	for _, tol := range []float64{1e-6, 1e-9} {
		_, cached, err := c.Compute(ctx, factorize.OptimalStrategy{Options: factorize.Options{Tol: tol}}, w, factorize.Participation{}, nil)
		require.NoError(t, err)
		assert.False(t, cached, "tol %g", tol)
	}
	assert.Len(t, cacheDirNames(t, c.Dir), 2)
}

func TestCacheUnwritableDir(t *testing.T) {
	// A directory below a regular file can be neither created nor read,
	// whatever the user's privileges.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	c := &cache.Cache{Dir: filepath.Join(file, "cache")}
	var warn bytes.Buffer
	f, cached, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), cacheWorkload(t, 4), factorize.Participation{}, &warn)
	require.NoError(t, err)
	assert.False(t, cached)
	assert.Equal(t, 10.0, f.Metrics.Loss) // 4*5/2
	assert.Contains(t, warn.String(), "cannot write the cache")
	for _, line := range strings.Split(strings.TrimSuffix(warn.String(), "\n"), "\n") {
		assert.NotEmpty(t, line)
	}
}

func TestCacheCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &cache.Cache{Dir: t.TempDir()}
	_, _, err := c.Compute(ctx, strat(factorize.StrategyOptimal, factorize.Options{}), cacheWorkload(t, 4), factorize.Participation{}, nil)
	require.Error(t, err)
	assert.Empty(t, cacheDirNames(t, c.Dir))
}

// concurrentR is large enough that a write takes a while (two 300 x 300
// matrices, 1.4 MB), so concurrent writers overlap.
const concurrentR = 300

func checkSingleValidEntry(t *testing.T, dir string) {
	t.Helper()
	w := cacheWorkload(t, concurrentR)
	key, err := cache.Key(strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{})
	require.NoError(t, err)
	assert.Equal(t, []string{key + ".dpmf"}, cacheDirNames(t, dir), "one entry, no temporary files")
	c := &cache.Cache{Dir: dir}
	got, err := c.Load(strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{})
	require.NoError(t, err)
	id, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	require.NoError(t, err)
	requireSameFactorization(t, id, got)
}

func TestCacheConcurrentGoroutines(t *testing.T) {
	dir := t.TempDir()
	const n = 4
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &cache.Cache{Dir: dir}
			var warn bytes.Buffer
			<-start
			f, _, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), cacheWorkload(t, concurrentR), factorize.Participation{}, &warn)
			if err == nil && warn.Len() > 0 {
				err = fmt.Errorf("warning: %s", warn.String())
			}
			if err == nil && f.Metrics.Loss != concurrentR*(concurrentR+1)/2 {
				err = fmt.Errorf("loss %v", f.Metrics.Loss)
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	checkSingleValidEntry(t, dir)
}

// helperDirEnv names the cache directory for TestCacheHelperProcess.
const helperDirEnv = "DPMF_CACHE_HELPER_DIR"

// TestCacheHelperProcess is not a test: TestCacheConcurrentProcesses runs
// the test binary again with only this function and helperDirEnv set.
func TestCacheHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestCacheConcurrentProcesses")
	}
	c := &cache.Cache{Dir: dir}
	f, cached, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), cacheWorkload(t, concurrentR), factorize.Participation{}, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Printf("loss=%v cached=%v\n", f.Metrics.Loss, cached)
}

func TestCacheConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	const n = 2
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errOuts := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheHelperProcess$")
		cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
		outs[i], errOuts[i] = new(bytes.Buffer), new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], errOuts[i]
		cmds[i] = cmd
	}
	for _, cmd := range cmds {
		require.NoError(t, cmd.Start())
	}
	wantLoss := "loss=" + strconv.Itoa(concurrentR*(concurrentR+1)/2) + " "
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "process %d: %s", i, errOuts[i])
		assert.Contains(t, outs[i].String(), wantLoss, "process %d", i)
		assert.Empty(t, errOuts[i].String(), "process %d warned", i)
	}
	checkSingleValidEntry(t, dir)
}

func BenchmarkCacheLoad(b *testing.B) {
	// The warm hit of mfsolve -R 800: two 800 x 800 matrices (10 MB),
	// checksum included.
	for _, r := range []int{100, 800} {
		b.Run("R="+strconv.Itoa(r), func(b *testing.B) {
			w := cacheWorkload(b, r)
			c := &cache.Cache{Dir: b.TempDir()}
			if _, _, err := c.Compute(context.Background(), strat(factorize.StrategySqrt, factorize.Options{}), w, factorize.Participation{}, nil); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(2 * 8 * r * r))
			for b.Loop() {
				if _, err := c.Load(strat(factorize.StrategySqrt, factorize.Options{}), w, factorize.Participation{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleCache() {
	dir, err := os.MkdirTemp("", "dpmf-cache-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	w, _ := factorize.Prefix(100)
	c := &cache.Cache{Dir: dir}
	for range 2 {
		f, cached, err := c.Compute(context.Background(), strat(factorize.StrategyIdentity, factorize.Options{}), w, factorize.Participation{}, os.Stderr)
		if err != nil {
			panic(err)
		}
		fmt.Printf("loss %v, cached %v\n", f.Metrics.Loss, cached)
	}
	// Output:
	// loss 5050, cached false
	// loss 5050, cached true
}

// strat returns the named strategy, with options opt for optimal.
func strat(name string, opt factorize.Options) factorize.Strategy {
	if name == factorize.StrategyOptimal {
		return factorize.OptimalStrategy{Options: opt}
	}
	s, err := factorize.ParseStrategy(name)
	if err != nil {
		panic(err)
	}
	return s
}
