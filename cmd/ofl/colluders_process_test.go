package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real "ofl server -secure-aggregation" process announcing colluders
// c = 1 (n = 3, T = 3: 2T = 6 > n + c = 4) and real "ofl learner"
// processes with -colluders. A learner whose minimum (2) exceeds the
// announced c refuses with one line naming both and exits 1 at once,
// after Join and before it writes its state directory or sends any
// protocol message (its -state stays empty, and the round is then run by
// fresh learners with the same ids); learners whose minimum is met (0 and
// 1) run the round, and the server releases it and exits 0.
func TestSecureLearnerColludersProcesses(t *testing.T) {
	bin := buildOfl(t)
	run := []string{"-learners", "3", "-tau", "1", "-rounds", "1", "-dim", "4", "-seed", "5", "-eps", "2",
		"-secure-aggregation", "-threshold", "3", "-colluders", "1"}
	state := t.TempDir()
	srv, addr := startServer(t, bin, state, run)
	learner := func(id int, colluders, dir string) *exec.Cmd {
		return exec.Command(bin, "learner", "-insecure", "-server", addr, "-id", strconv.Itoa(id), "-seed", "5",
			"-state", dir, "-colluders", colluders, "-give-up", "20s", "-call-timeout", "5s", "-wait-timeout", "5s")
	}

	refused := t.TempDir()
	began := time.Now()
	out, err := learner(0, "2", refused).CombinedOutput()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err == nil {
		code = 0
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	want := "ofl learner: the server's secure aggregation announces colluders 1 with threshold 3 of 3 learners, this learner's minimum colluders is 2"
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Fatalf("learner -colluders 2 of a run announcing 1: exit %d, output %q; want exit 1 and one line starting %q", code, out, want)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the refusing learner took %v: it should refuse after Join, not retry until -give-up", d)
	}
	if ents, err := os.ReadDir(refused); err != nil || len(ents) != 0 {
		t.Errorf("the refusing learner's state directory holds %v (%v), want nothing: it refuses before it takes part", ents, err)
	}

	learners := make([]*proc, 3)
	for i := range learners {
		learners[i] = startCmd(t, learner(i, strconv.Itoa(i%2), t.TempDir()), nil) // minimums 0, 1, 0
	}
	for i, l := range learners {
		l.wait(t, "learner "+strconv.Itoa(i), 60*time.Second)
	}
	srv.wait(t, "server", 30*time.Second)
	if _, err := os.Stat(filepath.Join(state, "round-00000001.x")); err != nil {
		t.Errorf("the round was not released: %v", err)
	}
}
