//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestLearnerOutFailsHalfWay: a learner whose final model (-dim 800: about
// 16 KB) cannot be written, here under a file size limit of at most 4 KiB
// (ulimit -f 4: writes past it fail with EFBIG, as on a full disk), exits
// 1 with one line naming -out and the file, as every other output's error
// does, leaves the existing file as it was and no temporary file. Before,
// the line read "ofl learner: atomicfile: write FILE: ...", without the
// flag and with the package's prefix.
func TestLearnerOutFailsHalfWay(t *testing.T) {
	bin := buildOfl(t)
	run := []string{"-learners", "1", "-tau", "1", "-rounds", "2", "-dim", "800", "-seed", "3"}
	state, dir := t.TempDir(), t.TempDir()
	out := filepath.Join(dir, "final.txt")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, addr := startServer(t, bin, state, run)
	defer srv.cmd.Process.Kill()
	l := startCmd(t, testutil.FileSizeLimited(4, bin, "learner", "-insecure", "-server", addr, "-id", "0",
		"-seed", "3", "-out", out, "-give-up", "20s", "-call-timeout", "5s", "-wait-timeout", "5s"), nil)
	var err error
	select {
	case err = <-l.done:
	case <-time.After(60 * time.Second):
		l.cmd.Process.Kill()
		t.Fatal("the learner did not finish within 60 s")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("learner: %v, want exit status 1\n%s", err, logOf(l))
	}
	var last string
	for _, line := range strings.Split(strings.TrimSpace(logOf(l)), "\n") {
		if strings.HasPrefix(line, "ofl learner: ") {
			last = line
		}
	}
	if want := "ofl learner: -out " + out + ": "; !strings.HasPrefix(last, want) || !strings.Contains(last, "file too large") {
		t.Errorf("error line %q, want it to start %q and give the cause\n%s", last, want, logOf(l))
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != "old" {
		t.Errorf("%s: %q, %v; want the old content", out, got, err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
		t.Errorf("temporary files left: %v", names)
	}
}
