package factorize

import (
	"context"

	"github.com/dpmf/dpmf/internal/param"
)

// ParamError reports an argument that the package cannot accept: a nil or
// zero-value workload or factorization, a number of rounds, a tolerance, an
// option or a matrix entry out of range. Every exported function checks its
// arguments on entry and returns a *ParamError rather than panicking, so
// that a command can name the flag or file that caused it with errors.As
// instead of parsing the message.
// It is dpmf's one argument error, the same type as accountant.ParamError
// and the others' (internal/param.Error), with one message format.
type ParamError = param.Error

// wantWorkload is what a *Workload argument must be.
const wantWorkload = "a workload made by Prefix, Momentum, WeightedPrefix or NewWorkload"

// checkContext returns a *ParamError (Param "ctx") for a nil context:
// every function that takes one refuses nil, as the standard library asks,
// with an error rather than a panic.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return &ParamError{Param: "ctx", Want: "a non-nil context.Context (context.Background() for none)"}
	}
	return nil
}

// checkWorkload returns a *ParamError for a nil workload or a zero Workload.
func checkWorkload(w *Workload) error {
	if w == nil || w.r < 1 || (w.a == nil && w.inv == nil) {
		return &ParamError{Param: "workload", Want: wantWorkload}
	}
	return nil
}
