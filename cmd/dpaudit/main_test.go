package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

func runCmd(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := run(context.Background(), args, &out, &errb)
	return code, out.String(), err
}

func TestReplayCommand(t *testing.T) {
	code, out, err := runCmd(t, "replay", "-rounds", "24", "-learners", "4", "-tau", "2", "-dim", "3", "-dropout", "0.2", "-strategy", "blt", "-participation", "epochs:2", "-json")
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, out %s", code, err, out)
	}
	var rep struct {
		OK    bool    `json:"ok"`
		Ratio float64 `json:"ratio"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.OK || rep.Ratio > 1+1e-12 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

func TestCanaryCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, out, err := runCmd(t, "canary", "-rounds", "50", "-tau", "2", "-canaries", "300", "-strategy", "tree", "-out", dir)
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, out %s", code, err, out)
	}
	if !strings.Contains(out, "consistent with the claim") {
		t.Errorf("output %q", out)
	}
	for _, f := range []string{"canary.json", "canary.png", "canary.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// dpaudit replay -network adds the check that the networked run of D
// releases the in-process models.
func TestReplayNetworkCommand(t *testing.T) {
	code, out, err := runCmd(t, "replay", "-rounds", "24", "-learners", "4", "-tau", "2", "-dim", "3", "-strategy", "blt", "-network")
	if err != nil || code != 0 {
		t.Fatalf("code %d, err %v, out %s", code, err, out)
	}
	if !strings.Contains(out, "ok   networked release") {
		t.Errorf("output %q", out)
	}
}

// dpaudit canary -network runs the audit over gRPC and reports it; its
// scores are those of the in-process audit of the same plan.
func TestCanaryNetworkCommand(t *testing.T) {
	args := []string{"canary", "-rounds", "40", "-tau", "2", "-canaries", "200", "-json"}
	var reps [2]struct {
		Network     bool `json:"network"`
		Violation   bool `json:"violation"`
		AllIterates struct {
			Mu struct {
				Mu float64 `json:"mu"`
			} `json:"mu"`
		} `json:"all_iterates"`
	}
	for k, extra := range [][]string{nil, {"-network"}} {
		code, out, err := runCmd(t, append(args, extra...)...)
		if err != nil || code != 0 {
			t.Fatalf("%v: code %d, err %v, out %s", extra, code, err, out)
		}
		if err := json.Unmarshal([]byte(out), &reps[k]); err != nil {
			t.Fatal(err)
		}
	}
	if reps[0].Network || !reps[1].Network || reps[1].Violation {
		t.Errorf("reports %+v", reps)
	}
	if reps[0].AllIterates.Mu.Mu != reps[1].AllIterates.Mu.Mu {
		t.Errorf("mu-hat %v over gRPC, %v in process", reps[1].AllIterates.Mu.Mu, reps[0].AllIterates.Mu.Mu)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"audit"},
		{"replay", "-strategy", "nope"},
		{"replay", "-rounds", "0"},
		{"replay", "-participation", "epochs:x"},
		{"canary", "-dropout", "0.1", "-rounds", "10"},
		{"replay", "extra"},
		{"replay", "-network", "-dropout", "0.1", "-rounds", "10"},
	} {
		_, _, err := runCmd(t, args...)
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// -h lists the flags on stderr and succeeds; a bad flag is one usage error,
// with nothing on stderr.
func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	code, err := run(context.Background(), []string{"canary", "-h"}, &out, &errb)
	if code != 0 || err != nil || !strings.HasPrefix(errb.String(), "Usage of dpaudit canary:\n") || !strings.Contains(errb.String(), "-canaries") {
		t.Errorf("-h: code %d, err %v, stderr %q", code, err, errb.String())
	}
	errb.Reset()
	if _, err := run(context.Background(), []string{"replay", "-bogus"}, &out, &errb); cli.ExitCode(err) != cli.ExitUsage || errb.Len() != 0 {
		t.Errorf("-bogus: err %v, stderr %q", err, errb.String())
	}
}
