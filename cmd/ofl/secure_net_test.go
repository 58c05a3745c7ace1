package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A secure run over the network (ofl server -secure-aggregation, three
// learner processes) is killed with SIGKILL in the middle of the protocol
// and restarted on its state directory: every released model equals the
// in-process simulation with the same quantization, bit for bit, and ofl
// evaluate on them reports what ofl -reps 1 reports.
func TestSecureProcessesSIGKILLResume(t *testing.T) {
	bin := buildOfl(t)
	const R = 30
	run := []string{"-learners", "3", "-tau", "2", "-rounds", strconv.Itoa(R), "-dim", "6", "-seed", "7", "-eps", "2",
		"-secure-aggregation", "-threshold", "2"}
	want, _ := simulated(t, run)
	state := t.TempDir()
	srv, addr := startServer(t, bin, state, run)
	learners := make([]*proc, 3)
	for i := range learners {
		learners[i] = start(t, bin, []string{"learner", "-insecure", "-server", addr, "-id", strconv.Itoa(i), "-seed", "7",
			"-state", t.TempDir(), "-give-up", "30s", "-call-timeout", "5s", "-wait-timeout", "5s"}, nil)
	}
	// Kill the server once round 5 is out and a phase of the open round
	// has closed (the newest secagg-G.state: the open phase after magic,
	// run, round and attempt).
	deadline := time.Now().Add(30 * time.Second)
	phase := -1
	for phase < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no phase closed after round 5 within 30 s")
		}
		time.Sleep(time.Millisecond)
		if _, err := os.Stat(filepath.Join(state, "round-00000005.x")); err != nil {
			continue
		}
		snaps, _ := filepath.Glob(filepath.Join(state, "secagg-*.state"))
		if len(snaps) == 0 {
			continue
		}
		b, err := os.ReadFile(snaps[len(snaps)-1]) // sorted: the largest generation
		if err != nil || len(b) < 40 {
			continue
		}
		phase = int(binary.LittleEndian.Uint32(b[36:40]))
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	t.Logf("killed with phase %d open (or later)", phase)
	if _, err := os.Stat(filepath.Join(state, "round-"+strconv.Itoa(100000000 + R)[1:]+".x")); err == nil {
		t.Fatal("the run finished before the kill: nothing was tested")
	}
	srv2 := start(t, bin, append([]string{"server", "-insecure", "-state", state, "-listen", addr, "-linger", "3s", "-round-timeout", "20s"}, run...), nil)
	for i, l := range learners {
		l.wait(t, "learner "+strconv.Itoa(i), 60*time.Second)
	}
	srv2.wait(t, "restarted server", 30*time.Second)
	srv2.mu.Lock()
	log := srv2.log.String()
	srv2.mu.Unlock()
	if !strings.Contains(log, "msg=resumed") {
		t.Error("the restarted server did not log that it resumed")
	}
	got := readModels(t, state, R)
	for r := range want {
		requireSame(t, "x^"+strconv.Itoa(r), got[r], want[r])
	}
	sameReports(t, state, "10", run)
}
