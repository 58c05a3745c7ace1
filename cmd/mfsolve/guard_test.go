package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpmf/dpmf/internal/guard"
	"github.com/dpmf/dpmf/internal/testutil"
)

// noiseTol is the relative tolerance of each strategy's noise against the
// recorded samples: bit for bit, except where the redesign of issue #18
// changed the streaming arithmetic (optimal: its quasiseparable generators
// instead of the dense operator; semiseparable: its forward substitution's
// two sweeps in linalg's AVX2 kernel, whose fused multiply-adds round once
// where the recorded loop rounded twice; bandinv: its operator carries
// C^{-1}'s coefficients as solved instead of recovering them from C, a
// difference in the last bits, held to 1e-12).
var noiseTol = map[string]float64{"optimal": 1e-9, "semiseparable": 1e-9, "bandinv": 1e-12}

// changedOnPurpose names the strategies whose results a later issue changed
// on purpose, so the recorded values no longer apply: their records are
// skipped, never rewritten from the new code. BLT's fit (issue #20, item 4)
// is checked against a dense product and sqrt-normalized in factorize's
// tests instead.
var changedOnPurpose = map[string]string{"blt": "BLT's parameters are refitted on purpose (issue #20, item 4)"}

// stopsElsewhere reports whether args solve the banded optimum under
// min-separation, whose certificate issue #20 (item 3) sharpened: the
// solver stops at another iterate (both of its phases end earlier), so its
// loss is held to the certified gaps and the iterate's other metrics are
// not compared.
func stopsElsewhere(args []string) bool {
	i, j := slices.Index(args, "-strategy"), slices.Index(args, "-participation")
	return i >= 0 && j >= 0 && args[i+1] == "banded" && strings.HasPrefix(args[j+1], "minsep:")
}

// skipChanged skips a record of a strategy in changedOnPurpose.
func skipChanged(t *testing.T, args []string) {
	if i := slices.Index(args, "-strategy"); i >= 0 && changedOnPurpose[args[i+1]] != "" {
		t.Skip(changedOnPurpose[args[i+1]])
	}
}

// TestGuardMetrics holds mfsolve's JSON metrics, for every strategy under
// three participations with a calibration, to 1e-12 relative of the values
// recorded before the plan redesign (testdata/guard/gen.sh).
func TestGuardMetrics(t *testing.T) {
	testutil.SkipOn386(t, "metrics recorded on amd64; on 386 the banded solvers stop at another iterate within their tolerance (banded R = 48: loss 224.1734699149 against 224.1734699159, 4e-12 relative; max_se 5e-11)")
	recs, err := guard.ReadRecords(filepath.Join("testdata", "guard", "metrics.jsonl"))
	require.NoError(t, err)
	require.Len(t, recs, 36)
	for _, rec := range recs {
		t.Run(strings.Join(rec.Args[1:6], " "), func(t *testing.T) {
			skipChanged(t, rec.Args)
			r := runEnv(t.TempDir(), map[string]string{"DPMF_CACHE_BUDGET": "0"}, rec.Args...)
			require.Equal(t, 0, r.code, r.stderr)
			skip := []string{"seconds", "cached", "wrote"}
			if stopsElsewhere(rec.Args) {
				// The optimum is the same: the losses agree within the
				// sum of their certified gaps.
				var want, got struct{ Loss, Gap float64 }
				require.NoError(t, json.Unmarshal(rec.Out, &want))
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
				require.InDelta(t, want.Loss, got.Loss, (want.Gap+got.Gap)*max(want.Loss, got.Loss))
				skip = append(skip, "loss", "gap", "iterations", "frob_B_sq", "rmse", "max_se")
			}
			diffs, err := guard.Compare(rec.Out, []byte(r.stdout), 1e-12, skip...)
			require.NoError(t, err)
			require.Empty(t, diffs)
		})
	}
}

// TestGuardNoise holds mfsolve -noise (R = 48, d = 3, seed 11) for every
// strategy to the samples recorded before the plan redesign.
func TestGuardNoise(t *testing.T) {
	testutil.SkipOn386(t, "noise recorded on amd64; on 386 the banded solvers stop at another iterate within their tolerance, which moves C^{-1} Z (banded entry 0: 0.85251773301 against 0.85251773275, 3e-10 relative; bandinv 6e-8)")
	files, err := filepath.Glob(filepath.Join("testdata", "guard", "noise-*.npy"))
	require.NoError(t, err)
	require.Len(t, files, 12)
	for _, file := range files {
		s := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "noise-"), ".npy")
		t.Run(s, func(t *testing.T) {
			skipChanged(t, []string{"-strategy", s})
			want, err := guard.ReadNpy(file)
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "Z.npy")
			r := runEnv(t.TempDir(), map[string]string{"DPMF_CACHE_BUDGET": "0"},
				"-R", "48", "-strategy", s, "-noise", out, "-dim", "3", "-std", "0.5", "-seed", "11")
			require.Equal(t, 0, r.code, r.stderr)
			got, err := guard.ReadNpy(out)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				if !guard.Close(want[i], got[i], noiseTol[s]) {
					t.Fatalf("noise entry %d = %v, recorded %v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestGuardSmallKernelBits keeps a promise of linalg (smallInvSqrtOrder)
// and docs/solver.md: below order 65,536 the structured solver runs the
// previous InvSqrtDiagParallel kernel, so that small problems keep their
// results bit for bit. TestGuardMetrics holds the metrics only to 1e-12;
// here the loss of the structured fixed point (optimal and semiseparable,
// single participation, R = 48), which its kernel's output alone
// determines, must equal the recorded loss bit for bit.
func TestGuardSmallKernelBits(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		// Go's math.Exp and Log are assembly on amd64, where the record
		// was made, and differ in the last bit elsewhere.
		t.Skip("the record was made on amd64")
	}
	recs, err := guard.ReadRecords(filepath.Join("testdata", "guard", "metrics.jsonl"))
	require.NoError(t, err)
	n := 0
	for _, rec := range recs {
		i, j := slices.Index(rec.Args, "-strategy"), slices.Index(rec.Args, "-participation")
		if i < 0 || j < 0 || rec.Args[j+1] != "single" || (rec.Args[i+1] != "optimal" && rec.Args[i+1] != "semiseparable") {
			continue
		}
		n++
		r := runEnv(t.TempDir(), map[string]string{"DPMF_CACHE_BUDGET": "0"}, rec.Args...)
		require.Equal(t, 0, r.code, r.stderr)
		var want, got struct{ Loss float64 }
		require.NoError(t, json.Unmarshal(rec.Out, &want))
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		if math.Float64bits(got.Loss) != math.Float64bits(want.Loss) {
			t.Errorf("%s: loss %.17g, recorded %.17g: not the same bits", rec.Args[i+1], got.Loss, want.Loss)
		}
	}
	require.Equal(t, 2, n, "records of optimal and semiseparable under single participation")
}
