package accountant

import (
	"cmp"
	"context"
	"math"
	"strconv"

	"github.com/dpmf/dpmf/internal/param"
)

// ParamError reports a privacy parameter outside its allowed range. Every
// exported function of this package checks its inputs on entry and returns
// a *ParamError, never a NaN, for a value it cannot accept. It is dpmf's one
// argument error (the same type as factorize.ParamError and the others):
// Param names the parameter as the docs do ("eps", "delta", "sigma", ...),
// Value is the value received and Want the allowed range.
type ParamError = param.Error

// checkContext returns a *ParamError for a nil ctx: the functions that
// take a context refuse nil, as the standard library does, but with an
// error rather than a panic.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return &ParamError{Param: "ctx", Want: "a non-nil context.Context (context.Background() for none)"}
	}
	return nil
}

// checkPositive requires x to be finite and > 0. It is the check for eps,
// sigma, sensitivity and noise standard deviations.
func checkPositive(name string, x float64) error {
	if !(x > 0) || math.IsInf(x, 1) {
		return &ParamError{Param: name, Value: x, Want: "finite and > 0"}
	}
	return nil
}

// checkNonNegative requires x to be finite and >= 0 (rho, and the eps of
// a PLD query).
func checkNonNegative(name string, x float64) error {
	if !(x >= 0) || math.IsInf(x, 1) {
		return &ParamError{Param: name, Value: x, Want: "finite and >= 0"}
	}
	return nil
}

// checkDelta requires 0 < delta < 1. delta = 0 is pure DP, which no
// Gaussian mechanism gives; delta >= 1 is no guarantee at all.
func checkDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return &ParamError{Param: "delta", Value: delta, Want: "0 < delta < 1"}
	}
	return nil
}

// checkCount requires k >= 1, naming the parameter ("compositions",
// "steps", "bands").
func checkCount(name string, k int) error {
	if k < 1 {
		return &ParamError{Param: name, Value: float64(k), Want: "an integer >= 1"}
	}
	return nil
}

// checkEpsDelta is the shared check of a target (eps, delta).
func checkEpsDelta(eps, delta float64) error {
	return cmp.Or(checkPositive("eps", eps), checkDelta(delta))
}

// MethodError reports that a method gives no guarantee for the parameters
// asked (Dwork-Roth at eps >= 1, an eps too small for the RDP order grid),
// or that the answer does not fit in a float64.
type MethodError struct {
	Method Method
	Reason string
}

// Error returns a one-line message naming the method and the reason.
func (e *MethodError) Error() string {
	return "accountant: method " + e.Method.String() + ": " + e.Reason
}

func itoa(i int) string { return strconv.Itoa(i) }

// smallestNormal is the smallest normal float64, 2^-1022 (about 2.2e-308):
// below it a float64 keeps fewer than 53 significant bits.
const smallestNormal = 0x1p-1022

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
