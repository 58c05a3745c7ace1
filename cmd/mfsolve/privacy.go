package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
)

// calibration is the noise calibration of a run.
type calibration struct {
	noiseStd, sigma, sensitivity float64
	assumptions                  string
}

// calibrate returns the per-round noise std V that makes the release
// B (C G + Z) of the online federated optimiser (eps, delta)-DP, with
// G's rows the rounds' averaged updates. Neighbouring data sets differ in one
// client's sample (-relation: replace-one by default, or add/remove); a
// sample takes part in the rounds -participation allows; every per-sample
// gradient is clipped to norm clip. One sample changes its learner's
// average clipped update by at most 2 clip (clip for add/remove) and the
// average over n learners by 2 clip / n, in each round it takes part in, so
// ||C (G - G')||_F <= sens 2 clip / n with sens the sensitivity of C under
// the participation (accountant.ReleaseSensitivity; docs/privacy.md and
// docs/participation.md). The exact calibration uses that sensitivity and
// the analytic Gaussian mechanism; the paper's uses 2 sens clip and its
// closed-form formula.
func calibrate(ctx context.Context, cfg config, f *factorize.Factorization) (*calibration, error) {
	if cfg.sampling > 0 {
		return calibrateAmplified(ctx, cfg, f)
	}
	unit := f.Metrics.UnitSensitivity
	learners, method := cfg.learners, accountant.Exact
	if cfg.calibration == "paper" {
		learners, method = 1, accountant.Paper
	}
	sens, err := accountant.ReleaseSensitivity(cfg.clip, learners, cfg.relation, unit.Value)
	if err != nil {
		var pe *accountant.ParamError
		if errors.As(err, &pe) && pe.Name == "release sensitivity" {
			// The flags' product overflows or underflows.
			return nil, usagef("-clip %g with -learners %d and C's sensitivity %g: the release sensitivity is %v, want a finite number > 0",
				cfg.clip, cfg.learners, unit.Value, pe.Value)
		}
		return nil, err
	}
	std, err := accountant.NoiseStd(cfg.eps, cfg.delta, sens, method)
	if err != nil {
		return nil, err
	}
	if math.IsInf(std, 0) || math.IsNaN(std) {
		return nil, fmt.Errorf("the noise std for (%g, %g)-DP at sensitivity %g is %v: no finite noise gives this guarantee", cfg.eps, cfg.delta, sens, std)
	}
	bound := ""
	if !unit.Exact {
		bound = " (an upper bound)"
	}
	return &calibration{
		noiseStd:    std,
		sigma:       std / sens,
		sensitivity: sens,
		assumptions: fmt.Sprintf("(%g, %g)-DP, %s calibration, release sensitivity %.6g: %s client sample, participation %v with C's sensitivity %.6g%s, clip %g, %d learners",
			cfg.eps, cfg.delta, cfg.calibration, sens, cfg.relation, f.Metrics.Participation, unit.Value, bound, cfg.clip, cfg.learners),
	}, nil
}

// calibrateAmplified is the calibration of -sampling q: the amplified
// banded accounting of Choquette-Choo et al. 2023 (Thm. 4). C has b bands;
// the samples are split into b groups and round r samples each member of
// group r mod b with probability q (cyclic Poisson sampling), so a sample
// takes part only in rounds b apart, and the release is as private as
// ceil(R/b) compositions of the Poisson-subsampled Gaussian mechanism with
// noise multiplier sigma = V / sens, sens the release sensitivity of one
// participation under -relation (accountant.ReleaseSensitivity with gamma,
// the largest column norm of C, since each participation moves its own
// block of b rows): clip / n x gamma for add/remove, 2 clip / n x gamma for
// replace-one, whose accounting is an upper bound (see
// accountant.SampledGaussianPLD). The search stops when ctx is done.
func calibrateAmplified(ctx context.Context, cfg config, f *factorize.Factorization) (*calibration, error) {
	if f.C == nil {
		return nil, fmt.Errorf("-sampling needs the factor C to count its bands")
	}
	b := f.Metrics.Participation.B // the groups of the sampling
	if bands, ok := factorize.Bands(f.C); !ok || bands > b || f.Metrics.Participation.Kind != factorize.KindMinSep {
		return nil, fmt.Errorf("-sampling needs a lower-triangular C with at most %d bands", b)
	}
	r, _ := f.C.Dims()
	sens, err := accountant.ReleaseSensitivity(cfg.clip, cfg.learners, cfg.relation, f.Metrics.Gamma)
	if err != nil {
		return nil, err
	}
	sigma, err := accountant.AmplifiedBandedSigma(ctx, cfg.sampling, r, b, cfg.eps, cfg.delta, cfg.relation)
	if err != nil {
		return nil, err
	}
	std, err := accountant.Scale(sigma, sens)
	if err != nil {
		return nil, err
	}
	k, _ := accountant.BandedCompositions(r, b)
	// Both sides of the PLD's eps at the calibrated sigma: the safe one
	// (at most cfg.eps) is the guarantee, the optimistic one shows the
	// accountant's own slack.
	eb, err := accountant.SampledGaussianEpsilonBounds(cfg.sampling, sigma, k, cfg.delta, cfg.relation)
	if err != nil {
		return nil, err
	}
	bound := ""
	if cfg.relation == accountant.ReplaceOne && cfg.sampling < 1 {
		bound = " (an upper bound)"
	}
	return &calibration{
		noiseStd:    std,
		sigma:       sigma,
		sensitivity: sens,
		assumptions: fmt.Sprintf("(%g, %g)-DP, amplified banded accounting (PLD, %d compositions of the Poisson-subsampled Gaussian%s): cyclic Poisson sampling q = %g over %d groups (C has at most %d bands), %s client sample, release sensitivity %.6g per participation (gamma %.6g), clip %g, %d learners; PLD eps at this sigma %.6g (safe), %.6g (optimistic)",
			cfg.eps, cfg.delta, k, bound, cfg.sampling, b, b, cfg.relation, sens, f.Metrics.Gamma, cfg.clip, cfg.learners, eb.Safe, eb.Optimistic),
	}, nil
}

// noiseSamples draws the R x D noise matrix of f's streaming mechanism:
// row r is the vector added in round r. It stops when ctx is done, and it
// is an error if an entry is not finite (a -std so large that the noise
// overflows).
//
// When -memory auto makes the mechanism regenerate past rows (they would
// take more than mechanism.DefaultKeepLimit), it says so on warn.
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
	if _, auto, _ := mechanism.MemoryOf(m); !auto {
		return ""
	}
	return fmt.Sprintf("-noise: keeping the past noise rows would take more than %d GiB, so they are regenerated each round instead (slower; -memory keep keeps them, -memory regenerate silences this warning)",
		mechanism.DefaultKeepLimit>>30)
}
