package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/plan"
)

// contradict returns a value of run flag k that differs from v.
func contradict(k, v string) string {
	switch k {
	case "algo":
		if v == "correlated" {
			return "baseline-correlated"
		}
		return "correlated"
	case "strategy":
		if v == "tree" {
			return "sqrt"
		}
		return "tree"
	case "calibration":
		if v == "exact" {
			return "paper"
		}
		return "exact"
	case "secure-aggregation":
		return strconv.FormatBool(v != "true")
	}
	if n, err := strconv.Atoi(v); err == nil {
		return strconv.Itoa(n + 1)
	}
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		if x == 0 {
			return "0.5"
		}
		return strconv.FormatFloat(x/2, 'g', -1, 64)
	}
	panic("no contradicting value for -" + k + " " + v)
}

// Every run flag the plan records, given to evaluate with another value,
// is a usage error naming both values; this includes -secure-aggregation
// against a plan without secure aggregation (before, evaluate took it,
// and evaluated a run that the plan says had none). Flags the plan does
// not record (data, evaluation and output flags) are taken as given.
func TestEvaluateRefusesEveryContradiction(t *testing.T) {
	base := []string{"-learners", "3", "-tau", "2", "-rounds", "8", "-seed", "9"}
	for _, run := range [][]string{
		{"-eps", "1", "-delta", "1e-5", "-strategy", "banded:bands=2", "-epochs", "2"},
		{"-eps", "1", "-delta", "1e-5", "-secure-aggregation", "-threshold", "3"},
		{"-algo", "independent", "-eta-ind", "0.05", "-calibration", "paper"},
		{"-algo", "nonprivate"},
	} {
		cfg, err := parseArgs(append(run, base...))
		if err != nil {
			t.Fatalf("%v: %v", run, err)
		}
		p := cfg.runPlan(4)
		recorded, err := planArgs(p)
		if err != nil {
			t.Fatal(err)
		}
		if p.SecureAggregation == nil {
			// The flags runPlan reads but a plan without secure
			// aggregation holds no field of.
			recorded["secure-aggregation"] = "false"
		}
		for k, v := range recorded {
			w := contradict(k, v)
			_, err := evaluateArgs(map[string]string{"seed": "9", k: w}, p, "run.json")
			var ue *cli.UsageError
			want := "-" + k + " " + w + " contradicts the run's plan in run.json: " + k + " " + v
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: evaluate -%s %s: %v, want a usage error %q", run, k, w, err, want)
			}
		}
		given := map[string]string{"seed": "9", "eval-every": "3", "data": "synthetic:alpha=0.5,beta=0.5", "json": "true", "out": "o"}
		args, err := evaluateArgs(given, p, "run.json")
		if err != nil {
			t.Fatalf("%v: flags the plan does not record: %v", run, err)
		}
		if _, err := parseArgs(args); err != nil {
			t.Errorf("%v: %v: %v", run, args, err)
		}
	}
}

// ofl evaluate reads the released models only with the run.json of their
// own run: another run's run.json put in the state directory (another run
// identity, another plan), or this run's with its identity edited, is
// refused with one line naming the round file and both runs; and a
// run.json whose plan claims a smaller eps than its noise gives is refused
// as a plan (the record is checked, not trusted).
func TestEvaluateRefusesAnotherRunsRecord(t *testing.T) {
	run := []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "5", "-strategy", "sqrt"}
	a := serveLoopback(t, append(run, "-eps", "5"), 2, "5")
	b := serveLoopback(t, append(run, "-eps", "1"), 2, "5")
	runJSON := func(dir string) map[string]json.RawMessage {
		data, err := os.ReadFile(filepath.Join(dir, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ra, rb := runJSON(a), runJSON(b)
	if bytes.Equal(ra["run"], rb["run"]) {
		t.Fatal("two runs with one identity")
	}
	editedID := maps.Clone(ra)
	editedID["run"] = json.RawMessage(`"` + strings.Repeat("ab", 16) + `"`)
	lowerEps := maps.Clone(ra)
	var compact bytes.Buffer
	if err := json.Compact(&compact, ra["plan"]); err != nil {
		t.Fatal(err)
	}
	lowerEps["plan"] = json.RawMessage(strings.ReplaceAll(compact.String(), `"eps":5,`, `"eps":1,`))
	if !strings.Contains(string(lowerEps["plan"]), `"target":{"eps":1,`) || !strings.Contains(string(lowerEps["plan"]), `"privacy":{"eps":1,`) {
		t.Fatalf("the edit did not apply: %s", lowerEps["plan"])
	}
	// The unit sensitivity halved, with the release sensitivity, sigma and
	// eps that follow from it at the same noise std: consistent, so only a
	// factorization computed again tells it from the run's.
	pa, err := plan.Parse(ra["plan"])
	if err != nil {
		t.Fatal(err)
	}
	pr := *pa.Privacy
	pr.UnitSensitivity /= 2
	if pr.Sensitivity, err = accountant.ReleaseSensitivity(pa.Clip, pa.Learners, accountant.ReplaceOne, pr.UnitSensitivity); err != nil {
		t.Fatal(err)
	}
	pr.Sigma = pr.NoiseStd / pr.Sensitivity
	eps, err := accountant.Epsilon(pr.Sigma, pr.Delta, 1, accountant.Exact)
	if err != nil || !(eps < 5) {
		t.Fatalf("eps at half the sensitivity %v (%v), want below 5", eps, err)
	}
	pr.Eps, pa.Target.Eps = eps*(1+1e-9), eps*(1+1e-9)
	pa.Privacy = &pr
	halvedPlan, err := pa.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Parse(halvedPlan); err != nil {
		t.Fatalf("the edited plan does not parse (%v): the edit is not what is tested", err)
	}
	halved := maps.Clone(ra)
	halved["plan"] = halvedPlan
	for _, c := range []struct {
		name string
		rec  map[string]json.RawMessage
		want string
		bind bool // round 0 rewritten to record the edited plan's digest
	}{
		{"unit sensitivity halved, eps lowered", halved, "run.json's privacy record is not its plan's: plan: privacy.unit_sensitivity", true},
		{"another run's run.json", rb, "belongs to run " + strings.Trim(string(ra["run"]), `"`) + ", the directory's run is " + strings.Trim(string(rb["run"]), `"`), false},
		{"identity edited", editedID, "belongs to run", false},
		{"eps lowered in the plan", lowerEps, "privacy.noise_std", true},
		{"eps lowered in the plan, round 0 as written", lowerEps, "its plan is not the plan run", false},
	} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.CopyFS(dir, os.DirFS(a)); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(c.rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if c.bind {
			// As if the run had been started with the edited plan: the
			// checks behind the plan's digest are what is tested.
			bindPlan(t, dir, c.rec["plan"])
		}
		r := runOfl(t, "evaluate", "-state", dir, "-seed", "5", "-json")
		if r.code != cli.ExitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.name, r.code, r.stdout, r.stderr, cli.ExitFailure, c.want)
		}
	}
	// The state directory as served evaluates.
	if r := runOfl(t, "evaluate", "-state", a, "-seed", "5", "-json"); r.code != cli.ExitOK {
		t.Errorf("the served run: exit %d: %s", r.code, r.stderr)
	}
}

// A state directory written by a newer dpmf (run.json of a later state
// format, or holding a plan of a later format) is refused with one line
// that says so: it used to say "written by an older dpmf" whatever the
// format. An older state format is still called older.
func TestEvaluateNewerFormats(t *testing.T) {
	a := serveLoopback(t, []string{"-learners", "2", "-tau", "1", "-rounds", "2", "-dim", "3", "-seed", "5"}, 2, "5")
	data, err := os.ReadFile(filepath.Join(a, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, from, to, want string
		bind                 bool // round 0 rewritten to record the edited plan's digest
	}{
		{"state format 4", `"format": 3,`, `"format": 4,`, "state format 4, want 3 (written by a newer dpmf", false},
		{"state format 1", `"format": 3,`, `"format": 1,`, "state format 1, want 3 (written by an older dpmf", false},
		{"plan format 2", `"format": 1,`, `"format": 2,`, "run.json holds a plan of format 2, this ofl reads format 1: a run of a newer dpmf", true},
	} {
		edited := strings.Replace(string(data), c.from, c.to, 1)
		if edited == string(data) {
			t.Fatalf("%s: run.json has no %s", c.name, c.from)
		}
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.CopyFS(dir, os.DirFS(a)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		if c.bind {
			var rec struct {
				Plan json.RawMessage `json:"plan"`
			}
			if err := json.Unmarshal([]byte(edited), &rec); err != nil {
				t.Fatal(err)
			}
			bindPlan(t, dir, rec.Plan)
		}
		r := runOfl(t, "evaluate", "-state", dir, "-seed", "5")
		if r.code != cli.ExitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.name, r.code, r.stdout, r.stderr, cli.ExitFailure, c.want)
		}
	}
}

// -threshold 0 means the default threshold floor(2n/3)+1 (the flag's
// doc), which is what a plan records of a run started with it: given to
// evaluate it agrees with a plan of T = floor(2*6/3)+1 = 5 for n = 6, and
// contradicts one of T = 6, naming the default. Before, "0" was compared
// with the recorded "5" as text and refused.
func TestEvaluateThresholdZeroIsTheDefault(t *testing.T) {
	for _, c := range []struct {
		threshold string
		ok        bool
	}{{"0", true}, {"5", true}, {"6", false}} {
		cfg, err := parseArgs([]string{"-learners", "6", "-tau", "1", "-rounds", "4", "-seed", "9", "-eps", "1", "-delta", "1e-5", "-secure-aggregation", "-threshold", c.threshold})
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.runPlan(4)
		_, err = evaluateArgs(map[string]string{"seed": "9", "threshold": "0"}, p, "run.json")
		switch {
		case c.ok && err != nil:
			t.Errorf("run -threshold %s, evaluate -threshold 0: %v, want accepted", c.threshold, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "-threshold 0 (the default, 5) contradicts the run's plan in run.json: threshold 6")):
			t.Errorf("run -threshold %s, evaluate -threshold 0: %v, want a contradiction naming the default 5 and 6", c.threshold, err)
		}
	}
}

// -eta-ind 0 means eta eta_g (the flag's doc, fedopt.Config.ServerStep):
// evaluate compares server steps, not text. With eta = 0.05 and eta_g = 2
// (eta eta_g = 0.1 exactly: 0.05 is 0.1 halved), -eta-ind 0 agrees with a
// plan recording 0.1 and -eta-ind 0.1 with one recording 0, and other steps
// are refused naming both. Before, "0" was compared with the recorded
// "0.1" as text and refused.
func TestEvaluateEtaIndComparesSteps(t *testing.T) {
	for _, c := range []struct {
		run, given string
		want       string // "" for agreement
	}{
		{"0.1", "0", ""},
		{"0", "0.1", ""},
		{"0", "0", ""},
		{"0.1", "0.1", ""},
		{"0.2", "0", "-eta-ind 0 (eta eta_g = 0.1) contradicts the run's plan in run.json: eta-ind 0.2"},
		{"0", "0.3", "-eta-ind 0.3 contradicts the run's plan in run.json: eta-ind 0 (eta eta_g = 0.1)"},
		{"0.2", "0.3", "-eta-ind 0.3 contradicts the run's plan in run.json: eta-ind 0.2"},
	} {
		cfg, err := parseArgs([]string{"-algo", "independent", "-eta", "0.05", "-eta-g", "2", "-eta-ind", c.run, "-learners", "2", "-tau", "1", "-rounds", "4", "-seed", "9"})
		if err != nil {
			t.Fatal(err)
		}
		args, err := evaluateArgs(map[string]string{"seed": "9", "eta-ind": c.given}, cfg.runPlan(4), "run.json")
		var ue *cli.UsageError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("run -eta-ind %s, evaluate -eta-ind %s: %v, want accepted", c.run, c.given, err)
		case c.want == "" && !slices.Contains(args, "-eta-ind="+c.run):
			t.Errorf("run -eta-ind %s, evaluate -eta-ind %s: %v, want the plan's -eta-ind=%s", c.run, c.given, args, c.run)
		case c.want != "" && (!errors.As(err, &ue) || err.Error() != c.want):
			t.Errorf("run -eta-ind %s, evaluate -eta-ind %s: %v, want the usage error %q", c.run, c.given, err, c.want)
		}
	}
}

// A -state that holds no run.json (mistyped, or no server ran there) is
// one line saying what -state wants, exit 1, and leaves the directory
// as it was; it was the bare "lstat DIR/run.json: no such file or
// directory".
func TestEvaluateNoRun(t *testing.T) {
	dir := t.TempDir()
	for _, state := range []string{dir, filepath.Join(dir, "missing")} {
		r := runOfl(t, "evaluate", "-state", state, "-seed", "1")
		want := "ofl evaluate: -state " + state + ": no run.json there, want the -state directory of an ofl server run\n"
		if r.code != cli.ExitFailure || r.stderr != want || r.stdout != "" {
			t.Errorf("evaluate -state %s: exit %d, stdout %q, stderr %q; want exit %d and %q", state, r.code, r.stdout, r.stderr, cli.ExitFailure, want)
		}
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Errorf("the directory holds %v (%v) after the refusals, want nothing", names, err)
	}
}
