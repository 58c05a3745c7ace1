package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
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
