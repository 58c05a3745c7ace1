package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// bindPlan rewrites round 0's file of the state directory dir so that it
// records the digest of plan, as a dpmf that started the run with that plan
// would have written it (docs/distributed.md, State: the round file's
// previous-hash field, bytes 48..80, holds SHA-256 of
// "dpmf/fednet/plan/v1", a zero byte and the plan's compact JSON with HTML
// characters escaped; the file ends with the SHA-256 of what precedes it).
// The tests of checks behind the digest use it to reach them.
func bindPlan(t *testing.T, dir string, plan json.RawMessage) {
	t.Helper()
	var c, esc bytes.Buffer
	if err := json.Compact(&c, plan); err != nil {
		t.Fatal(err)
	}
	json.HTMLEscape(&esc, c.Bytes())
	digest := sha256.Sum256(append([]byte("dpmf/fednet/plan/v1\x00"), esc.Bytes()...))
	path := filepath.Join(dir, "round-00000000.x")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := data[:len(data)-sha256.Size]
	copy(body[48:80], digest[:])
	sum := sha256.Sum256(body)
	if err := os.WriteFile(path, append(body, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ofl evaluate of a finished run whose run.json's plan was changed (a bit
// flipped, or an edit that no evaluate flag and no released round
// contradicts) is refused in one line that says what to do. Before, it
// evaluated the changed plan: nothing it reads held the plan but run.json.
func TestEvaluateRefusesFlippedPlan(t *testing.T) {
	a := serveLoopback(t, []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "5"}, 2, "5")
	orig, err := os.ReadFile(filepath.Join(a, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r := runOfl(t, "evaluate", "-state", a, "-seed", "5"); r.code != cli.ExitOK {
		t.Fatalf("the run as served: exit %d: %s", r.code, r.stderr)
	}
	at := bytes.Index(orig, []byte(`"plan": {`))
	if at < 0 {
		t.Fatalf("no plan in %s", orig)
	}
	for _, c := range []struct{ name, from, to string }{
		{"a bit flipped in the learning rate (0 to 1)", `"eta": 0.`, `"eta": 1.`},
		{"rounds edited", `"rounds": 2`, `"rounds": 3`},
		{"a bit flipped in a field's name", `"eta":`, `"eTa":`},
	} {
		k := bytes.Index(orig[at:], []byte(c.from))
		if k < 0 {
			t.Fatalf("%s: the plan has no %s: %s", c.name, c.from, orig[at:])
		}
		edited := bytes.Clone(orig)
		copy(edited[at+k:], c.to)
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.CopyFS(dir, os.DirFS(a)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), edited, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runOfl(t, "evaluate", "-state", dir, "-seed", "5")
		if r.code != cli.ExitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, "its plan is not the plan run") || !strings.Contains(r.stderr, "put back the run's own run.json") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want refused in one line saying run.json was changed and what to do", c.name, r.code, r.stdout, r.stderr)
		}
	}
}
