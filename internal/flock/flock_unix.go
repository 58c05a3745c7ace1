//go:build unix

package flock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// TryExclusive takes the exclusive lock on f without waiting. It returns
// nil, an error wrapping both [ErrHeld] and syscall.EWOULDBLOCK when
// another open file holds it, or flock's error (ENOLCK, EOPNOTSUPP: a file
// system without locks).
func TryExclusive(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w (%w)", ErrHeld, err)
	}
	return err
}
