package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// runPlan returns the plan mfsolve reports (-json prints it): the workload,
// R, the participation and the strategy, and with -eps and -delta the
// calibration's target for the online federated optimiser (algorithm
// correlated; its record once plan.Plan.Calibrate has run), and with
// -noise and -seed the seed's digest (plan.SeedDigest).
func (cfg config) runPlan(r int, s factorize.Strategy) *plan.Plan {
	p := &plan.Plan{Format: plan.Format, Workload: cfg.workload, Rounds: r, Participation: cfg.participation.String(), Strategy: plan.SpecOf(s)}
	if cfg.calibrate {
		p.Algorithm, p.Learners, p.Clip = plan.AlgoCorrelated, cfg.learners, cfg.clip
		cal, _ := plan.ParseCalibration(cfg.calibration) // checked by parseArgs
		p.Target = &plan.Target{Eps: cfg.eps, Delta: cfg.delta, Calibration: cal, Relation: cfg.relation.String(), Sampling: cfg.sampling}
	}
	if cfg.outNoise != "" && cfg.seedSet {
		// The noise key came from -seed: the plan says so as ofl's does
		// (no seed_sha256 means a key drawn at random).
		p.SeedSHA256 = plan.SeedDigest(cfg.seed)
	}
	return p
}

// calibrate sets the plan's privacy record for f (plan.Plan.Calibrate, the
// recipe: docs/privacy.md and docs/participation.md); flags whose product
// overflows are a usage error.
func calibrate(ctx context.Context, cfg config, p *plan.Plan, f *factorize.Factorization) error {
	err := cli.CalibrationError(p.Calibrate(ctx, f), cfg.clip, cfg.learners, cfg.eps, fmt.Sprintf(" and C's sensitivity %g", f.Metrics.UnitSensitivity.Value))
	var pe *accountant.ParamError
	if errors.As(err, &pe) && pe.Param == "eps" {
		// The sampled noise search's range (accountant.MaxSampledEps).
		return cli.Usagef("-eps %g: want %s", cfg.eps, pe.Want)
	}
	if errors.As(err, &pe) && pe.Param == "q" {
		// The sampling probability of the PLD accountant is -sampling.
		return cli.Usagef("-sampling %v: want %s", cfg.sampling, pe.Want)
	}
	return err
}

// noiseSamples draws the R x D noise matrix of f's streaming mechanism:
// row r is the vector added in round r. It stops when ctx is done, and it
// is an error if an entry is not finite (a -std so large that the noise
// overflows).
//
// When -memory auto makes the mechanism regenerate past rows (they would
// take more than mechanism.DefaultKeepLimit, or than the machine's
// memory), it says so on warn, with that reason.
func noiseSamples(ctx context.Context, cfg config, f *factorize.Factorization, res result, warn io.Writer) (*mat.Dense, error) {
	std := cfg.std
	if std == 0 && res.NoiseStd != nil {
		std = *res.NoiseStd
	}
	opts := []mechanism.Option{mechanism.WithMemory(memoryModes[cfg.memory])}
	if cfg.seedSet {
		opts = append(opts, mechanism.WithSeed(cfg.seed))
	}
	m, err := mechanism.New(f, cfg.dim, std, opts...)
	if err != nil {
		return nil, err
	}
	if msg := memoryWarning(m); msg != "" {
		fmt.Fprintln(warn, msg)
	}
	n := m.Rounds() - m.Round()
	z := mat.NewDense(n, m.Dim(), nil)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := m.Next(z.RawRowView(i)); err != nil {
			var oe *mechanism.OverflowError
			if errors.As(err, &oe) {
				return nil, fmt.Errorf("-noise: the noise of round %d is not finite: noise std %g overflows; use a smaller -std", oe.Round, std)
			}
			return nil, err
		}
	}
	return z, nil
}

// memoryWarning returns the warning for a mechanism that MemoryAuto made
// regenerate its past noise rows, or "".
func memoryWarning(m mechanism.Mechanism) string {
	reason := mechanism.AutoMemoryReason(m)
	if reason == "" {
		return ""
	}
	return fmt.Sprintf("-noise: %s, so they are regenerated each round instead (slower; -memory keep keeps them, -memory regenerate silences this warning)", reason)
}
