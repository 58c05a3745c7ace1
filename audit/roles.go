package audit

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
)

// aggregator returns round r's pre-noise aggregate of the learners'
// updates (nil for a learner not in the round): the row g^r of G that the
// mechanism privatizes.
type aggregator func(r int, updates [][]float64) ([]float64, error)

// hooks are the test-only points at which the seeded bugs of the tests
// replace part of a role. They are unexported and only the package's
// tests set them: no production build can reach them.
type hooks struct {
	// declare replaces the declared privacy record.
	declare func(s *Setup) (*fedopt.Privacy, error)
	// mechanism replaces the noise mechanism of one run.
	mechanism func(s *Setup, std float64, key [32]byte) (mechanism.Mechanism, error)
	// aggregate wraps the server's aggregation.
	aggregate func(real aggregator, s *Setup) aggregator
	// noiseScale multiplies the noise std actually drawn while the
	// mechanism reports the declared one (the canary audit's halved-noise
	// setting); 0 means 1.
	noiseScale float64
	// models, if not nil, receives the released models x^0, ..., x^R of a
	// canary run.
	models *[][]float64
	// tamper, if not nil, changes the in-process models x^0, ..., x^R a
	// networked replay compares its release with.
	tamper func(xs [][]float64)
	// releaseScale, if not 0, multiplies the noise a replay's servers add
	// to the release after the recorder has seen it (a server that adds
	// other noise than it drew).
	releaseScale float64
	// steps, if not nil, counts the local steps: the samples the audit's
	// data streams hand out (TestLocalStepsCounted).
	steps *atomic.Int64
}

// stepCounter returns h.steps, or nil for no hooks.
func (h *hooks) stepCounter() *atomic.Int64 {
	if h == nil {
		return nil
	}
	return h.steps
}

// zeroNoise is a mechanism that adds nothing and reports the declared
// standard deviation: it lets a fedopt.Server compute its pre-noise
// aggregate exactly (the tap).
type zeroNoise struct {
	round, rounds, dim int
	std                float64
}

func (z *zeroNoise) Next(dst []float64) error {
	if z.round >= z.rounds {
		return mechanism.ErrExhausted
	}
	clear(dst)
	z.round++
	return nil
}
func (z *zeroNoise) Round() int        { return z.round }
func (z *zeroNoise) Rounds() int       { return z.rounds }
func (z *zeroNoise) Dim() int          { return z.dim }
func (z *zeroNoise) Std() float64      { return z.std }
func (z *zeroNoise) StateBytes() int64 { return 0 }

// serverAggregate returns the aggregation of the real fedopt.Server: a
// server at round r with model zero and no noise releases
// x^{r+1} = -eta~ g^r, so g^r = -x^{r+1} / eta~ (to a relative 2^-52 per
// entry, far below the 1e-12 of the checks).
func serverAggregate(cfg fedopt.Config, shape fedopt.Shape) aggregator {
	step := cfg.ServerStep(shape.Tau)
	return func(r int, updates [][]float64) ([]float64, error) {
		// Without the record: it binds the run's own mechanism, which the
		// tap's zero noise is not; the aggregation does not depend on it.
		tapCfg := cfg
		tapCfg.Privacy = nil
		tap, err := fedopt.NewServerAt(tapCfg, shape, &zeroNoise{round: r, rounds: shape.Rounds, dim: shape.Dim, std: cfg.Privacy.NoiseStd}, r, nil)
		if err != nil {
			return nil, err
		}
		if err := tap.Release(updates); err != nil {
			return nil, err
		}
		g := slices.Clone(tap.Model())
		for k := range g {
			g[k] = -g[k] / step
		}
		return g, nil
	}
}

// recorder records every noise vector a mechanism hands out.
type recorder struct {
	mechanism.Mechanism
	rows [][]float64
}

// Unwrap returns the recorded mechanism (mechanism.FactorizationOf reads
// its factorization).
func (c *recorder) Unwrap() mechanism.Mechanism { return c.Mechanism }

func (c *recorder) Next(dst []float64) error {
	if err := c.Mechanism.Next(dst); err != nil {
		return err
	}
	c.rows = append(c.rows, slices.Clone(dst))
	return nil
}

// scaled draws noise at scale times the inner mechanism's while reporting
// the inner standard deviation (test-only: the halved-noise canary run).
type scaled struct {
	mechanism.Mechanism
	scale float64
}

// Unwrap returns the inner mechanism (mechanism.FactorizationOf reads its
// factorization).
func (s scaled) Unwrap() mechanism.Mechanism { return s.Mechanism }

func (s scaled) Next(dst []float64) error {
	if err := s.Mechanism.Next(dst); err != nil {
		return err
	}
	for k := range dst {
		dst[k] *= s.scale
	}
	return nil
}

// newMechanism returns the run's noise mechanism: mechanism.New for the
// setup's factorization with key, unless a hook replaces it.
func newMechanism(s *Setup, h *hooks, std float64, key [32]byte) (mechanism.Mechanism, error) {
	var m mechanism.Mechanism
	var err error
	if h != nil && h.mechanism != nil {
		m, err = h.mechanism(s, std, key)
	} else {
		m, err = mechanism.New(s.Factorization, s.Plan.Dim, std, mechanism.WithKey(key))
	}
	if err != nil {
		return nil, err
	}
	if h != nil && h.noiseScale != 0 && h.noiseScale != 1 {
		m = scaled{m, h.noiseScale}
	}
	if m.Std() != std {
		return nil, fmt.Errorf("audit: mechanism with std %v, declared %v", m.Std(), std)
	}
	return m, nil
}
