// Package param is the one argument error of dpmf's packages: each public
// package re-exports [Error] as its ParamError (a type alias), so that
// errors.As finds it whichever package returned it, and every message reads
// the same way: "dpmf: name = value, want range", or "dpmf: name is missing,
// want ..." for a nil or zero-value argument.
package param

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Text returns "name = value, want want", or "name is missing, want want"
// when value is nil. Floats are printed in the shortest form that reads
// back to the same value.
func Text(name string, value any, want string) string {
	switch v := value.(type) {
	case nil:
		return name + " is missing, want " + want
	case float64:
		return name + " = " + strconv.FormatFloat(v, 'g', -1, 64) + ", want " + want
	}
	return fmt.Sprintf("%s = %v, want %s", name, value, want)
}

// Error reports an argument that a package cannot accept: a nil or
// zero-value argument, or a value out of range. Every exported function of
// dpmf checks its arguments on entry and returns an *Error rather than
// panicking, so that a command can name the flag or file that caused it
// with errors.As instead of parsing the message.
type Error struct {
	// Param names the argument as the package's docs do, for example "R",
	// "tol", "eps", "delta", "eta", "workload", "r" or "shape".
	Param string
	// Value is the value received; nil when the argument is missing.
	Value any
	// Want describes what is accepted.
	Want string
}

// Error returns "dpmf: " and the one-line [Text] of the argument.
func (e *Error) Error() string { return "dpmf: " + Text(e.Param, e.Value, e.Want) }

// maxQuoted is the most bytes of an input that [Quote] shows.
const maxQuoted = 64

// Quote returns s quoted (strconv.Quote: one line, control characters
// escaped) for an error message, or, when s is longer than 64 bytes, its
// first 64 bytes (cut at a character boundary) quoted and followed by
// "... (N bytes)": an input of a megabyte makes an error of a line, not of
// a megabyte.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
