// Package experiment is the harness of the paper's experiments on top of
// the roles of package fedopt: a [Problem] is a data set (package dataset)
// and a model (package model) with the reference minimisers the metrics
// need; [Run] runs one repetition with a noise mechanism and returns a
// [Trace]; an [Evaluator] computes the trace's metrics from the released
// models; [Repeat] runs many repetitions in parallel and summarises them
// in a [Summary]; an [Experiment] does all of it for one configuration,
// including the factorization and the noise calibration, both from its
// plan (package plan: Experiment.Plan).
//
// # Metrics
//
// At the evaluated rounds a [Trace] records the loss error F(x^r) - F(x*)
// over all samples (the paper's y-axis), the accuracy, and the cumulative
// dynamic regret sum_{s<r} tau (f^s(x^s) - (f^s)*) and static regret
// sum_{s<r} tau (f^s(x^s) - f^s(x*)), f^s the average loss of round s's
// n tau samples. x* and every (f^s)* are computed by [NewProblem] to a
// gradient norm of 1e-10 and 1e-9 (Newton's method for model.Logistic).
//
// # Reproducibility
//
// With [Experiment.Seeded], repetition k's noise is seeded with
// [RepSeed](seed, k); repetitions run in parallel ([RepeatOptions.Workers])
// and are collected by index, so the numbers are the same bit for bit for
// any number of workers. A seeded noise is for experiments and
// reproductions, not for a release ([Result.NoiseSeeded] records it).
// Without Seeded, as in the zero value, each repetition's noise key is
// drawn from crypto/rand ([SecureNoise]) and the run cannot be repeated.
//
// A nil or zero-value *[Problem] or *[Experiment] is a *[ParamError].
package experiment
