//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/cli"
)

// A -data FIFO that no process writes blocks in open(2); an interrupt
// (ctx cancelled, as the first Ctrl-C does) must still end the run with
// one line and nothing written. It hung until a second signal killed it,
// in the simulation and in ofl evaluate alike.
func TestDataFIFOInterrupted(t *testing.T) {
	state := serveLoopback(t, []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "5"}, 2, "5")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"simulation", []string{"-rounds", "2", "-reps", "1", "-seed", "1"}, "ofl: interrupted; nothing written\n"},
		{"evaluate", []string{"evaluate", "-state", state, "-seed", "5"}, "ofl evaluate: interrupted; nothing written\n"},
	} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("no FIFO: %v", err)
		}
		out := filepath.Join(dir, "out")
		ctx, cancel := context.WithCancel(context.Background())
		var errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, append(c.args, "-data", fifo, "-out", out), env{stdout: io.Discard, stderr: &errb})
		}()
		time.Sleep(200 * time.Millisecond)
		cancel()
		hung := false
		select {
		case code := <-done:
			if code != cli.ExitFailure || errb.String() != c.want {
				t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.name, code, errb.String(), cli.ExitFailure, c.want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: still reading the FIFO 10 s after the interrupt", c.name)
			hung = true
		}
		// Let the reader blocked in open(2) go: open the FIFO for writing
		// and close it (the reader then sees an empty file).
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		if hung {
			<-done // it returns only now
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: -out %s exists (%v): an interrupted run writes nothing", c.name, out, err)
		}
	}
}
