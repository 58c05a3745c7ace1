//go:build !unix

package cli

import (
	"context"
	"io"
)

// lockOutputDirs locks nothing where there is no flock(2): two processes
// writing the same outputs at once may leave outputs of two runs.
func lockOutputDirs(context.Context, io.Writer, string, []Output) (func(), error) {
	return func() {}, nil
}
