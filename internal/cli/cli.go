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

	"github.com/dpmf/dpmf/internal/param"
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

// Want words a *param.Error (the ParamError of every dpmf package) for a
// message that already names the flag and its value: "want" and what the
// parameter wants; other errors are returned whole.
func Want(err error) string {
	var pe *param.Error
	if errors.As(err, &pe) {
		return "want " + pe.Want
	}
	return err.Error()
}

// CalibrationError words the calibration's refusal of its flags as a
// usage error naming them: a release sensitivity outside the normal
// float64 range (a *param.Error "release sensitivity", for -clip and
// -learners and, in with, what else it depends on) or a noise std below
// it (accountant.Scale's "sensitivity": the release sensitivity is
// normal, the noise std not). Other errors, and nil, are returned whole.
func CalibrationError(err error, clip float64, learners int, eps float64, with string) error {
	var pe *param.Error
	switch {
	case !errors.As(err, &pe):
		return err
	case pe.Param == "release sensitivity":
		return Usagef("-clip %g with -learners %d%s: the release sensitivity %v must be finite and at least 2.2e-308 (the normal float64 range, where the calibration keeps its precision); use another -clip or -learners", clip, learners, with, pe.Value)
	case pe.Param == "sensitivity":
		return Usagef("-clip %g with -learners %d and -eps %g: the noise std sigma x release sensitivity is below 2.2e-308 (the normal float64 range, where the calibration keeps its precision); use a larger -clip, fewer -learners or a smaller -eps", clip, learners, eps)
	}
	return err
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
