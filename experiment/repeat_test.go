package experiment

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/testutil"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
)

// Repetitions give the same numbers bit for bit with 1 or 3 workers; the
// summary's mean and standard deviation match a direct computation.
func TestRepeat(t *testing.T) {
	const n, R, tau, d, reps = 3, 20, 2, 4, 5
	ds, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: d}.Dataset(n, R, tau, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := mustProblem(t, ds, model.Logistic{L2: 1e-3})
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.1, EtaG: 1, Clip: 1, EvalEvery: 5}
	noise := func(rep int) (mechanism.Mechanism, error) {
		return gaussNoise(R, d, 0.3, RepSeed(17, rep)), nil
	}
	var calls atomic.Int64
	var last atomic.Int64
	one, err := Repeat(t.Context(), p, cfg, noise, RepeatOptions{Reps: reps, Workers: 1, Progress: func(done, total int) {
		calls.Add(1)
		last.Store(int64(done))
		if total != reps*R {
			t.Errorf("progress total %d, want %d", total, reps*R)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != reps*R || last.Load() != reps*R {
		t.Errorf("progress called %d times, last %d; want %d", calls.Load(), last.Load(), reps*R)
	}
	three, err := Repeat(t.Context(), p, cfg, noise, RepeatOptions{Reps: reps, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	for k := range one.Traces {
		if !testutil.SameBits(one.Traces[k].LossError, three.Traces[k].LossError) || !testutil.SameBits(one.Traces[k].X, three.Traces[k].X) {
			t.Errorf("repetition %d differs between 1 and 3 workers", k)
		}
	}
	if !testutil.SameBits(one.LossErrorMean, three.LossErrorMean) || !testutil.SameBits(one.RegretStd, three.RegretStd) {
		t.Error("summaries differ between 1 and 3 workers")
	}
	// Repetition k is Run with noise(k).
	m, _ := noise(2)
	tr := mustRun(t, p, cfg, m)
	if !testutil.SameBits(tr.LossError, one.Traces[2].LossError) {
		t.Error("repetition 2 differs from a run with its noise")
	}
	// Mean and sample standard deviation by hand at the last round.
	k := len(one.Rounds) - 1
	mean, ss := 0.0, 0.0
	for _, tr := range one.Traces {
		mean += tr.LossError[k] / reps
	}
	for _, tr := range one.Traces {
		ss += (tr.LossError[k] - mean) * (tr.LossError[k] - mean)
	}
	std := math.Sqrt(ss / (reps - 1))
	lm, ls, _, _ := one.Final()
	if math.Abs(lm-mean) > 1e-15 || math.Abs(ls-std) > 1e-14 {
		t.Errorf("final loss error %v +- %v, want %v +- %v", lm, ls, mean, std)
	}
	if std == 0 {
		t.Error("repetitions with different noise have the same loss error")
	}
}

func TestRepeatErrors(t *testing.T) {
	ds, _ := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 2}.Dataset(1, 3, 1, 1)
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}
	if _, err := Repeat(t.Context(), p, cfg, nil, RepeatOptions{}); err == nil {
		t.Error("0 repetitions: no error")
	}
	noise := func(int) (mechanism.Mechanism, error) { return zeroNoise(3, 2), nil }
	if _, err := Repeat(t.Context(), p, cfg, noise, RepeatOptions{Reps: 1}); err == nil {
		t.Error("noise for nonprivate: no error")
	}
	cfg.Algorithm, cfg.Clip = fedopt.Correlated, 1
	if _, err := Repeat(t.Context(), p, cfg, nil, RepeatOptions{Reps: 1}); err == nil {
		t.Error("no noise for correlated: no error")
	}
	bad := func(rep int) (mechanism.Mechanism, error) { return zeroNoise(2, 2), nil } // wrong rounds
	if _, err := Repeat(t.Context(), p, cfg, bad, RepeatOptions{Reps: 4, Workers: 2}); err == nil {
		t.Error("mismatched noise: no error")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Repeat(ctx, p, cfg, noise, RepeatOptions{Reps: 2}); err == nil {
		t.Error("cancelled context: no error")
	}
	// The noise of one repetition does not depend on the order of calls.
	if RepSeed(1, 0) == RepSeed(1, 1) || RepSeed(1, 0) == RepSeed(2, 0) {
		t.Error("RepSeed collides")
	}
}

// NonPrivate runs once and reports that trace for every repetition.
func TestRepeatNonPrivateRunsOnce(t *testing.T) {
	ds, _ := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 3}.Dataset(2, 10, 2, 1)
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}
	var calls atomic.Int64
	s, err := Repeat(t.Context(), p, cfg, nil, RepeatOptions{Reps: 4, Progress: func(int, int) { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	want := mustRun(t, p, cfg, nil)
	if len(s.Traces) != 4 || calls.Load() != 10 {
		t.Fatalf("%d traces, %d progress calls", len(s.Traces), calls.Load())
	}
	for _, tr := range s.Traces {
		if !testutil.SameBits(tr.LossError, want.LossError) {
			t.Error("trace differs from a single run")
		}
	}
	if _, std, _, rstd := s.Final(); std != 0 || rstd != 0 {
		t.Errorf("standard deviations %v, %v, want 0", std, rstd)
	}
}

// Summarize against hand values, and a trace that does not hold one value
// per evaluated round is an error naming it, not an index panic (before,
// a trace with Rounds {0, 5} and one loss error, or no regrets, panicked).
func TestSummarizeChecksTraces(t *testing.T) {
	nan := math.NaN()
	tr := func(l0, l1 float64) *Trace {
		return &Trace{Rounds: []int{0, 5}, LossError: []float64{l0, l1}, Accuracy: []float64{0.5, 1},
			Regret: []float64{nan, nan}, StaticRegret: []float64{0, l1}}
	}
	s, err := Summarize([]*Trace{tr(1, 3), tr(3, 7)})
	if err != nil {
		t.Fatal(err)
	}
	// Means (1+3)/2 = 2 and (3+7)/2 = 5; sample standard deviations
	// sqrt(2 * 1^2 / 1) = sqrt 2 and sqrt(2 * 2^2 / 1) = sqrt 8.
	if s.LossErrorMean[0] != 2 || s.LossErrorMean[1] != 5 || math.Abs(s.LossErrorStd[0]-math.Sqrt2) > 1e-15 || math.Abs(s.LossErrorStd[1]-math.Sqrt(8)) > 1e-15 ||
		s.StaticRegretMean[1] != 5 || s.AccuracyMean[1] != 1 || !math.IsNaN(s.RegretMean[1]) {
		t.Errorf("summary %+v, want loss error means 2, 5 and standard deviations sqrt 2, sqrt 8", s)
	}
	short := tr(1, 3)
	short.LossError = short.LossError[:1]
	noRegret := tr(1, 3)
	noRegret.Regret = nil
	for name, c := range map[string]struct {
		bad  *Trace
		want string
	}{
		"one loss error": {short, "trace 1 has 1 values of LossError for 2 evaluated rounds"},
		"no regrets":     {noRegret, "trace 1 has 0 values of Regret for 2 evaluated rounds"},
		"missing":        {nil, "trace 1 is missing"},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic %v, want an error", name, p)
				}
			}()
			_, err := Summarize([]*Trace{tr(1, 3), c.bad})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
			}
		}()
	}
}

// TestSummarizeEqualValuesZeroSpread: where every repetition has the same
// value, every spread the summary reports is exactly 0, and the means stay
// within a relative 2^-52 of the value. Seven copies of 0.1, 0.7 or 1/3
// (not binary fractions) already gave 0 (gonum's corrected two-pass
// formula cancels the rounded mean's offset exactly); seven copies of
// 1e300 gave NaN before: the float64 mean is 9.999999999999999e299, the
// offset's square overflows, and Inf - Inf. Unequal values keep the
// sample standard deviation: (0.1, 0.2) has sqrt(0.005) by hand.
func TestSummarizeEqualValuesZeroSpread(t *testing.T) {
	tr := func(last float64) *Trace {
		return &Trace{Rounds: []int{0, 5}, LossError: []float64{1e300, last}, Accuracy: []float64{0.1, 0.7},
			Regret: []float64{1.0 / 3, 1e300}, StaticRegret: []float64{0.1, 0.7}}
	}
	traces := make([]*Trace, 7)
	for i := range traces {
		traces[i] = tr(0.1)
	}
	s, err := Summarize(traces)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		mean, std []float64
		want      []float64
	}{
		{"loss error", s.LossErrorMean, s.LossErrorStd, traces[0].LossError},
		{"regret", s.RegretMean, s.RegretStd, traces[0].Regret},
		{"static regret", s.StaticRegretMean, s.StaticRegretStd, traces[0].StaticRegret},
	} {
		for k, x := range c.want {
			if math.Abs(c.mean[k]-x) > 0x1p-52*x || c.std[k] != 0 {
				t.Errorf("%s at round %d: mean %v, spread %v; want %v and exactly 0", c.name, k, c.mean[k], c.std[k], x)
			}
		}
	}
	if _, ls, _, rs := s.Final(); ls != 0 || rs != 0 {
		t.Errorf("Final(): spreads %v, %v; want exactly 0", ls, rs)
	}
	if s, err = Summarize([]*Trace{tr(0.1), tr(0.2)}); err != nil {
		t.Fatal(err)
	}
	if _, ls, _, rs := s.Final(); math.Abs(ls-math.Sqrt(0.005)) > 1e-15 || rs != 0 {
		t.Errorf("Final() of (0.1, 0.2): spread %v, want sqrt(0.005); regret spread %v, want 0", ls, rs)
	}
}

// An Evaluator refuses a round outside [0, R] and a model of another
// dimension with an error; before, round -1 and a short model panicked
// (a slice out of range, floats.Dot's length check) and round R+1 was
// recorded as an evaluated round past the end of the run.
func TestEvaluatorObserveErrors(t *testing.T) {
	ds, _ := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: 2}.Dataset(1, 3, 1, 1)
	p := mustProblem(t, ds, model.Logistic{L2: 1e-2})
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.1, EtaG: 1}
	for name, c := range map[string]struct {
		rounds []int
		x      []float64
		want   string
	}{
		"round -1":        {[]int{-1}, []float64{0, 0}, "round -1, want a round in [0, 3]"},
		"round R+1":       {[]int{0, 1, 2, 3, 4}, []float64{0, 0}, "round 4, want a round in [0, 3]"},
		"short model":     {[]int{0}, []float64{0}, "dimension 1 in round 0, want 2"},
		"rounds in order": {[]int{0, 2}, []float64{0, 0}, "observed round 2, want 1"},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic %v, want an error", name, p)
				}
			}()
			ev := NewEvaluator(p, cfg)
			var err error
			for _, r := range c.rounds {
				if err = ev.Observe(r, c.x); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
			}
		}()
	}
}
