package cli

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Interruptible returns f's answer; a ctx cancelled while f blocks returns
// ctx.Err() at once (f still blocked), and a ctx done before the call
// never starts f.
func TestInterruptible(t *testing.T) {
	ctx := context.Background()
	want := errors.New("f's error")
	if v, err := Interruptible(ctx, func() (int, error) { return 7, want }); v != 7 || err != want {
		t.Errorf("got %d, %v; want f's 7 and its error", v, err)
	}

	release := make(chan struct{})
	defer close(release)
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	v, err := Interruptible(cctx, func() (int, error) { <-release; return 1, nil })
	if v != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while f blocks: got %d, %v; want 0 and context.Canceled", v, err)
	}

	started := false
	if _, err := Interruptible(cctx, func() (int, error) { started = true; return 1, nil }); !errors.Is(err, context.Canceled) || started {
		t.Errorf("ctx done before the call: error %v, f started %v; want context.Canceled and f not started", err, started)
	}
}
