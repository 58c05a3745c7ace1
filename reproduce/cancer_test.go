package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCancerSectionDescribesItsData: the breast-cancer section of
// summary.md states the rows and features of the file it read (here the
// shipped file cut to its first 565 rows and its first 20 features, under
// Options.DataRoot), not the shipped file's 569 rows and 30 features,
// which it printed as fixed text whatever file it read.
func TestCancerSectionDescribesItsData(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "testdata", "breast_cancer.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(src)), "\n")
	var b strings.Builder
	for _, line := range lines[:1+565] {
		b.WriteString(strings.Join(strings.Split(line, ",")[:1+20], ",") + "\n")
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "testdata", "breast_cancer.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRunner(Options{Quick: true, DataRoot: root}, t.TempDir(), root, false)
	r.ctx = context.Background()
	defer r.discard()
	if err := r.cancer(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.sections) != 1 {
		t.Fatalf("%d sections, want 1", len(r.sections))
	}
	for _, want := range []string{"(565 rows, 20 standardised features)", "n = 10 learners, tau = 2, R = 28 (560 rows used)"} {
		if !strings.Contains(r.sections[0], want) {
			t.Errorf("the section does not say %q:\n%s", want, strings.SplitN(r.sections[0], "\n\n", 3)[1])
		}
	}
}
