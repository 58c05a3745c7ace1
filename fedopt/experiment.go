package fedopt

import (
	"context"
	"fmt"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
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
	Config Config
	// Plan is the plan of the noise (private algorithms only): its
	// strategy (optimal when empty), participation (single when empty;
	// fixed epochs when the data replays each learner's clients, as ofl
	// -epochs does) and target (eps, delta, calibration). Its algorithm,
	// learners, rounds and clipping bound are the experiment's: a plan
	// that sets them otherwise is an error. [Experiment.Noise] calibrates
	// a copy (plan.Plan.Calibrate); e.Plan is not modified.
	Plan *plan.Plan
	// Factorization, if not nil, is used instead of computing the plan's
	// strategy. Its workload must be the prefix sums over the problem's
	// rounds.
	Factorization *factorize.Factorization
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
	Privacy *Privacy
	// Factorization is the factorization the noise came from (the identity
	// for Independent); nil for NonPrivate.
	Factorization *factorize.Factorization
	// Plan is the calibrated plan of the noise (Privacy is its record);
	// nil for NonPrivate.
	Plan *plan.Plan
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
		f, pl, priv, err := e.noise(ctx, e.Problem.Data.Learners, e.Problem.Data.Rounds)
		if err != nil {
			return nil, err
		}
		res.Privacy, res.Factorization, res.Plan = priv, f, pl
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
func (e *Experiment) Noise(ctx context.Context, n, R int) (*factorize.Factorization, *Privacy, error) {
	f, _, priv, err := e.noise(ctx, n, R)
	return f, priv, err
}

// noise is Noise with the calibrated plan.
func (e *Experiment) noise(ctx context.Context, n, R int) (*factorize.Factorization, *plan.Plan, *Privacy, error) {
	p, err := e.NoisePlan(n, R)
	if err != nil {
		return nil, nil, nil, err
	}
	var f *factorize.Factorization
	if f = e.Factorization; f == nil {
		f, err = p.Factorize(ctx)
	} else {
		f, err = e.given(ctx, p, R)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if err := p.Calibrate(ctx, f); err != nil {
		return nil, nil, nil, err
	}
	priv, err := PrivacyOf(p)
	if err != nil {
		return nil, nil, nil, err
	}
	return f, p, priv, nil
}

// NoisePlan returns a copy of e.Plan completed with the experiment's
// algorithm, its clipping bound, n learners and R rounds (and, for
// e.Factorization, its strategy), not yet calibrated. It is an error if
// e.Plan sets one of them to another value.
func (e *Experiment) NoisePlan(n, R int) (*plan.Plan, error) {
	algo := e.Config.Algorithm
	if !algo.Private() {
		return nil, fmt.Errorf("fedopt: the %v algorithm adds no noise", algo)
	}
	var p plan.Plan
	if e.Plan != nil {
		p = *e.Plan
	}
	p.Privacy = nil
	for _, c := range []struct {
		name     string
		got, run any
		zero     bool
	}{
		{"algorithm", p.Algorithm, algo.String(), p.Algorithm == ""},
		{"learners", p.Learners, n, p.Learners == 0},
		{"rounds", p.Rounds, R, p.Rounds == 0},
		{"clip", p.Clip, e.Config.Clip, p.Clip == 0},
	} {
		if !c.zero && fmt.Sprint(c.got) != fmt.Sprint(c.run) {
			return nil, &ParamError{Param: "plan", Value: fmt.Sprintf("%s %v", c.name, c.got), Want: fmt.Sprintf("the experiment's %v", c.run)}
		}
	}
	p.Algorithm, p.Learners, p.Rounds, p.Clip = algo.String(), n, R, e.Config.Clip
	if algo == Independent {
		p.Strategy = factorize.StrategyIdentity
	} else if f := e.Factorization; f != nil {
		p.Strategy = f.Strategy
	}
	return &p, nil
}

// given returns e.Factorization with metrics under p's participation,
// after checking its workload.
func (e *Experiment) given(ctx context.Context, p *plan.Plan, R int) (*factorize.Factorization, error) {
	part, err := p.Pattern()
	if err != nil {
		return nil, err
	}
	if e.Config.Algorithm == Independent {
		return p.Factorize(ctx)
	}
	f := e.Factorization
	if f.Workload == nil {
		return nil, &ParamError{Param: "factorization", Value: "one without a workload", Want: "a factorization computed by package factorize"}
	}
	if !f.Workload.IsPrefix() || f.Workload.R() != R {
		return nil, fmt.Errorf("fedopt: factorization of the %s workload with %d rounds, want prefix sums over %d rounds", f.Workload.Name(), f.Workload.R(), R)
	}
	return f.WithParticipation(part)
}

// FactorizationNoise returns the noise source that gives repetition rep a
// mechanism for factorization f, dimension dim and standard deviation std,
// seeded with RepSeed(seed, rep).
func FactorizationNoise(f *factorize.Factorization, dim int, std float64, seed uint64) NoiseSource {
	return func(rep int) (mechanism.Mechanism, error) {
		return mechanism.New(f, dim, std, mechanism.WithSeed(RepSeed(seed, rep)))
	}
}
