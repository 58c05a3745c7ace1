package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/factorize"
)

// TestNoiseState checks the "noise state per coordinate" column of the
// mechanisms table (docs/beyond.md) against what each mechanism must
// hold, at R = 100: nothing for identity, one vector per level below the
// root for the tree (floor(log2 R) = 6), bands - 1 = 15 past rows for
// banded, one buffer each for BLT, every past row (R) for sqrt's Toeplitz
// operator, and for optimal the state of its quasiseparable factor: more
// than none and far below the R past rows of a dense operator, the
// figure the docs quoted before optimal streamed its structured factor.
func TestNoiseState(t *testing.T) {
	const R = 100
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mech   string
		lo, hi float64
	}{
		{"identity", 0, 0}, {"tree", 6, 6}, {"banded", 15, 15}, {"blt:buffers=2", 2, 2},
		{"blt:buffers=4", 4, 4}, {"sqrt", R, R}, {"sqrt-normalized", R, R}, {"optimal", 1, R / 2},
	} {
		s, err := factorize.ParseStrategy(c.mech)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(context.Background(), w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		got, err := noiseState(f, R)
		if err != nil {
			t.Fatal(err)
		}
		if got < c.lo || got > c.hi {
			t.Errorf("%s: noise state %v float64 per coordinate, want in [%v, %v]", c.mech, got, c.lo, c.hi)
		}
	}
}

// TestBeyondTablesCopySummary keeps docs/beyond.md's tables what it says
// they are, copies of docs/reproduction/summary.md, which ofl reproduce
// writes: every row of a table there is a row of the summary (a
// regenerated summary with moved cells fails here until beyond.md
// follows).
func TestBeyondTablesCopySummary(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	summary := strings.Split(read(filepath.Join("reproduction", "summary.md")), "\n")
	rows := 0
	for _, line := range strings.Split(read("beyond.md"), "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		rows++
		if !slices.Contains(summary, line) {
			t.Errorf("docs/beyond.md has the table row\n\t%s\nwhich docs/reproduction/summary.md does not have", line)
		}
	}
	if rows < 20 {
		t.Errorf("docs/beyond.md has %d table rows, want its three tables", rows)
	}
}
