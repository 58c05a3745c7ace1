package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// TestInterruptedLeavesNoNewOutDir: canary -out into a directory that did
// not exist, interrupted before the renames, says "nothing written" and
// leaves nothing: the directories the run created for -out are removed
// again (they were left behind, empty).
func TestInterruptedLeavesNoNewOutDir(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := writeOutputs
	t.Cleanup(func() { writeOutputs = old })
	writeOutputs = func(ctx context.Context, stderr io.Writer, prefix string, outs ...cli.Output) error {
		cancel() // the signal arrives while the files are written
		return old(ctx, stderr, prefix, outs...)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "new", "sub")
	var out, errb bytes.Buffer
	code, err := run(ctx, []string{"canary", "-rounds", "10", "-learners", "2", "-tau", "2", "-dim", "3", "-canaries", "5", "-out", dir}, &out, &errb)
	if code != 0 || cli.ExitCode(err) != cli.ExitFailure {
		t.Fatalf("code %d, err %v; want exit status 1", code, err)
	}
	names, rerr := os.ReadDir(parent)
	if rerr != nil || len(names) != 0 {
		t.Errorf("after an interrupted canary -out %s: %s holds %v (%v), want nothing", dir, parent, names, rerr)
	}
}
