package cli

import "context"

// Interruptible runs f, which does not take a context (a blocking read
// such as the open of a FIFO that no process writes, or a long
// computation), and returns ctx.Err() as soon as ctx is done, so that the
// first SIGINT or SIGTERM ends the command at once; f's goroutine is then
// left to the process's exit. A ctx already done returns before f starts.
func Interruptible[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		v, err := f()
		done <- answer{v, err}
	}()
	select {
	case a := <-done:
		return a.v, a.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
