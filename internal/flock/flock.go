// Package flock takes advisory exclusive locks with flock(2): held by an
// open file (a lock file, or a directory opened for reading), released by
// the kernel when the file is closed or the process exits, however it
// exits. fednet locks its state directories with it, the commands the
// directories of the outputs they write as one set (cli.WriteOutputs).
//
// Where there is no flock(2) (Windows), [TryExclusive] returns an error
// wrapping [errors.ErrUnsupported].
package flock

import (
	"context"
	"errors"
	"os"
	"time"
)

// ErrHeld is wrapped by the error of [TryExclusive] when another open file
// holds the lock.
var ErrHeld = errors.New("held by another process")

// Exclusive takes the exclusive lock on f, waiting while another process
// holds it: it tries every poll (50 ms if 0) until it succeeds, ctx is
// done (ctx's error), or the lock fails otherwise (that error). Before
// the first wait it calls waiting, if not nil, once.
func Exclusive(ctx context.Context, f *os.File, poll time.Duration, waiting func()) error {
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	for first := true; ; first = false {
		err := TryExclusive(f)
		if !errors.Is(err, ErrHeld) {
			return err
		}
		if first && waiting != nil {
			waiting()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
