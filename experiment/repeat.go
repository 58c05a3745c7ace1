package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"gonum.org/v1/gonum/stat"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/par"
	"github.com/dpmf/dpmf/mechanism"
)

// NoiseSource makes the noise mechanism of repetition rep (0-based). Each
// call must return a fresh mechanism whose output depends only on rep, so
// that repetitions are reproducible in any order.
type NoiseSource func(rep int) (mechanism.Mechanism, error)

// RepSeed returns the seed of repetition rep derived from a run's seed (a
// SplitMix64 step), so that every repetition has its own reproducible
// stream.
func RepSeed(seed uint64, rep int) uint64 {
	z := seed + 0x9e3779b97f4a7c15*uint64(rep+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// RepeatOptions configure [Repeat].
type RepeatOptions struct {
	// Reps is the number of repetitions, >= 1.
	Reps int
	// Workers bounds the repetitions run at once; 0 means GOMAXPROCS. The
	// results do not depend on it.
	Workers int
	// Progress, if not nil, is called after every round of every
	// repetition with the rounds completed so far over all repetitions
	// and the total (Reps x R; R for NonPrivate, which runs once). It is
	// called from several goroutines.
	Progress func(done, total int)
}

// Summary aggregates the traces of repeated runs: at every evaluated round,
// the mean and the sample standard deviation (denominator reps - 1; 0 for
// one repetition, and exactly 0 where every repetition has the same finite
// value) over the repetitions.
type Summary struct {
	// Rounds are the evaluated rounds.
	Rounds []int
	// LossErrorMean and LossErrorStd summarise Trace.LossError.
	LossErrorMean, LossErrorStd []float64
	// RegretMean and RegretStd summarise Trace.Regret (dynamic).
	RegretMean, RegretStd []float64
	// StaticRegretMean and StaticRegretStd summarise Trace.StaticRegret.
	StaticRegretMean, StaticRegretStd []float64
	// AccuracyMean is the mean of Trace.Accuracy.
	AccuracyMean []float64
	// Traces holds every repetition's trace, in repetition order.
	Traces []*Trace
}

// Repeat runs opt.Reps repetitions of [Run] on p with cfg, repetition rep
// drawing its noise from noise(rep) (noise must be nil for NonPrivate),
// and summarises them. Repetitions run in parallel on opt.Workers
// goroutines; the results are collected by repetition index, so they are
// the same bit for bit for any number of workers. NonPrivate is
// deterministic: it runs once, and the summary holds that trace Reps times
// (standard deviations 0).
func Repeat(ctx context.Context, p *Problem, cfg fedopt.Config, noise NoiseSource, opt RepeatOptions) (*Summary, error) {
	if err := checkProblem(p); err != nil {
		return nil, err
	}
	switch err := cfg.Validate(); {
	case opt.Reps < 1:
		return nil, &ParamError{Param: "reps", Value: opt.Reps, Want: ">= 1"}
	case err != nil:
		return nil, err
	case cfg.Algorithm.Private() != (noise != nil):
		return nil, fmt.Errorf("experiment: the %v algorithm needs a noise source if and only if it is private", cfg.Algorithm)
	}
	// Without noise every repetition would compute the same trace.
	runs := opt.Reps
	if noise == nil {
		runs = 1
	}
	total := runs * p.Data.Rounds
	var done atomic.Int64
	traces := make([]*Trace, runs)
	err := forEach(ctx, runs, opt.Workers, func(ctx context.Context, rep int) error {
		c := cfg
		if opt.Progress != nil {
			c.OnRound = func(int) { opt.Progress(int(done.Add(1)), total) }
		}
		var m mechanism.Mechanism
		var err error
		if noise != nil {
			if m, err = noise(rep); err != nil {
				return fmt.Errorf("experiment: noise of repetition %d: %w", rep, err)
			}
		}
		traces[rep], err = Run(ctx, p, c, m)
		return err
	})
	if err != nil {
		return nil, err
	}
	for len(traces) < opt.Reps {
		traces = append(traces, traces[0])
	}
	return summarize(traces), nil
}

// forEach calls f(ctx, i) for i = 0..n-1 on up to workers goroutines (0:
// GOMAXPROCS); each f writes only its own results, so they do not depend
// on the workers. An error cancels the calls not yet done; the first one
// in index order that is not a consequence of that is returned, else the
// error of ctx.
func forEach(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, n)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	par.Pool(n, min(workers, n), func(_, i int) bool {
		if errs[i] = f(wctx, i); errs[i] != nil {
			cancel()
			return false
		}
		return true
	})
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return ctx.Err()
}

// Summarize returns the summary of traces of one configuration (for
// example one [Evaluator]'s trace of a networked run), which must share
// their evaluated rounds and hold one value of every metric (LossError,
// Accuracy, Regret, StaticRegret) per evaluated round.
func Summarize(traces []*Trace) (*Summary, error) {
	if len(traces) == 0 {
		return nil, fmt.Errorf("experiment: no traces to summarise")
	}
	for k, tr := range traces {
		if tr == nil || !slices.Equal(tr.Rounds, traces[0].Rounds) {
			return nil, fmt.Errorf("experiment: trace %d is missing or evaluated at other rounds than trace 0", k)
		}
		for _, m := range []struct {
			name string
			v    []float64
		}{{"LossError", tr.LossError}, {"Accuracy", tr.Accuracy}, {"Regret", tr.Regret}, {"StaticRegret", tr.StaticRegret}} {
			if len(m.v) != len(tr.Rounds) {
				return nil, fmt.Errorf("experiment: trace %d has %d values of %s for %d evaluated rounds, want one per round (NaN where not available)", k, len(m.v), m.name, len(tr.Rounds))
			}
		}
	}
	return summarize(traces), nil
}

// summarize computes means and standard deviations over the traces, which
// share their evaluated rounds.
func summarize(traces []*Trace) *Summary {
	k := len(traces[0].Rounds)
	s := &Summary{Rounds: traces[0].Rounds, Traces: traces}
	col := make([]float64, len(traces))
	ms := func(get func(*Trace) []float64) (mean, std []float64) {
		mean, std = make([]float64, k), make([]float64, k)
		for j := 0; j < k; j++ {
			for i, tr := range traces {
				col[i] = get(tr)[j]
			}
			if len(col) == 1 {
				mean[j] = col[0]
				continue
			}
			mean[j], std[j] = stat.MeanStdDev(col, nil)
			if slices.Max(col)-slices.Min(col) == 0 {
				// Equal values (the non-private run, repeated): exactly 0,
				// where the deviations from the rounded mean leave a
				// spread of its rounding error.
				std[j] = 0
			}
		}
		return mean, std
	}
	s.LossErrorMean, s.LossErrorStd = ms(func(t *Trace) []float64 { return t.LossError })
	s.RegretMean, s.RegretStd = ms(func(t *Trace) []float64 { return t.Regret })
	s.StaticRegretMean, s.StaticRegretStd = ms(func(t *Trace) []float64 { return t.StaticRegret })
	s.AccuracyMean, _ = ms(func(t *Trace) []float64 { return t.Accuracy })
	return s
}

// Final returns the summary's last evaluated round (R): final loss error
// mean and std, and final dynamic regret mean and std. For a summary with
// no evaluated round (the zero Summary) all four are NaN.
func (s *Summary) Final() (lossMean, lossStd, regretMean, regretStd float64) {
	k := len(s.Rounds) - 1
	if k < 0 || k >= min(len(s.LossErrorMean), len(s.LossErrorStd), len(s.RegretMean), len(s.RegretStd)) {
		nan := math.NaN()
		return nan, nan, nan, nan
	}
	return s.LossErrorMean[k], s.LossErrorStd[k], s.RegretMean[k], s.RegretStd[k]
}
