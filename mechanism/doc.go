// Package mechanism turns a factorization A = B C into a stream of per-round
// Gaussian noise vectors for online private training with correlated noise.
//
// # Overview
//
// A factorization releases B (C G + Z): the workload A G (for example the
// prefix sums of the per-round updates G, one row of dimension d per round)
// plus correlated noise B Z, where Z has independent N(0, std^2) entries and
// one row per noise row of the factorization. Federated and other online
// training code does not want matrices: it wants, each round, the vector to
// add to that round's (clipped, averaged) update. Round r's vector is row r
// of M Z with M = A^{-1} B (C^{-1} for square factors; for the tree, the
// difference of consecutive rows of B), so that the sum of the noisy
// updates is A G + B Z. A [Mechanism] is that stream; [New] builds one from
// any factorization of package factorize, a noise standard deviation and
// options, and [NoiseMatrix] draws a whole stream as a matrix.
//
// The mechanism adds no privacy accounting: std must be calibrated by the
// caller, from the release's sensitivity (clip norm, learners averaged per
// round, neighbouring relation and the factorization's sensitivity under the
// participation: accountant.ReleaseSensitivity) and the accountant's noise
// multiplier; see [New] and the Example.
//
// # Mechanisms
//
// [New] applies the operator that the factorization's strategy built
// (factorize.Operator, the field f.Operator): the mechanism is the Gaussian
// source and the operator the recurrence, which declares the state it
// needs. Nothing is derived from the dense factors. State is counted in
// vectors of dimension d; work is per round.
//
//	independent (identity)  no state                 d Gaussians
//	tree                    floor(log2 R) vectors     d Gaussians, at most log2 R additions
//	banded (b bands)        b-1 vectors               d Gaussians, b-1 multiply-adds
//	blt (k buffers)         k vectors                 d Gaussians, 2k multiply-adds
//	banded-inverse (p)      p-1 vectors               d Gaussians, p multiply-adds
//	semiseparable (K)       K vectors                 d Gaussians, 3K multiply-adds (optimal, semiseparable)
//	toeplitz (sqrt), keep   r vectors (R at the end)  d Gaussians, r multiply-adds
//	toeplitz, regenerate    none                      (r+1) d Gaussians
//	dense, keep             r vectors (R at the end)  d Gaussians, r multiply-adds
//	dense, regenerate       none                      (r+1) d Gaussians
//
// The operators that read past noise rows (Toeplitz, dense) get them from
// the mechanism, which keeps or regenerates them ([WithMemory]). The dense
// operator works for any causal factorization, square or not, from
// M = A^{-1} B; it is what the optimal factorization streams with on
// workloads without a bidiagonal inverse, and what [WithDense] forces.
// Each operator is tested against the dense computation with the same Z.
// docs/mechanisms.md has measured costs and advice on which to choose.
//
// # Randomness
//
// Z comes from a counter-based source: the entries of noise row j at
// coordinates [b 4096, (b+1) 4096) are drawn from a ChaCha8 generator
// (math/rand/v2) whose 256-bit seed is SHA-256 of a domain string, the
// stream's key, j and b. Any block of Z can be regenerated at any time and
// in any order, which is what lets the regenerating mechanisms run with no
// state that grows with R or d (one 4096-entry block per goroutine), lets [WithStartRound] resume a stream after a
// checkpoint, and makes the output independent of how many goroutines
// ([WithWorkers]) fill a round: each block is computed the same way by
// whichever goroutine takes it. [DerivationFingerprint] identifies the
// derivation as the running binary computes it, so that a run can refuse
// to be resumed by a build that draws other bits (package fednet records
// it in run.json). The same key gives the same stream bit for
// bit for a given Go version, architecture and, on amd64, CPU features:
// compilers for some architectures fuse multiply-adds, and on amd64 the
// semiseparable operator's forward substitution (the optimal and
// semiseparable strategies) runs in assembly with fused multiply-adds
// where the CPU has AVX2 and FMA, so another CPU, GODEBUG=cpu.avx2=off or
// -tags purego changes the last bits of its stream (of the solvers'
// factors too). Resume a stream on the kind of machine that started it
// for the same bits; elsewhere its noise differs by rounding.
//
// Z depends on the key and nothing else: not on the factorization, R, d
// or std. Two mechanisms with one key draw the same noise rows (with
// different dimensions, the same entries on their common coordinates),
// so a key must serve one release only: two releases of one key, even of
// other strategies or sizes, share their noise rows (with the same
// operator, the difference of two releases of the same rounds is free of
// noise). Resuming a release ([WithStartRound]) is the one reuse that is
// intended.
//
// The key is 32 bytes from crypto/rand by default. [WithSeed] derives it
// from a 64-bit seed, for reproducible experiments: 64 bits can be searched,
// so a seeded stream must not protect a real release unless the seed is as
// secret and as random as a key. [WithKey] takes a full 256-bit key, and
// refuses the all-zero one, what an unset key holds.
//
// # Gaussian sampler and its limits
//
// Each entry is (*rand.Rand).NormFloat64 over the block's ChaCha8 stream:
// the ziggurat method of Marsaglia and Tsang (2000) with 128 layers. Known
// limits:
//
//   - Resolution. More than 99% of draws are a signed 32-bit integer times
//     a per-layer width, so they lie on a grid much coarser than float64
//     spacing; the low-order bits of an output are not those of a real
//     Gaussian.
//   - Tails. The tail beyond 3.4426 uses -log of 53-bit uniforms, so no
//     finite draw exceeds 3.442619855899 + sqrt(106 ln 2) = 12.0143 in
//     absolute value: the extreme tails are truncated (a true Gaussian
//     exceeds 12.0143 with probability 3.0e-33). Two uniforms that are
//     both 0 (probability 2^-106 per tail draw) give +-Inf.
//   - Floating point and side channels. Privacy analyses of the Gaussian
//     mechanism assume exact real-valued noise. Mironov (2012, "On
//     significance of the least significant bits for differential
//     privacy") showed that textbook floating-point Laplace samplers leak
//     the unnoised value through the set of representable outputs; this
//     sampler is not hardened against that kind of attack (no snapping or
//     rounding of outputs, no discrete Gaussian as in Canonne, Kamath and
//     Steinke 2020), and its rejection loop does not run in constant time.
//     Treat the privacy guarantee as holding for the idealised
//     real-valued mechanism.
//   - Independence. The analysis assumes that ChaCha8 with distinct
//     SHA-256-derived keys behaves as independent uniform bits; the
//     package's tests check the marginal distribution and the covariance
//     statistically, which cannot prove it.
//
// # Errors and panics
//
// Following the policy shared by dpmf's numerical packages (see package
// factorize): everything a caller's data can cause is an error. [New] and
// [NoiseMatrix] return a *[ParamError] naming the argument for a nil or
// zero-value factorization (or one without an operator), a nil mechanism,
// a nil option, a dimension, a standard deviation, a number of workers or
// a start round out of range, and other errors for a factorization that
// [WithDense] cannot stream (no factors, factors of the wrong size or not
// finite, not causal, B C not the workload, a dense operator beyond the
// machine's memory). A Mechanism's Next panics only
// for a destination whose length is not Dim(), a programmer error.
package mechanism
