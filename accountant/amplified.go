package accountant

import (
	"cmp"
	"context"
)

// This file holds the privacy accounting of amplified banded matrix
// factorizations (Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta,
// Xu 2023, "(Amplified) Banded Matrix Factorizations: A unified approach to
// private training", Theorem 4).
//
// The setting: a lower-triangular factor C with b bands (C[i][j] = 0 for
// i - j >= b) whose columns have L2 norm at most 1 after the clipping norm
// is divided out, and cyclic Poisson sampling: the records are split into b
// fixed groups, and step i (0-based) draws each record of group i mod b
// independently with probability q, so a record can take part only in the
// steps of its group, which are b apart. The release B (C G + Z) with
// Z of i.i.d. N(0, (sigma clip)^2) entries is then at least as private as
// ceil(n/b) adaptive compositions of the Poisson-subsampled Gaussian
// mechanism with sampling probability q and noise multiplier sigma. The
// reason: a record can take part only in the steps of its
// group, b apart, and the column of a b-banded C for step i touches only
// rows i, ..., i+b-1, so the participations of one record change disjoint
// blocks of rows of C G, each block with its own independent noise; the
// theorem handles the adaptivity of G by conditioning on earlier outputs.
//
// The theorem is stated for add/remove of one record. Its reduction uses
// the relation only in the last step: conditioned on the earlier outputs,
// each participation's block of rows is one Poisson-subsampled Gaussian
// step whose record term is C's column block times the record's
// contribution (present with probability q). Under replace-one the record
// at one position changes, keeps its group and its coins, and the block is
// the replace-one subsampled Gaussian step, which the replace-one pair of
// SampledGaussianPLD dominates; composing those pairs (Zhu, Dong & Wang
// 2022, Theorem 10) gives the replace-one accounting, an upper bound like
// that pair.
//
// What the caller must guarantee: C is b-banded, its largest column norm
// (gamma) and the record's sensitivity under the relation (clip for
// add/remove, 2 clip for replace-one) have been divided out of sigma
// (sigma = noise std / (clip gamma) or noise std / (2 clip gamma)), and the
// sampling is cyclic Poisson as above with n steps.

// BandedCompositions returns ceil(n/bands), the number of Poisson-subsampled
// Gaussian compositions that account an amplified banded factorization of n
// steps with the given number of bands. bands > n counts as n (one
// participation).
func BandedCompositions(n, bands int) (int, error) {
	if err := cmp.Or(checkCount("steps", n), checkCount("bands", bands)); err != nil {
		return 0, err
	}
	// ceil(n / bands) without the overflow of n + bands - 1 (which gave 0
	// compositions for bands near MaxInt).
	return (n-1)/bands + 1, nil
}

// AmplifiedBanded returns the PLD of an amplified banded matrix
// factorization mechanism (Choquette-Choo et al. 2023, Theorem 4):
// ceil(n/bands) compositions of the Poisson-subsampled Gaussian with
// sampling probability q and noise multiplier sigma under the relation rel
// ([SampledGaussian]; an upper bound under ReplaceOne with q < 1). Query it
// with [PLD.Delta] and [PLD.Epsilon].
//
// The caller guarantees the theorem's assumptions: C is lower-triangular
// with at most bands bands (C[i][j] = 0 for i - j >= bands); the records are
// split into bands fixed groups and step i (0-based) of the n steps draws
// each record of group i mod bands independently with probability q
// (cyclic Poisson sampling); and sigma is the noise std divided by the
// largest column norm of C times the clipping norm (AddRemove) or twice it
// (ReplaceOne).
//
// Special cases are those of [SampledGaussian], and:
//
//	AmplifiedBanded(q, sigma, n, b, r) is an error for n < 1 or b < 1
//	AmplifiedBanded(1, sigma, n, b, r) is ceil(n/b) Gaussian mechanisms (no
//	    amplification)
func AmplifiedBanded(q, sigma float64, n, bands int, rel Relation) (*PLD, error) {
	k, err := BandedCompositions(n, bands)
	if err != nil {
		return nil, err
	}
	return SampledGaussian(q, sigma, k, rel)
}

// AmplifiedBandedSigma returns a noise multiplier sigma (noise std divided
// by the largest column norm of C times the record's sensitivity under rel:
// the clipping norm for AddRemove, twice it for ReplaceOne) for which the
// amplified banded factorization with n steps, bands bands and cyclic
// Poisson sampling probability q is (eps, delta)-DP under rel:
// [SampledGaussianSigma] with ceil(n/bands) steps. The result is never
// below the least sigma the accountant certifies and within a relative
// 1e-4 of it. It returns ctx.Err() once ctx is done. Its errors are those
// of BandedCompositions and SampledGaussianSigma (a nil ctx is one).
func AmplifiedBandedSigma(ctx context.Context, q float64, n, bands int, eps, delta float64, rel Relation) (float64, error) {
	if err := checkContext(ctx); err != nil {
		return 0, err
	}
	k, err := BandedCompositions(n, bands)
	if err != nil {
		return 0, err
	}
	return SampledGaussianSigma(ctx, q, k, eps, delta, rel)
}
