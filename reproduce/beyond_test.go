package reproduce

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// TestReproductionFig4Table keeps docs/reproduction.md's Fig. 4 table true
// to docs/reproduction/summary.md's, row by row: every number the page
// prints is the summary's, rounded to the digits the page shows.
func TestReproductionFig4Table(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const head = "| calibration | budget | algorithm | tuned eta~ | noise std V | final loss error |\n"
	table := func(doc, name string) [][]string {
		_, rest, ok := strings.Cut(doc, head)
		if !ok {
			t.Fatalf("%s has no Fig. 4 table", name)
		}
		var rows [][]string
		for _, line := range strings.Split(rest, "\n")[1:] {
			if !strings.HasPrefix(line, "|") {
				break
			}
			rows = append(rows, strings.Split(strings.Trim(line, "|"), "|"))
		}
		return rows
	}
	page, summary := table(read("reproduction.md"), "docs/reproduction.md"), table(read(filepath.Join("reproduction", "summary.md")), "summary.md")
	if len(page) != len(summary) || len(page) == 0 {
		t.Fatalf("docs/reproduction.md's Fig. 4 table has %d rows, summary.md's %d", len(page), len(summary))
	}
	num := regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?`)
	for i := range page {
		for j := range page[i] {
			p, s := num.FindAllString(page[i][j], -1), num.FindAllString(summary[i][j], -1)
			if len(p) != len(s) {
				t.Errorf("row %d, column %d: the page has %q, summary.md %q", i+1, j+1, page[i][j], summary[i][j])
				continue
			}
			for k := range p {
				pv, _ := strconv.ParseFloat(p[k], 64)
				sv, _ := strconv.ParseFloat(s[k], 64)
				decimals := 0
				if _, frac, ok := strings.Cut(p[k], "."); ok && !strings.Contains(p[k], "e") {
					decimals = len(frac)
				}
				if math.Abs(pv-sv) > 0.5*math.Pow(10, -float64(decimals))+1e-12 {
					t.Errorf("row %d (%s): the page has %s, summary.md %s", i+1, strings.TrimSpace(page[i][2]), p[k], s[k])
				}
			}
		}
	}
}
