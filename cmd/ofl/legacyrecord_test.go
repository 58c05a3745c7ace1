package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// A run.json whose privacy record does not name the settings it was
// calibrated under (plan.Record's participation, workload, rounds,
// strategy, algorithm, learners, tau, clip, relation; as a dpmf before
// them wrote it), bound to the run as that dpmf would have bound it, is
// refused by ofl evaluate (plan.Parse: calibrate again) and by a restart
// of ofl server (this build cannot check the record: finish the run with
// the build that started it), each in one line; and one whose plan's
// participation was relabelled epochs:2 after its calibration under
// single participation is refused by evaluate naming the record's
// participation and the plan's.
func TestLegacyRecordRefused(t *testing.T) {
	run := []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "5", "-strategy", "sqrt", "-eps", "5"}
	a := serveLoopback(t, run, 2, "5")
	data, err := os.ReadFile(filepath.Join(a, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, m["plan"]); err != nil {
		t.Fatal(err)
	}
	plan := compact.String()
	var pm, rec map[string]json.RawMessage
	if err := json.Unmarshal([]byte(plan), &pm); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(pm["privacy"], &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"participation", "workload", "rounds", "strategy", "algorithm", "learners", "tau", "clip", "relation"} {
		if _, ok := rec[k]; !ok {
			t.Fatalf("the record has no %q: %s", k, pm["privacy"])
		}
		delete(rec, k)
	}
	if pm["privacy"], err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(pm)
	if err != nil {
		t.Fatal(err)
	}
	legacy := string(b)
	relabelled := strings.Replace(plan, `"participation":"single"`, `"participation":"epochs:2"`, 1)
	if !strings.Contains(relabelled[:strings.Index(relabelled, `"privacy":`)], `"epochs:2"`) {
		t.Fatalf("the edit did not apply to the plan: %s", relabelled)
	}
	state := func(p string) string {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.CopyFS(dir, os.DirFS(a)); err != nil {
			t.Fatal(err)
		}
		m["plan"] = json.RawMessage(p)
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		bindPlan(t, dir, json.RawMessage(p))
		return dir
	}
	for _, c := range []struct {
		name, plan, want string
	}{
		{"record without its settings", legacy, "privacy record without its participation"},
		{"participation relabelled", relabelled, `privacy.participation "single", but the plan's participation is "epochs:2"`},
	} {
		r := runOfl(t, "evaluate", "-state", state(c.plan), "-seed", "5", "-json")
		if r.code != cli.ExitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("evaluate, %s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.name, r.code, r.stdout, r.stderr, cli.ExitFailure, c.want)
		}
	}
	r := runOfl(t, append([]string{"server", "-insecure", "-state", state(legacy), "-listen", "127.0.0.1:0"}, run...)...)
	// The server logs its settings first: its error is its last line.
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if want := "privacy record does not name the participation"; r.code != cli.ExitFailure || !strings.HasPrefix(lines[len(lines)-1], "ofl server: ") || !strings.Contains(lines[len(lines)-1], want) {
		t.Errorf("server restart: exit %d, stderr %q; want exit %d and a last line with %q", r.code, r.stderr, cli.ExitFailure, want)
	}
}
