// Package cli holds what dpmf's commands share: exit statuses, usage errors,
// one-line error messages and terminal detection.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses of every dpmf command.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // a runtime error
	ExitUsage   = 2 // a bad command line
)

// UsageError is a bad command line: exit status ExitUsage.
type UsageError struct{ Msg string }

// Error implements error.
func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// ExitCode returns the exit status for err: ExitOK for nil, ExitUsage for a
// *UsageError (possibly wrapped), ExitFailure otherwise.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	}
	return ExitFailure
}

// CheckNormal returns a *[UsageError] if the release sensitivity or the
// noise std of a calibration is below the normal float64 range (2.2e-308):
// there the floats keep few significant bits, so the reported sigma (noise
// std / sensitivity) is not the calibrated one (-clip 1e-310 -learners
// 1e18 reported sigma = 4 for a calibrated 3.73). flags names the flags
// that set the sensitivity, for the message.
func CheckNormal(flags string, sensitivity, noiseStd float64) error {
	const smallestNormal = 0x1p-1022
	if sensitivity < smallestNormal || noiseStd < smallestNormal {
		return Usagef("%s: the release sensitivity %g and noise std %g must be at least 2.2e-308 (the normal float64 range, where the calibration keeps its precision); use a larger -clip, fewer -learners or a smaller -eps",
			flags, sensitivity, noiseStd)
	}
	return nil
}

// OneLine joins the lines and runs of white space of a message, so that
// every error a command prints is one line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// SignalContext returns a context that is cancelled by the first SIGINT
// (Ctrl-C) or SIGTERM. After that first signal the default handling is
// restored, so a second one ends the process at once, even in a
// computation that does not check the context. Call stop when done.
func SignalContext() (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
