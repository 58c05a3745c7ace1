package cache

import (
	"context"
	"errors"
	"fmt"
	"github.com/dpmf/dpmf/factorize"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// fakeClock is a clock that advances one second per reading, so access
// times are distinct and known.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// identityEntry computes the identity factorization of the prefix sums over
// r rounds under p: B = A (ones on and below the diagonal), C = I.
func identityEntry(t testing.TB, r int, p factorize.Participation) *factorize.Factorization {
	t.Helper()
	w, err := factorize.Prefix(r)
	require.NoError(t, err)
	f, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, p)
	require.NoError(t, err)
	return f
}

// entryNames returns the file names in dir, sorted.
func entryNames(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	slices.Sort(names)
	return names
}

// dirBytes returns the total size of the entry files in dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, de := range des {
		if !isEntryName(de.Name()) {
			continue
		}
		fi, err := de.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		n += fi.Size()
	}
	return n
}

// The least recently used entry goes first, where a load counts as a use:
// a sequence of stores and loads worked out by hand.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	const r = 16
	parts := map[string]factorize.Participation{
		"a": factorize.SingleParticipation(), "b": factorize.FixedEpochs(2), "c": factorize.FixedEpochs(4),
		"d": factorize.FixedEpochs(8), "e": factorize.MinSeparation(3, 0),
	}
	fs := map[string]*factorize.Factorization{}
	file := map[string]string{} // entry name -> file name
	maxSize, minSize := int64(0), int64(1<<62)
	probe := &Cache{Dir: t.TempDir(), Budget: Unlimited}
	for name, p := range parts {
		fs[name] = identityEntry(t, r, p)
		key, err := Key(factorize.IdentityStrategy{}, fs[name].Workload, p)
		require.NoError(t, err)
		file[name] = key + cacheExt
		require.NoError(t, probe.Store(fs[name], factorize.IdentityStrategy{}))
		fi, err := os.Stat(probe.Path(key))
		require.NoError(t, err)
		maxSize, minSize = max(maxSize, fi.Size()), min(minSize, fi.Size())
	}
	// Room for three entries, not four.
	budget := 3 * maxSize
	require.Less(t, budget, 4*minSize)

	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	c := &Cache{Dir: t.TempDir(), Budget: budget, now: clock.now}
	store := func(name string) {
		t.Helper()
		require.NoError(t, c.Store(fs[name], factorize.IdentityStrategy{}))
	}
	load := func(name string) {
		t.Helper()
		_, err := c.Load(factorize.IdentityStrategy{}, fs[name].Workload, parts[name])
		require.NoError(t, err, "load %s", name)
	}
	held := func(names ...string) {
		t.Helper()
		var want []string
		for _, n := range names {
			want = append(want, file[n])
		}
		slices.Sort(want)
		require.Equal(t, want, entryNames(t, c.Dir))
	}
	// Times: a1 b2 c3.
	store("a")
	store("b")
	store("c")
	held("a", "b", "c")
	load("a")  // a4
	store("d") // d5; LRU order b2 c3 a4: b goes
	held("a", "c", "d")
	load("c")  // c6
	store("e") // e7; order a4 d5 c6: a goes
	held("c", "d", "e")
	store("b") // b8; order d5 c6 e7: d goes
	held("b", "c", "e")

	// The recorded access times are those of the clock.
	list, err := c.List()
	require.NoError(t, err)
	var order []string
	for _, e := range list {
		for n, f := range file {
			if e.Key+cacheExt == f {
				order = append(order, fmt.Sprintf("%s@%d", n, e.LastUsed.Unix()-1_700_000_000))
			}
		}
	}
	assert.Equal(t, []string{"b@8", "e@7", "c@6"}, order)
}

// After many stores the entries never exceed the budget, and the entry
// just stored is always kept.
func TestCacheBudgetHolds(t *testing.T) {
	dir := t.TempDir()
	const budget = 64 << 10
	c := &Cache{Dir: dir, Budget: budget}
	for r := 5; r <= 60; r++ {
		f := identityEntry(t, r, factorize.SingleParticipation())
		require.NoError(t, c.Store(f, factorize.IdentityStrategy{}), "R = %d", r)
		require.LessOrEqual(t, dirBytes(t, dir), int64(budget), "R = %d", r)
		g, err := c.Load(factorize.IdentityStrategy{}, f.Workload, factorize.SingleParticipation())
		require.NoError(t, err, "the entry just stored (R = %d) was evicted", r)
		// The identity on the prefix sums: loss R(R+1)/2.
		require.Equal(t, float64(r*(r+1)/2), g.Metrics.Loss)
	}
	// An entry larger than the whole budget is not stored, and nothing is
	// evicted for it.
	before := entryNames(t, dir)
	big := identityEntry(t, 80, factorize.SingleParticipation()) // 16 * 80^2 bytes > 64 KiB
	err := c.Store(big, factorize.IdentityStrategy{})
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, int64(budget), be.Budget)
	assert.Greater(t, be.Size, int64(16*80*80))
	assert.Equal(t, before, entryNames(t, dir))

	// Compute reports it in one line and still returns the result.
	var warn lockedBuffer
	f, cached, err := c.Compute(context.Background(), factorize.IdentityStrategy{}, big.Workload, factorize.SingleParticipation(), &warn)
	require.NoError(t, err)
	assert.False(t, cached)
	assert.Equal(t, float64(80*81/2), f.Metrics.Loss)
	assert.Regexp(t, `^not cached: the entry \(100\.[0-9] KiB\) is larger than the cache budget \(64.0 KiB\)\n$`, warn.String())

	// Trim applies a lowered budget.
	c.Budget = 10 << 10
	n, freed, err := c.Trim()
	require.NoError(t, err)
	assert.Positive(t, n)
	assert.Positive(t, freed)
	assert.LessOrEqual(t, dirBytes(t, dir), int64(10<<10))
}

// lockedBuffer is a strings.Builder safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// An entry that a load has opened is read to the end intact although
// eviction removes its file meanwhile (as another process could).
func TestCacheEvictionSparesOpenReader(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: dir}
	const r = 64
	want := identityEntry(t, r, factorize.SingleParticipation())
	require.NoError(t, c.Store(want, factorize.IdentityStrategy{}))
	path := c.Path(mustKey(t, want))

	evicted := false
	c.opened = func(p string) {
		require.Equal(t, path, p)
		// Another process with a tiny budget evicts everything, then
		// writes a different entry under other names.
		other := &Cache{Dir: dir, Budget: 1}
		removed, err := other.trim(0, "")
		require.NoError(t, err)
		require.Len(t, removed, 1)
		require.Equal(t, filepath.Base(path), removed[0].name)
		_, err = os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.NoError(t, (&Cache{Dir: dir}).Store(identityEntry(t, r, factorize.FixedEpochs(2)), factorize.IdentityStrategy{}))
		evicted = true
	}
	got, err := c.Load(factorize.IdentityStrategy{}, want.Workload, factorize.SingleParticipation())
	require.True(t, evicted)
	require.NoError(t, err)
	// B = A (ones on and below the diagonal), C = I, read in full.
	a := mat.NewDense(r, r, nil)
	for i := range r {
		for j := 0; j <= i; j++ {
			a.Set(i, j, 1)
		}
	}
	id := mat.NewDense(r, r, nil)
	for i := range r {
		id.Set(i, i, 1)
	}
	require.True(t, mat.Equal(a, got.B), "B is not the prefix-sum matrix")
	require.True(t, mat.Equal(id, got.C), "C is not the identity")
	assert.Equal(t, float64(r*(r+1)/2), got.Metrics.Loss)
}

func mustKey(t testing.TB, f *factorize.Factorization) string {
	t.Helper()
	k, err := Key(factorize.IdentityStrategy{}, f.Workload, f.Metrics.Participation)
	require.NoError(t, err)
	return k
}

// Many goroutines computing, loading and evicting in one directory (run
// under -race): every result is right, every entry left is intact, and the
// entries fit the budget once they are done.
func TestCacheConcurrentEviction(t *testing.T) {
	dir := t.TempDir()
	const budget = 30 << 10
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &Cache{Dir: dir, Budget: budget}
			for i := range 12 {
				r := 10 + (g*5+i*7)%25
				w, err := factorize.Prefix(r)
				if err != nil {
					errs <- err
					return
				}
				f, _, err := c.Compute(context.Background(), factorize.IdentityStrategy{}, w, factorize.SingleParticipation(), nil)
				if err != nil {
					errs <- err
					return
				}
				if f.Metrics.Loss != float64(r*(r+1)/2) {
					errs <- fmt.Errorf("R = %d: loss %v, want %d", r, f.Metrics.Loss, r*(r+1)/2)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.LessOrEqual(t, dirBytes(t, dir), int64(budget))
	c := &Cache{Dir: dir, Budget: Unlimited}
	list, err := c.List()
	require.NoError(t, err)
	require.NotEmpty(t, list)
	for _, e := range list {
		require.Empty(t, e.Problem)
		w, err := factorize.Prefix(e.R)
		require.NoError(t, err)
		_, err = c.Load(factorize.IdentityStrategy{}, w, factorize.SingleParticipation())
		require.NoError(t, err, "entry %s", e.Path)
	}
	for _, name := range entryNames(t, dir) {
		require.True(t, isEntryName(name), "left behind: %s", name)
	}
}

// List describes each entry, most recently used first; Clear removes the
// entries, corrupt ones included, and nothing else.
func TestCacheListClear(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	c := &Cache{Dir: dir, now: clock.now}

	// A cache directory that does not exist is empty.
	empty := &Cache{Dir: filepath.Join(dir, "none")}
	list, err := empty.List()
	require.NoError(t, err)
	assert.Empty(t, list)
	n, freed, err := empty.Clear()
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Zero(t, freed)

	f8 := identityEntry(t, 8, factorize.SingleParticipation())
	f12 := identityEntry(t, 12, factorize.FixedEpochs(3))
	require.NoError(t, c.Store(f8, factorize.IdentityStrategy{}))  // t = 1
	require.NoError(t, c.Store(f12, factorize.IdentityStrategy{})) // t = 2
	lo := factorize.OptimalStrategy{Options: factorize.Options{LossOnly: true}}
	w, err := factorize.Prefix(20)
	require.NoError(t, err)
	_, _, err = c.Compute(context.Background(), lo, w, factorize.SingleParticipation(), nil) // t = 3
	require.NoError(t, err)
	_, err = c.Load(factorize.IdentityStrategy{}, f8.Workload, factorize.SingleParticipation()) // t = 4
	require.NoError(t, err)
	bad := filepath.Join(dir, fmt.Sprintf("%064x", 7)+cacheExt)
	require.NoError(t, os.WriteFile(bad, []byte("not an entry at all"), 0o600))
	old := time.Unix(1_000_000_000, 0)
	require.NoError(t, os.Chtimes(bad, old, old))
	other := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("mine"), 0o600))

	list, err = c.List()
	require.NoError(t, err)
	require.Len(t, list, 4)
	type row struct {
		strategy, participation string
		r, m                    int
		factors                 bool
		used                    int64
	}
	var rows []row
	var total int64
	for _, e := range list {
		fi, err := os.Stat(e.Path)
		require.NoError(t, err)
		assert.Equal(t, fi.Size(), e.Size)
		assert.Equal(t, filepath.Join(dir, e.Key+cacheExt), e.Path)
		total += e.Size
		rows = append(rows, row{e.Strategy, e.Participation, e.R, e.M, e.Factors, e.LastUsed.Unix() - 1_800_000_000})
	}
	assert.Equal(t, []row{
		{"identity", "single", 8, 8, true, 4},
		{"optimal", "single", 20, 0, false, 3},
		{"identity", "epochs:3", 12, 12, true, 2},
		{"", "", 0, 0, false, old.Unix() - 1_800_000_000},
	}, rows)
	assert.Equal(t, "bad magic \"not an e\"", list[3].Problem)

	n, freed, err = c.Clear()
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.Equal(t, total, freed)
	assert.Equal(t, []string{"notes.txt"}, entryNames(t, dir))
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {10 << 20, "10.0 MiB"}, {1 << 30, "1.0 GiB"}, {3 << 40, "3.0 TiB"}} {
		assert.Equal(t, tc.want, FormatSize(tc.n), "%d", tc.n)
	}
}

// A semiseparable entry, whose metrics the strategy sums in another order
// than ComputeMetrics, is loaded back without a warning.
func TestCacheSemisepRoundTrip(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	w, err := factorize.Prefix(48)
	require.NoError(t, err)
	s := factorize.SemisepStrategy{Factors: true}
	var warn lockedBuffer
	f, cached, err := c.Compute(context.Background(), s, w, factorize.SingleParticipation(), &warn)
	require.NoError(t, err)
	require.False(t, cached)
	g, cached, err := c.Compute(context.Background(), s, w, factorize.SingleParticipation(), &warn)
	require.NoError(t, err)
	assert.True(t, cached)
	assert.Empty(t, warn.String())
	assert.Equal(t, f.Metrics, g.Metrics, "the stored metrics are the computed ones, bit for bit")
}
