// Mfsolve computes a matrix factorization A = B C of the prefix-sum workload
// (or of SGD with momentum, -workload momentum:BETA, or of a workload matrix
// read from a .npy file) and writes B, and optionally C, as .npy files.
//
// Usage:
//
//	mfsolve [flags]
//
// The main command computes the optimal factorization for 800 rounds
// (Denisov, McMahan, Rush, Smith, Thakurta 2022) and writes B:
//
//	mfsolve -R 800 -o B.npy
//
// It prints one summary line on stdout (strategy, R, loss, rmse, max_se,
// participation, gamma, unit_sensitivity, unit_sensitivity_exact,
// iterations, gap, seconds, cached, each explained by mfsolve -h, then the
// files written with their shapes: "; wrote B (800 x 800) to B.npy"), or one
// JSON object with -json. Factorizations are kept in a disk cache (see
// cache.Cache), so a second run with the same strategy and settings (the
// tolerance included), workload, R and participation loads the result
// instead of solving again. The cache keeps
// within a budget (-cache-budget, else $DPMF_CACHE_BUDGET, else 1G), evicting
// the least recently used entries; "mfsolve cache list" shows it and
// "mfsolve cache clear" empties it.
//
// Exit status: 0 on success, 2 on a usage error (a bad flag value), 1 on any
// other error. Every error is one line "mfsolve: ..." on stderr. See
// docs/cli.md for every flag, the cache and the memory check.
package main
