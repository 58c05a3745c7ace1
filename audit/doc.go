// Package audit checks a whole run's privacy claim in two ways, both on
// the real roles of package fedopt (learners, server, noise mechanism of
// package mechanism), run in one process or, for the canary audit, as
// package fednet's gRPC server and learners.
//
// The replay falsifier ([Replay]) runs the federation twice with identical
// randomness on neighbouring data sets: one client's sample is replaced by
// a worst-case one at every round it takes part in under the plan's
// participation, and both runs are fed the same released models. It
// records the quantity the mechanism privatizes before its noise (the
// server's aggregate g^r, the rows of G), measures ||C (G - G')||_F through
// the factorization's C as the sensitivity rule defines it, and checks it
// against the declared sensitivity, times 1 + 1e-12. It also checks that
// every data-independent decision is the same in both runs (who is in a
// round, the aggregation weights, the noise vectors), and that the noise
// the server added whitens, through the factorization, to independent
// rows of the declared scale (a key reused across rounds, or noise at the
// wrong scale, is caught there). This is the record-and-replay idea of
// Cebere, Erb, Desfontaines, Bellet and Fitzsimons ("Re:cord-play", arXiv
// 2602.17454) applied to a matrix-factorization release. A passing replay
// is evidence about the code path it ran, not a proof.
//
// The canary audit ([Canary]) plants m canary clients in one run, each
// included with probability 1/2 (its replace-one neighbour is the mirrored
// canary), observes only the released models, whitens them through the
// factorization, scores every canary and turns the scores into (a) a
// rigorous lower bound on epsilon at the run's delta with a stated
// confidence (one-run auditing, Steinke, Nasr and Jagielski, "Privacy
// auditing with one (1) training run", arXiv 2305.08846, Theorem 3.1
// with the delta term of their reference code), and (b) an estimate of
// the Gaussian-DP parameter mu with a confidence interval (Dong, Roth and
// Su 2022), which for a correct run contains the analytic mu =
// sensitivity / noise std. An interval above the claimed mu, or a
// one-run bound above the claimed eps, is a violation. Lower bounds are evidence, not proof: a run can pass and
// still be wrong where the audit did not look.
//
// With CanaryOptions.Network the canary audit runs the same federation
// over gRPC instead: a package fednet server on 127.0.0.1 with the same
// noise mechanism and key, and fednet.RunLearner goroutines given the
// adversarial model (fednet.LearnerOptions.Model). The followers and the
// observers read the released models back from the server's state
// directory, and the scores are computed as in process; a correct
// transport releases the in-process run's models bit for bit.
//
// Both audits use the package's adversarial data: a linear per-sample loss
// whose clipped gradient is a signed coordinate direction of norm B_g,
// with "follower" samples that read the released model (data chosen
// adaptively, which the guarantee covers; Denisov et al. 2022) so that
// one replaced sample flips its learner's whole local trajectory: the
// worst case that Algorithm 1's sensitivity 2 B_g / n per round assumes.
// The guarantee does not depend on the model, so auditing with this one
// loses nothing; docs/audit.md states what each number assumes.
package audit
