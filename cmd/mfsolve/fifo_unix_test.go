//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/testutil"
)

// unblockFIFO opens the FIFO at path for writing without blocking and
// closes it, so that a reader still waiting in open(2) sees the end of the
// file and its goroutine ends; with no reader left it does nothing.
func unblockFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// TestSignalWhileReadingWorkload sends SIGTERM to a real mfsolve process
// whose -workload is a FIFO that nobody writes (as `-workload <(cmd)` is
// while cmd has not started): opening it waits for a writer, and the
// documented promise is that the first SIGINT or SIGTERM cancels the run in
// every phase. The process must end at once with exit status 1 and the
// one-line "interrupted; nothing written", writing no -o file. Before the
// fix it ignored the signal and waited in open(2) until killed.
func TestSignalWhileReadingWorkload(t *testing.T) {
	for _, wait := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "A.npy")
		require.NoError(t, syscall.Mkfifo(fifo, 0o600))
		cmd, stderr, stdout := startBinary(t, dir, nil, "-workload", "A.npy", "-o", "B.npy", "-no-cache")
		time.Sleep(wait)
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		ended := make(chan struct{})
		var rest []byte
		var code int
		go func() {
			rest, _ = io.ReadAll(stderr)
			code = exitCode(t, cmd)
			close(ended)
		}()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-ended
			t.Fatalf("mfsolve did not end within 10 s of SIGTERM while waiting for its -workload FIFO")
		}
		assert.Empty(t, stdout.String())
		if code == -1 && len(rest) == 0 {
			continue // the signal came before the handler
		}
		assert.Equal(t, cli.ExitFailure, code)
		assert.Equal(t, "mfsolve: interrupted; nothing written\n", string(rest))
		assert.Equal(t, []string{"A.npy"}, testutil.DirNames(t, dir), "no output written")
		return
	}
	t.Fatal("mfsolve died of SIGTERM before installing its handler three times")
}

// TestWorkloadFromFIFO checks that a workload streamed through a FIFO, as
// `-workload <(cmd)` gives it, is still read: the same metrics as from the
// regular file (the 3 x 3 prefix-sum matrix: the identity's loss is
// R (R + 1) / 2 = 6), and that a run cancelled while the FIFO has no
// writer returns at once.
func TestWorkloadFromFIFO(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "A.npy")
	writeNPY(t, regular, "<f8", "(3, 3)", f8(1, 0, 0, 1, 1, 0, 1, 1, 1))
	data, err := os.ReadFile(regular)
	require.NoError(t, err)
	fifo := filepath.Join(dir, "fifo.npy")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
	res := runT(t, "-workload", fifo, "-strategy", "identity", "-json")
	require.Equal(t, cli.ExitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"loss":6,`)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { unblockFIFO(fifo) })
	done := make(chan runResult, 1)
	go func() { done <- runIn(ctx, filepath.Join(dir, "cache"), "-workload", fifo, "-no-cache") }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case res := <-done:
		assert.Equal(t, cli.ExitFailure, res.code)
		assert.Equal(t, "mfsolve: interrupted; nothing written\n", res.stderr)
	case <-time.After(10 * time.Second):
		unblockFIFO(fifo)
		t.Fatal("a cancelled run still waits for its -workload FIFO")
	}
}
