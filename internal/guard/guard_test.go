package guard

import (
	"testing"
)

// TestCompare checks Compare on hand-written outputs: a changed number, a
// missing field and a nested field of the same name as a top-level one.
func TestCompare(t *testing.T) {
	want := []byte(`{"loss": 1.5, "name": "a", "seconds": 9, "sigma": 2}`)
	cases := []struct {
		got  string
		tol  float64
		ndif int
	}{
		{`{"loss": 1.5, "name": "a", "sigma": 2}`, 0, 0},
		{`{"loss": 1.5000000001, "name": "a", "sigma": 2}`, 0, 1},
		{`{"loss": 1.5000000001, "name": "a", "sigma": 2}`, 1e-9, 0},
		{`{"loss": 1.5, "sigma": 2}`, 0, 1},
		{`{"loss": 1.5, "name": "b", "sigma": 2}`, 0, 1},
		// The top-level sigma is compared, not the nested one.
		{`{"loss": 1.5, "name": "a", "plan": {"sigma": 2}, "sigma": 3}`, 0, 1},
		{`{"loss": 1.5, "name": "a", "plan": {"sigma": 3}, "sigma": 2}`, 0, 0},
		// A field that moved into a nested object is still found.
		{`{"out": {"loss": 1.5, "name": "a", "sigma": 2}}`, 0, 0},
	}
	for _, c := range cases {
		diffs, err := Compare(want, []byte(c.got), c.tol, "seconds")
		if err != nil {
			t.Fatal(err)
		}
		if len(diffs) != c.ndif {
			t.Errorf("Compare(%s, tol %g) = %q, want %d differences", c.got, c.tol, diffs, c.ndif)
		}
	}
}
