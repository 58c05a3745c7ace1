package factorize

// SolverVersion names the numerics of this package's solvers: what a
// strategy computes for given settings. Stored results (package cache) are
// keyed by it, so that an entry computed by an older solver is not served
// after a change to the numbers.
//
// Bump it with every change that can change a factorization, a metric or a
// certificate for the same strategy settings: a solver's iteration,
// stopping rule or tolerance, a closed form's coefficients, a sensitivity
// rule, the rounding of a bound. A change that only adds settings (with
// their own cache keys, [CacheKey]) or that leaves every result bit for bit
// the same need not bump it; when in doubt, bump it: the cost is one
// recomputation per cached entry.
//
// History: 1, November 2026 (the band path's spectrum check by
// linalg.SymBand.ProvenAbove, and the certified bounds lowered by the
// LDL^T residual); 2, 28 November 2026 (the structured path's band case,
// momentum workloads, evaluated in double-word arithmetic, without the
// dense retry); 3, 28 November 2026 (the banded solver's dual bound
// without delta, which stops it earlier; fixed epochs on momentum in
// double-word arithmetic; the double-word kernel's sums by AddProd); 4,
// 28 November 2026 (the banded certificate's band of G in double-word
// arithmetic where the float64 one's rounding stops it, which stops the
// solver earlier at large R); 5, 28 November 2026 (the banded certificate's
// dual bound with a diagonal correction, which stops the solver earlier).
const SolverVersion = 5
