//go:build unix

package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileSizeLimited: the program runs with the limit set (the shell it
// execs reports it) and with its arguments as given, spaces and all; a
// write past the limit fails, and one within it succeeds.
func TestFileSizeLimited(t *testing.T) {
	out, err := FileSizeLimited(7, "/bin/sh", "-c", `ulimit -f; printf '%s|' "$@"`, "sh", "a b", "-c").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "7\na b|-c|"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small"), filepath.Join(dir, "big")
	// 4 blocks are at least 2048 bytes: 1000 bytes fit, 8192 do not.
	cmd := FileSizeLimited(4, "/bin/sh", "-c", `head -c 1000 /dev/zero > "$1" && head -c 8192 /dev/zero > "$2"`, "sh", small, big)
	if err := cmd.Run(); err == nil {
		t.Error("8192 bytes written under a limit of 4 blocks")
	}
	if fi, err := os.Stat(small); err != nil || fi.Size() != 1000 {
		t.Errorf("the write within the limit: %v, %v", fi, err)
	}
	if fi, err := os.Stat(big); err == nil && fi.Size() > 4096 {
		t.Errorf("%s has %d bytes, past the limit", big, fi.Size())
	}
}
