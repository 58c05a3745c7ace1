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
