package accountant

import (
	"sync"
	"testing"
)

// This file holds the PLDs that several tests build with the same
// parameters, built once per test binary (go test ./accountant ran, among
// others, SampledGaussian(0.01, 1, 1, ReplaceOne) in three tests and
// (0.1, 2, 20, AddRemove) in four). A PLD is never changed after it is
// built (its methods return new PLDs; its one cache, joined, is safe for
// concurrent use and holds the same value whoever fills it), so sharing
// it changes no test's result: each test checks the same PLD against its
// own reference, and the construction is still run, by whichever test
// asks first. A test that checks the construction itself (its counters,
// its cancellation, its bits across GOMAXPROCS) calls the constructor
// directly.

// sampledKey is the parameters of one shared PLD: sampledGaussian with
// sampledOpts{budget: budget} and no other option.
type sampledKey struct {
	q, sigma float64
	steps    int
	rel      Relation
	budget   int
}

// sampledEntry is one shared PLD, built by the first caller.
type sampledEntry struct {
	once sync.Once
	p    *PLD
	err  error
}

var sampledShared struct {
	sync.Mutex
	m map[sampledKey]*sampledEntry
}

// sharedSampledBudget returns sampledGaussian(q, sigma, steps, rel,
// sampledOpts{budget: budget}), built once per test binary for each
// parameter set (concurrent first callers wait for one build), or stops
// t on its error.
func sharedSampledBudget(t *testing.T, q, sigma float64, steps int, rel Relation, budget int) *PLD {
	t.Helper()
	k := sampledKey{q, sigma, steps, rel, budget}
	sampledShared.Lock()
	if sampledShared.m == nil {
		sampledShared.m = map[sampledKey]*sampledEntry{}
	}
	e := sampledShared.m[k]
	if e == nil {
		e = &sampledEntry{}
		sampledShared.m[k] = e
	}
	sampledShared.Unlock()
	e.once.Do(func() {
		e.p, e.err = sampledGaussian(q, sigma, steps, rel, sampledOpts{budget: budget})
	})
	if e.err != nil {
		t.Fatalf("SampledGaussian(%v, %v, %d, %v) on a grid of %d points: %v", q, sigma, steps, rel, budget, e.err)
	}
	return e.p
}

// sharedSampled is [SampledGaussian](q, sigma, steps, rel), shared (see
// sharedSampledBudget).
func sharedSampled(t *testing.T, q, sigma float64, steps int, rel Relation) *PLD {
	t.Helper()
	return sharedSampledBudget(t, q, sigma, steps, rel, gridBudget)
}

// TestSharedSampledIsSampledGaussian pins the memo on a cheap case: its
// PLD has the bits of SampledGaussian's, built apart, and a second call
// returns the same PLD.
func TestSharedSampledIsSampledGaussian(t *testing.T) {
	t.Parallel()
	const q, sigma, steps = 0.05, 2.5, 3
	for _, rel := range []Relation{AddRemove, ReplaceOne} {
		want, err := SampledGaussian(q, sigma, steps, rel)
		if err != nil {
			t.Fatal(err)
		}
		got := sharedSampled(t, q, sigma, steps, rel)
		if again := sharedSampled(t, q, sigma, steps, rel); again != got {
			t.Errorf("%v: a second call built another PLD", rel)
		}
		if got.h != want.h || got.tail != want.tail {
			t.Fatalf("%v: interval %v tail %v, SampledGaussian's %v %v", rel, got.h, got.tail, want.h, want.tail)
		}
		for i := range 4 {
			g, w := got.dist(i), want.dist(i)
			if g.lo != w.lo || g.inf != w.inf || g.logErr != w.logErr || g.rel != w.rel || len(g.mass) != len(w.mass) {
				t.Fatalf("%v side %d: grid %d+%d inf %v, SampledGaussian's %d+%d inf %v", rel, i, g.lo, len(g.mass), g.inf, w.lo, len(w.mass), w.inf)
			}
			for j := range g.mass {
				if g.mass[j] != w.mass[j] {
					t.Fatalf("%v side %d: mass %d is %v, SampledGaussian's %v", rel, i, j, g.mass[j], w.mass[j])
				}
			}
		}
	}
}
