package accountant

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseNames checks the two parsers of user strings in the package
// on any input: ParseMethod and Method.UnmarshalText agree, ParseRelation
// likewise; an error is one short line naming the input (its first 64
// bytes and its length when longer), never a panic; an
// accepted name is exactly the value's String (so a record written with
// MarshalText reads back to the same value), and nothing else is accepted
// (no case folding, no surrounding space).
func FuzzParseNames(f *testing.F) {
	for _, m := range Methods() {
		f.Add(m.String())
	}
	for _, s := range []string{"add-remove", "replace-one", "", "Exact", " exact", "exact\n", "rdp-", "Method(0)", "\x00", "replace-one "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMethod(s)
		var u Method
		uerr := u.UnmarshalText([]byte(s))
		if (err == nil) != (uerr == nil) || (err == nil && u != m) {
			t.Fatalf("%q: ParseMethod %v (%v), UnmarshalText %v (%v)", s, m, err, u, uerr)
		}
		if err != nil {
			checkNameError(t, s, err)
		} else {
			b, merr := m.MarshalText()
			if m.String() != s || merr != nil || string(b) != s {
				t.Fatalf("%q: parsed to %v, which writes %q (%v)", s, m, b, merr)
			}
		}
		r, err := ParseRelation(s)
		if err != nil {
			checkNameError(t, s, err)
		} else if r.String() != s {
			t.Fatalf("%q: parsed to %v", s, r)
		}
	})
}

// checkNameError fails t unless err is one line of at most 512 bytes that
// quotes the input (strconv.Quote, as %q writes it), or, for an input
// longer than 64 bytes, at most its first 64 bytes quoted (cut at a
// character boundary, which invalid UTF-8 can put far back) and followed
// by "... (N bytes)" (errors stay short whatever the input).
func checkNameError(t *testing.T, s string, err error) {
	t.Helper()
	msg := err.Error()
	quoted := strings.Contains(msg, strconv.Quote(s))
	if len(s) > 64 {
		quoted = false
		for cut := 0; cut <= 64; cut++ {
			quoted = quoted || strings.Contains(msg, strconv.Quote(s[:cut])+"... ("+strconv.Itoa(len(s))+" bytes)")
		}
	}
	if strings.ContainsAny(msg, "\n\r") || len(msg) > 512 || !quoted {
		t.Fatalf("%.100q: error %q, want one short line quoting the input", s, msg)
	}
}
