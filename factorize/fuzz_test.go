package factorize

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// oneLineParamError fails t unless err is a one-line *ParamError.
func oneLineParamError(t *testing.T, in string, err error) {
	t.Helper()
	var pe *ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("%q: error %T %v, want a *ParamError", in, err, err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("%q: multi-line error %q", in, err)
	}
}

// FuzzParseStrategy checks ParseStrategy's documented contract on any
// input: an error is a one-line *ParamError, never a panic; an accepted
// spec names a registered strategy whose canonical Spec parses back to the
// same Spec and CacheKey (so the cache and plans name it the same way),
// and CheckUnder answers (error or not) under every pattern.
func FuzzParseStrategy(f *testing.F) {
	for _, info := range Registry() {
		f.Add(info.Name)
	}
	for _, s := range []string{"banded:bands=64", "blt:buffers=4", "optimal:tol=1e-10,path=dense", "optimal:max-iter=3",
		"semiseparable:buffers=3,max-excess=0.5", "banded:bands=+05", "banded:bands=9223372036854775807", "optimal:tol=5e-324",
		"banded:", "banded:bands", "banded:bands=2,", "banded:bands=2=3", ":", "optimal:tol=NaN", "optimal:tol=1,tol=1", "sqrt:\x00"} {
		f.Add(s)
	}
	parts := []Participation{SingleParticipation(), FixedEpochs(2), MinSeparation(3, 0), MinSeparation(2, 5)}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseStrategy(spec)
		if err != nil {
			oneLineParamError(t, spec, err)
			return
		}
		if s == nil || !slices.Contains(Strategies(), s.Name()) {
			t.Fatalf("%q: strategy %v, want a registered one", spec, s)
		}
		canon := s.Spec()
		back, err := ParseStrategy(canon)
		if err != nil {
			t.Fatalf("%q: Spec %q does not parse back: %v", spec, canon, err)
		}
		if back.Spec() != canon || CacheKey(back) != CacheKey(s) {
			t.Fatalf("%q: Spec %q parses back to %q (key %q, was %q)", spec, canon, back.Spec(), CacheKey(back), CacheKey(s))
		}
		for _, p := range parts {
			if err := CheckUnder(s, p); err != nil && strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("%q under %v: multi-line error %q", spec, p, err)
			}
		}
	})
}

// FuzzParseParticipation checks ParseParticipation on any input: an error
// is a one-line *ParamError; an accepted pattern prints (String) to a spec
// that parses back to the same pattern, and Validate and Participations
// answer for any number of rounds without a panic, with a count in
// [0, n] (at least 1 wherever Validate accepts n rounds).
func FuzzParseParticipation(f *testing.F) {
	for _, s := range []string{"single", "epochs:1", "epochs:4", "minsep:1", "minsep:64", "minsep:2,3",
		"epochs:9223372036854775807", "minsep:9223372036854775807,9223372036854775807", "minsep:2,", "epochs:+2", "epochs:02", ""} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		p, err := ParseParticipation(s)
		if err != nil {
			oneLineParamError(t, s, err)
			return
		}
		back, err := ParseParticipation(p.String())
		if err != nil || back != p {
			t.Fatalf("%q: %v prints as %q, which parses back to %v (%v)", s, p, p.String(), back, err)
		}
		k := p.Participations(n)
		if k < 0 || (n >= 0 && k > n) {
			t.Fatalf("%q: %d participations over %d rounds", s, k, n)
		}
		if err := p.Validate(n); err == nil && k < 1 {
			t.Fatalf("%q: valid for %d rounds with %d participations", s, n, k)
		} else if err != nil {
			oneLineParamError(t, s, err)
		}
	})
}

// FuzzWithSetting checks WithSetting on any key and value, for every
// registered strategy at its defaults and at a non-default spec: an error
// is a one-line *ParamError, never a panic; a result is what
// ParseStrategy makes of the spec with that one setting (the same Spec,
// and both accept or both refuse the default strategy's name:key=value),
// its Spec parses back to itself, and setting the same key and value
// again changes nothing. (The comparison with ParseStrategy is made where
// the base spec has no settings of its own.)
func FuzzWithSetting(f *testing.F) {
	for _, info := range Registry() {
		for _, s := range info.Settings {
			f.Add(info.Name, s.Name, s.Default)
			f.Add(info.Name, s.Name, "1")
		}
		f.Add(info.Name, "bands", "0")
	}
	for _, kv := range [][3]string{{"banded", "bands", "9223372036854775807"}, {"optimal", "tol", "5e-324"}, {"optimal", "path", "dense"},
		{"semiseparable", "max-excess", "NaN"}, {"blt", "buffers", "65"}, {"banded", "", ""}, {"banded", "bands", "2=3"},
		{"banded", "bands:x", "1"}, {"optimal", "tol", "1e-10,"}, {"banded", "bands", " 2"}, {"nosuch", "bands", "2"},
		{"banded:bands=3", "bands", "4"}, {"optimal:tol=1e-8", "max-iter", "7"}} {
		f.Add(kv[0], kv[1], kv[2])
	}
	f.Fuzz(func(t *testing.T, name, key, value string) {
		base, err := ParseStrategy(name)
		if err != nil {
			return
		}
		in := name + " " + key + "=" + value
		got, err := WithSetting(base, key, value)
		if err != nil {
			oneLineParamError(t, in, err)
		}
		if plain := !strings.Contains(base.Spec(), ":"); plain {
			direct, derr := ParseStrategy(base.Spec() + ":" + key + "=" + value)
			switch {
			case err != nil && derr == nil && !strings.Contains(key+value, ",") && !strings.Contains(key, "="):
				t.Fatalf("%q: WithSetting refused (%v) what ParseStrategy accepts as %q", in, err, direct.Spec())
			case err == nil && derr != nil:
				t.Fatalf("%q: WithSetting gave %q where ParseStrategy refuses: %v", in, got.Spec(), derr)
			case err == nil && got.Spec() != direct.Spec():
				t.Fatalf("%q: WithSetting gave %q, ParseStrategy %q", in, got.Spec(), direct.Spec())
			}
		}
		if err != nil {
			return
		}
		back, err := ParseStrategy(got.Spec())
		if err != nil || back.Spec() != got.Spec() {
			t.Fatalf("%q: Spec %q parses back to %v (%v)", in, got.Spec(), back, err)
		}
		again, err := WithSetting(got, key, value)
		if err != nil || again.Spec() != got.Spec() {
			t.Fatalf("%q: setting it again gave %v (%v), want %q", in, again, err, got.Spec())
		}
	})
}
