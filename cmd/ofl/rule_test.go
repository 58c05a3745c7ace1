package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// TestRunJSONStatesTheRule: the report's (eps, delta) holds under
// assumptions the run's plan states: the neighbouring relation and the
// rule that gave the sensitivity (client sample, participation, clip,
// learners, the algorithm and its tau). ofl -json must carry them with the
// numbers, as mfsolve -json and run.json do; the values are the small
// run's flags (-learners 3 -tau 2, default clip 5, replace-one).
func TestRunJSONStatesTheRule(t *testing.T) {
	r := runOfl(t, append([]string{"-json"}, small...)...)
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatal(err)
	}
	if js["relation"] != "replace-one" {
		t.Errorf("relation %v, want replace-one", js["relation"])
	}
	rule, _ := js["rule"].(string)
	for _, w := range []string{"(5, 0.001)-DP", "replace-one client sample", "participation single", "clip 5", "3 learners", "Algorithm 1 with tau = 2"} {
		if !strings.Contains(rule, w) {
			t.Errorf("rule %q does not state %q", rule, w)
		}
	}
	r = runOfl(t, append([]string{"-json", "-algo", "nonprivate"}, small...)...)
	if r.code != cli.ExitOK || strings.Contains(r.stdout, `"rule"`) || strings.Contains(r.stdout, `"relation"`) {
		t.Errorf("nonprivate: exit %d, %s; want no rule or relation", r.code, r.stdout)
	}
}
