package plan

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse checks Parse on any input: an error is one line, never a
// panic; an accepted plan validates, writes (Marshal) to JSON that parses
// back to a plan that writes the same bytes, and a privacy record it holds
// passes the record's checks.
func FuzzParse(f *testing.F) {
	for _, data := range builtPlans(f) {
		f.Add([]byte(data))
	}
	for _, s := range []string{`{}`, `{"rounds":8}`, `{"format":1,"rounds":8,"algorithm":"nonprivate"}`,
		`{"rounds":8,"participation":"epochs:2","strategy":"optimal:tol=1e-10"}`, `{"rounds":8,"clip":NaN}`,
		`{"rounds":8,"rounds":9}`, `{"rounds":1e3}`, `null`, `{"rounds":8}{}`, `{"rounds":8,"target":{"eps":1,"delta":1e-5}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted a plan that does not validate: %v", err)
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("cannot write an accepted plan: %v", err)
		}
		q, err := Parse(out)
		if err != nil {
			t.Fatalf("cannot read back %s: %v", out, err)
		}
		again, err := q.Marshal()
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("read back as\n%s\nwant\n%s (%v)", again, out, err)
		}
	})
}

// FuzzParseCalibration checks ParseCalibration and
// Calibration.UnmarshalText on any input: they agree; an error is one
// line, never a panic; an accepted name is exactly the value's String and
// MarshalText, and nothing else is accepted.
func FuzzParseCalibration(f *testing.F) {
	for _, s := range []string{"exact", "paper", "", "Exact", " paper", "paper\n", "Calibration(0)", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCalibration(s)
		var u Calibration
		uerr := u.UnmarshalText([]byte(s))
		if (err == nil) != (uerr == nil) || (err == nil && u != c) {
			t.Fatalf("%q: ParseCalibration %v (%v), UnmarshalText %v (%v)", s, c, err, u, uerr)
		}
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("%q: multi-line error %q", s, err)
			}
			return
		}
		if b, merr := c.MarshalText(); c.String() != s || merr != nil || string(b) != s {
			t.Fatalf("%q: parsed to %v, which writes %q (%v)", s, c, b, merr)
		}
	})
}
