package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/audit"
)

// TestCLIFlagsTable keeps the dpaudit section of docs/cli.md true to the
// command: its table names exactly the flags that "dpaudit replay -h" and
// "dpaudit canary -h" list, a flag only canary lists is marked "canary
// only", and a default that -h prints is the table's (a row naming several
// flags gives their defaults in the same order).
func TestCLIFlagsTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n# dpaudit\n")
	if !ok {
		t.Fatal("docs/cli.md has no dpaudit section")
	}
	section, _, _ = strings.Cut(section, "\n# ")
	type row struct{ def, meaning string }
	doc := map[string]row{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 3 || !strings.HasPrefix(line, "| `-") {
			continue
		}
		names := regexp.MustCompile("`-([a-z-]+)").FindAllStringSubmatch(cells[0], -1)
		defs := strings.Split(cells[1], ", ")
		for i, n := range names {
			d := defs[0]
			if len(names) > 1 {
				if len(defs) != len(names) {
					t.Fatalf("docs/cli.md: the row %q has %d flags and %d defaults", line, len(names), len(defs))
				}
				d = defs[i]
			}
			doc[n[1]] = row{d, cells[2]}
		}
	}
	if len(doc) == 0 {
		t.Fatal("docs/cli.md's dpaudit section has no flags table")
	}
	in := map[string][]string{} // flag -> the subcommands whose -h lists it
	def := map[string]string{}
	for _, c := range []string{"replay", "canary"} {
		var out, errb bytes.Buffer
		if code, err := run(context.Background(), []string{c, "-h"}, &out, &errb); code != 0 || err != nil {
			t.Fatalf("dpaudit %s -h: exit %d, %v", c, code, err)
		}
		name := ""
		for _, line := range strings.Split(out.String(), "\n") {
			if m := regexp.MustCompile(`^  -([a-z-]+)`).FindStringSubmatch(line); m != nil {
				name = m[1]
				in[name] = append(in[name], c)
				continue
			}
			if m := regexp.MustCompile(`\(default "?([^")]*)"?\)$`).FindStringSubmatch(line); m != nil && name != "" {
				def[name] = m[1]
			}
		}
	}
	for f, cmds := range in {
		r, ok := doc[f]
		switch {
		case !ok:
			t.Errorf("docs/cli.md: dpaudit has -%s, the table has no row for it", f)
		case len(cmds) == 1 && !strings.HasPrefix(r.meaning, cmds[0]+" only"):
			t.Errorf("docs/cli.md: -%s is listed by dpaudit %s -h only; the table does not say %q", f, cmds[0], cmds[0]+" only")
		case def[f] != "" && r.def != def[f]:
			t.Errorf("docs/cli.md: -%s defaults to %q, dpaudit's -h says %q", f, r.def, def[f])
		}
	}
	for f := range doc {
		if _, ok := in[f]; !ok {
			t.Errorf("docs/cli.md: the dpaudit table has -%s, which dpaudit does not define", f)
		}
	}
}

// TestDropoutParagraph keeps docs/audit.md's account of the replay with
// dropouts true: it runs the command the paragraph describes (dpaudit
// replay -dropout 0.2 -seed 1, the Fig. 4 setting) and checks the
// learner-rounds dropped, the audited learner and round, the learners
// missing there, that the replay passes with ratio 1 to the printed
// digits, and the ratio n / n' that the seeded "dropout shrinks the
// denominator" bug would give in that round (n' the learners present).
func TestDropoutParagraph(t *testing.T) {
	if testing.Short() {
		t.Skip("a replay at the Fig. 4 setting (about a second)")
	}
	b, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile("with `-dropout 0.2` at the Fig. 4 setting \\(optimal, \\(5, 1e-3\\), seed 1\\) ([0-9,]+) of the ([0-9,]+) learner-rounds are dropped; .*? here learner ([0-9]+) in round ([0-9]+) with ([0-9]+) of the ([0-9]+) learners missing; the ratio is ([0-9.]+) .*? would give n / n' = ([0-9]+) / ([0-9]+) = ([0-9.]+) there").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/audit.md has no paragraph on -dropout 0.2 at the Fig. 4 setting in the expected words")
	}
	code, out, err := runCmd(t, "replay", "-dropout", "0.2", "-seed", "1", "-json")
	if code != 0 || err != nil {
		t.Fatalf("dpaudit replay -dropout 0.2 -seed 1: exit %d, %v", code, err)
	}
	var rep struct {
		Learners int     `json:"learners"`
		Rounds   int     `json:"rounds"`
		Ratio    float64 `json:"ratio"`
		Learner  int     `json:"audited_learner"`
		Audited  []int   `json:"audited_rounds"`
		Dropped  int     `json:"dropped"`
		Missing  int     `json:"audited_rounds_dropped"`
		OK       bool    `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Audited) != 1 {
		t.Fatalf("report %q: %v, want one audited round", out, err)
	}
	present := rep.Learners - rep.Missing
	_, decimals, _ := strings.Cut(m[10], ".")
	for i, c := range []struct{ what, want string }{
		{"learner-rounds dropped", strconv.Itoa(rep.Dropped)},
		{"learner-rounds in all", strconv.Itoa(rep.Learners * rep.Rounds)},
		{"audited learner", strconv.Itoa(rep.Learner)},
		{"audited round", strconv.Itoa(rep.Audited[0])},
		{"learners missing", strconv.Itoa(rep.Missing)},
		{"learners", strconv.Itoa(rep.Learners)},
		{"ratio", strconv.FormatFloat(rep.Ratio, 'f', 15, 64)},
		{"the bug's n", strconv.Itoa(rep.Learners)},
		{"the bug's n'", strconv.Itoa(present)},
		{"the bug's n / n'", strconv.FormatFloat(float64(rep.Learners)/float64(present), 'f', len(decimals), 64)},
	} {
		if got := strings.ReplaceAll(m[i+1], ",", ""); got != c.want {
			t.Errorf("docs/audit.md: %s %s, dpaudit replay -dropout 0.2 -seed 1 gives %s", c.what, got, c.want)
		}
	}
	if !rep.OK {
		t.Error("docs/audit.md says every check passes; the replay fails")
	}
}

// TestOneRunParagraph keeps docs/audit.md's "Why the rigorous bound is so
// far below the claim" true to dpaudit canary -seed 1 at the Fig. 4
// setting: the correct guesses and guesses, the bound they leave, the
// excess v - r q at that bound and the bound without the delta term
// (audit.OneRunEpsilon with delta 0 at the same level, 0.05 / 6). The
// paragraph had kept the first run's 1233 correct, 0.25 and 1.08 after the
// table beside it was rerun (1228, 0.242).
func TestOneRunParagraph(t *testing.T) {
	if testing.Short() {
		t.Skip("a canary audit at the Fig. 4 setting (a few seconds)")
	}
	b, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile(`2 m delta = [0-9.]+ at m = ([0-9]+) and delta = 1e-3, .*? = [0-9]+ guesses \(([0-9]+) at optimal's ([0-9]+) of ([0-9]+), where the binomial spread helps\), which leaves (?:about )?([0-9.]+); without the delta term the same guesses would give ([0-9.]+)\.`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/audit.md has no paragraph on the one-run bound's delta term in the expected words")
	}
	code, out, err := runCmd(t, "canary", "-seed", "1", "-json")
	if code != 0 || err != nil {
		t.Fatalf("dpaudit canary -seed 1 -json: exit %d, %v", code, err)
	}
	var rep struct {
		Canaries int `json:"canaries"`
		All      struct {
			OneRun struct {
				Eps        float64 `json:"eps_lower_bound"`
				Confidence float64 `json:"confidence"`
				Guesses    int     `json:"guesses"`
				Correct    int     `json:"correct"`
			} `json:"one_run"`
		} `json:"all_iterates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	o := rep.All.OneRun
	q := math.Exp(o.Eps) / (1 + math.Exp(o.Eps))
	noDelta := audit.OneRunEpsilon(rep.Canaries, o.Guesses, o.Correct, 0, (1-o.Confidence)/6)
	decimals := func(s string) int { _, d, _ := strings.Cut(s, "."); return len(d) }
	for i, c := range []struct{ what, want string }{
		{"m", strconv.Itoa(rep.Canaries)},
		{"v - r q at the bound", strconv.Itoa(int(math.Round(float64(o.Correct) - float64(o.Guesses)*q)))},
		{"correct guesses", strconv.Itoa(o.Correct)},
		{"guesses", strconv.Itoa(o.Guesses)},
		{"bound", strconv.FormatFloat(o.Eps, 'f', decimals(m[5]), 64)},
		{"bound without the delta term", strconv.FormatFloat(noDelta, 'f', decimals(m[6]), 64)},
	} {
		if got := m[i+1]; got != c.want {
			t.Errorf("docs/audit.md: %s %s, dpaudit canary -seed 1 gives %s", c.what, got, c.want)
		}
	}
}
