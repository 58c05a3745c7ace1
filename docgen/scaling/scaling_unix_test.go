//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpawn(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	if code := spawn([]string{"true"}, report); code != 0 {
		t.Fatalf("spawn true: exit status %d, want 0", code)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep spawnReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Seconds <= 0 || rep.MaxRSS <= 0 {
		t.Errorf("report %+v, want positive time and RSS", rep)
	}
	if code := spawn([]string{"false"}, report); code != 1 {
		t.Errorf("spawn false: exit status %d, want 1", code)
	}
	if code := spawn([]string{filepath.Join(t.TempDir(), "missing")}, report); code == 0 {
		t.Error("spawn of a missing program: exit status 0")
	}
}

// ballast keeps a large heap alive during TestRunCLIPeakRSS.
var ballast []byte

// TestRunCLIPeakRSS checks that the peak RSS reported for a child is its own
// and not that of this (large) process: a shell that prints one line needs a
// few MB, far less than the 256 MB this process holds.
func TestRunCLIPeakRSS(t *testing.T) {
	ballast = make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	defer func() { ballast = nil }()
	out := `{"R":3,"strategy":"optimal","loss":4.6,"frob_B_sq":4.6,"iterations":7,"gap":1e-11,"seconds":0.1,"cached":true}`
	r, err := runCLI(context.Background(), t.TempDir(), "/bin/sh", []string{"-c", "echo '" + out + "'"})
	if err != nil {
		t.Fatal(err)
	}
	want := cliResult{R: 3, Strategy: "optimal", Loss: 4.6, FrobBSq: 4.6, Iterations: 7, Gap: 1e-11, Seconds: 0.1, Cached: true}
	if r.Out != want {
		t.Errorf("parsed %+v, want %+v", r.Out, want)
	}
	if r.MaxRSS <= 0 || r.MaxRSS > 64<<20 {
		t.Errorf("child's peak RSS %d bytes, want in (0, 64 MB]", r.MaxRSS)
	}
	if _, err := runCLI(context.Background(), t.TempDir(), "/bin/sh", []string{"-c", "echo not json"}); err == nil {
		t.Error("output that is not JSON: no error")
	}
	if _, err := runCLI(context.Background(), t.TempDir(), "/bin/sh", []string{"-c", "echo oops >&2; exit 1"}); err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("failing command: error %v, want one with its stderr", err)
	}
}
