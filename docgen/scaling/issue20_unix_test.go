//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A capped run stops the launcher and its command, and says so.
func TestCappedStopsTheCommand(t *testing.T) {
	dir := t.TempDir()
	e := &i20Env{ctx: context.Background(), tmp: dir}
	pidFile := filepath.Join(dir, "pid")
	start := time.Now()
	_, _, err := e.capped(300*time.Millisecond, 1, []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 30"})
	if err == nil || !strings.Contains(err.Error(), "stopped after 300ms") {
		t.Fatalf("error %v, want stopped after 300ms", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("returned after %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i == 100 {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command (pid %d) outlived its launcher", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
