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
	"testing"
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
