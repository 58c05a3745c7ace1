package cli

import (
	"errors"
	"flag"
	"math"
	"strings"
	"testing"
)

// withinEdits reports whether b can be made from a by at most k
// insertions, deletions or substitutions of bytes, by trying each edit
// (a second way to the distance that suggest computes by dynamic
// programming).
func withinEdits(a, b string, k int) bool {
	switch {
	case a == b:
		return true
	case k == 0:
		return false
	case a == "" || b == "":
		return len(a)+len(b) <= k
	case a[0] == b[0]:
		return withinEdits(a[1:], b[1:], k)
	}
	return withinEdits(a[1:], b, k-1) || withinEdits(a, b[1:], k-1) || withinEdits(a[1:], b[1:], k-1)
}

// decimalOracle reads s as a decimal integer the way the integer flags
// promise to (an optional sign, then digits only; leading zeros are
// decimal), by its own scan: the value, or false where s is not such an
// integer or is out of range (int64, or uint64 without a minus sign for
// unsigned).
func decimalOracle(s string, unsigned bool) (int64, uint64, bool) {
	neg, digits := false, s
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, digits = s[0] == '-', s[1:]
	}
	if digits == "" || unsigned && neg {
		return 0, 0, false
	}
	var u uint64
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		if u > (math.MaxUint64-uint64(c-'0'))/10 {
			return 0, 0, false
		}
		u = 10*u + uint64(c-'0')
	}
	if unsigned {
		return 0, u, true
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), 0, true
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, 0, true
	}
	return 0, 0, false
}

// FuzzParseArgs gives Parse and ParseInterspersed, with and without Once,
// an arbitrary command line (up to 8 arguments, split at NUL) for a flag
// set of every kind of flag the commands define. Whatever the arguments,
// they must not panic; an error is one line (an unknown flag or bad
// syntax with a line break is quoted); a suggestion ("did you mean -X?")
// names a defined flag other than the unknown one, related to it by a rule of
// suggest (case, synonym, prefix of three or more letters, or at most two
// edits with the same first letter from four letters on, checked by a
// second way to the distance). Where every argument is -name=value or
// --name=value, a parse succeeds exactly when each value is valid for its
// flag (decimal integers by decimalOracle, floats as ParseFloat reads
// them) and, with Once, no flag is given twice, and each flag then holds
// its last value. The seeds run in every plain go test.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []struct {
		args string
		once bool
	}{
		{"-R=10\x00-eps=1.5\x00-json", true},
		{"-R=010\x00-seed=+7\x00-delta=2.5e-324", false},
		{"-R=010\x00-seed=+7\x00--eps=2\x00-out=a=b\x00-delta=1e-310\x00-workers=-0", true},
		{"-rounds=8", false},
		{"-Eps=1", true},
		{"-strat=optimal", false},
		{"-seeed=1\x00-jsno", false},
		{"-R=0x10\x00-R=1_000", false},
		{"-R=1\x00-R=2", true},
		{"-seed=-1\x00-workers=-9223372036854775808", false},
		{"-eps=1e-400", false},
		{"fig4\x00-json\x00tuning\x00--out=dir", true},
		{"-\x00--\x00-=x\x00---R=1", false},
		{"-a\nb", false},
	} {
		f.Add(s.args, s.once)
	}
	f.Fuzz(func(t *testing.T, raw string, once bool) {
		args := strings.SplitN(raw, "\x00", 8)
		var opts []Option
		if once {
			opts = append(opts, Once)
		}
		type flags struct {
			r, workers       int
			seed             uint64
			eps, delta       float64
			out, strategy    string
			json             bool
			fs               *flag.FlagSet
			intF, uintF, flt map[string]bool
		}
		newFlags := func() *flags {
			v := &flags{fs: NewFlagSet("fuzz")}
			v.fs.IntVar(&v.r, "R", 3, "")
			v.fs.IntVar(&v.workers, "workers", 0, "")
			v.fs.Uint64Var(&v.seed, "seed", 0, "")
			v.fs.Float64Var(&v.eps, "eps", 1, "")
			Float64DownVar(v.fs, &v.delta, "delta", 1e-5, "")
			v.fs.StringVar(&v.out, "out", "", "")
			v.fs.StringVar(&v.strategy, "strategy", "optimal", "")
			v.fs.BoolVar(&v.json, "json", false, "")
			return v
		}
		check := func(how string, err error) {
			if err == nil || errors.Is(err, flag.ErrHelp) {
				return
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("%s %q: an error of more than one line: %q", how, args, msg)
			}
			const unknown = "flag provided but not defined: -"
			body, ok := strings.CutPrefix(msg, unknown)
			if !ok {
				return
			}
			name, guess, found := strings.Cut(body, "; did you mean -")
			if !found {
				return
			}
			guess, ok = strings.CutSuffix(guess, "?")
			fs := newFlags().fs
			if !ok || fs.Lookup(guess) == nil || guess == name {
				t.Fatalf("%s %q: suggested %q for %q", how, args, guess, name)
			}
			syn := false
			for _, s := range synonyms[name] {
				syn = syn || s == guess
			}
			if !strings.EqualFold(guess, name) && !syn && !(len(name) >= 3 && strings.HasPrefix(guess, name)) &&
				!(len(name) >= 4 && guess[0] == name[0] && withinEdits(guess, name, 2)) {
				t.Fatalf("%s %q: suggested -%s for -%s, which no rule relates", how, args, guess, name)
			}
		}
		v1 := newFlags()
		err := Parse(v1.fs, args, opts...)
		check("Parse", err)
		v2 := newFlags()
		_, err2 := ParseInterspersed(v2.fs, args, opts...)
		check("ParseInterspersed", err2)

		// The oracle, where every argument is -name=value.
		type given struct{ name, value string }
		var gs []given
		for _, a := range args {
			b, ok := strings.CutPrefix(a, "-")
			b = strings.TrimPrefix(b, "-")
			name, value, eq := strings.Cut(b, "=")
			if !ok || !eq || v1.fs.Lookup(name) == nil || name == "json" {
				return
			}
			gs = append(gs, given{name, value})
		}
		want := newFlags()
		valid, seen := true, map[string]bool{}
		for _, g := range gs {
			if seen[g.name] && once {
				valid = false
			}
			seen[g.name] = true
			switch g.name {
			case "R", "workers":
				x, _, ok := decimalOracle(g.value, false)
				if ok && int64(int(x)) != x {
					ok = false
				}
				valid = valid && ok
				if g.name == "R" {
					want.r = int(x)
				} else {
					want.workers = int(x)
				}
			case "seed":
				_, u, ok := decimalOracle(g.value, true)
				valid, want.seed = valid && ok, u
			case "eps":
				x, err := ParseFloat(g.value)
				valid, want.eps = valid && err == nil, x
			case "delta":
				x, err := ParseFloatDown(g.value)
				valid, want.delta = valid && err == nil, x
			case "out":
				want.out = g.value
			case "strategy":
				want.strategy = g.value
			}
		}
		if (err == nil) != valid {
			t.Fatalf("%q (once %v): Parse %v, want valid %v", args, once, err, valid)
		}
		if !valid {
			return
		}
		if v1.r != want.r || v1.workers != want.workers || v1.seed != want.seed || v1.out != want.out || v1.strategy != want.strategy ||
			math.Float64bits(v1.eps) != math.Float64bits(want.eps) || math.Float64bits(v1.delta) != math.Float64bits(want.delta) {
			t.Fatalf("%q: parsed R %d workers %d seed %d eps %v delta %v out %q strategy %q, want R %d workers %d seed %d eps %v delta %v out %q strategy %q",
				args, v1.r, v1.workers, v1.seed, v1.eps, v1.delta, v1.out, v1.strategy,
				want.r, want.workers, want.seed, want.eps, want.delta, want.out, want.strategy)
		}
		if err2 != nil || v2.r != v1.r || v2.seed != v1.seed || v2.out != v1.out {
			t.Fatalf("%q: ParseInterspersed %v, R %d seed %d out %q; Parse R %d seed %d out %q", args, err2, v2.r, v2.seed, v2.out, v1.r, v1.seed, v1.out)
		}
	})
}
