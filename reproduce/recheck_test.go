package reproduce

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCommitChecksEveryTargetFirst: a destination that has become
// something that may not be replaced (a directory, a symbolic link) while
// the run was computing fails the commit before the first rename, so no
// file is replaced and the directory holds the old files, not a mix of
// new and old (cli.WriteOutputs checks every destination again the same
// way). Before, the files before it were renamed into place.
func TestCommitChecksEveryTargetFirst(t *testing.T) {
	for _, kind := range []string{"directory", "symlink"} {
		dir := t.TempDir()
		a := filepath.Join(dir, "a.csv")
		if err := os.WriteFile(a, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := newRunner(Options{Quick: true}, dir, "", false)
		r.ctx = t.Context()
		write := func(s string) func(io.Writer) error {
			return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
		}
		for _, name := range []string{"a.csv", "b.csv"} {
			if err := r.prepare(name, write("new")); err != nil {
				t.Fatal(err)
			}
		}
		b := filepath.Join(dir, "b.csv")
		var err error
		if kind == "directory" {
			err = os.Mkdir(b, 0o755)
		} else {
			err = os.Symlink("elsewhere", b)
		}
		if err != nil {
			t.Fatal(err)
		}
		err = r.commit(t.Context())
		r.discard()
		if err == nil {
			t.Fatalf("%s: commit over b.csv: no error", kind)
		}
		if got, err := os.ReadFile(a); err != nil || string(got) != "old" {
			t.Errorf("%s: a.csv holds %q (%v) after the failed commit, want the old content", kind, got, err)
		}
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmp) != 0 {
			t.Errorf("%s: temporary files left: %v", kind, tmp)
		}
	}
}
