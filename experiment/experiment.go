package experiment

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
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
	Config fedopt.Config
	// Plan is the plan of the noise (private algorithms only): its
	// strategy (optimal when empty), participation (single when empty;
	// fixed epochs when the data replays each learner's clients, as ofl
	// -epochs does) and target (eps, delta, calibration). Its algorithm,
	// learners, rounds and clipping bound are the experiment's: a plan
	// that sets them otherwise is an error. [Experiment.Run] calibrates a
	// copy (plan.Plan.Calibrate; Result.Plan); e.Plan is not modified.
	Plan *plan.Plan
	// Factorization, if not nil, is used instead of computing the plan's
	// strategy. Its workload must be the prefix sums over the problem's
	// rounds, and its strategy the plan's: Plan.Strategy, the spec with
	// its settings (banded:bands=2), or when empty the factorization's
	// strategy name with its default settings; a factorization computed
	// with other settings is an error (the calibrated plan would describe
	// another factorization than the one its record is of).
	Factorization *factorize.Factorization
	// Repeat holds the repetitions, workers and progress callback.
	Repeat RepeatOptions
	// Seed determines the noise of every repetition (see [RepSeed]) when
	// Seeded is set; without Seeded it is not used.
	Seed uint64
	// Seeded makes the noise reproducible: repetition k's mechanism is
	// seeded with RepSeed(Seed, k) ([FactorizationNoise]). That is for
	// experiments, tests and reproductions, not for a release: whoever
	// knows or searches the 64-bit seed can draw the noise again and
	// subtract it (Result.NoiseSeeded says so). Without it, as in the zero
	// value, every repetition's mechanism draws its 256-bit key from
	// crypto/rand ([SecureNoise]), and the noise cannot be repeated.
	Seeded bool
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
	// Plan is the calibrated plan of the noise (Privacy is its record);
	// nil for NonPrivate.
	Plan *plan.Plan
	// NoiseSeeded is true when the noise came from Experiment.Seed
	// (Experiment.Seeded): reproducible, and not for a real release. It
	// is false when every repetition's key came from crypto/rand, and for
	// NonPrivate (no noise).
	NoiseSeeded bool
}

// Run computes the factorization (for Correlated and BaselineCorrelated;
// the identity for Independent), calibrates the noise, and runs the
// repetitions, repetition k drawing its noise from a mechanism seeded with
// RepSeed(Seed, k) if e.Seeded, else from one keyed from crypto/rand
// (Result.NoiseSeeded records which).
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
		f, pl, err := e.noise(ctx, e.Problem.Data.Learners, e.Problem.Data.Rounds, e.Problem.Data.Tau)
		if err != nil {
			return nil, err
		}
		priv, err := fedopt.PrivacyOf(pl)
		if err != nil {
			return nil, err
		}
		res.Privacy, res.Factorization, res.Plan = priv, f, pl
		cfg.Privacy = priv
		dim := e.Problem.Model.NumParams(e.Problem.Data.Dim)
		if e.Seeded {
			noise, res.NoiseSeeded = FactorizationNoise(f, dim, priv.NoiseStd, e.Seed), true
		} else {
			noise = SecureNoise(f, dim, priv.NoiseStd)
		}
	}
	s, err := Repeat(ctx, e.Problem, cfg, noise, e.Repeat)
	if err != nil {
		return nil, err
	}
	res.Summary = s
	return res, nil
}

// noise returns the factorization of the experiment's noise and its
// calibrated plan for a run of n learners, R rounds and tau local steps: a
// copy of e.Plan completed with the experiment's algorithm, clipping bound,
// n, R and tau (and the strategy of e.Factorization); e.Plan setting one of
// them otherwise is an error. The algorithm must be private.
func (e *Experiment) noise(ctx context.Context, n, R, tau int) (*factorize.Factorization, *plan.Plan, error) {
	algo := e.Config.Algorithm
	if !algo.Private() {
		return nil, nil, fmt.Errorf("experiment: the %v algorithm adds no noise", algo)
	}
	var p plan.Plan
	if e.Plan != nil {
		p = *e.Plan
	}
	if p.Algorithm != "" && p.Algorithm != algo.String() || p.Learners != 0 && p.Learners != n || p.Rounds != 0 && p.Rounds != R || p.Tau != 0 && p.Tau != tau || p.Clip != 0 && p.Clip != e.Config.Clip {
		return nil, nil, fmt.Errorf("experiment: plan of the %s algorithm with n = %d, R = %d, tau = %d, clip %v; want the experiment's %v with n = %d, R = %d, tau = %d, clip %v (or 0: the experiment's)",
			p.Algorithm, p.Learners, p.Rounds, p.Tau, p.Clip, algo, n, R, tau, e.Config.Clip)
	}
	p.Algorithm, p.Learners, p.Rounds, p.Tau, p.Clip, p.Privacy = algo.String(), n, R, tau, e.Config.Clip, nil
	if algo == fedopt.Independent {
		p.Strategy = factorize.StrategyIdentity // its noise is independent: C = I
	}
	f, err := e.Factorization, error(nil)
	switch {
	case f == nil || algo == fedopt.Independent:
		f, err = p.Factorize(ctx)
	case f.Workload == nil:
		err = &ParamError{Param: "factorization", Value: "one without a workload", Want: "a factorization computed by package factorize"}
	case !f.Workload.IsPrefix() || f.Workload.R() != R:
		err = fmt.Errorf("experiment: factorization of the %s workload with %d rounds, want prefix sums over %d rounds", f.Workload.Name(), f.Workload.R(), R)
	default:
		// The plan's strategy (its spec, or the factorization's name
		// with its defaults) must be the one that computed f, settings
		// included: the calibrated plan describes its own factorization.
		spec := cmp.Or(p.Strategy, f.Strategy)
		if key := strings.TrimSuffix(f.StrategyKey(), "/loss-only"); key != "" {
			if s, perr := factorize.ParseStrategy(spec); perr != nil || factorize.CacheKey(s) != key {
				return nil, nil, fmt.Errorf("experiment: factorization of strategy key %s, but the plan's strategy %q is not that strategy with those settings: set Plan.Strategy to the spec the factorization was computed with", key, spec)
			}
		} else if s, perr := factorize.ParseStrategy(spec); p.Strategy != "" && perr == nil && s.Name() != f.Strategy {
			return nil, nil, fmt.Errorf("experiment: factorization of strategy %s, but the plan's strategy is %q", f.Strategy, spec)
		}
		p.Strategy = spec
		var part factorize.Participation
		if part, err = p.Pattern(); err == nil {
			f, err = f.WithParticipation(part)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if err := p.Calibrate(ctx, f); err != nil {
		return nil, nil, err
	}
	return f, &p, nil
}

// FactorizationNoise returns the noise source that gives repetition rep a
// mechanism for factorization f, dimension dim and standard deviation std,
// seeded with RepSeed(seed, rep): reproducible, for experiments and tests,
// not for a release (see [SecureNoise]).
func FactorizationNoise(f *factorize.Factorization, dim int, std float64, seed uint64) NoiseSource {
	return func(rep int) (mechanism.Mechanism, error) {
		return mechanism.New(f, dim, std, mechanism.WithSeed(RepSeed(seed, rep)))
	}
}

// SecureNoise returns the noise source that gives each repetition a
// mechanism for factorization f, dimension dim and standard deviation std
// with its own 256-bit key from crypto/rand (mechanism's default): the
// noise of a real release, which nobody can draw again. It does not meet
// [NoiseSource]'s reproducibility: a repetition's noise differs from call
// to call.
func SecureNoise(f *factorize.Factorization, dim int, std float64) NoiseSource {
	return func(int) (mechanism.Mechanism, error) {
		return mechanism.New(f, dim, std)
	}
}
