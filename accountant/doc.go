// Package accountant calibrates Gaussian noise to a differential-privacy
// target (eps, delta) and bounds the privacy of a given noise level.
//
// # Overview
//
// A release M(D) = f(D) + Z, with f of L2 sensitivity Delta (the largest
// ||f(D) - f(D')|| over neighbouring data sets D, D') and Z independent
// N(0, V^2) entries, is the Gaussian mechanism. Its privacy depends only on
// the noise multiplier sigma = V / Delta, equivalently on mu = Delta / V =
// 1/sigma. [Sigma] returns the sigma for a target (eps, delta), [NoiseStd]
// the std V = sigma Delta, [Epsilon] the eps of a given sigma (optionally
// composed k times) and [Delta] the exact delta(eps) curve.
//
// For dpmf's matrix-factorization release B (C G + Z) the whole run is one
// Gaussian mechanism whose sensitivity is that of C G; the assumptions
// behind that sensitivity (replace-one neighbours, clipping, single
// participation) are stated in docs/privacy.md and in [NoiseStd]. The
// calibration of a dpmf run (which sensitivity, which method) is
// plan.Plan.Calibrate, the only place that puts these pieces together.
//
// # Methods
//
// Every [Method] is a valid (eps, delta)-DP guarantee; all but Exact are
// upper bounds on Exact's curve and return more noise. With
// L = log(1/delta) and rho = mu^2/2:
//
//	Exact        delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
//	             (Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2022, Cor. 2.13)
//	Paper        sigma = sqrt(2 L + eps) / eps   (the paper's calibration, after Denisov et al. 2022)
//	ZCDP         eps = rho + 2 sqrt(rho L)       (Bun & Steinke 2016, Prop. 1.3)
//	CKS          eps = inf_alpha alpha rho + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)
//	             (Canonne, Kamath & Steinke 2020)
//	RDP          the CKS expression minimised over the order grid of [RDPOrders]
//	             (Balle, Barthe, Gaboardi, Hsu & Sato 2020)
//	RDPMironov   eps = min_alpha alpha rho + L/(alpha - 1) over the grid (Mironov 2017, Prop. 3)
//	DworkRoth    sigma = sqrt(2 ln(1.25/delta)) / eps, only for eps < 1 (Dwork & Roth 2014, Thm. A.1)
//
// At (eps, delta) = (1, 1e-5) the multipliers are 3.7306 (Exact), 4.045
// (CKS), 4.051 (RDP), 4.901 (ZCDP, RDPMironov, Paper): the paper's classical
// calibration adds 31% more noise than needed. Dwork-Roth is refused for
// eps >= 1: its proof needs eps < 1, and for larger eps the formula is not
// (eps, delta)-DP (at eps = 10 and 20, delta = 1e-5, its sigma gives
// delta = 2.3e-5 and 1.5e-3); the refusal says so.
//
// Composition of k Gaussian mechanisms is exact: mu = sqrt(sum_j mu_j^2)
// ([ComposeGaussian], [Mu]); every method is applied to the composed
// mechanism.
//
// # Safe rounding
//
// No function errs on the unsafe side. Exact's searches bisect a bracket
// whose safe end has been checked to satisfy delta(eps; sigma) <= delta with
// the evaluation error of delta counted against it, and return that end:
// the result is never below the true root and at most about 1e-12 above it
// relatively (the bisection's 1e-13 plus the error allowance of delta). Closed forms and one-dimensional optimisations are rounded
// outward by a relative 1e-12 (sigma and eps up, rho down); a conversion
// minimised over Renyi orders is valid at every order, so an inexact
// minimiser only errs toward a larger eps. No function returns NaN or a
// negative eps: a conversion whose bound is negative returns 0, meaning
// (0, delta)-DP.
//
// # Numerics
//
// delta(eps) is evaluated without 1 + erf and without e^eps: with
// a = eps/mu - mu/2 and the Mills ratio Q(x) = Phi(-x)/phi(x),
// e^eps Phi(-b) = phi(a) Q(a + mu), so both terms are formed in log space;
// where they nearly cancel, Q(a) - Q(a + mu) is computed as an integral of a
// positive function. delta is accurate to a relative 1e-13 + 1e-15 a^2
// (a^2 is about 2 log(1/delta), so 1.5e-12 at delta = 1e-300), for eps up
// to 100 and beyond; the tests compare it with an independent evaluation in
// math/big at hundreds to thousands of bits.
//
// # Parameters and special cases
//
// Parameters are checked where they enter, by one shared set of checks:
// eps must be finite and > 0, delta in (0, 1), sigma and sensitivities
// finite and > 0, compositions >= 1. A violation is a *[ParamError] naming
// the parameter and its range; a method that cannot give a guarantee for
// valid parameters returns a *[MethodError] saying why. Each function lists
// its special cases (eps = +Inf, delta = 0, delta >= 1, sigma = 0,
// sensitivity = 0, overflow) in the style of package math.
//
// # Sampling: privacy loss distributions
//
// A run whose steps each use a Poisson sample of the records is accounted
// by the privacy-loss-distribution accountant: [GaussianPLD] and
// [SampledGaussianPLD] discretise one event, [PLD.Compose] and
// [PLD.SelfCompose] compose (by FFT), and [PLD.Delta] and [PLD.Epsilon]
// state the guarantee. [SampledGaussian], [SampledGaussianDelta],
// [SampledGaussianEpsilon] and [SampledGaussianSigma] do the common case of
// T identical sampled Gaussian steps on an automatically chosen grid, and
// [AmplifiedBanded] and [AmplifiedBandedSigma] the amplified banded matrix
// factorizations of Choquette-Choo et al. 2023 (Theorem 4: ceil(n/b)
// sampled Gaussian steps). The relation is add/remove by default, both
// directions accounted ([AddRemove]), or replace-one ([ReplaceOne]), for
// which the sampled Gaussian is accounted by a proven dominating pair that
// is an upper bound, tight at q = 1 (see [SampledGaussianPLD]).
//
// Every delta and eps of a PLD comes with two sides ([Bounds]):
// [PLD.DeltaBounds], [PLD.EpsilonBounds], [SampledGaussianDeltaBounds] and
// [SampledGaussianEpsilonBounds] return an optimistic value, a lower bound
// on the truth, and a safe (pessimistic) one, an upper bound; [PLD.Delta],
// [PLD.Epsilon] and every calibration use the safe one. Safe side: each
// event's discrete pair dominates the true pair (Doroshenko et al. 2022's
// "connect the dots", which keeps each grid cell's P- and Q-mass), cut upper
// tails count as infinite loss, and composition windows are cut by a
// Chernoff bound with the cut mass accounted. Optimistic side: each event is
// mapped to cells around the grid points and merged with fractions of its
// neighbours until each cell's loss reaches its grid point (a
// post-processing, so a dominated pair; the error is second order in the
// interval, like the safe side's), and cut tails are dropped. Rounding is
// bounded rigorously, with no fixed allowance: the masses' relative error
// multiplies the safe side and divides the optimistic one, and the FFT's
// error is bounded in an exponentially tilted l1 norm (the masses are
// multiplied by e^(t l) before the transform and divided after it), which
// makes it small relative to delta near delta = 1e-10; where it is not
// (rare steps of large loss, as at q = 1e-4, sigma = 1), the few spectral
// coefficients whose float64 error the k-th power amplifies are recomputed
// in double-word arithmetic. The bound is added to the safe side and
// subtracted from the optimistic one at every eps.
// docs/privacy.md states the argument and the measured width and cost (at
// delta = 1e-10, q = 0.01, sigma = 4, 1000 steps: eps in [0.468707,
// 0.468708]).
//
// # Errors and panics
//
// No function of this package panics, whatever its arguments: following
// the policy shared by dpmf's numerical packages (see package factorize),
// a parameter out of range is a *[ParamError] naming it (Param, Value,
// Want), so that a command maps it to a flag with errors.As, and a method
// that cannot give a guarantee a *[MethodError].
//
// # References
//
//   - B. Balle, Y.-X. Wang. Improving the Gaussian mechanism for differential
//     privacy: analytical calibration and optimal denoising. ICML 2018.
//   - J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS B 2022.
//   - M. Bun, T. Steinke. Concentrated differential privacy: simplifications,
//     extensions, and lower bounds. TCC 2016.
//   - C. Canonne, G. Kamath, T. Steinke. The discrete Gaussian for
//     differential privacy. NeurIPS 2020.
//   - I. Mironov. Renyi differential privacy. CSF 2017.
//   - B. Balle, G. Barthe, M. Gaboardi, J. Hsu, T. Sato. Hypothesis testing
//     interpretations and Renyi differential privacy. AISTATS 2020.
//   - C. Dwork, A. Roth. The algorithmic foundations of differential privacy.
//     FnT TCS 2014.
//   - S. Denisov, H. B. McMahan, J. Rush, A. Smith, A. Thakurta. Improved
//     differential privacy for SGD via optimal private linear operators on
//     adaptive streams. NeurIPS 2022.
//   - V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi. Connect
//     the dots: tighter discrete approximations of privacy loss
//     distributions. PETS 2022.
//   - Y. Zhu, J. Dong, Y.-X. Wang. Optimal accounting of differential
//     privacy via characteristic function. AISTATS 2022.
//   - B. Balle, G. Barthe, M. Gaboardi. Privacy amplification by
//     subsampling: tight analyses via couplings and divergences. NeurIPS
//     2018.
//   - A. Koskela, J. Jalko, A. Honkela. Computing tight differential privacy
//     guarantees using FFT. AISTATS 2020.
//   - C. A. Choquette-Choo, A. Ganesh, R. McKenna, H. B. McMahan, K. Rush,
//     A. Thakurta, Z. Xu. (Amplified) banded matrix factorizations: a
//     unified approach to private training. NeurIPS 2023.
//   - X. Zhang, Y. Zhu, M. Johansson (the paper dpmf implements).
//     Differentially private online federated learning with correlated noise.
package accountant
