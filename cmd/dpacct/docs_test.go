package main

import (
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestDocClaims runs every dpacct command that the docs (and the README)
// quote with its output (docs/privacy.md's noise_std and sigma values, the
// PLD epsilon line, delta's 5e-324 bound) and checks the quoted values, so
// a stale number fails here. The PLD ones take about a second each.
func TestDocClaims(t *testing.T) {
	claims := append(testutil.DocClaims(t, "../../docs/*.md", "dpacct"), testutil.DocClaims(t, "../../README.md", "dpacct")...)
	if len(claims) < 5 {
		t.Fatalf("found %d claims in the docs, want at least the 5 of docs/privacy.md", len(claims))
	}
	for _, c := range claims {
		code, out, errs := runCmd(c.Args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c, code, errs)
			continue
		}
		testutil.CheckClaim(t, c, out)
	}
}
