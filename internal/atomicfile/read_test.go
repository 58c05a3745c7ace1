package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
)

// ReadRegular reads regular files (also through a symbolic link), refuses
// every other kind of file without blocking, and bounds the size.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	if err := os.WriteFile(reg, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{reg, link} {
		if b, err := ReadRegular(p, 5); err != nil || string(b) != "hello" {
			t.Errorf("ReadRegular(%s, 5) = %q, %v; want hello", p, b, err)
		}
	}
	var te *TargetError
	if _, err := ReadRegular(reg, 4); !errors.As(err, &te) {
		t.Errorf("ReadRegular of 5 bytes with max 4: %v, want a *TargetError", err)
	}
	if _, err := ReadRegular(filepath.Join(dir, "none"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	refused := []string{"/dev/zero", dir}
	if testutil.HaveFIFO {
		fifo := filepath.Join(dir, "fifo")
		if err := testutil.Mkfifo(fifo, 0o600); err != nil {
			t.Skip(err)
		}
		refused = append([]string{fifo}, refused...)
	}
	for _, p := range refused {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(p, 1<<20); done <- err }()
		select {
		case err := <-done:
			if !errors.As(err, &te) {
				t.Errorf("ReadRegular(%s) = %v, want a *TargetError", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadRegular(%s) blocked", p)
		}
	}
}
