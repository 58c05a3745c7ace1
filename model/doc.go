// Package model holds the losses that dpmf's online federated optimiser
// (package fedopt) trains: the [Model] interface (a per-sample loss and its
// gradient, optionally a [Minimizer], [Classifier] or [BatchEvaluator]),
// [Logistic] regression with an L2 term, and the reference minimisers
// [Minimize] and [LBFGS] that package experiment uses for x* and the
// per-round minima.
//
// A model is any [Model]; it must be safe for concurrent use. Everything a
// caller's data can cause is an error (a *[ParamError] for a nil model or a
// tolerance out of range, an [LBFGSError] for a search that stops above its
// tolerance), never a panic; samples whose slices disagree with their
// dimension and destination slices of the wrong length are programmer
// errors and panic.
package model
