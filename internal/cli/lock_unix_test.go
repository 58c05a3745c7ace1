//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/flock"
)

// TestWriteOutputsUnlockableDir: an output directory that cannot be opened
// to lock it (as a directory with write and search permission but no read
// permission, mode 0300, is for its owner) or whose open file cannot be
// examined is named in the warning line the documentation promises, and
// the outputs are written all the same. lockOutputDirs skipped the first
// silently ("the renames will say what is wrong": they succeed), and
// called Sys on the nil FileInfo of a failed Stat (a panic).
func TestWriteOutputsUnlockableDir(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(string) (*os.File, error)
	}{
		{"open fails", func(dir string) (*os.File, error) {
			return nil, &os.PathError{Op: "open", Path: dir, Err: os.ErrPermission}
		}},
		{"stat fails", func(dir string) (*os.File, error) {
			f, err := os.Open(dir)
			if err == nil {
				f.Close() // its Stat fails
			}
			return f, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(o func(string) (*os.File, error)) { openDir = o }(openDir)
			openDir = c.open
			dir := t.TempDir()
			var stderr bytes.Buffer
			out := Output{File: File{Flag: "-o", Path: filepath.Join(dir, "B")}, Perm: 0o644, Write: func(w io.Writer) error {
				_, err := io.WriteString(w, "B")
				return err
			}}
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("panic: " + strings.TrimSpace(strings.SplitN(fmtAny(r), "\n", 2)[0]))
					}
				}()
				err = WriteOutputs(context.Background(), &stderr, "test: ", out)
			}()
			if err != nil {
				t.Fatalf("WriteOutputs: %v", err)
			}
			if got, err := os.ReadFile(out.Path); err != nil || string(got) != "B" {
				t.Errorf("output %q (%v), want B", got, err)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "test: -o "+out.Path+": cannot lock its directory") {
				t.Errorf("stderr %q, want one line naming -o and that its directory cannot be locked", stderr.String())
			}
		})
	}
}

// fmtAny formats a recovered value.
func fmtAny(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-error panic"
}

// TestLockOutputDirsOneOrder: the directories are locked in the order of
// their device and inode numbers, whatever the order of the outputs, so
// that two writers naming two directories in opposite orders (-o d1/B -C
// d2/C and -o d2/B -C d1/C) never each hold one that the other waits
// for. With the later directory held elsewhere, a writer whose first
// output is in that directory holds the earlier one while it waits (taken
// in the outputs' order, it would hold nothing and its twin would hold the
// earlier one: a deadlock). A flock is held by an open file, so an open
// file of this process stands for another process.
func TestLockOutputDirsOneOrder(t *testing.T) {
	lo, hi := t.TempDir(), t.TempDir()
	ino := func(dir string) uint64 {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(fi.Sys().(*syscall.Stat_t).Ino)
	}
	if ino(lo) > ino(hi) {
		lo, hi = hi, lo
	}
	other, err := os.Open(hi)
	if err != nil {
		t.Fatal(err)
	}
	if err := flock.TryExclusive(other); err != nil {
		t.Fatal(err)
	}
	outs := []Output{{File: File{Flag: "-o", Path: filepath.Join(hi, "B")}}, {File: File{Flag: "-C", Path: filepath.Join(lo, "C")}}}
	done := make(chan error, 1)
	var unlock func()
	go func() {
		var err error
		unlock, err = lockOutputDirs(context.Background(), io.Discard, "test: ", outs)
		done <- err
	}()
	probe, err := os.Open(lo)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := flock.TryExclusive(probe)
		if errors.Is(err, flock.ErrHeld) {
			break // the writer holds lo while it waits for hi
		}
		if err != nil {
			t.Fatal(err)
		}
		syscall.Flock(int(probe.Fd()), syscall.LOCK_UN)
		if time.Now().After(deadline) {
			other.Close()
			<-done
			unlock()
			t.Fatal("the writer waiting for the later directory does not hold the earlier one: the locks follow the outputs' order")
		}
		time.Sleep(5 * time.Millisecond)
	}
	other.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	unlock()
}
