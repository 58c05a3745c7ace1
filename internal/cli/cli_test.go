package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
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
	// A help that cannot be written (-h > /dev/full) is the write's
	// error, not flag.ErrHelp (which commands read as success).
	fs, _ = newFS()
	if _, err := ParseFlags(fs, []string{"-h"}, fullWriter{}, "Usage: cmd\n", ""); err == nil || errors.Is(err, flag.ErrHelp) || err.Error() != "no space left on device" {
		t.Errorf("-h to a full stdout: err %v, want the write's error", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "sub: flag provided but not defined: -x"},
		{[]string{"-n", "x"}, `sub: invalid value "x" for flag -n: want a decimal integer`},
		{[]string{"-n", "2", "out"}, `sub: unexpected argument "out" (flags start with -)`},
	} {
		fs, _ := newFS()
		_, err := ParseFlags(fs, tc.args, nil, "", "sub: ")
		if ExitCode(err) != ExitUsage || err.Error() != tc.want {
			t.Errorf("%q: err %v, want the usage error %q", tc.args, err, tc.want)
		}
	}
}

// A float64 flag refuses a nonzero value that would underflow to 0, with
// the flag package's one-line error; the flag set keeps its own values,
// so -h still prints "float" and the default.
func TestParseRefusesUnderflow(t *testing.T) {
	newFS := func() (*flag.FlagSet, *float64) {
		fs := NewFlagSet("cmd")
		return fs, fs.Float64("clip", 5, "clipping bound")
	}
	for _, tc := range []struct {
		arg  string
		want float64
		err  string
	}{
		{"0", 0, ""},
		{"-0", 0, ""},
		{"0e-400", 0, ""},
		{"4e-324", 5e-324, ""}, // the smallest subnormal: no underflow
		{"2.5", 2.5, ""},
		{"1e-400", 0, `invalid value "1e-400" for flag -clip: nonzero but below the float64 range`},
		{"-1e-400", 0, `invalid value "-1e-400" for flag -clip: nonzero but below the float64 range`},
		{"0x1p-2000", 0, `invalid value "0x1p-2000" for flag -clip: nonzero but below the float64 range`},
		// Exponents beyond big.Float's range, which strconv rounds to 0:
		// judged by the mantissa.
		{"1e-9999999999", 0, `invalid value "1e-9999999999" for flag -clip: nonzero but below the float64 range`},
		{"-0.001e-99999999999999999999", 0, `invalid value "-0.001e-99999999999999999999" for flag -clip: nonzero but below the float64 range`},
		{"0x0.8p-9999999999", 0, `invalid value "0x0.8p-9999999999" for flag -clip: nonzero but below the float64 range`},
		// An exponent inside big.Float's range that it rounds to 0 without
		// an error: judged by the mantissa too (FuzzParseFloat found it).
		{"1e-700000000", 0, `invalid value "1e-700000000" for flag -clip: nonzero but below the float64 range`},
		{"0e-9999999999", 0, ""},
		{"-0.000e-99999999999999999999", 0, ""},
		{"0x0p-9999999999", 0, ""},
		// Text that is no number, or out of range, says so in ParseFloat's
		// words, not the flag package's "parse error".
		{"abc", 0, `invalid value "abc" for flag -clip: not a number`},
		{"1,5", 0, `invalid value "1,5" for flag -clip: not a number`},
		{"1e400", 0, `invalid value "1e400" for flag -clip: out of the float64 range`},
	} {
		fs, clip := newFS()
		err := Parse(fs, []string{"-clip", tc.arg})
		if tc.err == "" {
			if err != nil || *clip != tc.want {
				t.Errorf("-clip %s: %v, clip %v; want %v", tc.arg, err, *clip, tc.want)
			}
			continue
		}
		if err == nil || err.Error() != tc.err {
			t.Errorf("-clip %s: err %v, want %q", tc.arg, err, tc.err)
		}
	}
	fs, _ := newFS()
	var help strings.Builder
	if _, err := ParseFlags(fs, []string{"-h"}, &help, "", ""); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	if want := "  -clip float\n    \tclipping bound (default 5)\n"; help.String() != want {
		t.Errorf("-h wrote %q, want %q", help.String(), want)
	}
}

// With Once a flag given twice is an error naming both values, for every
// kind of flag (a float wrapped for underflow, an int, a bool, a Func);
// each once is fine, and without Once the last still wins. The flags'
// values are restored after parsing: -h prints their types and defaults.
func TestParseOnce(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := NewFlagSet("cmd")
		fs.Float64("eps", 5, "budget")
		fs.Int("R", 8, "rounds")
		fs.Bool("json", false, "print JSON")
		fs.Func("spec", "a spec", func(string) error { return nil })
		return fs
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-eps", "1", "-R", "4", "-eps", "8"}, `invalid value "8" for flag -eps: given twice (first "1"): give each flag once`},
		{[]string{"-R", "4", "-R=4"}, `invalid value "4" for flag -R: given twice (first "4"): give each flag once`},
		{[]string{"-json", "-json=false"}, `invalid boolean value "false" for -json: given twice (first "true"): give each flag once`},
		{[]string{"-json", "-json"}, `invalid boolean flag json: given twice (first "true"): give each flag once`},
		{[]string{"-spec", "a", "-spec", "b"}, `invalid value "b" for flag -spec: given twice (first "a"): give each flag once`},
		{[]string{"-eps", "1e-400", "-eps", "1"}, `invalid value "1e-400" for flag -eps: nonzero but below the float64 range`},
	} {
		if err := Parse(newFS(), tc.args, Once); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if _, err := ParseFlags(newFS(), tc.args, nil, "", "cmd: ", Once); err == nil || err.Error() != "cmd: "+tc.want {
			t.Errorf("ParseFlags %v: %v, want %q", tc.args, err, "cmd: "+tc.want)
		}
	}
	fs := newFS()
	if err := Parse(fs, []string{"-eps", "1", "-R", "4", "-json", "-spec", "a"}, Once); err != nil {
		t.Errorf("each flag once: %v", err)
	}
	if v := fs.Lookup("eps").Value.(flag.Getter).Get(); v != 1.0 {
		t.Errorf("-eps read as %v", v)
	}
	fs = newFS()
	if err := Parse(fs, []string{"-eps", "1", "-eps", "8"}); err != nil || fs.Lookup("eps").Value.String() != "8" {
		t.Errorf("without Once: %v, -eps %v; want the last, 8", err, fs.Lookup("eps").Value)
	}
	var help strings.Builder
	if _, err := ParseFlags(newFS(), []string{"-R", "3", "-h"}, &help, "", "", Once); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	if want := "  -R int\n    \trounds (default 8)\n"; !strings.Contains(help.String(), want) || !strings.Contains(help.String(), "  -json\n") {
		t.Errorf("-h wrote %q, want the flags' types and defaults", help.String())
	}
}

// ParseInterspersed returns the arguments that are not flags in order,
// with flags before, between and after them, and with Once refuses a flag
// given twice on either side of an argument.
func TestParseInterspersed(t *testing.T) {
	newFS := func() (*flag.FlagSet, *string, *bool) {
		fs := NewFlagSet("cmd")
		return fs, fs.String("out", "", "dir"), fs.Bool("quick", false, "quick")
	}
	fs, out, quick := newFS()
	rest, err := ParseInterspersed(fs, []string{"fig2", "-out", "d", "fig3", "-quick", "all"}, Once)
	if err != nil || !slices.Equal(rest, []string{"fig2", "fig3", "all"}) || *out != "d" || !*quick {
		t.Errorf("got %q, -out %q, -quick %v, %v; want [fig2 fig3 all], d, true", rest, *out, *quick, err)
	}
	fs, _, _ = newFS()
	want := `invalid value "e" for flag -out: given twice (first "d"): give each flag once`
	if _, err := ParseInterspersed(fs, []string{"-out", "d", "fig2", "-out", "e"}, Once); err == nil || err.Error() != want {
		t.Errorf("-out twice around a part: %v, want %q", err, want)
	}
	fs, out, _ = newFS()
	if _, err := ParseInterspersed(fs, []string{"-out", "d", "fig2", "-out", "e"}); err != nil || *out != "e" {
		t.Errorf("without Once: %v, -out %q; want the last, e", err, *out)
	}
}

func TestParseFloat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"1.5", 1.5, ""},
		{"0", 0, ""},
		{"1e-400", 0, "nonzero but below the float64 range"},
		{"1e-9999999999", 0, "nonzero but below the float64 range"},
		{"1e-700000000", 0, "nonzero but below the float64 range"},
		{"0e-9999999999", 0, ""},
		{"1e400", 0, "out of the float64 range"},
		{"", 0, "not a number"},
		{"x", 0, "not a number"},
	} {
		v, err := ParseFloat(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || v != tc.want {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, %q", tc.in, v, err, tc.want, tc.err)
		}
	}
}

// ParseFloatDown reads a positive subnormal as the largest float64 not above
// it; the expected values are multiples of 2^-1074 = 4.9406564584124654e-324
// worked out by hand (8e-324 lies between 1 and 2 of them, nearer 2).
func TestParseFloatDown(t *testing.T) {
	const u = 0x1p-1074
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"1e-5", 1e-5, ""},      // normal: ParseFloat's nearest
		{"8e-324", u, ""},       // nearest is 2u, above 8e-324
		{"7e-324", u, ""},       // nearest is u, below
		{"1.5e-323", 3 * u, ""}, // 3u = 1.482e-323, below
		{"0x1p-1074", u, ""},    // exact
		{"1e-320", 2024 * u, ""},
		{"2.5e-324", 0, "positive but below the smallest float64 (4.9e-324); rounding it up would weaken the target"},
		{"1e-400", 0, "nonzero but below the float64 range"},
		{"0", 0, ""},
		{"-8e-324", -2 * u, ""}, // not a positive target: left to the caller's range check
	} {
		v, err := ParseFloatDown(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || v != tc.want {
			t.Errorf("ParseFloatDown(%q) = %v, %v; want %v, %q", tc.in, v, err, tc.want, tc.err)
		}
	}
}

// Float64DownVar reads its flag by ParseFloatDown (fs.Float64Var read
// -delta 8e-324 as 2^-1073 = 9.9e-324, above the number written), keeps
// the underflow check of Parse and Once's refusal of a second value, and
// prints its default in the help as fs.Float64Var does.
func TestFloat64DownVar(t *testing.T) {
	const u = 0x1p-1074
	for _, tc := range []struct {
		args []string
		want float64
		err  string
	}{
		{nil, 1e-3, ""},
		{[]string{"-delta", "8e-324"}, u, ""},
		{[]string{"-delta", "1e-5"}, 1e-5, ""},
		{[]string{"-delta", "2.5e-324"}, 0, `invalid value "2.5e-324" for flag -delta: positive but below the smallest float64 (4.9e-324); rounding it up would weaken the target`},
		{[]string{"-delta", "1e-400"}, 0, `invalid value "1e-400" for flag -delta: nonzero but below the float64 range`},
		{[]string{"-delta", "1e-5", "-delta", "1e-6"}, 0, `invalid value "1e-6" for flag -delta: given twice (first "1e-5"): give each flag once`},
	} {
		fs := NewFlagSet("t")
		var d float64
		Float64DownVar(fs, &d, "delta", 1e-3, "privacy `DELTA`")
		err := Parse(fs, tc.args, Once)
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err || err == nil && d != tc.want {
			t.Errorf("%q: %v, %v; want %v, %q", tc.args, d, err, tc.want, tc.err)
		}
	}
	fs, ref := NewFlagSet("t"), NewFlagSet("t")
	var a, b float64
	Float64DownVar(fs, &a, "delta", 1e-3, "privacy `DELTA`")
	ref.Float64Var(&b, "delta", 1e-3, "privacy `DELTA`")
	var got, want bytes.Buffer
	if err := PrintUsage(&got, fs, ""); err != nil {
		t.Fatal(err)
	}
	if err := PrintUsage(&want, ref, ""); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("help %q, want fs.Float64Var's %q", got.String(), want.String())
	}
}

// fullWriter fails every write, as stdout redirected to /dev/full does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// An integer flag reads decimal digits: the flag package read Go's
// literals, so -n 010 was 8 (octal), -n 0x10 16 and -n 1_000 1000. A
// base prefix or an underscore is the one-line error naming the flag; a
// leading 0 is decimal; other text is the one-line error saying that a
// decimal integer is wanted (>= 0 for an unsigned flag, which takes no
// minus sign); int64, uint and uint64 flags are read the same way.
func TestParseIntsDecimal(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want int
		err  string
	}{
		{"10", 10, ""},
		{"010", 10, ""},
		{"-010", -10, ""},
		{"+7", 7, ""},
		{"000", 0, ""},
		{"0x10", 0, `invalid value "0x10" for flag -n: want a decimal integer (digits with an optional sign; not 0x, 0o, 0b or underscores)`},
		{"-0X10", 0, `invalid value "-0X10" for flag -n: want a decimal integer`},
		{"0o17", 0, `invalid value "0o17" for flag -n: want a decimal integer`},
		{"0b11", 0, `invalid value "0b11" for flag -n: want a decimal integer`},
		{"1_000", 0, `invalid value "1_000" for flag -n: want a decimal integer`},
		{"0x1_0000_0000_0000_0000_0000", 0, `invalid value "0x1_0000_0000_0000_0000_0000" for flag -n: want a decimal integer`},
		{"abc", 0, `invalid value "abc" for flag -n: want a decimal integer`},
		{"1e3", 0, `invalid value "1e3" for flag -n: want a decimal integer`},
		{"12.5", 0, `invalid value "12.5" for flag -n: want a decimal integer`},
		{"-", 0, `invalid value "-" for flag -n: want a decimal integer`},
		{"99999999999999999999", 0, `invalid value "99999999999999999999" for flag -n: value out of range`},
	} {
		fs := NewFlagSet("cmd")
		n := fs.Int("n", 5, "a number")
		err := Parse(fs, []string{"-n", tc.arg}, Once)
		if tc.err == "" {
			if err != nil || *n != tc.want {
				t.Errorf("-n %s: %v, n %d; want %d", tc.arg, err, *n, tc.want)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("-n %s: err %v, want one starting %q", tc.arg, err, tc.err)
		}
	}
	fs := NewFlagSet("cmd")
	i64, u, u64 := fs.Int64("a", 0, ""), fs.Uint("b", 0, ""), fs.Uint64("c", 0, "")
	if err := Parse(fs, []string{"-a", "010", "-b", "010", "-c", "010"}); err != nil || *i64 != 10 || *u != 10 || *u64 != 10 {
		t.Errorf("int64, uint, uint64 flags 010: %v, %d %d %d; want 10 each", err, *i64, *u, *u64)
	}
	// An unsigned flag refuses a minus sign (and text) with what it
	// wants; a plus sign reads as on a signed flag.
	for _, tc := range []struct{ arg, err string }{
		{"-1", `invalid value "-1" for flag -b: want a decimal integer >= 0`},
		{"-0", `invalid value "-0" for flag -b: want a decimal integer >= 0`},
		{"abc", `invalid value "abc" for flag -b: want a decimal integer >= 0`},
		{"+7", ""},
		{"+007", ""},
	} {
		fs := NewFlagSet("cmd")
		u := fs.Uint("b", 0, "")
		err := Parse(fs, []string{"-b", tc.arg})
		switch {
		case tc.err == "" && (err != nil || *u != 7):
			t.Errorf("-b %s: %v, b %d; want 7", tc.arg, err, *u)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("-b %s: err %v, want %q", tc.arg, err, tc.err)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		fs := NewFlagSet("cmd")
		fs.Int64("a", 0, "")
		fs.Uint("b", 0, "")
		fs.Uint64("c", 0, "")
		if err := Parse(fs, []string{"-" + name, "0x10"}); err == nil || !strings.Contains(err.Error(), "want a decimal integer") {
			t.Errorf("-%s 0x10: %v, want a decimal integer error", name, err)
		}
	}
}

// An unknown flag's error names the flag probably meant: mfsolve's -R for
// ofl's -rounds, a flag in the wrong case, a prefix of one flag, one
// within two edits; nothing when no flag is close, or several are.
func TestParseSuggestsFlag(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := NewFlagSet("cmd")
		for _, n := range []string{"R", "o", "eps", "delta", "learners", "participation", "clip", "calibration", "seed"} {
			fs.String(n, "", "")
		}
		return fs
	}
	for _, tc := range []struct{ arg, want string }{
		{"-rounds", "flag provided but not defined: -rounds; did you mean -R?"},
		{"-r", "flag provided but not defined: -r; did you mean -R?"},
		{"--out", "flag provided but not defined: -out; did you mean -o?"},
		{"-epsilon", "flag provided but not defined: -epsilon; did you mean -eps?"},
		{"-learner", "flag provided but not defined: -learner; did you mean -learners?"},
		{"-part", "flag provided but not defined: -part; did you mean -participation?"},
		{"-Delta=1", "flag provided but not defined: -Delta; did you mean -delta?"},
		{"-seeds", "flag provided but not defined: -seeds; did you mean -seed?"},
		{"-cal", "flag provided but not defined: -cal; did you mean -calibration?"},
		{"-c", "flag provided but not defined: -c"},         // clip and calibration
		{"-x", "flag provided but not defined: -x"},         // too short to guess
		{"-bogus", "flag provided but not defined: -bogus"}, // nothing close
		{"-reps", "flag provided but not defined: -reps"},   // -eps is one edit away, but another word
	} {
		err := Parse(newFS(), []string{tc.arg, "1"})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err %v, want %q", tc.arg, err, tc.want)
		}
		if _, err := ParseInterspersed(newFS(), []string{"part", tc.arg, "1"}); err == nil || err.Error() != tc.want {
			t.Errorf("ParseInterspersed %s: err %v, want %q", tc.arg, err, tc.want)
		}
	}
}
