package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/plan"
)

// Plan is a run to audit: the federation's shape, the algorithm, the
// factorization of its noise, the participation of one sample, the privacy
// budget and its calibration, and the data-independent dropout schedule.
// The zero value of a field takes the default of the paper's Fig. 4
// setting (see [Plan.WithDefaults]).
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

// WithDefaults returns p with every zero field set to the paper's Fig. 4
// setting: n = 10, R = 800, tau = 10, d = 60, eta = 0.003, eta_g = 1,
// B_g = 5, (eps, delta) = (5, 1e-3).
func (p Plan) WithDefaults() Plan {
	p.Learners, p.Rounds = cmp.Or(p.Learners, 10), cmp.Or(p.Rounds, 800)
	p.Tau, p.Dim = cmp.Or(p.Tau, 10), cmp.Or(p.Dim, 60)
	p.Eta, p.EtaG, p.Clip = cmp.Or(p.Eta, 0.003), cmp.Or(p.EtaG, 1.0), cmp.Or(p.Clip, 5.0)
	p.Eps, p.Delta = cmp.Or(p.Eps, 5.0), cmp.Or(p.Delta, 1e-3)
	if p.Strategy == nil {
		p.Strategy = factorize.OptimalStrategy{}
	}
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

// validate checks what the roles do not check themselves.
func (p Plan) validate() error {
	if !p.Algorithm.Private() {
		return fmt.Errorf("audit: the %v algorithm makes no privacy claim to audit", p.Algorithm)
	}
	if p.Learners < 1 || p.Rounds < 1 || p.Tau < 1 || p.Dim < 1 {
		return fmt.Errorf("audit: plan of shape n = %d, R = %d, tau = %d, d = %d, want all >= 1", p.Learners, p.Rounds, p.Tau, p.Dim)
	}
	if !(p.Dropout >= 0 && p.Dropout < 1) {
		return fmt.Errorf("audit: dropout probability %v, want 0 <= p < 1", p.Dropout)
	}
	if math.IsInf(p.Clip, 0) || !(p.Clip > 0) {
		return fmt.Errorf("audit: clip %v, want a finite number > 0", p.Clip)
	}
	return nil
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
}

// NewSetup fills in p's defaults, computes its factorization and calibrates
// its noise through the run's plan, as ofl and experiment.Experiment do
// (plan.Plan.Calibrate).
func NewSetup(ctx context.Context, p Plan) (*Setup, error) {
	p = p.WithDefaults()
	if err := p.validate(); err != nil {
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
// metrics claim: the run's plan (package plan) calibrated for f.
func (p Plan) calibrate(f *factorize.Factorization) (*fedopt.Privacy, error) {
	pl := &plan.Plan{Algorithm: p.Algorithm.String(), Strategy: f.Strategy, Rounds: p.Rounds, Learners: p.Learners, Clip: p.Clip,
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
	h := experiment.RepSeed(p.Seed^0x6a09e667f3bcc909, r*p.Learners+i)
	return float64(h>>11)/(1<<53) >= p.Dropout
}
