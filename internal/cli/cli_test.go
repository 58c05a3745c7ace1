package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("boom"), ExitFailure},
		{Usagef("-R %d", 0), ExitUsage},
		{fmt.Errorf("wrapped: %w", Usagef("bad")), ExitUsage},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\nb  c\t\nd\n"); got != "a b c d" {
		t.Errorf("OneLine = %q", got)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is not a terminal")
	}
}

func TestParseFlags(t *testing.T) {
	newFS := func() (*flag.FlagSet, *int) {
		fs := NewFlagSet("cmd")
		return fs, fs.Int("n", 1, "a `count`")
	}
	fs, n := newFS()
	set, err := ParseFlags(fs, []string{"-n", "3"}, nil, "", "")
	if err != nil || *n != 3 || !set["n"] || len(set) != 1 {
		t.Fatalf("-n 3: n = %d, set %v, err %v", *n, set, err)
	}
	fs, _ = newFS()
	if set, err = ParseFlags(fs, nil, nil, "", ""); err != nil || len(set) != 0 {
		t.Errorf("no flags: set %v, err %v", set, err)
	}
	var help strings.Builder
	fs, _ = newFS()
	if _, err := ParseFlags(fs, []string{"-h"}, &help, "Usage: cmd\n", ""); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err %v, want flag.ErrHelp", err)
	}
	if want := "Usage: cmd\n  -n count\n    \ta count (default 1)\n"; help.String() != want {
		t.Errorf("-h wrote %q, want %q", help.String(), want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "sub: flag provided but not defined: -x"},
		{[]string{"-n", "x"}, `sub: invalid value "x" for flag -n: parse error`},
		{[]string{"-n", "2", "out"}, `sub: unexpected argument "out" (flags start with -)`},
	} {
		fs, _ := newFS()
		_, err := ParseFlags(fs, tc.args, nil, "", "sub: ")
		if ExitCode(err) != ExitUsage || err.Error() != tc.want {
			t.Errorf("%q: err %v, want the usage error %q", tc.args, err, tc.want)
		}
	}
}
