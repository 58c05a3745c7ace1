// Package factorize computes matrix factorizations A = B C of a linear
// workload A for differentially private releases with correlated noise.
//
// # Overview
//
// A mechanism that releases A G (for example the prefix sums of a stream of
// gradients G, one row per round) privately can instead release
// B (C G + Z), with Z a matrix of independent Gaussian noise. The privacy cost
// is governed by the sensitivity of C G and the error by B Z. The
// sensitivity depends on how often one sample takes part in the stream, its
// [Participation]: single participation (one round), fixed epochs, or
// b-min-separation; [SensitivityOf] computes it (exactly, or as an upper
// bound where the exact value is intractable, never below it). For single
// participation it is the largest column norm of C, written gamma.
//
// A [Strategy] is a value with its own options ([IdentityStrategy],
// [TreeStrategy], [SqrtStrategy], [BandedStrategy], [BSRStrategy],
// [BandedToeplitzStrategy], [BISRStrategy], [BandInvStrategy],
// [BLTStrategy], [SemisepStrategy], [OptimalStrategy]). A spec names one
// with its settings, "banded:bands=64", "blt:buffers=4",
// "optimal:tol=1e-10,path=dense" (a bare name has the defaults):
// [ParseStrategy] reads it and [Strategy.Spec] writes it. The registry
// ([Registry], [Lookup]) lists the strategies with their settings, the
// memory of their noise stream ([StreamBytes]) and of their solve
// ([SolveBytes]), whether they have a loss-only path ([WithLossOnly]) and
// which workloads they factorize ([StrategyInfo.Serves]: a *[ParamError]
// naming "workload" for one a strategy does not serve, which its
// Factorize refuses too), so that commands need not know strategies by
// name. Its Factorize
// method returns a [Factorization] whose [Metrics] are computed under the
// participation it is given:
//
//	gamma        max_j ||C[:, j]||_2
//	sensitivity  sens, the sensitivity of C under the participation (gamma for single)
//	loss         sens^2 ||B||_F^2          (total squared error per unit noise)
//	RMSE         sqrt(loss / R)
//	MaxSE        sens^2 max_r ||B[r, :]||^2 (worst round)
//
// The sensitivity of a release (clip norm, learners averaged, neighbouring
// relation) is sens times the bound on one round's change:
// accountant.ReleaseSensitivity. A factorization also owns the operator
// its noise streams with ([Factorization.Operator], an [Operator]: the
// recurrence of its structure and the state it needs), which package
// mechanism applies; B and C are formed densely only when asked for
// ([Factorization.Factors]). [Record] is the stored form (package cache).
//
// # Strategies
//
//   - identity: C = I, B = A (independent noise every round).
//   - tree: binary-tree aggregation (Dwork et al. 2010; Chan, Shi, Song 2011);
//     C has one row per dyadic interval.
//   - sqrt: C = B = A^{1/2}, the lower-triangular Toeplitz square root of the
//     prefix-sum matrix (Henzinger, Upadhyay, Upadhyay 2023; Fichtenberger et al. 2023).
//   - sqrt-normalized: the same C with unit column norms, and B = A C^{-1}
//     recomputed.
//   - banded: a lower-triangular C with b bands; under b-min-separation the
//     certified optimal banded factor with unit columns ([OptimalBanded]),
//     otherwise a banded Toeplitz fit ([BandedStrategy]).
//   - bsr: the banded square root with unit columns ([BandedSqrt]; Kalinin
//     and Lampert 2024).
//   - banded-toeplitz: C lower-triangular banded Toeplitz with b
//     coefficients and unit norm, optimised for the loss under the
//     participation (under fixed epochs, the single-participation loss;
//     McKenna 2024), see [BandedToeplitzStrategy].
//   - bisr: the banded inverse square root: C^{-1} banded Toeplitz with the
//     first p coefficients of (1 - x)^{1/2}, C = its Toeplitz inverse
//     (Kalinin, McKenna, Upadhyay, Lampert 2025), see [BISRStrategy];
//     the noise streams with p-1 past noise rows.
//   - bandinv: the same structure with the p coefficients of C^{-1}
//     optimised for the loss under the participation (under fixed epochs,
//     the single-participation loss; BandInvMF), see [BandInvStrategy].
//   - blt: buffered linear Toeplitz ([BLT]; under min-separation fitted to
//     that loss, [BLTMinSep]).
//   - semiseparable: the optimal X with T^{-1/2} replaced by a k-term
//     rational approximation, so that C^{-1} streams with k state vectors
//     and the loss is within a chosen excess of the certified optimum, see
//     [SemisepStrategy].
//   - optimal: the minimiser of ||A C^{-1}||_F^2 subject to unit column norms
//     of C (Denisov, McMahan, Rush, Smith, Thakurta 2022, Theorem 3.2), found
//     by an accelerated fixed-point iteration with a certified stopping rule
//     (the relative duality gap), see [Optimal]; under k fixed epochs the
//     multi-epoch optimum with sensitivity 1 ([OptimalEpochs]).
//
// [Strategies] lists every name, in this order (a test checks this list).
//
// # Causality
//
// Every factorization here can be used online: round r's release uses only
// noise drawn by round r. For square factors this means B and C are lower
// triangular. For the tree, C has one row per node, and
// [Factorization.Available] records the round at which each node's noise is
// first used.
//
// # Changing a solver
//
// A change to the numbers a strategy computes (an iteration, a stopping
// rule, a closed form, a sensitivity rule, a bound's rounding) bumps
// [SolverVersion]: the cache keys its entries by it, and without the bump
// results of the old solver would still be loaded after the fix.
//
// # Errors and panics
//
// dpmf's numerical packages (linalg, factorize, mechanism, fedopt,
// accountant) share one policy, after gonum's. Anything a caller's data can
// cause is an error, never a panic: a nil or zero-value *[Workload],
// *[Factorization] or matrix, a number of rounds, a tolerance, an option
// or a matrix entry out of range, a nil context. Argument errors are a
// *[ParamError] whose Param names the argument ("ctx", "R", "beta", "tol", "max-iter", "bands",
// "buffers", "strategy", "method", "participation", "workload",
// "workload[i][j]", "weights[i]", "factorization", "B", "C"), so that a
// command can map it to its flag with errors.As instead of reading the
// message. Numerical
// failures are typed too (*[NotConvergedError]).
//
// A panic is a bug in the calling program, and is documented where it can
// happen: a negative count given to [SqrtCoefficients],
// [InverseSqrtCoefficients] or [BLTParams.Coefficients] (as for make), a
// BLTParams whose Lambdas is shorter than its Weights, and methods called
// on a nil *Workload or *BLTParams. The zero Workload is not a workload:
// functions that take one return a *[ParamError] for it.
package factorize
