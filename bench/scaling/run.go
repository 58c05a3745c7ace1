package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/bench"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/linalg"
)

// Sizes of the measurements.
var (
	denseSizes    = []int{100, 200, 400, 800, 1600, 4000}
	lossOnlySizes = []int{100, 200, 400, 800, 1000, 4000, 10000, 40000, 100000}
	generalSizes  = []int{100, 200, 400, 800}
	plainSizes    = []int{200, 400, 800}
)

const (
	tol      = factorize.DefaultTol // 1e-10
	tolLarge = 1e-8                 // at R = 100,000
	// slowLimit: a strategy whose median exceeds it is not run at larger R.
	slowLimit = 120.0
	// generalR is the order of the workload file of the general-path target.
	generalR = 1000
)

// tolFor returns the certified gap asked for at R rounds.
func tolFor(r int) float64 {
	if r >= 100000 {
		return tolLarge
	}
	return tol
}

// results holds everything the report shows.
type results struct {
	cfg       config
	machine   machine
	started   time.Time
	elapsed   time.Duration
	buildSecs float64

	strategies []string                 // measured with dense output, in order
	dense      map[string][]measurement // by strategy
	lossOnly   []measurement            // structured, loss only
	general    []measurement            // dense path, loss only, prefix workload
	plain      []measurement            // the reference
	plainSizes []int                    // where the reference runs
	notes      []string                 // what was skipped and why

	// The general-path target: a weighted prefix-sum workload of order
	// generalR read from a file (the general path), and the same workload
	// built with factorize.WeightedPrefix (the structured path).
	weightedCLI    cliMeasurement
	weightedStruct measurement

	cli []cliTarget
}

// cliTarget is one end-to-end target of the issue, run as a subprocess.
type cliTarget struct {
	Name    string
	Command string // as shown in the report, with $TMP for the temporary directory
	Limit   float64
	M       cliMeasurement
	Checks  []string // failed checks other than time; empty when all hold
}

// pass reports whether the target is met.
func (t cliTarget) pass() bool { return t.M.Seconds <= t.Limit && len(t.Checks) == 0 }

// logf prints a progress line.
func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// run measures everything and writes the report and the plot.
func run(ctx context.Context, cfg config, log io.Writer) error {
	if err := checkWritable("-out", cfg.out); err != nil {
		return err
	}
	if err := checkWritable("-svg", cfg.svg); err != nil {
		return err
	}
	res := &results{cfg: cfg, machine: describeMachine(), started: time.Now(), dense: map[string][]measurement{}, plainSizes: plainSizes}
	if cfg.quick {
		res.plainSizes = []int{200, 400}
		res.notes = append(res.notes, "-quick: the plain dense fixed point at R = 800 was not run.")
	}

	tmp, err := os.MkdirTemp("", "dpmf-scaling-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := res.runCLI(ctx, tmp, log); err != nil {
		return err
	}
	if err := res.runLibrary(ctx, log); err != nil {
		return err
	}
	res.machine.LoadAfter = loadAvg()
	res.elapsed = time.Since(res.started)

	svg := logLogSVG("Factorization time against R (prefix-sum workload, median wall time)", "rounds R", "time", res.plotSeries())
	if err := writeAtomic(cfg.svg, []byte(svg)); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(cfg.out), cfg.svg)
	if err != nil {
		rel = cfg.svg
	}
	if err := writeAtomic(cfg.out, []byte(res.markdown(filepath.ToSlash(rel)))); err != nil {
		return err
	}
	logf(log, "wrote %s and %s in %s", cfg.out, cfg.svg, res.elapsed.Round(time.Second))
	return nil
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

// runCLI builds mfsolve and times the end-to-end targets.
func (res *results) runCLI(ctx context.Context, tmp string, log io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	bin := filepath.Join(tmp, "mfsolve")
	logf(log, "go build -o %s ./cmd/mfsolve", bin)
	start := time.Now()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/mfsolve")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/mfsolve: %v: %s", err, strings.TrimSpace(string(out)))
	}
	res.buildSecs = time.Since(start).Seconds()

	bPath := filepath.Join(tmp, "B.npy")
	cacheDir := filepath.Join(tmp, "cache")
	// checkB verifies that B.npy was written with r x r entries.
	checkB := func(r int) []string {
		a, err := linalg.LoadNPY(bPath)
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

	// Cold runs with dense output.
	for _, tc := range []struct {
		r     int
		limit float64
	}{{800, 1}, {4000, 30}} {
		logf(log, "mfsolve -R %d -o B.npy -no-cache", tc.r)
		args := []string{"-R", fmt.Sprint(tc.r), "-o", bPath, "-no-cache", "-json"}
		m, err := measureCLI(ctx, tmp, bin, args, res.cfg.reps, removeB)
		if err != nil {
			return err
		}
		t := cliTarget{
			Name:    fmt.Sprintf("R = %d, B written, cold (gap <= 1e-10)", tc.r),
			Command: fmt.Sprintf("mfsolve -R %d -o $TMP/B.npy -no-cache -json", tc.r),
			Limit:   tc.limit, M: m,
		}
		t.Checks = append(checkGap(m.Last, tol), checkB(tc.r)...)
		res.cli = append(res.cli, t)
	}

	// Loss only, O(R) memory: R = 10,000 for comparison of the peak RSS, and
	// the target at R = 100,000.
	for _, r := range []int{10000, 100000} {
		logf(log, "mfsolve -R %d -loss-only -json -no-cache -tol %g", r, tolFor(r))
		args := []string{"-R", fmt.Sprint(r), "-loss-only", "-json", "-tol", fmt.Sprint(tolFor(r)), "-no-cache"}
		m, err := measureCLI(ctx, tmp, bin, args, min(res.cfg.reps, 3), nil)
		if err != nil {
			return err
		}
		t := cliTarget{
			Name:    fmt.Sprintf("R = %d, loss only, cold (gap <= %g, O(R) memory)", r, tolFor(r)),
			Command: strings.Join(append([]string{"mfsolve"}, args...), " "),
			Limit:   60, M: m,
		}
		t.Checks = checkGap(m.Last, tolFor(r))
		if m.Last.FrobBSq != m.Last.Loss {
			t.Checks = append(t.Checks, fmt.Sprintf("frob_B_sq %v != loss %v", m.Last.FrobBSq, m.Last.Loss))
		}
		// O(R) memory, with a stated constant: at most 1000 float64 per
		// round. One dense R x R matrix would be 8 R^2 bytes.
		if limit := int64(8 * 1000 * r); m.MaxRSS > limit {
			t.Checks = append(t.Checks, fmt.Sprintf("peak RSS %s > %s (1000 float64 per round)", mb(float64(m.MaxRSS)), mb(float64(limit))))
		}
		res.cli = append(res.cli, t)
	}

	// Warm cache hit: fill the cache once, then time the loads.
	logf(log, "mfsolve -R 800 -o B.npy -cache DIR (warm)")
	warmArgs := []string{"-R", "800", "-o", bPath, "-cache", cacheDir, "-json"}
	if _, err := runCLI(ctx, tmp, bin, warmArgs); err != nil {
		return err
	}
	m, err := measureCLI(ctx, tmp, bin, warmArgs, res.cfg.reps, removeB)
	if err != nil {
		return err
	}
	t := cliTarget{
		Name:    "R = 800, B written, warm cache hit",
		Command: "mfsolve -R 800 -o $TMP/B.npy -cache $TMP/cache -json (after one run that fills the cache)",
		Limit:   0.2, M: m,
	}
	if !m.Last.Cached {
		t.Checks = append(t.Checks, "not served from the cache (cached=false)")
	}
	t.Checks = append(t.Checks, checkB(800)...)
	res.cli = append(res.cli, t)

	// The general path: a workload file, which mfsolve cannot recognise as
	// structured.
	wPath := filepath.Join(tmp, "weighted1000.npy")
	weights := decayingWeights(generalR)
	if err := linalg.SaveNPY(wPath, []int{generalR, generalR}, weightedPrefixMatrix(weights)); err != nil {
		return err
	}
	logf(log, "mfsolve -workload weighted1000.npy -R %d -loss-only -json -no-cache", generalR)
	args := []string{"-workload", wPath, "-R", fmt.Sprint(generalR), "-loss-only", "-json", "-no-cache"}
	m, err = measureCLI(ctx, tmp, bin, args, min(res.cfg.reps, 3), nil)
	if err != nil {
		return err
	}
	res.weightedCLI = m
	t = cliTarget{
		Name:    fmt.Sprintf("general path, R = %d workload file, pure Go (gap <= 1e-10)", generalR),
		Command: fmt.Sprintf("mfsolve -workload $TMP/weighted%d.npy -R %d -loss-only -json -no-cache", generalR, generalR),
		Limit:   120, M: m,
	}
	t.Checks = checkGap(m.Last, tol)
	res.cli = append(res.cli, t)
	return nil
}

// decayingWeights returns the step sizes 1/sqrt(1 + j/100), j = 0..r-1: a
// decaying learning-rate schedule.
func decayingWeights(r int) []float64 {
	w := make([]float64, r)
	for j := range w {
		w[j] = 1 / math.Sqrt(1+float64(j)/100)
	}
	return w
}

// weightedPrefixMatrix returns the row-major r x r matrix A[i][j] = w[j] for
// j <= i, 0 above the diagonal.
func weightedPrefixMatrix(w []float64) []float64 {
	r := len(w)
	a := make([]float64, r*r)
	for i := 0; i < r; i++ {
		copy(a[i*r:i*r+i+1], w[:i+1])
	}
	return a
}

// prefixMatrix returns the r x r prefix-sum matrix, built here and not by
// package factorize, for the reference.
func prefixMatrix(r int) *mat.TriDense {
	a := mat.NewTriDense(r, mat.Lower, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			a.SetTri(i, j, 1)
		}
	}
	return a
}

// runLibrary times the strategies in this process.
func (res *results) runLibrary(ctx context.Context, log io.Writer) error {
	reps := res.cfg.reps
	solve := func(w *factorize.Workload, opt factorize.Options) func() (outcome, error) {
		return func() (outcome, error) {
			f, err := factorize.Optimal(ctx, w, opt)
			if err != nil {
				return outcome{}, err
			}
			return outcome{Iters: f.Iterations, Gap: f.Gap, Loss: f.Metrics.Loss}, nil
		}
	}

	// Every strategy with dense output.
	small, err := factorize.Prefix(8)
	if err != nil {
		return err
	}
	for _, s := range factorize.Strategies() {
		if _, err := factorize.Compute(ctx, s, small, factorize.Options{}); err != nil {
			res.notes = append(res.notes, fmt.Sprintf("strategy %s was not measured: %v", s, err))
			continue
		}
		res.strategies = append(res.strategies, s)
		for _, r := range denseSizes {
			logf(log, "strategy=%s R=%d", s, r)
			w, err := factorize.Prefix(r)
			if err != nil {
				return err
			}
			m, err := measure(r, reps, func() (outcome, error) {
				f, err := factorize.Compute(ctx, s, w, factorize.Options{})
				if err != nil {
					return outcome{}, err
				}
				return outcome{Iters: f.Iterations, Gap: f.Gap, Loss: f.Metrics.Loss}, nil
			})
			if err != nil {
				return fmt.Errorf("strategy %s, R = %d: %v", s, r, err)
			}
			res.dense[s] = append(res.dense[s], m)
			if m.Seconds > slowLimit && r != denseSizes[len(denseSizes)-1] {
				res.notes = append(res.notes, fmt.Sprintf("strategy %s took %.0f s at R = %d and was not run at larger R.", s, m.Seconds, r))
				break
			}
		}
	}

	// The optimal loss alone, structured path.
	for _, r := range lossOnlySizes {
		logf(log, "optimal loss only R=%d", r)
		w, err := factorize.Prefix(r)
		if err != nil {
			return err
		}
		m, err := measure(r, reps, solve(w, factorize.Options{LossOnly: true, Tol: tolFor(r), Method: factorize.Structured}))
		if err != nil {
			return fmt.Errorf("optimal loss only, R = %d: %v", r, err)
		}
		res.lossOnly = append(res.lossOnly, m)
	}
	wWeighted, err := factorize.WeightedPrefix(decayingWeights(generalR))
	if err != nil {
		return err
	}
	logf(log, "optimal loss only, weighted R=%d", generalR)
	if res.weightedStruct, err = measure(generalR, reps, solve(wWeighted, factorize.Options{LossOnly: true, Tol: tol, Method: factorize.Structured})); err != nil {
		return fmt.Errorf("weighted workload, structured: %v", err)
	}

	// The general path on the prefix-sum workload.
	for _, r := range generalSizes {
		logf(log, "optimal general (dense path) R=%d", r)
		w, err := factorize.Prefix(r)
		if err != nil {
			return err
		}
		m, err := measure(r, reps, solve(w, factorize.Options{LossOnly: true, Tol: tol, Method: factorize.Dense}))
		if err != nil {
			return fmt.Errorf("optimal general, R = %d: %v", r, err)
		}
		res.general = append(res.general, m)
	}

	// The reference.
	for _, r := range res.plainSizes {
		logf(log, "plain dense fixed point R=%d", r)
		a := prefixMatrix(r)
		m, err := measure(r, reps, func() (outcome, error) {
			p, err := bench.PlainDense(ctx, a, tol, 100000)
			return outcome{Iters: p.Iterations, Gap: p.Gap, Loss: p.Loss}, err
		})
		if err != nil {
			return fmt.Errorf("plain dense, R = %d: %v", r, err)
		}
		res.plain = append(res.plain, m)
	}
	return nil
}

// find returns the measurement at r, if any.
func find(ms []measurement, r int) (measurement, bool) {
	for _, m := range ms {
		if m.R == r {
			return m, true
		}
	}
	return measurement{}, false
}

// plotSeries returns the lines of the plot.
func (res *results) plotSeries() []series {
	var ss []series
	add := func(name string, dashed bool, ms []measurement) {
		s := series{Name: name, Dashed: dashed}
		for _, m := range ms {
			s.X = append(s.X, float64(m.R))
			s.Y = append(s.Y, m.Seconds)
		}
		ss = append(ss, s)
	}
	for _, s := range res.strategies {
		name := s
		if s == factorize.StrategyOptimal {
			name = "optimal (B and C)"
		}
		add(name, false, res.dense[s])
	}
	add("optimal, loss only", true, res.lossOnly)
	add("optimal, general path", true, res.general)
	add("plain dense fixed point", true, res.plain)
	return ss
}
