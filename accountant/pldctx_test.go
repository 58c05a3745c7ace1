package accountant

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestSampledGaussianContext: the context variants give SampledGaussianPLD's
// and SampledGaussian's PLDs bit for bit (the same delta and eps to the
// last bit), refuse a nil ctx with a *ParamError naming it, return
// context.Canceled for a done ctx, and stop a PLD on the interval 6e-7
// (about 7e6 grid points a direction, 12 to 18 s uninterrupted on a loaded
// two-core machine) with context.DeadlineExceeded when its deadline
// passes 100 ms in: a variant that ignored ctx would return the PLD and
// no error. The time it takes to stop is logged, not checked (about 1 s at
// a load of 12 on two cores, mostly the allocation of the grids).
func TestSampledGaussianContext(t *testing.T) {
	testutil.SkipOn386Short(t, "cancellation of small accountings: no int bound")
	must := mustPLD(t)
	ctx := context.Background()
	o := PLDOptions{Interval: 1e-3}
	pairs := [][2]*PLD{{must(SampledGaussian(0.05, 1, 20, AddRemove)), must(SampledGaussianContext(ctx, 0.05, 1, 20, AddRemove))}}
	for _, rel := range []Relation{AddRemove, ReplaceOne} {
		pairs = append(pairs, [2]*PLD{must(SampledGaussianPLD(0.05, 1, rel, o)), must(SampledGaussianPLDContext(ctx, 0.05, 1, rel, o))})
	}
	for i, pair := range pairs {
		x, err := pair[0].DeltaBounds(0.5)
		if err != nil {
			t.Fatal(err)
		}
		y, err := pair[1].DeltaBounds(0.5)
		if err != nil {
			t.Fatal(err)
		}
		ex, _ := pair[0].EpsilonBounds(1e-6)
		ey, _ := pair[1].EpsilonBounds(1e-6)
		if x != y || ex != ey {
			t.Errorf("pair %d: delta %v / %v, eps %v / %v with and without a context", i, x, y, ex, ey)
		}
	}
	var nilCtx context.Context
	var pe *ParamError
	if _, err := SampledGaussianPLDContext(nilCtx, 0.05, 1, AddRemove, o); !errors.As(err, &pe) || pe.Param != "ctx" {
		t.Errorf("SampledGaussianPLDContext(nil) = %v, want a *ParamError for ctx", err)
	}
	if _, err := SampledGaussianContext(nilCtx, 0.05, 1, 20, AddRemove); !errors.As(err, &pe) || pe.Param != "ctx" {
		t.Errorf("SampledGaussianContext(nil) = %v, want a *ParamError for ctx", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := SampledGaussianPLDContext(done, 0.05, 1, AddRemove, o); !errors.Is(err, context.Canceled) {
		t.Errorf("SampledGaussianPLDContext(done) = %v, want context.Canceled", err)
	}
	if _, err := SampledGaussianContext(done, 0.05, 1, 20, AddRemove); !errors.Is(err, context.Canceled) {
		t.Errorf("SampledGaussianContext(done) = %v, want context.Canceled", err)
	}
	later, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := SampledGaussianPLDContext(later, 1e-3, 0.8, AddRemove, PLDOptions{Interval: 6e-7})
	el := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline 100 ms in: %v after %v, want context.DeadlineExceeded", err, el)
	}
	t.Logf("deadline 100 ms in: stopped after %v", el)
}

// TestSampledGaussianContextHugeSteps: 10^9 steps take 17 to 40 s, nearly
// all in the composition, which did not look at ctx: with a deadline
// 200 ms in, SampledGaussianContext ran 29 s to its end and returned the
// PLD and no error. It must return context.DeadlineExceeded long before
// the composition could end: within 5 s (milliseconds after the deadline
// on a quiet machine; the discretisation before the composition checks
// ctx once per step, and under -race on a loaded machine that took 1.4 s).
// The work it leaves stops at its next check, within one FFT.
func TestSampledGaussianContextHugeSteps(t *testing.T) {
	for _, rel := range []Relation{AddRemove, ReplaceOne} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := SampledGaussianContext(ctx, 0.01, 1, 1_000_000_000, rel)
		el := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || el > 5*time.Second {
			t.Errorf("%v, 10^9 steps, deadline 200 ms in: %v after %v, want context.DeadlineExceeded within 5 s", rel, err, el)
		}
	}
	// Let the abandoned work reach its next check before the next test.
	time.Sleep(3 * time.Second)
}
