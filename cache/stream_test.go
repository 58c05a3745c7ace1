package cache_test

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// noiseOf returns the noise that f's mechanism streams with seed 7, two
// dimensions, every round; nil if f has no mechanism.
func noiseOf(t *testing.T, f *factorize.Factorization) []float64 {
	m, err := mechanism.New(f, 2, 1, mechanism.WithSeed(7))
	if err != nil {
		t.Logf("mechanism: %v", err)
		return nil
	}
	var out []float64
	row := make([]float64, 2)
	for m.Round() < m.Rounds() {
		if err := m.Next(row); err != nil {
			t.Fatal(err)
		}
		out = append(out, row...)
	}
	return out
}

// bitsEq reports whether a and b hold the same float64 bits.
func bitsEq(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestCacheStreamsAsFresh: for every registered strategy (with and
// without loss-only), on the four kinds of workload (prefix, momentum, a
// general matrix, weighted prefix sums) and under the three kinds of
// participation, a factorization loaded from the cache equals a fresh
// solve, computed without the cache, bit for bit: metrics, iterations,
// gap, B and C, and the noise its mechanism streams with one seed (the
// standard's "a cached strategy streams exactly as a fresh one"). The
// requests that Factorize refuses are skipped.
func TestCacheStreamsAsFresh(t *testing.T) {
	ctx := context.Background()
	const r = 9
	mom, _ := factorize.Momentum(r, 0.9)
	pre, _ := factorize.Prefix(r)
	a := mat.NewDense(r, r, nil)
	for i := range r {
		for j := 0; j <= i; j++ {
			a.Set(i, j, 1+0.1*float64(i)-0.05*float64(j))
		}
	}
	gen, _ := factorize.NewWorkload(a)
	wts := make([]float64, r)
	for i := range wts {
		wts[i] = 1 / float64(i+1)
	}
	wp, _ := factorize.WeightedPrefix(wts)
	n := 0
	defer func() {
		// Every strategy contributes at least one request.
		if n < len(factorize.Registry()) {
			t.Errorf("only %d requests compared", n)
		}
	}()
	workloads := []*factorize.Workload{pre, gen, mom, wp}
	if testing.Short() {
		workloads = workloads[:2]
	}
	for _, w := range workloads {
		for _, info := range factorize.Registry() {
			for _, lo := range []bool{false, true} {
				s0, err := factorize.ParseStrategy(info.Name)
				if err != nil {
					t.Fatal(err)
				}
				s, err := factorize.WithLossOnly(s0, lo)
				if err != nil {
					continue
				}
				for _, p := range []factorize.Participation{factorize.SingleParticipation(), factorize.MinSeparation(3, 0), factorize.FixedEpochs(3)} {
					name := w.Name() + "/" + factorize.CacheKey(s) + "/" + p.String()
					fresh, err := s.Factorize(ctx, w, p)
					if err != nil {
						continue
					}
					c := &cache.Cache{Dir: t.TempDir()}
					first, cached, err := c.Compute(ctx, s, w, p, nil)
					if err != nil || cached {
						t.Errorf("%s: first %v %v", name, cached, err)
						continue
					}
					c2 := &cache.Cache{Dir: c.Dir}
					var warn warnBuf
					got, cached, err := c2.Compute(ctx, s, w, p, &warn)
					if err != nil || !cached {
						t.Errorf("%s: second cached=%v err=%v warn=%s", name, cached, err, warn.s)
						continue
					}
					_ = first
					n++
					if fresh.Metrics != got.Metrics || fresh.Iterations != got.Iterations || fresh.Gap != got.Gap {
						t.Errorf("%s: metrics %+v vs %+v", name, fresh.Metrics, got.Metrics)
					}
					fb, fc, ferr := fresh.Factors()
					gb, gc, gerr := got.Factors()
					if (ferr == nil) != (gerr == nil) {
						t.Errorf("%s: factors err %v vs %v", name, ferr, gerr)
					} else if ferr == nil {
						if !bitsEq(fb.RawMatrix().Data, gb.RawMatrix().Data) || !bitsEq(fc.RawMatrix().Data, gc.RawMatrix().Data) {
							t.Errorf("%s: factors differ", name)
						}
					}
					if (fresh.Operator == nil) != (got.Operator == nil) {
						t.Errorf("%s: operator nil %v vs %v", name, fresh.Operator == nil, got.Operator == nil)
					} else if fresh.Operator != nil {
						if !bitsEq(noiseOf(t, fresh), noiseOf(t, got)) {
							t.Errorf("%s: noise differs", name)
						}
					}
				}
			}
		}
	}
}

// warnBuf collects warnings.
type warnBuf struct{ s string }

func (w *warnBuf) Write(p []byte) (int, error) { w.s += string(p); return len(p), nil }
