package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/guard"
)

// TestGuardRuns holds ofl's reports (which are functions of every released
// model) for every strategy, algorithm and 1 or 2 epochs to the values
// recorded before the plan redesign (cmd/mfsolve/testdata/guard/gen.sh):
// bit for bit, except optimal's correlated runs, whose noise operator
// changed (its quasiseparable generators instead of the dense operator),
// to 1e-9 relative.
func TestGuardRuns(t *testing.T) {
	recs, err := guard.ReadRecords(filepath.Join("testdata", "guard", "runs.jsonl"))
	require.NoError(t, err)
	require.Len(t, recs, 50)
	for _, rec := range recs {
		t.Run(strings.Join(rec.Args[11:], " "), func(t *testing.T) {
			r := runOfl(t, rec.Args...)
			require.Equal(t, 0, r.code, r.stderr)
			tol := 0.0
			if i := slices.Index(rec.Args, "-strategy"); i >= 0 && rec.Args[i+1] == "optimal" {
				tol = 1e-9
			}
			diffs, err := guard.Compare(rec.Out, []byte(r.stdout), tol, "seconds")
			require.NoError(t, err)
			require.Empty(t, diffs)
		})
	}
}
