// Ofl runs the online federated optimiser of Zhang, Zhu and Johansson
// ("Differentially Private Online Federated Learning with Correlated Noise")
// on one configuration, repeated -reps times, and reports the loss error and
// regret round by round.
//
// Usage:
//
//	ofl [flags]
//	ofl reproduce PART... -out DIR [-quick] [-workers N] [-quiet]
//	ofl server -state DIR [-listen ADDR] [TLS flags] [run flags] [-data SRC [-split S] [-data-sha256 HEX]]
//	ofl learner -server ADDR -id I -seed S [-state DIR] [-colluders C] [TLS flags] [data flags]
//	ofl evaluate -state DIR -seed S [run and data flags]
//
// Without flags it runs the paper's Fig. 4 setting for Algorithm 1 with
// correlated noise from the optimal factorization at (5, 1e-3)-DP: n = 10
// learners, tau = 10 local steps, R = 800 rounds, synthetic(0.1, 0.1) data
// with d = 60, 20 repetitions:
//
//	ofl -out results -json
//
// writes results/rounds.csv (round, loss_error_mean, loss_error_std,
// regret_mean, regret_std, accuracy_mean, static_regret_mean,
// static_regret_std) and prints one JSON object with the configuration, the
// privacy record and the final metrics. Without -json it prints a short
// summary. A progress bar appears on stderr when stderr is a terminal.
//
// "ofl reproduce" rebuilds the paper's figures (PART is fig2, fig3, fig4,
// tuning, beyond or all; package reproduce) and writes PNG, SVG and CSV
// files and summary.md into DIR; -quick runs them at reduced sizes in
// seconds. See docs/reproduction.md.
//
// "ofl server", "ofl learner" and "ofl evaluate" run the same algorithm as
// separate processes over gRPC (package fednet): the server adds the noise
// and writes every released model to DIR, each learner computes its updates
// from its own data, and evaluate is the observer that reports on the
// released models what ofl reports for a simulated run. With the same flags
// and seed the released models are the simulation's, bit for bit. See
// docs/distributed.md.
//
// -secure-aggregation quantizes every update to the ring Z_2^64 (secure
// aggregation, package secagg; -threshold T sets its threshold, by default
// floor(2n/3)+1, and -colluders c the learners assumed to collude with the
// server, by default 0, with 2T > n + c required; it needs 2 to 255
// learners): the plan records c, the scale bits and the quantization term,
// and the calibration includes the term (the effective clip B_g' in the
// report). The simulated run runs the protocol in process every round
// (secagg.Run, nobody drops), whose exact ring sum gives the networked
// secure run's models bit for bit. Over the network each learner of a
// secure run needs -state DIR, a directory of its own per run, where it
// records durably which attempt of each round it unmasked and the newest
// model it received (its witness against a server rolled back behind it;
// in a plain run -state is optional and keeps the witness only).
//
// Exit status: 0 on success, 2 on a usage error (a bad flag value), 1 on any
// other error. Every error is one line "ofl: ..." on stderr. See
// docs/fedopt.md for the flags, the paper's experiments and the library.
package main
