package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpmf/dpmf/internal/cli"
)

// helpFlags returns the flags that "ofl [cmd] -h" lists, with their
// defaults as -h prints them ("" where it prints none).
func helpFlags(t *testing.T, cmd ...string) map[string]string {
	t.Helper()
	r := runOfl(t, append(cmd, "-h")...)
	if r.code != cli.ExitOK {
		t.Fatalf("ofl %v -h: exit %d: %s", cmd, r.code, r.stderr)
	}
	flags := map[string]string{}
	name := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if m := regexp.MustCompile(`^  -([a-z0-9-]+)`).FindStringSubmatch(line); m != nil {
			name = m[1]
			flags[name] = ""
			continue
		}
		if m := regexp.MustCompile(`\(default "?([^")]*)"?\)$`).FindStringSubmatch(line); m != nil && name != "" {
			flags[name] = m[1]
		}
	}
	if len(flags) == 0 {
		t.Fatalf("ofl %v -h lists no flags:\n%s", cmd, r.stdout)
	}
	return flags
}

// TestDistributedFlags keeps the "Flags" section of docs/distributed.md
// true to the commands: `ofl server` and `ofl learner` have exactly the
// flags it names, a duration default it states in parentheses ("(60s;
// ...") is the flag's, and every flag it names for `ofl evaluate` exists
// (the run flags it leaves to "ofl's run flags" are those it names for
// the server).
func TestDistributedFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Flags\n")
	if !ok {
		t.Fatal("docs/distributed.md has no Flags section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	paragraphs := map[string]string{}
	for _, p := range strings.Split(section, "\n\n") {
		if m := regexp.MustCompile("^`ofl ([a-z]+)`:").FindStringSubmatch(strings.TrimSpace(p)); m != nil {
			paragraphs[m[1]] = p
		}
	}
	named := regexp.MustCompile("`-([a-z0-9-]+)(?: [A-Z]+)?`(\\s\\(([0-9a-z]+)[;:)])?")
	for _, cmd := range []string{"server", "learner", "evaluate"} {
		p, ok := paragraphs[cmd]
		if !ok {
			t.Errorf("docs/distributed.md's Flags section has no paragraph for ofl %s", cmd)
			continue
		}
		help := helpFlags(t, cmd)
		var doc []string
		for _, m := range named.FindAllStringSubmatch(p, -1) {
			doc = append(doc, m[1])
			def, ok := help[m[1]]
			if !ok {
				t.Errorf("docs/distributed.md: ofl %s has no flag -%s", cmd, m[1])
				continue
			}
			if want, err := time.ParseDuration(m[3]); err == nil {
				if got, err := time.ParseDuration(orZero(def)); err != nil || got != want {
					t.Errorf("docs/distributed.md: ofl %s -%s defaults to %s, -h says %q", cmd, m[1], m[3], def)
				}
			}
		}
		for f := range help {
			switch {
			case slices.Contains(doc, f):
			case cmd == "evaluate" && strings.Contains(p, "ofl's run flags") && slices.Contains(docFlags(paragraphs["server"]), f):
			default:
				t.Errorf("docs/distributed.md's Flags section does not name -%s of ofl %s", f, cmd)
			}
		}
	}
}

// orZero turns a default as -h prints it into a duration ParseDuration
// reads; "0s" for none.
func orZero(def string) string {
	if def == "" {
		return "0s"
	}
	return def
}

// docFlags returns the flags a paragraph names.
func docFlags(p string) []string {
	rest := p
	var fs []string
	for _, m := range regexp.MustCompile("`-([a-z0-9-]+)(?: [A-Z]+)?`").FindAllStringSubmatch(rest, -1) {
		fs = append(fs, m[1])
	}
	return fs
}

// TestDistributedWalkThroughNumbers keeps the numbers that
// docs/distributed.md's "Run a server and three learners" quotes true: the
// calibration the server logs and the line that ofl evaluate and the
// simulation both print (TestProcessesMatchSimulation checks that the
// two agree; this checks that they are the quoted ones).
func TestDistributedWalkThroughNumbers(t *testing.T) {
	if testing.Short() {
		t.Skip("200 rounds of 3 learners (about a second)")
	}
	b, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	r := runOfl(t, "-learners", "3", "-tau", "10", "-rounds", "200", "-seed", "1", "-reps", "1")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(r.stdout) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	want := "Both print `final_loss_error=" + fields["final_loss_error"] + " final_regret=" + fields["final_regret"] +
		" accuracy=" + fields["accuracy"] + "`"
	if !strings.Contains(doc, want) {
		t.Errorf("docs/distributed.md does not say %q (ofl prints %q)", want, strings.TrimSpace(r.stdout))
	}
	// The server's log: sensitivity=3.33... noise_std=2.299...
	std := fields["noise_std"] // 5 significant digits
	if len(std) < 5 || !strings.Contains(doc, "sensitivity=3.33... noise_std="+std[:5]+"...") {
		t.Errorf("docs/distributed.md's server log line does not give noise_std=%s... (sensitivity 2 B_g / n = 10/3)", std)
	}
}

// TestFedoptFlagsTable keeps docs/fedopt.md's table of ofl's flags true to
// ofl -h: a row for every flag and a flag for every row, and each default
// the table states that -h states too (numbers compared as numbers:
// 1e-4 is 0.0001).
func TestFedoptFlagsTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/fedopt.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Flags\n")
	if !ok {
		t.Fatal("docs/fedopt.md has no Flags section")
	}
	help := helpFlags(t)
	documented := map[string]bool{}
	flagRE := regexp.MustCompile("`-([a-z0-9-]+)(?: [A-Z]+)?`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`-") {
			continue
		}
		var names []string
		for _, m := range flagRE.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
			documented[m[1]] = true
			if _, ok := help[m[1]]; !ok {
				t.Errorf("docs/fedopt.md has a row for -%s, which ofl -h does not list", m[1])
			}
		}
		defs := strings.Split(strings.TrimSpace(cells[2]), ", ")
		if len(defs) != len(names) {
			continue
		}
		for i, name := range names {
			got, want := help[name], defs[i]
			if got == "" {
				continue // -h states no default (false, 0, "")
			}
			g, errG := strconv.ParseFloat(got, 64)
			w, errW := strconv.ParseFloat(want, 64)
			if errG == nil && errW == nil && g == w || got == want {
				continue
			}
			t.Errorf("docs/fedopt.md: -%s defaults to %s, ofl -h says %s", name, want, got)
		}
	}
	for name := range help {
		if !documented[name] {
			t.Errorf("docs/fedopt.md's Flags table has no row for -%s", name)
		}
	}
}

// TestSeedHelp: the -seed line of "ofl server -h" and "ofl evaluate -h"
// describes what -seed does there, not the simulation's drawn-and-printed
// default: the server prints no seed and has no -json (without -seed its
// noise key is drawn and kept in the state directory), and evaluate
// refuses to run without -seed.
func TestSeedHelp(t *testing.T) {
	usage := func(cmd string) string {
		r := runOfl(t, cmd, "-h")
		_, after, ok := strings.Cut(r.stdout, "\n  -seed ")
		if !ok {
			t.Fatalf("ofl %s -h lists no -seed:\n%s", cmd, r.stdout)
		}
		line, _, _ := strings.Cut(after, "\n  -")
		return line
	}
	if _, ok := helpFlags(t, "server")["json"]; ok {
		t.Fatal("ofl server has -json: this test's premise is stale")
	}
	if u := usage("server"); strings.Contains(u, "-json") || strings.Contains(u, "printed") || !strings.Contains(u, "noise.key") {
		t.Errorf("ofl server -h: -seed %q; want the server's behaviour (the noise key kept in noise.key without it), not the simulation's", u)
	}
	if r := runOfl(t, "evaluate", "-state", t.TempDir()); r.code != 2 || !strings.Contains(r.stderr, "-seed is required") {
		t.Fatalf("ofl evaluate without -seed: exit %d, %q; want the usage error", r.code, r.stderr)
	}
	if u := usage("evaluate"); strings.Contains(u, "default") || !strings.Contains(u, "required") {
		t.Errorf("ofl evaluate -h: -seed %q; want it required, with no default", u)
	}
}

// TestEvaluateHelpDefaults: "ofl evaluate -h" lists the run flags with a
// new simulation's defaults (-eps (default 5)), though evaluate takes the
// run's values from its plan; the text above the flags says so, and that a
// run flag given is checked against the plan.
func TestEvaluateHelpDefaults(t *testing.T) {
	r := runOfl(t, "evaluate", "-h")
	head, flags, ok := strings.Cut(r.stdout, "\n  -")
	if r.code != 0 || !ok || !strings.Contains(flags, "(default 5)") {
		t.Fatalf("ofl evaluate -h: exit %d, no -eps default of 5 (this test's premise):\n%s", r.code, r.stdout)
	}
	_, section, _ := strings.Cut(head, "\n\nFlags")
	section = strings.Join(strings.Fields(section), " ")
	for _, want := range []string{"those of a new simulation", "takes the run's values from its plan", "checks only the run flags given here against it"} {
		if !strings.Contains(section, want) {
			t.Errorf("ofl evaluate -h: the flags' heading %q does not say %q", section, want)
		}
	}
}

// TestRequiredFlagsInUsage: the usage line of "ofl learner -h" and "ofl
// evaluate -h" names, outside brackets, every flag that the command refuses
// to run without, and the flag's own line says "required"; a command whose
// -h lists the run flags (-eps, ...) names them in its usage line. The required
// flags are found by running the command without them: each "-X is
// required" error adds -X to the next run. A bad -colluders (learner) and
// a missing state directory (evaluate) stop the command after its flag
// checks, before it dials a server or reads a run.
func TestRequiredFlagsInUsage(t *testing.T) {
	required := regexp.MustCompile(`(-[a-z-]+) is required`)
	for _, c := range []struct {
		cmd  string
		base []string
		vals map[string]string
	}{
		{"learner", []string{"-colluders", "-1"}, map[string]string{"-id": "0", "-seed": "1"}},
		{"evaluate", nil, map[string]string{"-state": t.TempDir() + "/none", "-seed": "1"}},
	} {
		h := runOfl(t, c.cmd, "-h")
		first, _, _ := strings.Cut(h.stdout, "\n")
		mandatory := regexp.MustCompile(`\[[^]]*\]`).ReplaceAllString(first, "")
		args := c.base
		var found []string
		for range 5 {
			r := runOfl(t, append([]string{c.cmd}, args...)...)
			m := required.FindStringSubmatch(r.stderr)
			if m == nil {
				break
			}
			f := m[1]
			found = append(found, f)
			if !slices.Contains(strings.Fields(mandatory), f) {
				t.Errorf("ofl %s refuses to run without %s, but its usage line does not name it outside brackets:\n\t%s", c.cmd, f, first)
			}
			_, after, _ := strings.Cut(h.stdout, "\n  "+f+" ")
			if line, _, _ := strings.Cut(after, "\n  -"); !strings.Contains(line, "required") {
				t.Errorf("ofl %s -h: the line of %s does not say it is required:\n\t%s %s", c.cmd, f, f, line)
			}
			v, ok := c.vals[f]
			if !ok {
				t.Fatalf("ofl %s requires %s: give the test a value for it", c.cmd, f)
			}
			args = append(args, f, v)
		}
		if _, ok := helpFlags(t, c.cmd)["eps"]; ok && !strings.Contains(first, "run flags") && !strings.Contains(first, "run and data flags") {
			t.Errorf("ofl %s -h lists the run flags (-eps, ...), but its usage line does not name them:\n\t%s", c.cmd, first)
		}
		if len(found) < 2 {
			t.Errorf("ofl %s: found the required flags %v, want at least -id/-state and -seed", c.cmd, found)
		}
	}
}

// TestReproduceCommandsKeepSummary checks the ofl reproduce commands that
// README.md and docs/*.md show: each names parts ofl reproduce takes, and
// one that writes into docs/reproduction runs them all. A part run alone
// writes a summary.md with its own tables only, in place of the one in its
// -out directory: docs/beyond.md's "ofl reproduce beyond -out
// docs/reproduction" would have left docs/reproduction/summary.md without
// the tables of Fig. 2 to 4 and the tuning, which reproduction.md and
// beyond.md cite.
func TestReproduceCommandsKeepSummary(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{"fig2", "fig3", "fig4", "tuning", "beyond", "all"}
	cmd := regexp.MustCompile("(?:go run ./cmd/ofl|\\bofl) reproduce ([^`#\n]*)")
	found := 0
	for _, f := range append(files, "../../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cmd.FindAllStringSubmatch(string(b), -1) {
			args := strings.Fields(m[1])
			var named []string
			out := ""
			for i := 0; i < len(args); i++ {
				switch a := args[i]; {
				case a == "-out" && i+1 < len(args):
					out = args[i+1]
					i++
				case regexp.MustCompile(`^[A-Z.]+$`).MatchString(a):
					named = append(named, a) // a placeholder: PART...
				case !strings.HasPrefix(a, "-"):
					// A part, or a choice of parts: fig2|fig3.
					for _, p := range strings.Split(a, "|") {
						if !slices.Contains(parts, p) {
							t.Errorf("%s: ofl reproduce %s: %q is no part (want %v)", f, m[1], p, parts)
						}
						named = append(named, p)
					}
				}
			}
			if out == "" || len(named) == 0 && regexp.MustCompile(`^[A-Z]+$`).MatchString(out) {
				continue // a mention of the flag (-out DIR), not a command
			}
			found++
			if len(named) == 0 {
				t.Errorf("%s: ofl reproduce %s names no part (want %v)", f, m[1], parts)
			}
			if strings.TrimSuffix(out, "/") == "docs/reproduction" && !slices.Equal(named, []string{"all"}) {
				t.Errorf("%s: ofl reproduce %s writes parts %v alone into docs/reproduction: its summary.md would lose the other parts' tables", f, m[1], named)
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d ofl reproduce commands with -out in the docs, want at least those of README.md and reproduction.md", found)
	}
}
