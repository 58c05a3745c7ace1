package experiment

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
)

// Experiment is one configuration of the paper's experiments: an algorithm
// on a problem, a privacy budget and its calibration, a factorization for
// the correlated noise, and a number of repetitions. [Experiment.Run] does
// the whole job; use [Run] or [Repeat] directly to bring your own
// mechanism.
type Experiment struct {
	// Problem is the data and model (shared, read-only).
	Problem *Problem
	// Config is the optimiser's configuration.
	Config fedopt.Config
	// Strategy is the factorization of the correlated noise; nil means
	// factorize.OptimalStrategy{}. Used by Correlated and
	// BaselineCorrelated.
	Strategy factorize.Strategy
	// Participation is how often one client's sample takes part in the
	// rounds (single participation by default; fixed epochs when the data
	// replays each learner's clients, as ofl -epochs does). The noise is
	// calibrated to the factorization's sensitivity under it.
	Participation factorize.Participation
	// Factorization, if not nil, is used instead of computing Strategy's.
	// Its workload must be the prefix sums over the problem's rounds.
	Factorization *factorize.Factorization
	// Calibration, Eps and Delta set the noise (private algorithms only).
	Calibration fedopt.Calibration
	Eps, Delta  float64
	// Repeat holds the repetitions, workers and progress callback.
	Repeat RepeatOptions
	// Seed determines the noise of every repetition (see [RepSeed]).
	Seed uint64
}

// Result is the outcome of an [Experiment].
type Result struct {
	// Summary aggregates the repetitions.
	Summary *Summary
	// Privacy is the privacy record; nil for NonPrivate.
	Privacy *fedopt.Privacy
	// Factorization is the factorization the noise came from (the identity
	// for Independent); nil for NonPrivate.
	Factorization *factorize.Factorization
}

// Run computes the factorization (for Correlated and BaselineCorrelated;
// the identity for Independent), calibrates the noise, and runs the repetitions, repetition
// k drawing its noise from a mechanism seeded with RepSeed(Seed, k).
func (e *Experiment) Run(ctx context.Context) (*Result, error) {
	if e == nil {
		return nil, &ParamError{Param: "experiment", Want: "an Experiment with a Problem"}
	}
	if err := checkProblem(e.Problem); err != nil {
		return nil, err
	}
	res := &Result{}
	cfg := e.Config
	var noise NoiseSource
	if algo := cfg.Algorithm; algo.Private() {
		f, priv, err := e.Noise(ctx, e.Problem.Data.Learners, e.Problem.Data.Rounds)
		if err != nil {
			return nil, err
		}
		res.Privacy, res.Factorization = priv, f
		cfg.Privacy = priv
		noise = FactorizationNoise(f, e.Problem.Model.NumParams(e.Problem.Data.Dim), priv.NoiseStd, e.Seed)
	}
	s, err := Repeat(ctx, e.Problem, cfg, noise, e.Repeat)
	if err != nil {
		return nil, err
	}
	res.Summary = s
	return res, nil
}

// Noise returns the factorization of the experiment's noise and its
// calibration for a run of n learners and R rounds: what [Experiment.Run]
// computes before it runs. It needs no data (e.Problem is not used), so a
// server can call it. The algorithm must be private.
func (e *Experiment) Noise(ctx context.Context, n, R int) (*factorize.Factorization, *fedopt.Privacy, error) {
	algo := e.Config.Algorithm
	if !algo.Private() {
		return nil, nil, fmt.Errorf("experiment: the %v algorithm adds no noise", algo)
	}
	f, err := e.factorization(ctx, R)
	if err != nil {
		return nil, nil, err
	}
	priv, err := fedopt.Calibrate(algo, e.Calibration, e.Eps, e.Delta, n, e.Config.Clip, f.Metrics)
	if err != nil {
		return nil, nil, err
	}
	return f, priv, nil
}

// factorization returns the factorization of the experiment's noise for R
// rounds, with metrics under the experiment's participation.
func (e *Experiment) factorization(ctx context.Context, R int) (*factorize.Factorization, error) {
	if err := e.Participation.Validate(R); err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	w, err := factorize.Prefix(R)
	if err != nil {
		return nil, err
	}
	if e.Config.Algorithm == fedopt.Independent {
		return factorize.IdentityStrategy{}.Factorize(ctx, w, e.Participation)
	}
	if f := e.Factorization; f != nil {
		if f.Workload == nil {
			return nil, &ParamError{Param: "factorization", Value: "one without a workload", Want: "a factorization computed by package factorize"}
		}
		if !f.Workload.IsPrefix() || f.Workload.R() != R {
			return nil, fmt.Errorf("experiment: factorization of the %s workload with %d rounds, want prefix sums over %d rounds", f.Workload.Name(), f.Workload.R(), R)
		}
		return f.WithParticipation(e.Participation)
	}
	s := e.Strategy
	if s == nil {
		s = factorize.OptimalStrategy{}
	}
	f, err := s.Factorize(ctx, w, e.Participation)
	if err != nil {
		return nil, fmt.Errorf("experiment: %s factorization for %d rounds: %w", s.Name(), R, err)
	}
	return f, nil
}

// FactorizationNoise returns the noise source that gives repetition rep a
// mechanism for factorization f, dimension dim and standard deviation std,
// seeded with RepSeed(seed, rep).
func FactorizationNoise(f *factorize.Factorization, dim int, std float64, seed uint64) NoiseSource {
	return func(rep int) (mechanism.Mechanism, error) {
		return mechanism.New(f, dim, std, mechanism.WithSeed(RepSeed(seed, rep)))
	}
}
