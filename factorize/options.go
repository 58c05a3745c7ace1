package factorize

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
)

// DefaultTol is the default certified relative duality gap of [Optimal].
const DefaultTol = 1e-10

// DefaultMaxIter is the default iteration limit of [Optimal]. It is a
// safeguard, not a stopping rule: reaching it is an error.
const DefaultMaxIter = 20000

// Method selects how [Optimal] evaluates the fixed-point map.
type Method int

const (
	// Auto uses the structured path when the workload's inverse is banded,
	// and the dense path otherwise.
	Auto Method = iota
	// Structured uses only banded kernels: O(R k^2) work and O(R k) memory
	// per quadrature node per iteration. It requires a banded inverse.
	Structured
	// Dense forms S = A^T A and takes a dense symmetric square root each
	// iteration: O(R^3) per iteration. It works for any workload.
	Dense
)

// String returns "auto", "structured" or "dense".
func (m Method) String() string {
	if m >= Auto && m <= Dense {
		return [...]string{"auto", "structured", "dense"}[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Progress reports the state of [Optimal] after an iteration.
type Progress struct {
	// Iter is the number of completed iterations.
	Iter int
	// Lower and Upper bound the optimal loss (dual and primal values).
	Lower, Upper float64
	// Gap is the relative duality gap (Upper - Lower) / Lower.
	Gap float64
	// Tol is the target gap.
	Tol float64
	// Coarse is zero for the problem that was asked for. While a coarse
	// level of a multilevel start runs ([OptimalBanded] on a Toeplitz
	// workload with many bands: the same problem at R/2, R/4, ...), it is
	// that level's order, and Gap and Tol are that level's (it is solved
	// to a loose gap only to start the next).
	Coarse int
}

// Options configure [Optimal] (and [OptimalStrategy]). The zero value is
// usable.
type Options struct {
	// Tol is the target relative duality gap; 0 means DefaultTol. The solver
	// stops when the certified gap is at most Tol.
	Tol float64
	// MaxIter bounds the iterations; 0 means DefaultMaxIter. Reaching it
	// before the gap is certified is an error of type *NotConvergedError.
	MaxIter int
	// LossOnly skips forming B and C: only the metrics are returned, in
	// O(R) memory on the structured path.
	LossOnly bool
	// Method selects the structured or dense path; Auto by default.
	Method Method
	// Progress, if not nil, is called after every iteration.
	Progress func(Progress)
}

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	o.Tol = cmp.Or(o.Tol, DefaultTol)
	if math.IsNaN(o.Tol) || o.Tol <= 0 || math.IsInf(o.Tol, 0) {
		return o, &ParamError{Param: "tol", Value: o.Tol, Want: "a finite number > 0"}
	}
	o.MaxIter = cmp.Or(o.MaxIter, DefaultMaxIter)
	if o.MaxIter < 0 {
		return o, &ParamError{Param: "max-iter", Value: o.MaxIter, Want: "an integer > 0 (or 0 for the default)"}
	}
	return o, nil
}

// NotConvergedError is returned by [Optimal] when the duality gap is not
// certified: the iteration limit was reached, or the gap stopped shrinking
// (it did not halve in 150 iterations), which happens when rounding in a
// dense evaluation of an ill-conditioned workload dominates the gap.
type NotConvergedError struct {
	// Iter is the number of iterations done.
	Iter int
	// Gap is the best certified relative gap reached; Tol the target.
	Gap, Tol float64
	// LastLower is the best lower bound on the optimal loss.
	LastLower float64
	// Stalled reports that the gap stopped shrinking before the limit.
	Stalled bool
	// Floor, when positive, is the smallest gap the evaluation's rounding
	// allows on this workload (about three times its relative error).
	Floor float64
	// Cause, when set, explains a stall or a floor in place of the dense
	// evaluation's rounding.
	Cause string
}

// Error implements error. Its advice is what [NotConvergedError.Advice]
// returns: a tolerance the solver certifies, or a higher iteration limit.
func (e *NotConvergedError) Error() string {
	tol, more := e.Advice()
	if !(e.Gap < math.Inf(1)) {
		// No positive lower bound or no feasible point: no gap to report.
		if more {
			return fmt.Sprintf("factorize: optimal factorization not certified after %d iterations: no finite duality gap yet, want <= %.3g (raise the iteration limit above %d)", e.Iter, e.Tol, e.Iter)
		}
		return fmt.Sprintf("factorize: optimal factorization stalled after %d iterations without a finite duality gap, want <= %.3g: no tolerance or iteration limit helps here (please report the inputs)", e.Iter, e.Tol)
	}
	if e.Floor > 0 && e.Cause != "" {
		return fmt.Sprintf("factorize: optimal factorization certified only to a gap of %.3g after %d iterations, want <= %.3g: %s limits the certificate for this workload to about %.1g (use a tolerance of at least %.0e)", e.Gap, e.Iter, e.Tol, e.Cause, e.Floor, tol)
	}
	if e.Floor > 0 {
		return fmt.Sprintf("factorize: optimal factorization certified only to a gap of %.3g after %d iterations, want <= %.3g: rounding in the dense evaluation limits the certificate for this workload to about %.1g (use a tolerance of at least %.0e, or a workload with a banded inverse)", e.Gap, e.Iter, e.Tol, e.Floor, tol)
	}
	if e.Stalled && e.Cause != "" {
		return fmt.Sprintf("factorize: optimal factorization stalled at a certified gap of %.3g after %d iterations, want <= %.3g: %s (use a tolerance of about %.0e)", e.Gap, e.Iter, e.Tol, e.Cause, tol)
	}
	if e.Stalled {
		return fmt.Sprintf("factorize: optimal factorization stalled at a certified gap of %.3g after %d iterations, want <= %.3g: rounding in the dense evaluation limits the certificate for this workload (use a tolerance of about %.0e, or a workload with a banded inverse)", e.Gap, e.Iter, e.Tol, tol)
	}
	return fmt.Sprintf("factorize: optimal factorization not certified after %d iterations: gap %.3g, want <= %.3g (raise the tolerance to %.0e, or the iteration limit above %d)", e.Iter, e.Gap, e.Tol, tol, e.Iter)
}

// Advice returns what a rerun can change to succeed. tol is a tolerance
// (one significant digit, rounded up) at least the gap the run certified,
// so that a rerun with it succeeds (the solvers are deterministic: it stops
// where this run reached that gap): the larger of 3 Floor and Gap for a
// floor, 10 Gap for a stall, else Gap; 0 when no gap was certified. more
// reports that the iteration limit stopped the run, so that a higher one
// may help (a stall does not yield to more iterations).
func (e *NotConvergedError) Advice() (tol float64, more bool) {
	more = !e.Stalled
	switch {
	case !(e.Gap < math.Inf(1)) || !(e.Gap >= 0):
		return 0, more
	case e.Floor > 0:
		tol = math.Max(3*e.Floor, e.Gap)
	case e.Stalled:
		tol = 10 * e.Gap
	default:
		tol = e.Gap
	}
	return roundUp1(tol, e.Gap), more
}

// roundUp1 rounds x > 0 up to one significant digit (ignoring a relative
// excess of 1e-9, rounding noise), so that %.0e prints it exactly, and
// then up by one digit until what %.0e prints is at least atLeast.
func roundUp1(x, atLeast float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	r := math.Ceil(x/p*(1-1e-9)) * p
	for {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'e', 0, 64), 64)
		if v >= atLeast {
			return v
		}
		r += p
	}
}
