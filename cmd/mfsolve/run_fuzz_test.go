package main

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzRun runs mfsolve in process on small problems (R <= 24, no cache)
// with arbitrary -strategy, -participation and -sampling text, with or
// without -loss-only and a calibration. Whatever the text, it must not
// panic or hang; it exits 0, 1 or 2, printing one "mfsolve: " line on
// stderr when it fails; and a run that succeeds prints one JSON object
// whose loss, unit sensitivity and RMSE are finite and positive, with
// rmse = sqrt(loss / R) (to rounding) and, with -eps/-delta, a positive
// finite noise std equal to sigma times the release sensitivity. The
// seeds run in every plain go test.
func FuzzRun(f *testing.F) {
	for _, s := range []struct {
		r                        uint8
		strategy, part, sampling string
		lossOnly, calibrate      bool
	}{
		{8, "optimal", "single", "", false, true},
		{12, "banded:bands=3", "minsep:3", "", true, false},
		{12, "banded:bands=3", "", "0.5", false, true},
		{16, "blt:buffers=2", "minsep:9223372036854775807,2", "", true, false},
		{16, "tree", "epochs:4", "", false, true},
		{9, "bsr:bands=9223372036854775807", "", "1", false, true},
		{10, "semiseparable", "single", "", true, true},
		{10, "optimal:path=dense", "minsep:2,3", "", false, true},
		{6, "bandinv:bands=2", "minsep:4", "", true, false},
		{1, "identity", "single", "", false, true},
	} {
		f.Add(s.r, s.strategy, s.part, s.sampling, s.lossOnly, s.calibrate)
	}
	f.Fuzz(func(t *testing.T, r uint8, strategy, part, sampling string, lossOnly, calibrate bool) {
		R := 1 + int(r)%24
		args := []string{"-R", strconv.Itoa(R), "-strategy", strategy, "-no-cache", "-json"}
		if part != "" {
			args = append(args, "-participation", part)
		}
		if lossOnly {
			args = append(args, "-loss-only")
		}
		if calibrate || sampling != "" {
			args = append(args, "-eps", "2", "-delta", "1e-5", "-learners", "3")
		}
		if sampling != "" {
			args = append(args, "-sampling", sampling)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res := runIn(ctx, t.TempDir(), args...)
		if ctx.Err() != nil {
			t.Fatalf("%q: still running after 30 s (R <= 24)", args)
		}
		if res.code != 0 {
			if (res.code != 1 && res.code != 2) || res.stdout != "" || !strings.HasPrefix(res.stderr, "mfsolve: ") || strings.Count(res.stderr, "\n") != 1 {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, res.code, res.stdout, res.stderr)
			}
			return
		}
		var out struct {
			R        int      `json:"R"`
			Loss     float64  `json:"loss"`
			Sens     float64  `json:"unit_sensitivity"`
			RMSE     float64  `json:"rmse"`
			NoiseStd *float64 `json:"noise_std"`
			Sigma    *float64 `json:"sigma"`
			Release  *float64 `json:"release_sensitivity"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || strings.Count(res.stdout, "\n") != 1 {
			t.Fatalf("%q: stdout %q: %v", args, res.stdout, err)
		}
		fin := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
		if out.R != R || !fin(out.Loss) || !fin(out.Sens) || !fin(out.RMSE) || math.Abs(out.RMSE-math.Sqrt(out.Loss/float64(R))) > 1e-12*out.RMSE {
			t.Fatalf("%q: %+v", args, out)
		}
		if calibrate || sampling != "" {
			if out.NoiseStd == nil || out.Sigma == nil || out.Release == nil || !fin(*out.NoiseStd) ||
				math.Abs(*out.NoiseStd-*out.Sigma**out.Release) > 1e-12**out.NoiseStd {
				t.Fatalf("%q: %s", args, res.stdout)
			}
		}
	})
}
