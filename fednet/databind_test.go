package fednet

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	flv1 "github.com/dpmf/dpmf/proto/dpmf/fl/v1"
)

// rowStream is a learner's stream of a table dealt by dataset.Table.Deal
// that notes which row (feature 0 holds its number) each round used; from
// round hold on, Sample waits until release is closed. It embeds
// dataset.Stream, so the stream reports what that one reports.
type rowStream struct {
	dataset.Stream
	mu      *sync.Mutex
	used    map[int][]int // round -> rows
	hold    int
	release chan struct{}
	waiting *atomic.Bool
}

func (s rowStream) Sample(r, t int) ([]float64, float64) {
	if r >= s.hold {
		s.waiting.Store(true)
		<-s.release
	}
	a, y := s.Stream.Sample(r, t)
	s.mu.Lock()
	s.used[r] = append(s.used[r], int(a[0]))
	s.mu.Unlock()
	return a, y
}

// A learner restarted on its state directory with its data dealt another
// way (another -seed or -split in ofl, or the CSV file changed) is refused
// before it uses the data: the run's privacy record counts each client
// (a row of the table) in one round, and a learner whose rows are dealt
// anew mid-run serves, in the rounds still to come, rows that the rounds
// already released used (here the same learner's; with several learners,
// another learner's too). Such a row is in two releases: its sensitivity
// is twice the one the noise was calibrated for. Before, the record bound
// the run, the learner and the directory only, and the restarted learner
// went on with rows already used. The same learner restarted on the same
// data finishes the run, every row in one round.
func TestLearnerRestartOnOtherDataRefused(t *testing.T) {
	const R, hold = 6, 3
	r := newRun(t, 1, R, 1, 3)
	table := &dataset.Table{Source: "rows", Dim: 3}
	for j := range R {
		table.Features = append(table.Features, float64(j), 0.5-float64(j%2), 0.25*float64(j%3))
		table.Labels = append(table.Labels, float64(1-2*(j%2)))
	}
	deal := func(seed uint64) *dataset.Dataset {
		ds, err := table.Deal(1, R, 1, dataset.Split{Kind: dataset.IID}, seed)
		require.NoError(t, err)
		return ds
	}
	rows := func(ds *dataset.Dataset, from, to int) []int {
		var out []int
		for k := from; k < to; k++ {
			a, _ := ds.Sample(0, k, 0)
			out = append(out, int(a[0]))
		}
		return out
	}
	first := deal(1)
	// Another dealing whose rounds hold.. serve a row that first's rounds
	// before hold served.
	var other *dataset.Dataset
	for seed := uint64(2); other == nil; seed++ {
		require.Less(t, seed, uint64(100), "no dealing reuses a row")
		ds := deal(seed)
		if slices.ContainsFunc(rows(ds, hold, R), func(j int) bool { return slices.Contains(rows(first, 0, hold), j) }) {
			other = ds
		}
	}

	dir := filepath.Join(t.TempDir(), "state")
	s := serve(t, r.options(dir, nil), nil)
	defer s.stop()
	ldir := t.TempDir()
	var mu sync.Mutex
	used := map[int][]int{} // rows of released rounds, by round
	learner := func(ctx context.Context, ds *dataset.Dataset, hold int, release chan struct{}, waiting *atomic.Bool) (map[int][]int, error) {
		own := map[int][]int{}
		o := plainLearner(r, s.addr, 0, ldir)
		o.Data = func(*flv1.RunConfig) (fedopt.Stream, error) {
			return rowStream{Stream: ds.Stream(0), mu: &mu, used: own, hold: hold, release: release, waiting: waiting}, nil
		}
		_, err := RunLearner(ctx, o)
		mu.Lock()
		defer mu.Unlock()
		return own, err
	}

	// Rounds 0..hold-1 with the first dealing; the learner is stopped
	// while it computes round hold's update (never sent).
	ctx, cancel := context.WithCancel(context.Background())
	release, waiting := make(chan struct{}), new(atomic.Bool)
	type result struct {
		used map[int][]int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		u, err := learner(ctx, first, hold, release, waiting)
		done <- result{u, err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for got, _ := s.srv.Round(); got != hold || !waiting.Load(); got, _ = s.srv.Round() {
		require.True(t, time.Now().Before(deadline), "server at round %d, want %d", got, hold)
		time.Sleep(time.Millisecond)
	}
	cancel()
	close(release)
	res := <-done
	require.Error(t, res.err)
	for k := range hold {
		used[k] = res.used[k]
	}
	never := make(chan struct{})
	close(never)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()

	// Restarted on the other dealing: refused in one line, no row used.
	own, err := learner(ctx2, other, R, never, new(atomic.Bool))
	if err == nil || !strings.Contains(err.Error(), "data") || strings.Contains(err.Error(), "\n") {
		var twice []string
		for k, js := range own {
			for _, j := range js {
				for k0 := range hold {
					if slices.Contains(used[k0], j) {
						twice = append(twice, fmt.Sprintf("row %d in rounds %d and %d", j, k0, k))
					}
				}
			}
		}
		slices.Sort(twice)
		t.Fatalf("the learner restarted on another dealing of its data: %v (released: rounds %d..%d), want a refusal naming the data; rows in two releases: %v", err, hold, R-1, twice)
	}
	t.Logf("refused: %v", err)
	require.Empty(t, own, "the refused learner used rows")
	got, _ := s.srv.Round()
	require.Equal(t, hold, got, "a round was released with the other dealing")

	// Restarted on its own data: the run completes, every row in one round.
	own, err = learner(ctx2, first, R, never, new(atomic.Bool))
	require.NoError(t, err)
	for k := hold; k < R; k++ {
		used[k] = own[k]
	}
	require.NoError(t, <-s.errc)
	seen := map[int]int{}
	for k, js := range used {
		require.Len(t, js, 1, "round %d", k)
		if k0, ok := seen[js[0]]; ok {
			t.Fatalf("row %d in rounds %d and %d", js[0], k0, k)
		}
		seen[js[0]] = k
	}
	require.Len(t, seen, R)
}
