package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/guard"
	"github.com/dpmf/dpmf/internal/testutil"
)

// runTol is the relative tolerance of each strategy's runs: optimal's
// noise operator changed (its quasiseparable generators instead of the
// dense operator), and semiseparable's forward substitution runs its two
// sweeps in linalg's AVX2 kernel, whose fused multiply-adds round once
// where the recorded loop rounded twice; bandinv's operator carries
// C^{-1}'s coefficients as solved instead of recovering them from C, a
// difference in the last bits, held to 1e-12; fedopt.Clip decides in
// exact arithmetic and shrinks a result that rounds past B_g by ulps
// (the exact Clip), which moved tree's correlated run at 2 epochs
// (final_loss_error_mean by a relative 3e-16), held to 1e-12.
var runTol = map[string]float64{"optimal": 1e-9, "semiseparable": 1e-9, "bandinv": 1e-12, "tree": 1e-12}

// TestGuardRuns holds ofl's reports (which are functions of every released
// model) for every strategy, algorithm and 1 or 2 epochs to the values
// recorded before the plan redesign (cmd/mfsolve/testdata/guard/gen.sh):
// bit for bit, except the correlated runs whose streaming arithmetic
// changed, to 1e-9 relative (runTol).
func TestGuardRuns(t *testing.T) {
	testutil.SkipOn386(t, "reports recorded bit for bit (optimal, semiseparable to 1e-9) on amd64; on 386 they differ by up to 3.2e-10 relative (factorization_loss 112.81245570 against 112.81245574: the solvers stop at another iterate within their tolerance)")
	recs, err := guard.ReadRecords(filepath.Join("testdata", "guard", "runs.jsonl"))
	require.NoError(t, err)
	require.Len(t, recs, 50)
	for _, rec := range recs {
		t.Run(strings.Join(rec.Args[11:], " "), func(t *testing.T) {
			if i := slices.Index(rec.Args, "-strategy"); i >= 0 && rec.Args[i+1] == "blt" {
				// Refitted on purpose (issue #20, item 4); the recorded values
				// no longer apply and are never rewritten from the new code.
				t.Skip("BLT's parameters are refitted on purpose (issue #20, item 4)")
			}
			r := runOfl(t, rec.Args...)
			require.Equal(t, 0, r.code, r.stderr)
			tol := 0.0
			if i := slices.Index(rec.Args, "-strategy"); i >= 0 {
				tol = runTol[rec.Args[i+1]]
			}
			diffs, err := guard.Compare(rec.Out, []byte(r.stdout), tol, "seconds")
			require.NoError(t, err)
			require.Empty(t, diffs)
		})
	}
}
