package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/npy"
)

// generalR is the order of the workload files of the general-path target.
const generalR = 1000

// cliTarget is one end-to-end target of the issue, run as a subprocess.
type cliTarget struct {
	Name    string
	Command string // as shown in the report, with $TMP for the temporary directory
	Limit   float64
	M       cliMeasurement
	Checks  []string // failed checks; empty when all hold
}

// pass reports whether the target is met.
func (t cliTarget) pass() bool { return t.M.Runs > 0 && t.M.Seconds <= t.Limit && len(t.Checks) == 0 }

// fileWorkload is a workload of the general-path target: a matrix that
// mfsolve reads from a .npy file and cannot treat as structured (its
// inverse is not banded), so it takes the general (dense) path.
type fileWorkload struct {
	Name, File string
	Matrix     []float64 // row-major r x r
}

// fileWorkloads returns the workloads of the general-path target, of order
// r.
func fileWorkloads(r int) []fileWorkload {
	const window = 32
	sliding := make([]float64, r*r)
	noisy := make([]float64, r*r)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			if i-j < window {
				sliding[i*r+j] = 1
			}
			noisy[i*r+j] = 1 + 0.01*rng.Float64()
		}
	}
	return []fileWorkload{
		{Name: fmt.Sprintf("sums over a sliding window of %d rounds", window), File: "window.npy", Matrix: sliding},
		{Name: "prefix sums with entries 1 + 0.01 U(0, 1), PCG(1, 2)", File: "noisy.npy", Matrix: noisy},
	}
}

// moduleRoot returns the directory of the go.mod of the current module.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module; run from the dpmf checkout")
	}
	return filepath.Dir(gomod), nil
}

// oneLine shortens an error to one line for a table cell.
func oneLine(err error) string {
	return strings.ReplaceAll(cli.OneLine(err.Error()), "|", "/")
}

// runTargets builds mfsolve and times the end-to-end targets. A failing
// mfsolve run is a failed target, not an error.
func (res *results) runTargets(ctx context.Context, tmp string, log io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	bin := filepath.Join(tmp, "mfsolve")
	logf(log, "go build -o %s ./cmd/mfsolve", bin)
	start := time.Now()
	if err := goBuild(ctx, root, "./cmd/mfsolve", bin); err != nil {
		return err
	}
	res.buildSecs = time.Since(start).Seconds()

	bPath := filepath.Join(tmp, "B.npy")
	cacheDir := filepath.Join(tmp, "cache")
	// checkB verifies that B.npy was written with r x r entries.
	checkB := func(r int) []string {
		a, err := npy.Load(bPath)
		if err != nil {
			return []string{fmt.Sprintf("B.npy not readable: %v", err)}
		}
		if len(a.Shape) != 2 || a.Shape[0] != r || a.Shape[1] != r {
			return []string{fmt.Sprintf("B.npy has shape %v, want [%d %d]", a.Shape, r, r)}
		}
		return nil
	}
	removeB := func() error {
		if err := os.Remove(bPath); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	checkGap := func(c cliResult, want float64) []string {
		if !(c.Gap <= want) || c.Gap <= 0 {
			return []string{fmt.Sprintf("gap %.2g, want in (0, %g]", c.Gap, want)}
		}
		return nil
	}
	// target measures one command; check, if not nil, adds the failed
	// checks of a successful measurement.
	target := func(name, shown string, limit float64, args []string, reps int, before func() error, check func(cliMeasurement) []string) cliTarget {
		logf(log, "%s", shown)
		m, err := measureCLI(ctx, tmp, bin, args, reps, before)
		t := cliTarget{Name: name, Command: shown, Limit: limit, M: m}
		if err != nil {
			t.Checks = []string{oneLine(err)}
		} else if check != nil {
			t.Checks = check(m)
		}
		res.cli = append(res.cli, t)
		return t
	}

	// Cold runs with dense output.
	for _, tc := range []struct {
		r     int
		limit float64
	}{{800, 1}, {4000, 30}} {
		target(fmt.Sprintf("R = %d, B written, cold (gap <= 1e-10)", tc.r),
			fmt.Sprintf("mfsolve -R %d -o $TMP/B.npy -no-cache -json", tc.r), tc.limit,
			[]string{"-R", fmt.Sprint(tc.r), "-o", bPath, "-no-cache", "-json"}, res.cfg.reps, removeB,
			func(m cliMeasurement) []string { return append(checkGap(m.Last, tol), checkB(tc.r)...) })
	}

	// Loss only, O(R) memory: R = 10,000 for comparison of the peak RSS, and
	// the target at R = 100,000.
	for _, r := range []int{10000, 100000} {
		name := fmt.Sprintf("R = %d, loss only, cold (gap <= %g, O(R) memory)", r, tolFor(r))
		if r != 100000 {
			name += "; for comparison, not an issue target"
		}
		args := []string{"-R", fmt.Sprint(r), "-loss-only", "-json", "-strategy", "optimal:tol=" + fmt.Sprint(tolFor(r)), "-no-cache"}
		target(name, strings.Join(append([]string{"mfsolve"}, args...), " "), 60, args, min(res.cfg.reps, 3), nil,
			func(m cliMeasurement) []string {
				checks := checkGap(m.Last, tolFor(r))
				if m.Last.FrobBSq != m.Last.Loss {
					checks = append(checks, fmt.Sprintf("frob_B_sq %v != loss %v", m.Last.FrobBSq, m.Last.Loss))
				}
				// O(R) memory, with a stated constant: at most 1000
				// float64 per round. One dense R x R matrix would be
				// 8 R^2 bytes.
				if c := rssCheck(m.MaxRSS, int64(8*1000*r)); c != "" {
					checks = append(checks, c+" (1000 float64 per round)")
				}
				return checks
			})
	}

	// Warm cache hit: fill the cache once, then time the loads.
	warmArgs := []string{"-R", "800", "-o", bPath, "-cache", cacheDir, "-json"}
	if _, err := runCLI(ctx, tmp, bin, warmArgs); err != nil {
		res.cli = append(res.cli, cliTarget{Name: "R = 800, warm cache hit", Command: "filling the cache", Limit: 0.2, Checks: []string{oneLine(err)}})
	} else {
		target("R = 800, B written, warm cache hit",
			"mfsolve -R 800 -o $TMP/B.npy -cache $TMP/cache -json (after one run that fills the cache)", 0.2,
			warmArgs, res.cfg.reps, removeB,
			func(m cliMeasurement) []string {
				checks := checkB(800)
				if !m.Last.Cached {
					checks = append(checks, "not served from the cache (cached=false)")
				}
				return checks
			})
	}

	// The general path: workload files. mfsolve's default gap is 1e-10;
	// when rounding puts it out of reach the solver says so, and the
	// target is measured again at the next larger gap.
	for _, fw := range fileWorkloads(generalR) {
		path := filepath.Join(tmp, fw.File)
		if err := npy.Save(path, []int{generalR, generalR}, fw.Matrix); err != nil {
			return err
		}
		for _, t := range generalTols {
			args := []string{"-workload", path, "-R", fmt.Sprint(generalR), "-loss-only", "-json", "-no-cache", "-strategy", "optimal:tol=" + fmt.Sprint(t)}
			tg := target(fmt.Sprintf("general path, R = %d, %s, pure Go (gap <= %g)", generalR, fw.Name, t),
				fmt.Sprintf("mfsolve -workload $TMP/%s -R %d -loss-only -json -no-cache -strategy optimal:tol=%g", fw.File, generalR, t), 120,
				args, min(res.cfg.reps, 3), nil,
				func(m cliMeasurement) []string { return checkGap(m.Last, t) })
			if len(tg.Checks) == 0 || !strings.Contains(tg.Checks[0], "rounding") {
				break
			}
		}
	}
	return nil
}
