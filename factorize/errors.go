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
type ParamError struct {
	// Param names the argument as the docs do: "ctx", "R", "beta", "tol",
	// "max-iter", "bands", "buffers", "strategy", "method", "workload",
	// "workload[2][3]", "weights[4]", "factorization", "B", "C".
	Param string
	// Value is the value received; nil when the argument is missing (a nil
	// pointer or a zero value that no constructor returns).
	Value any
	// Want describes what is accepted.
	Want string
}

// Error returns a one-line message naming the argument and what is wanted.
func (e *ParamError) Error() string { return "factorize: " + param.Text(e.Param, e.Value, e.Want) }

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
