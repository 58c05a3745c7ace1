package reproduce

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// A rename of reproduce's outputs that fails after others succeeded (here
// the second file's temporary file vanished) returns a *cli.WrittenError
// naming the file in place, which the test finds on disk, so that ofl
// does not report "nothing written". Before, commit returned the bare
// rename error.
func TestCommitNamesWhatAFailedRenameLeftWritten(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(Options{Quick: true}, dir, "", false)
	r.ctx = t.Context()
	defer r.discard()
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := r.prepare("a.csv", write("a")); err != nil {
		t.Fatal(err)
	}
	if err := r.prepare("b.csv", write("b")); err != nil {
		t.Fatal(err)
	}
	tmp, err := filepath.Glob(filepath.Join(dir, ".b.csv.tmp-*"))
	if err != nil || len(tmp) != 1 {
		t.Fatalf("temporary files of b.csv: %v, %v", tmp, err)
	}
	if err := os.Remove(tmp[0]); err != nil {
		t.Fatal(err)
	}
	err = r.commit(t.Context())
	var we *cli.WrittenError
	a := filepath.Join(dir, "a.csv")
	if !errors.As(err, &we) || len(we.Written) != 1 || we.Written[0] != a || !strings.HasSuffix(err.Error(), "("+a+" already written)") {
		t.Fatalf("commit: %v, want a *cli.WrittenError naming %s", err, a)
	}
	if b, err := os.ReadFile(a); err != nil || string(b) != "a" {
		t.Errorf("a.csv: %q, %v; want it in place", b, err)
	}
	// The first rename failing leaves nothing written: a plain error.
	r = newRunner(Options{Quick: true}, dir, "", false)
	r.ctx = t.Context()
	defer r.discard()
	if err := r.prepare("c.csv", write("c")); err != nil {
		t.Fatal(err)
	}
	tmp, _ = filepath.Glob(filepath.Join(dir, ".c.csv.tmp-*"))
	if len(tmp) != 1 || os.Remove(tmp[0]) != nil {
		t.Fatalf("temporary files of c.csv: %v", tmp)
	}
	if err := r.commit(t.Context()); err == nil || errors.As(err, &we) {
		t.Errorf("commit with the first rename failing: %v, want an error that is not a *cli.WrittenError", err)
	}
}
