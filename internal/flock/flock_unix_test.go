//go:build unix

package flock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestExclusive: a second open file of a locked file, or of a locked
// directory, finds the lock held (ErrHeld and EWOULDBLOCK); Exclusive
// waits, saying so once, and takes it as soon as the first is closed; a
// cancelled wait returns ctx's error.
func TestExclusive(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{dir, dir + "/lock"} {
		if path != dir {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		a, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := TryExclusive(a); err != nil {
			t.Fatal(err)
		}
		if err := TryExclusive(b); !errors.Is(err, ErrHeld) || !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("%s: second lock: %v, want ErrHeld", path, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		if err := Exclusive(ctx, b, 5*time.Millisecond, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: cancelled wait: %v", path, err)
		}
		cancel()
		waits := 0
		time.AfterFunc(20*time.Millisecond, func() { a.Close() })
		if err := Exclusive(context.Background(), b, 5*time.Millisecond, func() { waits++ }); err != nil || waits != 1 {
			t.Errorf("%s: wait: %v after %d waiting calls, want nil after 1", path, err, waits)
		}
		b.Close()
	}
}
