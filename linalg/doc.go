// Package linalg holds the numerical kernels behind dpmf's factorizations:
// rational approximations of the inverse square root, shifted inverses of
// bidiagonal Gram matrices and of symmetric band matrices (their diagonals in
// O(n) work, or their dense inverses in O(n^2)), eigenvalue bounds by
// Sylvester inertia, the blocked reduction of a dense symmetric matrix to
// tridiagonal form on two cores ([Tridiagonalizer]) with the rational
// function of the tridiagonal matrix applied to many rows
// ([SymTridiag.ApplyRationalRows]), the band of M^{-1} and M^{-2} for a
// band matrix M ([SymBand.InverseBandSquaredRows], split at a separator
// onto two cores) and inner products ([Dot], and [Dot32] and [AxpyDot32] for the
// float32 vectors of the banded solver's L-BFGS memory, by chunks on as many
// cores as their length pays for). NumPy .npy input and output is package npy.
//
// # Assembly
//
// On amd64 CPUs with AVX2 and FMA (checked at start through
// golang.org/x/sys/cpu) the inner products of [Dot], [Dot32], [AxpyDot32] and of the
// band kernels run in assembly (dualdot_amd64.s, vec32_amd64.s: four-lane fused
// multiply-adds with several accumulators; the band kernels' inner products
// four at a time, four rows against one vector or one row against four
// vectors, so that each load of the shared operand serves four); elsewhere,
// and when built with -tags purego or run with GODEBUG=cpu.avx2=off (which
// golang.org/x/sys/cpu reads at start), they are loops in Go. The two differ by
// rounding only, and the tests check the assembly against sums formed in Go
// for every loop tail. The sixteen-shift recurrences of
// [BidiagGram.InvSqrtDiagParallel] run in AVX assembly too
// (invsqrt_lanes_amd64.s), without fused multiply-adds and in the order of
// operations of their Go fallbacks, so that the two give the same bits
// (checked by the tests).
//
// # Structure
//
// For the prefix-sum workload the inverse of A is bidiagonal, so the
// matrices whose inverse square roots the optimal factorization needs are of
// the form T = G G^T with G lower bidiagonal. The kernels here never form T:
// they work on G's entries with recurrences in which every operation adds or
// multiplies positive numbers, which keeps the small eigenvalues of T (the
// ones that matter most) accurate to a few units in the last place even when
// T's condition number is 1e10 and more.
//
// # Dependencies
//
// Dense matrices are gonum's (gonum.org/v1/gonum/mat). Band matrices are
// this package's own [SymBand] (symmetric, lower band storage) and
// [BidiagGram] and [SymTridiag] (their diagonals as slices): gonum's band
// types have no band LDL^T with inertia or selected inversion, which the
// kernels need. (Package factorize keeps a workload's banded inverse in a
// gonum mat.TriBandDense.) dpmf does not depend on a sparse-matrix package
// (github.com/james-bowman/sparse is unmaintained and cannot be fetched from
// the module proxy): every structure it needs is banded.
//
// # Errors and panics
//
// The kernels (BidiagGram, SymTridiag, SymBand, InvSqrtRational,
// Tridiagonalizer, Dot, Dot32, AxpyDot32) are
// LAPACK-style: their callers are numerical code that sizes dst and work as
// documented, and a slice shorter than documented, a band matrix of
// negative order or width ([NewSymBand]), an entry outside the band
// ([SymBand.Set]) or an interval that [InvSqrtInterval] refuses
// ([NewInvSqrtRational]: 0 < lo <= hi, well inside the float64 range) is
// a programmer error and panics with a
// "linalg: " message. Their loops are bounded for every input, NaN and Inf
// included: the eigenvalue bounds of a matrix whose spectrum is not
// finite and positive are NaN (hi) or 0 (lo), never an endless search.
package linalg
