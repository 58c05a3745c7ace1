package audit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
)

// TestReplayAggregationsCounted counts, through the aggregation hook, the
// aggregations a replay makes and the update entries they sum, and checks
// them against dpaudit's work estimate of them (cmd/dpaudit workNeed: the
// probes of the aggregation weights, n aggregations of n updates of d per
// round before the run and again in it, 2 R n^2 d; and the run's own, one
// aggregation of n updates per round and data set, 2 R n d, which the
// estimate folds into the local steps' d). Without dropouts the count is
// exactly 2 R n (n + 1) d; with dropouts only the present learners are
// probed and aggregated, so it is at most that. The sizes include the
// edges R = 1, n = 1, d = 1 and min-separation b = R.
func TestReplayAggregationsCounted(t *testing.T) {
	for _, c := range []struct {
		r, n, tau, d int
		part         factorize.Participation
		dropout      float64
	}{
		{1, 1, 1, 1, factorize.SingleParticipation(), 0},
		{4, 3, 2, 2, factorize.SingleParticipation(), 0},
		{6, 2, 1, 5, factorize.Participation{Kind: factorize.KindMinSep, B: 6}, 0},
		{8, 4, 1, 1, factorize.FixedEpochs(2), 0},
		{10, 5, 1, 3, factorize.SingleParticipation(), 0.3},
	} {
		name := fmt.Sprintf("R=%d n=%d tau=%d d=%d %s dropout %v", c.r, c.n, c.tau, c.d, c.part, c.dropout)
		p := Plan{Rounds: c.r, Learners: c.n, Tau: c.tau, Dim: c.d, Participation: c.part, Dropout: c.dropout, Seed: 3}.WithDefaults()
		s, err := NewSetup(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		calls, entries := 0, 0
		h := &hooks{aggregate: func(real aggregator, _ *Setup) aggregator {
			return func(r int, ups [][]float64) ([]float64, error) {
				calls++
				for _, u := range ups {
					entries += len(u)
				}
				return real(r, ups)
			}
		}}
		if _, err := replayWith(context.Background(), s, h, false); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Present learner-rounds, by the plan's own schedule.
		present, presentSq := 0, 0
		for r := 0; r < c.r; r++ {
			k := 0
			for i := 0; i < c.n; i++ {
				if p.present(r, i) {
					k++
				}
			}
			present, presentSq = present+k, presentSq+k*k
		}
		wantCalls := 2*present + 2*c.r                 // probes of the present learners, then the run's
		wantEntries := (2*presentSq + 2*present) * c.d // each sums the present updates
		estimate := 2 * c.r * c.n * (c.n + 1) * c.d
		if calls != wantCalls || entries != wantEntries || entries > estimate || (c.dropout == 0 && entries != estimate) {
			t.Errorf("%s: %d aggregations of %d update entries; want %d of %d, the estimate 2 R n (n + 1) d = %d (equal without dropouts)",
				name, calls, entries, wantCalls, wantEntries, estimate)
		}
	}
}

// TestLocalStepsCounted counts the local steps of the audits' runs (the
// samples their data streams hand out, through hooks.steps) and checks
// them against dpaudit's work estimate of them (cmd/dpaudit workNeed:
// R n tau local steps per run, two runs for the replay, one for the
// canary audit): equal without dropouts, at most it with them (a missing
// learner takes no step), for every private algorithm and at the edges
// R = 1, n = 1, tau = 1, d = 1, epochs:1 and min-separation b = R.
func TestLocalStepsCounted(t *testing.T) {
	for _, c := range []struct {
		r, n, tau, d int
		algo         fedopt.Algorithm
		part         factorize.Participation
		dropout      float64
	}{
		{1, 1, 1, 1, fedopt.Correlated, factorize.SingleParticipation(), 0},
		{1, 3, 1, 1, fedopt.Correlated, factorize.SingleParticipation(), 0},
		{4, 3, 3, 2, fedopt.Correlated, factorize.FixedEpochs(1), 0},
		{6, 2, 2, 1, fedopt.BaselineCorrelated, factorize.Participation{Kind: factorize.KindMinSep, B: 6}, 0},
		{5, 2, 4, 3, fedopt.Independent, factorize.SingleParticipation(), 0},
		{10, 4, 2, 3, fedopt.Correlated, factorize.SingleParticipation(), 0.3},
	} {
		name := fmt.Sprintf("%s R=%d n=%d tau=%d d=%d %s dropout %v", c.algo, c.r, c.n, c.tau, c.d, c.part, c.dropout)
		p := Plan{Algorithm: c.algo, Rounds: c.r, Learners: c.n, Tau: c.tau, Dim: c.d, Participation: c.part, Dropout: c.dropout, Seed: 5}.WithDefaults()
		s, err := NewSetup(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		present := 0
		for r := 0; r < c.r; r++ {
			for i := 0; i < c.n; i++ {
				if p.present(r, i) {
					present++
				}
			}
		}
		var steps atomic.Int64
		if _, err := replayWith(context.Background(), s, &hooks{steps: &steps}, false); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		estimate := int64(2 * c.r * c.n * c.tau)
		if got := steps.Load(); got != int64(2*present*c.tau) || got > estimate || (c.dropout == 0 && got != estimate) {
			t.Errorf("%s: replay took %d local steps; want 2 tau times the %d present learner-rounds, the estimate 2 R n tau = %d (equal without dropouts)", name, got, present, estimate)
		}
		if c.dropout != 0 || c.r*c.n < 3 {
			continue // the canary audit runs without dropouts, with at least 3 slots
		}
		steps.Store(0)
		if _, err := canary(context.Background(), s, CanaryOptions{Canaries: 3}, &hooks{steps: &steps}); err != nil {
			t.Fatalf("%s: canary: %v", name, err)
		}
		if got, want := steps.Load(), int64(c.r*c.n*c.tau); got != want {
			t.Errorf("%s: the canary audit took %d local steps; want the estimate R n tau = %d", name, got, want)
		}
	}
}
