package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/param"
	"github.com/dpmf/dpmf/plan"
)

// Plan is a run to audit: the federation's shape, the algorithm, the
// factorization of its noise, the participation of one sample, the privacy
// budget and its calibration, and the data-independent dropout schedule.
// The zero value of a field takes the default of the paper's Fig. 4
// setting where it has one (see [Plan.WithDefaults], which lists them, and
// [Plan.Validate], which refuses those zeros in a plan from user input).
type Plan struct {
	// Algorithm is the private algorithm (Correlated, the zero value,
	// Independent or BaselineCorrelated).
	Algorithm fedopt.Algorithm
	// Strategy is the factorization of the correlated noise; nil means
	// factorize.OptimalStrategy{}. Ignored for Independent (identity).
	Strategy factorize.Strategy
	// Participation is how often one sample takes part (single by
	// default; fixed epochs or min-separation).
	Participation factorize.Participation
	// Calibration is exact (default) or paper.
	Calibration plan.Calibration
	// Learners (n), Rounds (R), Tau and Dim (the model's dimension d).
	Learners, Rounds, Tau, Dim int
	// Eta and EtaG are the local and global step sizes; Clip is B_g.
	Eta, EtaG, Clip float64
	// Eps and Delta are the privacy budget.
	Eps, Delta float64
	// Dropout is the probability that a learner misses a round, drawn
	// from Seed independently of the data (0: no dropouts). A missing
	// update counts as zero (fedopt.Server).
	Dropout float64
	// Seed determines the noise key, the dropouts and the data.
	Seed uint64
}

// WithDefaults returns p with its unset fields set to the paper's Fig. 4
// setting. A field is unset when it is zero, and only these fields have a
// default:
//
//	Learners 10, Rounds 800, Tau 10, Dim 60,
//	Eta 0.003, EtaG 1, Clip 5, Eps 5, Delta 1e-3,
//	Strategy (nil) factorize.OptimalStrategy{}.
//
// None of these fields accepts 0 as a value, so WithDefaults cannot tell
// an unset field from a zero that is a mistake (a user's -rounds 0): it
// substitutes the default for both, silently. A caller that fills a Plan
// from user input must call [Plan.Validate] on it before WithDefaults,
// which refuses those zeros. The fields whose zero is a meaningful value
// are kept: Algorithm (Correlated), Participation (single), Calibration
// (exact), Dropout (no dropouts) and Seed. Negative, NaN and infinite
// values are kept too; [NewSetup] refuses them.
func (p Plan) WithDefaults() Plan {
	p.Learners, p.Rounds = cmp.Or(p.Learners, 10), cmp.Or(p.Rounds, 800)
	p.Tau, p.Dim = cmp.Or(p.Tau, 10), cmp.Or(p.Dim, 60)
	p.Eta, p.EtaG, p.Clip = cmp.Or(p.Eta, 0.003), cmp.Or(p.EtaG, 1.0), cmp.Or(p.Clip, 5.0)
	p.Eps, p.Delta = cmp.Or(p.Eps, 5.0), cmp.Or(p.Delta, 1e-3)
	p.Strategy = cmp.Or[factorize.Strategy](p.Strategy, factorize.OptimalStrategy{})
	return p
}

// Config returns the optimiser configuration of the plan, with privacy
// record priv.
func (p Plan) Config(priv *fedopt.Privacy) fedopt.Config {
	return fedopt.Config{Algorithm: p.Algorithm, Eta: p.Eta, EtaG: p.EtaG, Clip: p.Clip, Privacy: priv}
}

// Shape returns the shape of the plan's run.
func (p Plan) Shape() fedopt.Shape {
	return fedopt.Shape{Learners: p.Learners, Rounds: p.Rounds, Tau: p.Tau, Dim: p.Dim}
}

// ParamError is dpmf's argument error (the same type as
// fedopt.ParamError and factorize.ParamError): [Plan.Validate] returns it
// naming the field.
type ParamError = param.Error

// Validate checks p as it is, without defaults: every field must hold a
// value the audit can run, so a zero in a field that [Plan.WithDefaults]
// would fill in is refused as the mistake it is when p comes from user
// input. It returns a *[ParamError] naming the first bad field:
// Algorithm must be private; Learners, Rounds, Tau and Dim >= 1, and
// Rounds at most [factorize.MaxRounds]; Eta, EtaG, Clip and Eps finite and
// > 0, with max(Eta, Eta EtaG) Tau max(Clip, 1) at most
// [fedopt.MaxStepProduct] ([fedopt.Config.CheckSteps]); 0 < Delta < 1; 0 <= Dropout < 1; and Participation a pattern over
// Rounds rounds. [NewSetup] calls it on the
// plan with defaults.
func (p Plan) Validate() error {
	if !p.Algorithm.Private() {
		return &ParamError{Param: "Algorithm", Value: p.Algorithm, Want: "Correlated, Independent or BaselineCorrelated (the private algorithms, whose claim is audited)"}
	}
	d := Plan{}.WithDefaults()
	for _, f := range []struct {
		name string
		v    int
		def  int
	}{{"Learners", p.Learners, d.Learners}, {"Rounds", p.Rounds, d.Rounds}, {"Tau", p.Tau, d.Tau}, {"Dim", p.Dim, d.Dim}} {
		if f.v < 1 {
			return &ParamError{Param: f.name, Value: f.v, Want: fmt.Sprintf(">= 1 (WithDefaults reads 0 as unset: %d)", f.def)}
		}
	}
	if p.Rounds > factorize.MaxRounds {
		return &ParamError{Param: "Rounds", Value: p.Rounds, Want: fmt.Sprintf("1 to %d (factorize.MaxRounds)", factorize.MaxRounds)}
	}
	for _, f := range []struct {
		name string
		v    float64
		def  float64
	}{{"Eta", p.Eta, d.Eta}, {"EtaG", p.EtaG, d.EtaG}, {"Clip", p.Clip, d.Clip}, {"Eps", p.Eps, d.Eps}} {
		if !(f.v > 0) || math.IsInf(f.v, 1) {
			return &ParamError{Param: f.name, Value: f.v, Want: fmt.Sprintf("a finite number > 0 (WithDefaults reads 0 as unset: %v)", f.def)}
		}
	}
	if !(p.Delta > 0 && p.Delta < 1) {
		return &ParamError{Param: "Delta", Value: p.Delta, Want: fmt.Sprintf("0 < Delta < 1 (WithDefaults reads 0 as unset: %v)", d.Delta)}
	}
	// Each step finite, the product with tau and B_g can overflow
	// (fedopt.Config.CheckSteps): Eta 1e308 with Tau 10.
	if err := p.Config(nil).CheckSteps(p.Tau); err != nil {
		pe := *err.(*ParamError)
		pe.Param = map[string]string{"eta": "Eta", "eta_g": "EtaG"}[pe.Param]
		return &pe
	}
	if !(p.Dropout >= 0 && p.Dropout < 1) {
		return &ParamError{Param: "Dropout", Value: p.Dropout, Want: "a probability 0 <= p < 1"}
	}
	return p.Participation.Validate(p.Rounds)
}

// Setup is a plan with its factorization and privacy calibration, computed
// once and shared by any number of audits of the plan.
type Setup struct {
	// Plan is the plan, with defaults filled in.
	Plan Plan
	// Factorization is the factorization the noise comes from (the
	// identity for Independent).
	Factorization *factorize.Factorization
	// Privacy is the calibration the run's plan (package plan) gives: the
	// declared sensitivity (Privacy.Sensitivity) and noise std.
	Privacy *fedopt.Privacy
	// Progress, if not nil, is called by [Replay], [ReplayNetwork] and
	// [Canary] after each round of the federation they run, with the
	// rounds done and R, from the audit's goroutine (ReplayNetwork's
	// networked run of D, after the in-process rounds, is not counted;
	// Canary over gRPC reads the rounds back, and calls it, only once the
	// networked run has ended).
	// NewSetup leaves it nil; set it for a progress display.
	Progress func(done, total int)
}

// NewSetup fills in p's defaults, computes its factorization and calibrates
// its noise through the run's plan, as ofl and experiment.Experiment do
// (plan.Plan.Calibrate).
func NewSetup(ctx context.Context, p Plan) (*Setup, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// The audits need C: a strategy with a loss-only path forms it here.
	s, err := factorize.WithLossOnly(p.Strategy, false)
	if err != nil {
		return nil, err
	}
	p.Strategy = s
	// The audits need C, so the strategy's factorization is computed here
	// (with its factors); the plan calibrates it.
	w, err := factorize.Prefix(p.Rounds)
	if err != nil {
		return nil, err
	}
	if p.Algorithm == fedopt.Independent {
		s = factorize.IdentityStrategy{}
	}
	f, err := s.Factorize(ctx, w, p.Participation)
	if err != nil {
		return nil, fmt.Errorf("audit: %s factorization for %d rounds: %w", s.Name(), p.Rounds, err)
	}
	priv, err := p.calibrate(f)
	if err != nil {
		return nil, err
	}
	if f.C == nil || f.B == nil {
		// The replay and the whitener read the dense factors: form them
		// (the noise still streams from f's operator).
		b, c, err := f.Factors()
		if err != nil {
			return nil, fmt.Errorf("audit: factorization %q has no factors", f.Strategy)
		}
		g := *f
		g.B, g.C = b, c
		f = &g
	}
	return &Setup{Plan: p, Factorization: f, Privacy: priv}, nil
}

// calibrate returns the privacy record of the plan for f, whatever f's
// metrics claim: the run's plan (package plan) calibrated for f, with the
// plan's strategy spec, settings included (the identity for the
// independent baseline).
func (p Plan) calibrate(f *factorize.Factorization) (*fedopt.Privacy, error) {
	spec := plan.SpecOf(p.Strategy)
	if p.Algorithm == fedopt.Independent {
		spec = factorize.StrategyIdentity
	}
	pl := &plan.Plan{Algorithm: p.Algorithm.String(), Strategy: spec, Rounds: p.Rounds, Learners: p.Learners, Clip: p.Clip,
		Participation: f.Metrics.Participation.String(), Target: &plan.Target{Eps: p.Eps, Delta: p.Delta, Calibration: p.Calibration}}
	if err := pl.Calibrate(context.Background(), f); err != nil {
		return nil, err
	}
	return fedopt.PrivacyOf(pl)
}

// present reports whether learner i takes part in round r under the
// plan's dropout schedule: a pure function of (seed, r, i), independent of
// the data.
func (p Plan) present(r, i int) bool {
	if p.Dropout == 0 {
		return true
	}
	h := streamValue(purposeDropout, p.Seed, uint64(r*p.Learners+i))
	return float64(h>>11)/(1<<53) >= p.Dropout
}
