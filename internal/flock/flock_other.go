//go:build !unix

package flock

import (
	"errors"
	"fmt"
	"os"
)

// TryExclusive returns an error wrapping errors.ErrUnsupported: there is no
// flock(2) here.
func TryExclusive(*os.File) error {
	return fmt.Errorf("flock: %w on this platform", errors.ErrUnsupported)
}
