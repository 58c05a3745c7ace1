package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

func TestReproduceUsage(t *testing.T) {
	// Where a regression would let a run through, it writes here.
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reproduce", "-out", "x"}, "no part given"},
		{[]string{"reproduce", "fig9", "-out", "x"}, `part "fig9"`},
		{[]string{"reproduce", "fig2"}, "-out DIR is required"},
		{[]string{"reproduce", "fig2", "-out", ""}, "reproduce: -out is empty: want a directory"},
		{[]string{"reproduce", "fig2", "-out", "-quick"}, "-out -quick: want a directory, not a flag"},
		{[]string{"reproduce", "fig2", "-out", "x", "-workers", "-2"}, "-workers -2"},
		{[]string{"reproduce", "fig2", "-bogus"}, "flag provided but not defined"},
		// A flag given twice, on either side of a part, is refused (the
		// flag package kept the last).
		{[]string{"reproduce", "-out", a, "fig2", "-out", b}, `reproduce: invalid value "` + b + `" for flag -out: given twice (first "` + a + `")`},
		{[]string{"reproduce", "fig2", "-quick", "fig3", "-quick", "-out", a}, `reproduce: invalid boolean flag quick: given twice`},
	} {
		r := runOfl(t, c.args...)
		if r.code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", c.args, r.code, cli.ExitUsage)
		}
		requireOneErrorLine(t, r.stderr, c.want)
	}
	r := runOfl(t, "reproduce", "-h")
	if r.code != cli.ExitOK || !strings.Contains(r.stdout, "ofl reproduce PART") {
		t.Errorf("-h: exit %d, stdout %q", r.code, r.stdout)
	}
}

// Fig. 2 in quick mode (parts and flags in any order) writes its files.
func TestReproduceFig2(t *testing.T) {
	dir := t.TempDir()
	r := runOfl(t, "reproduce", "-quick", "fig2", "-out", dir)
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, name := range []string{"fig2.png", "fig2.svg", "fig2.csv", "summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(r.stdout, "summary.md") || !strings.Contains(r.stderr, "fig2 done") {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestReproduceReportFailure: when stdout cannot take the closing line
// (ofl reproduce fig2 -out DIR > /dev/full), the run exits 1 with a line
// that says what was written and that printing failed; the files are
// there. Before, the write's error was dropped and the run exited 0.
func TestReproduceReportFailure(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	code := run(context.Background(), []string{"reproduce", "-quick", "fig2", "-out", dir}, env{
		stdout: failingWriter{}, stderr: &errb,
		randomSeed: func() (uint64, error) { return 99, nil },
	})
	if code != cli.ExitFailure {
		t.Errorf("exit %d, want %d", code, cli.ExitFailure)
	}
	// The log's lines come first; the error is the last line.
	lines := strings.SplitAfter(strings.TrimSuffix(errb.String(), "\n"), "\n")
	requireOneErrorLine(t, lines[len(lines)-1]+"\n", "wrote "+dir+"/summary.md and the figures of fig2, but printing the report failed: no space left on device")
	if _, err := os.Stat(filepath.Join(dir, "summary.md")); err != nil {
		t.Error(err)
	}
}

// failingWriter fails every write, as stdout redirected to /dev/full does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }
