package testutil

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// DocClaims finds the three forms of claim, and only for the command
// asked; CheckClaim accepts the true output and rejects a changed value.
func TestDocClaims(t *testing.T) {
	dir := t.TempDir()
	doc := "Text `tool delta -x 1`: `a=1 ... b=2` and `other run`: `c=3`.\n" +
		"```sh\n" +
		"go run ./cmd/tool sigma -eps 5   # noise_std=0.5 (a comment)\n" +
		"go run ./cmd/tool epsilon -s 1\n" +
		"method=pld eps=1.5 delta=1e-05\n" +
		"go run ./cmd/tool plain -q\n" +
		"go run ./cmd/other sigma   # noise_std=9\n" +
		"```\n" +
		"go run ./cmd/tool outside   # x=1\n"
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	claims := DocClaims(t, filepath.Join(dir, "*.md"), "tool")
	want := []DocClaim{
		{Line: 1, Args: []string{"delta", "-x", "1"}, Want: []string{"a=1", "b=2"}},
		{Line: 3, Args: []string{"sigma", "-eps", "5"}, Want: []string{"noise_std=0.5"}},
		{Line: 4, Args: []string{"epsilon", "-s", "1"}, Want: []string{"method=pld", "eps=1.5", "delta=1e-05"}},
	}
	if len(claims) != len(want) {
		t.Fatalf("claims %+v, want %d", claims, len(want))
	}
	for i, c := range claims {
		if c.Line != want[i].Line || !slices.Equal(c.Args, want[i].Args) || !slices.Equal(c.Want, want[i].Want) {
			t.Errorf("claim %d = %+v, want %+v", i, c, want[i])
		}
	}
	CheckClaim(t, claims[2], "method=pld eps=1.5 delta=1e-05 sigma=1\n")
	CheckClaim(t, claims[0], "a=1 b=3 seconds=0.1", "b")
	ft := &fakeT{TB: t}
	CheckClaim(ft, claims[2], "method=pld eps=1.6 delta=1e-05")
	CheckClaim(ft, claims[1], "sigma=2")
	if ft.errors != 2 {
		t.Errorf("%d errors for a changed value and a missing key, want 2", ft.errors)
	}
}

// fakeT counts Errorf calls instead of failing.
type fakeT struct {
	testing.TB
	errors int
}

func (f *fakeT) Errorf(string, ...any) { f.errors++ }
func (f *fakeT) Helper()               {}
