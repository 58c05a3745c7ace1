package reproduce

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// A file that Run would write but may not replace (a FIFO, a read-only
// file, a symbolic link) stops the run before any work: no file is
// written. Before, fig2's CSV and figures were written and the run failed
// only at summary.md, at the end of what may be an hour's run.
func TestRunChecksTargetsFirst(t *testing.T) {
	plant := map[string]func(path string) error{
		"summary.md": func(p string) error { return testutil.Mkfifo(p, 0o644) },
		"fig2.svg":   func(p string) error { return os.WriteFile(p, nil, 0o444) },
		"fig2.csv":   func(p string) error { return os.Symlink("elsewhere.csv", p) },
	}
	if !testutil.HaveFIFO {
		delete(plant, "summary.md")
	}
	for name, mk := range plant {
		dir := t.TempDir()
		if err := mk(filepath.Join(dir, name)); err != nil {
			t.Skip(err)
		}
		_, err := Run(context.Background(), []string{"fig2"}, dir, Options{Quick: true})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s planted: err = %v, want one naming it", name, err)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("%s planted: the directory holds %v, want only it", name, names)
		}
	}
}

// A run that fails its checks creates nothing: without the test data of
// "beyond" (a DataRoot that lacks it) Run fails before it makes the output
// directory or any of its missing parents. A run cancelled before its
// first file removes the directories it made.
func TestRunFailsWithoutCreating(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "x", "y")
	_, err := Run(context.Background(), []string{"all"}, out, Options{Quick: true, DataRoot: base})
	if err == nil || !strings.Contains(err.Error(), "breast_cancer.csv") {
		t.Errorf("no test data: err = %v, want one naming breast_cancer.csv", err)
	}
	if _, err := os.Lstat(filepath.Join(base, "x")); err == nil {
		t.Errorf("no test data: %s/x was created, want nothing", base)
	}

	// Cancelled at the real pass's first progress report: after the
	// checks and the dry pass, once the directories exist, before any
	// file is written.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	made := false
	_, err = Run(ctx, []string{"fig4"}, out, Options{Quick: true, Workers: 1, Progress: func(done, total int64) {
		if _, err := os.Stat(out); err == nil {
			made = true
		}
		cancel()
	}})
	if !errors.Is(err, context.Canceled) || !made {
		t.Fatalf("cancelled run: err = %v, directory made %v; want context.Canceled after the directory was made", err, made)
	}
	if _, err := os.Lstat(filepath.Join(base, "x")); err == nil {
		t.Errorf("cancelled run: %s/x was left behind, want it removed", base)
	}
}

// A run cancelled after a part's files are complete replaces nothing:
// every file of an earlier run in the directory keeps its content, no new
// file appears and no temporary file is left. Before, fig2's files were
// renamed into place as soon as fig2 was done, so a run interrupted during
// fig3 left fig2's new files beside the earlier run's summary.md, which
// described other numbers (for example a -quick summary beside a full
// fig2.csv).
func TestRunCancelledReplacesNothing(t *testing.T) {
	dir := t.TempDir()
	old := map[string]string{}
	for _, name := range append(outputFiles([]string{"fig2", "fig3"}), "summary.md") {
		old[name] = "an earlier run's " + name + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(old[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// fig2 reports no progress: the first report is fig3's, once fig2's
	// files are complete.
	_, err := Run(ctx, []string{"fig2", "fig3"}, dir, Options{Quick: true, Workers: 1, Progress: func(done, total int64) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		want, ok := old[e.Name()]
		if !ok {
			t.Errorf("%s appeared", e.Name())
			continue
		}
		if got, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil || string(got) != want {
			t.Errorf("%s was replaced (%d bytes), want the earlier run's", e.Name(), len(got))
		}
	}
	if len(ents) != len(old) {
		t.Errorf("%d entries, want the %d of the earlier run", len(ents), len(old))
	}
}

// TestRunChecksDataFirst: test data that cannot be read (a label that is
// not a number) fails a run of fig2 and beyond before any work, and the
// output directory is not created. Before, fig2 and beyond's tau sweep
// and mechanisms ran first (seconds with -quick, minutes in full) and the
// run failed only when the breast-cancer part read the file.
func TestRunChecksDataFirst(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "testdata", "breast_cancer.csv"), []byte("label,a\n1,2\nx,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "out")
	progressed := false
	_, err := Run(context.Background(), []string{"fig2", "beyond"}, out, Options{Quick: true, DataRoot: base,
		Progress: func(done, total int64) { progressed = true }})
	if err == nil || !strings.Contains(err.Error(), `breast_cancer.csv:3: label is "x"`) {
		t.Errorf("err = %v, want one naming breast_cancer.csv:3 and its label", err)
	}
	if progressed {
		t.Error("the run did work before it failed on the data")
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("%s was created, want nothing", out)
	}
}
