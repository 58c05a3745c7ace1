package main

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestDocClaims runs every dpacct command that the docs (and the README)
// quote with its output (docs/privacy.md's noise_std and sigma values, the
// PLD epsilon line, delta's 5e-324 bound) and checks the quoted values, so
// a stale number fails here. The PLD ones take about a second each.
func TestDocClaims(t *testing.T) {
	testutil.SkipOn386(t, "outputs quoted from amd64 in full precision; on 386 the sampled PLD's eps differs in the 14th digit (1.828238455959419 against 1.8282384559595577)")
	claims := append(testutil.DocClaims(t, "../../docs/*.md", "dpacct"), testutil.DocClaims(t, "../../README.md", "dpacct")...)
	if len(claims) < 5 {
		t.Fatalf("found %d claims in the docs, want at least the 5 of docs/privacy.md", len(claims))
	}
	for _, c := range claims {
		code, out, errs := runCmd(c.Args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c, code, errs)
			continue
		}
		testutil.CheckClaim(t, c, out)
	}
}

// TestCLIFlagsTable keeps the dpacct section of docs/cli.md true to the
// command: its table names exactly the flags that the three subcommands'
// -h list, each row's "commands" are those whose -h lists the flag, and a
// default that -h prints is the table's.
func TestCLIFlagsTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n# dpacct\n")
	if !ok {
		t.Fatal("docs/cli.md has no dpacct section")
	}
	section, _, _ = strings.Cut(section, "\n# ")
	type row struct{ def, cmds string }
	doc := map[string]row{}
	for _, line := range strings.Split(section, "\n") {
		m := regexp.MustCompile("^\\| `-([a-z-]+)[^`]*` \\| ([^|]*) \\| ([^|]*) \\|").FindStringSubmatch(line)
		if m != nil {
			doc[m[1]] = row{strings.TrimSpace(m[2]), strings.TrimSpace(m[3])}
		}
	}
	if len(doc) == 0 {
		t.Fatal("docs/cli.md's dpacct section has no flags table")
	}
	commands := []string{"sigma", "epsilon", "delta"}
	in := map[string][]string{} // flag -> the commands whose -h lists it
	def := map[string]string{}  // flag -> the default -h prints
	for _, c := range commands {
		code, help, errs := runCmd(c, "-h")
		if code != 0 {
			t.Fatalf("dpacct %s -h: exit %d: %s", c, code, errs)
		}
		name := ""
		for _, line := range strings.Split(help, "\n") {
			if m := regexp.MustCompile(`^  -([a-z-]+)`).FindStringSubmatch(line); m != nil {
				name = m[1]
				in[name] = append(in[name], c)
				continue
			}
			if m := regexp.MustCompile(`\(default ([^);]*)\)$`).FindStringSubmatch(line); m != nil && name != "" {
				def[name] = m[1]
			}
		}
	}
	for f, cmds := range in {
		r, ok := doc[f]
		if !ok {
			t.Errorf("docs/cli.md: dpacct has -%s (in %v), the table has no row for it", f, cmds)
			continue
		}
		want := "all"
		if len(cmds) < len(commands) {
			want = "`" + strings.Join(cmds, "`, `") + "`"
		}
		if r.cmds != want {
			t.Errorf("docs/cli.md: -%s is for %q, dpacct's -h lists it for %q", f, r.cmds, want)
		}
		if d, ok := def[f]; ok && r.def != d {
			t.Errorf("docs/cli.md: -%s defaults to %q, dpacct's -h says %q", f, r.def, d)
		}
	}
	for f := range doc {
		if _, ok := in[f]; !ok {
			t.Errorf("docs/cli.md: the dpacct table has -%s, which no subcommand defines (%v)", f, slices.Sorted(maps.Keys(in)))
		}
	}
}
