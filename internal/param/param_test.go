package param

import (
	"math"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		want  string
		text  string
	}{
		{"R", 0, "R >= 1", "R = 0, want R >= 1"},
		{"tol", 1e-300, "> 0", "tol = 1e-300, want > 0"},
		{"tol", math.NaN(), "> 0", "tol = NaN, want > 0"},
		{"workload", nil, "a *Workload", "workload is missing, want a *Workload"},
		{"split", "x", "iid", "split = x, want iid"},
	} {
		if got := Text(c.name, c.value, c.want); got != c.text {
			t.Errorf("Text(%q, %v, %q) = %q, want %q", c.name, c.value, c.want, got, c.text)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	var err error = &Error{Param: "eps", Value: 0.0, Want: "finite and > 0"}
	if got, want := err.Error(), "dpmf: eps = 0, want finite and > 0"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	err = &Error{Param: "ctx", Want: "a non-nil context.Context"}
	if got, want := err.Error(), "dpmf: ctx is missing, want a non-nil context.Context"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// Quote shows a short input whole and quoted, and a long one as its first
// 64 bytes, cut at a character boundary, and its length.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"a\nb", `"a\nb"`},
		{strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `"... (65 bytes)`},
		// é is 2 bytes: 63 x and é straddle byte 64, so the cut is at 63.
		{strings.Repeat("x", 63) + "é" + "y", `"` + strings.Repeat("x", 63) + `"... (66 bytes)`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.70q) = %s, want %s", c.in, got, c.want)
		}
	}
}
