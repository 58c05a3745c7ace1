package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// TestReportFailureAfterRounds: when stdout cannot take the report after
// rounds.csv is in place (ofl -out DIR > /dev/full), the run exits 1 with
// one line that says what was written and that printing failed, as
// mfsolve and ofl reproduce say it; rounds.csv is there. Before, the line
// was the bare "write /dev/stdout: ...", which reads as if the run, like
// every other failed run, had written nothing.
func TestReportFailureAfterRounds(t *testing.T) {
	dir := t.TempDir()
	rounds := filepath.Join(dir, "rounds.csv")
	var errb bytes.Buffer
	code := run(context.Background(), append([]string{"-out", dir}, small...), env{stdout: failingWriter{}, stderr: &errb})
	if code != cli.ExitFailure {
		t.Errorf("exit %d, want %d", code, cli.ExitFailure)
	}
	requireOneErrorLine(t, errb.String(), "wrote "+rounds+", but printing the report failed: no space left on device")
	if _, err := os.Stat(rounds); err != nil {
		t.Error(err)
	}
	// Without -out, the error is the write's.
	errb.Reset()
	code = run(context.Background(), small, env{stdout: failingWriter{}, stderr: &errb})
	if code != cli.ExitFailure || errb.String() != "ofl: no space left on device\n" {
		t.Errorf("without -out: exit %d, stderr %q; want 1 and the write's error", code, errb.String())
	}
}
