package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/figure"
	"github.com/dpmf/dpmf/npy"
)

// The "order of magnitude further" section (issue 13): B and C from the
// quasiseparable structure, the faster loss-only path, and the streaming
// semiseparable factorization against BLT. Every speed-up is a ratio
// against the code before the issue (git commit furtherRef), built into a
// temporary directory and run in the same session at the same size.

const (
	furtherBegin = "<!-- further: begin -->"
	furtherEnd   = "<!-- further: end -->"
	// furtherRef is the last main commit before issue 13's changes.
	furtherRef = "7491e1a"
)

// furtherCLI is one timed mfsolve target with its reference.
type furtherCLI struct {
	Name   string
	Args   []string
	Limit  float64 // seconds
	RSS    int64   // bytes; 0 for no limit
	NoRef  bool    // the reference is not run (too slow)
	M, Ref cliMeasurement
	Err    string
	RefErr string
}

func (t furtherCLI) pass() bool {
	return t.Err == "" && t.M.Runs > 0 && t.M.Seconds <= t.Limit && (t.RSS == 0 || rssCheck(t.M.MaxRSS, t.RSS) == "")
}

// semisepRow is one streaming factorization: semiseparable or BLT.
type semisepRow struct {
	Strategy string
	R, K     int
	Loss     float64
	Excess   float64 // relative to the certified optimal lower bound
	Seconds  float64 // median time of the factorization (BLT: its fit)
	Err      string
}

// furtherResult holds the section's measurements.
type furtherResult struct {
	CLI        []furtherCLI
	Rows       []semisepRow
	Optimal    map[int]float64 // certified lower bounds
	MechDim    int
	MechRounds int
	MechK      int
	MechSecs   float64 // median seconds per round, semiseparable
	IndepSecs  float64 // median seconds per round, independent noise
	// StructuredLoss is the structured path's certified loss (gap
	// StructuredGap) of prefix sums at furtherGeneralR rounds.
	StructuredLoss, StructuredGap float64
	// LoadBefore and LoadAfter are the load averages at start and end.
	LoadBefore, LoadAfter string
}

// buildAt builds cmd/mfsolve of git commit rev into dir.
func buildAt(ctx context.Context, root, rev, dir string) (string, error) {
	src := filepath.Join(dir, "src-"+rev)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf("git -C %q archive %q | tar -x -C %q", root, rev, src))
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %v: %s", rev, err, strings.TrimSpace(string(out)))
	}
	bin := filepath.Join(dir, "mfsolve-"+rev)
	return bin, goBuild(ctx, src, "./cmd/mfsolve", bin)
}

// goBuild builds the command pkg of the module at dir into bin.
func goBuild(ctx context.Context, dir, pkg, bin string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %v: %s", pkg, dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// refArgs returns args as the reference mfsolve (furtherRef) takes them:
// it names the optimal solver's tolerance by -tol, where this build takes
// it in the strategy's spec (-strategy optimal:tol=X), which the
// reference refuses as an unknown strategy.
func refArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "-strategy" && i+1 < len(args) {
			if tol, ok := strings.CutPrefix(args[i+1], "optimal:tol="); ok {
				out = append(out, "-tol", tol)
				i++
				continue
			}
		}
		out = append(out, args[i])
	}
	return out
}

// runFurther measures the section.
func runFurther(ctx context.Context, reps int, log io.Writer) (*furtherResult, error) {
	res := &furtherResult{Optimal: map[int]float64{}, LoadBefore: loadAvg()}
	defer func() { res.LoadAfter = loadAvg() }()
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "dpmf-further-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "mfsolve")
	if err := goBuild(ctx, root, "./cmd/mfsolve", bin); err != nil {
		return nil, err
	}
	logf(log, "further: building the reference mfsolve at %s", furtherRef)
	ref, err := buildAt(ctx, root, furtherRef, tmp)
	if err != nil {
		return nil, err
	}
	res.CLI = []furtherCLI{
		{Name: "R = 4000, B and C written", Args: []string{"-R", "4000", "-o", "B.npy", "-C", "C.npy", "-no-cache", "-json"}, Limit: 2},
		{Name: "R = 10,000, B and C written", Args: []string{"-R", "10000", "-o", "B.npy", "-C", "C.npy", "-no-cache", "-json"}, Limit: 30, NoRef: true},
		{Name: "R = 100,000, loss only, gap 1e-10", Args: []string{"-R", "100000", "-loss-only", "-no-cache", "-json", "-strategy", "optimal:tol=1e-10"}, Limit: 5},
		{Name: "R = 1,000,000, loss only, gap 1e-8", Args: []string{"-R", "1000000", "-loss-only", "-no-cache", "-json", "-strategy", "optimal:tol=1e-8"}, Limit: 30, RSS: 300e6},
		{Name: "R = 2000, prefix sums on the dense path, loss only, gap 1e-10", Args: []string{"-R", "2000", "-strategy", "optimal:path=dense,tol=1e-10", "-loss-only", "-no-cache", "-json"}, Limit: 60, NoRef: true},
	}
	// The general-path workloads of the main section, at R = 1000 (with
	// the reference, for the ratio) and R = 2000 (the target).
	for _, r := range furtherGeneralRs {
		for _, fw := range fileWorkloads(r) {
			if err := npy.Save(filepath.Join(tmp, generalName(fw.File, r)), []int{r, r}, fw.Matrix); err != nil {
				return nil, err
			}
			// The reference at R = 2000 takes minutes: the ratio is
			// measured at R = 1000.
			res.CLI = append(res.CLI, furtherCLI{Name: fmt.Sprintf("R = %d, general path: %s, loss only, gap 1e-10", r, fw.Name), Args: []string{"-workload", generalName(fw.File, r), "-loss-only", "-no-cache", "-json", "-strategy", "optimal:tol=1e-10"}, Limit: 60, NoRef: r > 1000})
		}
	}
	for i := range res.CLI {
		t := &res.CLI[i]
		logf(log, "further: %s", t.Name)
		t.M, err = measureCLI(ctx, tmp, bin, t.Args, reps, nil)
		if err != nil {
			t.Err = oneLine(err)
		}
		if t.NoRef {
			continue
		}
		logf(log, "further: %s (reference %s)", t.Name, furtherRef)
		t.Ref, err = measureCLI(ctx, tmp, ref, refArgs(t.Args), min(reps, 3), nil)
		if err != nil {
			t.RefErr = oneLine(err)
		}
	}
	os.Remove(filepath.Join(tmp, "B.npy"))
	os.Remove(filepath.Join(tmp, "C.npy"))

	// The structured path's loss at the order of the dense-path rows, for
	// the agreement of the two.
	wd, err := factorize.Prefix(furtherGeneralR)
	if err != nil {
		return nil, err
	}
	fs, err := factorize.Optimal(ctx, wd, factorize.Options{LossOnly: true, Tol: 1e-11})
	if err != nil {
		return nil, err
	}
	res.StructuredLoss, res.StructuredGap = fs.Metrics.Loss, fs.Gap

	// Semiseparable against BLT at the same number of buffers.
	for _, r := range []int{800, 10000, 100000} {
		w, err := factorize.Prefix(r)
		if err != nil {
			return nil, err
		}
		for _, k := range []int{2, 4, 8, 16} {
			logf(log, "further: semiseparable R = %d, K = %d", r, k)
			row := semisepRow{Strategy: "semiseparable", R: r, K: k}
			var secs []float64
			for i := 0; i < min(reps, 3); i++ {
				start := time.Now()
				f, err := factorize.SemisepStrategy{Buffers: k}.Factorize(ctx, w, factorize.SingleParticipation())
				if err != nil {
					row.Err = oneLine(err)
					break
				}
				secs = append(secs, time.Since(start).Seconds())
				row.Loss, row.Excess = f.Metrics.Loss, f.Semisep.Excess
				res.Optimal[r] = f.Semisep.OptimalLower
			}
			row.Seconds = docgen.Median(secs)
			res.Rows = append(res.Rows, row)
		}
		if r > 10000 {
			continue // BLT forms R x R matrices
		}
		for _, k := range []int{2, 4, 8} {
			logf(log, "further: BLT R = %d, K = %d", r, k)
			row := semisepRow{Strategy: "blt", R: r, K: k}
			start := time.Now()
			f, err := factorize.BLT(ctx, w, k)
			if err != nil {
				row.Err = oneLine(err)
			} else {
				row.Seconds = time.Since(start).Seconds()
				row.Loss = f.Metrics.Loss
				row.Excess = row.Loss/res.Optimal[r] - 1
			}
			res.Rows = append(res.Rows, row)
		}
	}

	// Mechanism throughput at d = 10^6: K = 8 against independent noise.
	res.MechDim, res.MechRounds, res.MechK = 1000000, 20, 8
	logf(log, "further: mechanism throughput, d = %d", res.MechDim)
	w, err := factorize.Prefix(res.MechRounds)
	if err != nil {
		return nil, err
	}
	semi, err := factorize.SemisepStrategy{Buffers: res.MechK}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		return nil, err
	}
	id, err := factorize.IdentityStrategy{}.Factorize(context.Background(), w, factorize.SingleParticipation())
	if err != nil {
		return nil, err
	}
	// The median seconds per round of each pass, semiseparable and
	// independent interleaved so that both see the same load.
	var perRound [2][]float64
	for range 3 {
		for i, f := range []*factorize.Factorization{semi, id} {
			secs, _, err := mechRounds(f, res.MechDim, res.MechRounds, nil)
			if err != nil {
				return nil, err
			}
			perRound[i] = append(perRound[i], docgen.Median(secs))
		}
	}
	res.MechSecs, res.IndepSecs = docgen.Median(perRound[0]), docgen.Median(perRound[1])
	return res, nil
}

// furtherGeneralR is the order of the general-path target; the general
// workloads are also run at R = 1000 against the reference.
const furtherGeneralR = 2000

var furtherGeneralRs = []int{1000, furtherGeneralR}

// generalName is the file name of a general workload of order r.
func generalName(file string, r int) string {
	return strings.TrimSuffix(file, ".npy") + fmt.Sprint(r) + ".npy"
}

// furtherMarkdown renders the section with markers; plot is the figure's
// path relative to the report.
func (res *furtherResult) markdown(cmdLine string, when time.Time, plot string) string {
	var d doc
	d.line(furtherBegin)
	d.para("## An order of magnitude further (issue 13)")
	d.para("Measured by `%s` on %s UTC (this section alone is rewritten by `go run ./docgen/scaling -out docs/scaling.md -further-only`). The machine is shared (load average over 1, 5 and 15 minutes: %s at the start, %s at the end, on 2 cores); absolute seconds are pessimistic and noisy, and every speed-up is a ratio against the code before these changes (commit %s, built from `git archive` into a temporary directory) run in the same session at the same size: reference time / new time, larger is better. Peak RSS is the subprocess's.", cmdLine, when.UTC().Format("2006-01-02 15:04"), res.LoadBefore, res.LoadAfter, furtherRef)
	d.table("| target | command | limit | measured (median) | runs | peak RSS | iterations | gap | reference (median) | runs | ratio | result |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, t := range res.CLI {
		limit := secs(t.Limit)
		if t.RSS > 0 {
			limit += fmt.Sprintf(", %s", mb(float64(t.RSS)))
		}
		meas := secs(t.M.Seconds)
		if t.Err != "" {
			meas = "error: " + t.Err
		}
		refS, ratio := "not run", ""
		if !t.NoRef {
			refS = secs(t.Ref.Seconds)
			if t.RefErr != "" {
				refS = "error: " + t.RefErr
			} else if t.M.Seconds > 0 {
				ratio = fmt.Sprintf("%.1f", t.Ref.Seconds/t.M.Seconds)
			}
		}
		d.line("| %s | `mfsolve %s` | %s | %s | %d | %s | %d | %.1e | %s | %d | %s | %s |", t.Name, strings.Join(t.Args, " "), limit, meas, t.M.Runs, rssCell(t.M.MaxRSS), t.M.Last.Iterations, t.M.Last.Gap, refS, t.Ref.Runs, ratio, passFail(t.pass()))
	}
	d.line("")
	d.line("Not run: the reference B and C at R = 10,000 (minutes, O(R^3)); the reference of `-strategy optimal:path=dense`, which commit %s does not have; the references of the general workloads at R = %d (minutes: the ratio of the dense path is measured at R = 1000). The general workloads are those of the general-path target above (`window*.npy`, `noisy*.npy`, written by the benchmark; their inverses are not banded, so mfsolve takes the dense path); the prefix-sum row forces the dense path on the workload the structured path also solves. The limit of 60 s is the target at R = %d; at R = 1000 it is only a bound.", furtherRef, furtherGeneralR, furtherGeneralR)
	for _, t := range res.CLI {
		if slices.ContainsFunc(t.Args, func(a string) bool { return strings.Contains(a, "path=dense") }) && t.Err == "" && res.StructuredLoss > 0 {
			diff := math.Abs(t.M.Last.Loss/res.StructuredLoss - 1)
			d.line("")
			d.line("Agreement at R = %d (prefix sums): the dense path's certified loss %.12g (gap %.1e) against the structured path's %.12g (gap %.1e, `factorize.Optimal` in this process): relative difference %.1e, within the sum of the two gaps: %s.", furtherGeneralR, t.M.Last.Loss, t.M.Last.Gap, res.StructuredLoss, res.StructuredGap, diff, passFail(diff <= t.M.Last.Gap+res.StructuredGap+1e-15))
		}
	}
	d.line("")
	d.para("### Streaming the optimum with K state vectors")
	d.para("`factorize.SemisepStrategy` (`mfsolve -strategy semiseparable:buffers=K`) against BLT with the same number of buffers (`factorize.BLT`, whose C^{-1} is a sum of K geometric sequences). Excess is loss / (certified optimal lower bound) - 1; the semiseparable loss and sensitivity are computed from the generators of the C actually used (O(R K^2)). Time is the median of the whole computation: for the semiseparable factorization the certified optimal solve (gap 1e-10) plus the factor; for BLT its fit and dense factors (not run at R = 100,000, where it would form 80 GB matrices). Targets: K <= 8 within 1%% of the optimum and K <= 16 within 0.1%% at every R.")
	d.table("| strategy | R | K (buffers) | loss | excess over the optimum | time (median) |", "|---|---:|---:|---:|---:|---:|")
	rows := slices.Clone(res.Rows)
	slices.SortStableFunc(rows, func(a, b semisepRow) int { return cmp.Or(cmp.Compare(a.R, b.R), cmp.Compare(a.K, b.K)) })
	ok8, ok16 := true, true
	for _, r := range rows {
		if r.Err != "" {
			d.line("| %s | %d | %d | error: %s | | |", r.Strategy, r.R, r.K, r.Err)
			if r.Strategy == "semiseparable" {
				ok8, ok16 = false, false
			}
			continue
		}
		d.line("| %s | %d | %d | %.10g | %.2e | %s |", r.Strategy, r.R, r.K, r.Loss, r.Excess, secs(r.Seconds))
		if r.Strategy == "semiseparable" && r.K == 8 && !(r.Excess <= 0.01) {
			ok8 = false
		}
		if r.Strategy == "semiseparable" && r.K == 16 && !(r.Excess <= 0.001) {
			ok16 = false
		}
	}
	d.line("")
	d.para("K = 8 within 1%%: %s; K = 16 within 0.1%%: %s.", passFail(ok8), passFail(ok16))
	d.para("![Excess loss over the certified optimum against the number of buffers](%s)", plot)
	ratio := res.MechSecs / res.IndepSecs
	d.para("Mechanism throughput at d = %d (`mechanism.New` on the semiseparable factorization with K = %d, R = %d, against independent noise, which only draws d Gaussians per round; default workers, one per core; median seconds per round over %d rounds, median of 3 interleaved passes; the independent mechanism is itself the counter-based draw of d Gaussians and a scaling, and `BenchmarkMechanism` in bench/ compares single-worker rounds with a bare ChaCha8 draw, see docs/mechanisms.md): %s per round against %s, ratio %.2f (target at most 2): %s. State: K d float64 = %s.", res.MechDim, res.MechK, res.MechRounds, res.MechRounds, secs(res.MechSecs), secs(res.IndepSecs), ratio, passFail(ratio <= 2), mb(float64(res.MechK*res.MechDim*8)))
	d.line("Reproduce on a quiet machine: `go run ./docgen/scaling -out docs/scaling.md -further-only` (this section), or the commands in the table one by one (`go build -o mfsolve ./cmd/mfsolve`; for the reference, `git archive %s | tar -x -C /tmp/ref && (cd /tmp/ref && go build -o mfsolve-ref ./cmd/mfsolve)`).", furtherRef)
	d.line(furtherEnd)
	return d.String()
}

// plot draws excess against K, one line per strategy and R.
func (res *furtherResult) plot(base string) error {
	type key struct {
		s string
		r int
	}
	panel := figure.Panel{Title: "Streaming with K buffers: excess loss over the certified optimum", XLabel: "K (state vectors per coordinate)", YLabel: "loss / optimum - 1", LogX: true, LogY: true}
	index := map[key]int{} // of the line in panel.Series
	for _, r := range res.Rows {
		if r.Err != "" || !(r.Excess > 0) {
			continue
		}
		k := key{r.Strategy, r.R}
		i, ok := index[k]
		if !ok {
			i, index[k] = len(panel.Series), len(panel.Series)
			s := figure.Series{Name: fmt.Sprintf("%s, R = %d", r.Strategy, r.R), Points: true, Color: i}
			if r.Strategy == "blt" {
				s.Dashes = 1
			}
			panel.Series = append(panel.Series, s)
		}
		panel.Series[i].X = append(panel.Series[i].X, float64(r.K))
		panel.Series[i].Y = append(panel.Series[i].Y, r.Excess)
	}
	return figure.Figure{Panels: []figure.Panel{panel}}.Save(base)
}
