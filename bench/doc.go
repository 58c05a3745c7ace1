// Package bench holds dpmf's benchmarks and the reference implementations
// they are compared against.
//
// # Benchmarks
//
// The factorization benchmarks (factorize_bench_test.go) time every strategy
// of package factorize on the prefix-sum workload against the number of
// rounds R, report allocations and, for the optimal strategy, the number of
// fixed-point iterations and the certified gap relative to its target:
//
//	go test -run '^$' -bench . ./bench/
//
// BenchmarkPlainDense at R = 800 takes minutes and runs only with
// DPMF_LONG=1 (and a longer -timeout).
//
// # Two cores on every heavy path
//
// The Par benchmarks (parallel_bench_test.go) time one heavy path each —
// the structured fixed point (R = 10^6, loss only, gap 1e-8), the dense
// path with B and C (R = 800; 2000 with DPMF_LONG=1), forming B and C at
// R = 10,000 and one round of the optimal mechanism at d = 10^6 — with the
// CPU seconds per operation and the cores used beside the wall time, for
// the ratio of GOMAXPROCS 1 to 2 on a shared machine (a -cpu list that
// starts and ends with the same value: the testing package runs a list's
// first value at its last, Go issue 49980; the metric procs shows the
// GOMAXPROCS each result ran at):
//
//	go test -run '^$' -bench Par -cpu 1,2,1 -count 3 ./bench/
//
// BenchmarkCeiling is the machine's own limit on the same ratio, a
// perfectly parallel kernel (compute-bound and memory-bound), to run in
// the same command.
//
// On an idle many-core Linux machine, bench/quietpair.sh pins the same
// paths' commands to a pair of cores (taskset) for the two-core targets,
// then runs them on every core; bench/rusage, the command it times each
// run with, prints the wall time, CPU time and peak memory of a command
// (docs/scaling.md, "A quiet pair of cores and sixteen"):
//
//	sh bench/quietpair.sh 2,3
//
// # Streaming the optimal factorization
//
// The command bench/optstream streams the optimal factorization's noise
// through the mechanism API (R = 10^5, d = 10^4 by default) and prints the
// solve time, the operator's state, the peak resident memory and the time
// per round against drawing d Gaussians in the same run; -dense measures
// the dense path (dense B, C and M = C^{-1}, past rows kept), which the
// mechanism took before the optimal factorization kept its quasiseparable
// form:
//
//	go run ./bench/optstream -R 100000 -d 10000 -workers 1
//	go run ./bench/optstream -R 10000 -d 10000 -workers 1 -dense -rounds 10
//
// # Secure aggregation's cost
//
// The command bench/secagg runs a fednet server and n learners on
// loopback with plain and with secure aggregation and prints a markdown
// table of the per-round wall time and bytes on the wire (medians over
// the rounds after the first) and their ratios:
//
//	go run ./bench/secagg -n 10 -d 1000000
//	go run ./bench/secagg -n 10,50 -d 10000,1000000 -rounds 3
//
// # Reference
//
// PlainDense is the plain dense fixed point of Denisov et al. (2022), one
// dense symmetric eigendecomposition per iteration and no acceleration,
// written independently of package factorize so that the speed-up of dpmf's
// solver is measured against an honest baseline at the same certified
// tolerance.
//
// The command docgen/scaling (not this package: the docs' generators live
// under docgen/) runs the measurements in one process and writes
// docs/scaling.md, with medians, the machine, the targets and a log-log
// plot:
//
//	go run ./docgen/scaling -out docs/scaling.md
package bench
