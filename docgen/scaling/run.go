package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/bench"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/figure"
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
	// weightedR is the order of the weighted workload on which the general
	// and the structured path are compared in this process.
	weightedR = 400
)

// generalTols are the tolerances tried in turn on the general (dense)
// path: it stops early, with an error, when rounding in its evaluation
// puts the requested gap out of reach (see factorize.NotConvergedError).
var generalTols = []float64{1e-10, 1e-9, 1e-8}

// tolFor returns the certified gap asked for of the structured path at R
// rounds.
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

	// The weighted prefix-sum workload of order weightedR by the general
	// and by the structured path.
	weightedGeneral, weightedStruct measurement

	cli []cliTarget

	part []partRun // the participation section
}

// logf prints a progress line.
func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// run measures everything and writes the report and the plot.
func run(ctx context.Context, cfg config, log io.Writer) error {
	if cfg.replot {
		return replot(cfg, log)
	}
	// Fail before a long run on an output that cannot be written.
	if err := cli.CheckOutputs([]cli.File{{Flag: "-out", Path: cfg.out}, {Flag: "-svg", Path: cfg.svg}}, nil); err != nil {
		return err
	}
	if cfg.furtherOnly {
		started := time.Now()
		fr, err := runFurther(ctx, cfg.reps, log)
		if err != nil {
			return err
		}
		base := strings.TrimSuffix(cfg.out, ".md") + "-streaming"
		if err := fr.plot(base); err != nil {
			return err
		}
		plot := filepath.Base(base) + ".svg"
		if err := replaceSection(cfg.out, fr.markdown(cfg.cmdLine(), started, plot), furtherBegin, furtherEnd, "-further-only"); err != nil {
			return err
		}
		logf(log, "rewrote the further section of %s in %s", cfg.out, time.Since(started).Round(time.Second))
		return nil
	}
	if cfg.issue20Only {
		started := time.Now()
		ir, err := runIssue20(ctx, cfg, log)
		if err != nil {
			return err
		}
		if err := replaceIssue20(cfg.out, ir.markdown(cfg.cmdLine(), started)); err != nil {
			return err
		}
		logf(log, "rewrote the issue-20 section of %s in %s (estimated %s)", cfg.out, time.Since(started).Round(time.Second), ir.Estimate.Round(time.Second))
		return nil
	}
	if cfg.partOnly {
		started := time.Now()
		runs := runParticipation(ctx, cfg.reps, log)
		if err := replaceSection(cfg.out, participationMarkdown(runs, cfg.cmdLine(), started), partBegin, partEnd, "-participation-only"); err != nil {
			return err
		}
		logf(log, "rewrote the participation section of %s in %s", cfg.out, time.Since(started).Round(time.Second))
		return nil
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
	if err := res.runTargets(ctx, tmp, log); err != nil {
		return err
	}
	if err := res.runLibrary(ctx, log); err != nil {
		return err
	}
	res.part = runParticipation(ctx, cfg.reps, log)
	res.machine.LoadAfter = loadAvg()
	res.elapsed = time.Since(res.started)

	if err := res.writeTimePlot(cfg.svg); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(cfg.out), cfg.svg)
	if err != nil {
		rel = cfg.svg
	}
	md := res.markdown(filepath.ToSlash(rel))
	// The section on B and C from the structure, R = 10^6 and streaming
	// (-further-only) builds a reference binary and takes many minutes of
	// its own: a full run keeps the section the report already has.
	md += keptSection(cfg.out, furtherBegin, furtherEnd)
	// So is the issue-20 section (-issue20-only), or the hand-added
	// accountant section it replaces.
	md += keptSection(cfg.out, issue20Begin, issue20End) + keptSection(cfg.out, accountantBegin, accountantEnd)
	// And the sections measured by hand (other machines, other days),
	// which no flag reruns.
	md += keptSection(cfg.out, handBegin, handEnd)
	if err := docgen.WriteFile(cfg.out, []byte(md)); err != nil {
		return err
	}
	logf(log, "wrote %s and %s in %s", cfg.out, cfg.svg, res.elapsed.Round(time.Second))
	return nil
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

// decayingWeights returns the step sizes 1/sqrt(1 + j/100), j = 0..r-1: a
// decaying learning-rate schedule.
func decayingWeights(r int) []float64 {
	w := make([]float64, r)
	for j := range w {
		w[j] = 1 / math.Sqrt(1+float64(j)/100)
	}
	return w
}

// optimalRun returns a measured computation of the optimal loss.
func optimalRun(ctx context.Context, w *factorize.Workload, opt factorize.Options) func() (outcome, error) {
	return func() (outcome, error) { return outcomeOf(factorize.Optimal(ctx, w, opt)) }
}

// outcomeOf returns the outcome of a factorization, or err.
func outcomeOf(f *factorize.Factorization, err error) (outcome, error) {
	if err != nil {
		return outcome{}, err
	}
	return outcome{Iters: f.Iterations, Roots: f.Evaluations, Gap: f.Gap, Loss: f.Metrics.Loss}, nil
}

// roundingLimited reports whether err says that the dense path cannot
// certify the requested gap because of rounding.
func roundingLimited(err error) bool {
	var nc *factorize.NotConvergedError
	return errors.As(err, &nc) && (nc.Stalled || nc.Floor > 0)
}

// measureGeneral measures the general path's optimal loss of w at the
// smallest tolerance of generalTols that it can certify, and notes the
// tolerances it could not.
func (res *results) measureGeneral(ctx context.Context, what string, w *factorize.Workload) (measurement, error) {
	for _, t := range generalTols {
		m, err := measure(w.R(), res.cfg.reps, optimalRun(ctx, w, factorize.Options{LossOnly: true, Tol: t, Method: factorize.Dense}))
		if roundingLimited(err) {
			res.notes = append(res.notes, fmt.Sprintf("General path, %s, R = %d: gap %g not certifiable, measured at %g instead (%v).", what, w.R(), t, 10*t, err))
			continue
		}
		if err != nil {
			return m, fmt.Errorf("general path, %s, R = %d: %v", what, w.R(), err)
		}
		m.Tol = t
		return m, nil
	}
	return measurement{}, fmt.Errorf("general path, %s, R = %d: no gap in %v could be certified", what, w.R(), generalTols)
}

// runLibrary times the strategies in this process.
func (res *results) runLibrary(ctx context.Context, log io.Writer) error {
	reps := res.cfg.reps

	// Every strategy with dense output.
	small, err := factorize.Prefix(8)
	if err != nil {
		return err
	}
	for _, s := range factorize.Strategies() {
		if _, err := compute(ctx, s, small); err != nil {
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
			m, err := measure(r, reps, func() (outcome, error) { return outcomeOf(compute(ctx, s, w)) })
			if err != nil {
				return fmt.Errorf("strategy %s, R = %d: %v", s, r, err)
			}
			if m.Out.Iters > 0 {
				m.Tol = tol
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
		m, err := measure(r, reps, optimalRun(ctx, w, factorize.Options{LossOnly: true, Tol: tolFor(r), Method: factorize.Structured}))
		if err != nil {
			return fmt.Errorf("optimal loss only, R = %d: %v", r, err)
		}
		m.Tol = tolFor(r)
		res.lossOnly = append(res.lossOnly, m)
	}

	// The general path on the prefix-sum workload.
	for _, r := range generalSizes {
		logf(log, "optimal general (dense path) R=%d", r)
		w, err := factorize.Prefix(r)
		if err != nil {
			return err
		}
		m, err := res.measureGeneral(ctx, "prefix sums", w)
		if err != nil {
			return err
		}
		res.general = append(res.general, m)
	}

	// Both paths on a weighted prefix-sum workload.
	logf(log, "optimal, weighted workload R=%d, structured and general", weightedR)
	wWeighted, err := factorize.WeightedPrefix(decayingWeights(weightedR))
	if err != nil {
		return err
	}
	if res.weightedStruct, err = measure(weightedR, reps, optimalRun(ctx, wWeighted, factorize.Options{LossOnly: true, Tol: tol, Method: factorize.Structured})); err != nil {
		return fmt.Errorf("weighted workload, structured path: %v", err)
	}
	res.weightedStruct.Tol = tol
	if res.weightedGeneral, err = res.measureGeneral(ctx, "weighted prefix sums", wWeighted); err != nil {
		return err
	}

	// The reference, at the tolerance the general path certified at the same
	// R, so that the two are compared at equal gaps.
	for _, r := range res.plainSizes {
		t := tol
		if g, ok := find(res.general, r); ok {
			t = g.Tol
		}
		logf(log, "plain dense fixed point R=%d tol=%g", r, t)
		a := prefixMatrix(r)
		m, err := measure(r, reps, func() (outcome, error) {
			p, err := bench.PlainDense(ctx, a, t, 100000)
			return outcome{Iters: p.Iterations, Roots: p.Iterations, Gap: p.Gap, Loss: p.Loss}, err
		})
		if err != nil {
			return fmt.Errorf("plain dense, R = %d: %v", r, err)
		}
		m.Tol = t
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

// plotSeries returns the lines of the plot (see logLogSVG).
func (res *results) plotSeries() []figure.Series {
	var ss []figure.Series
	add := func(name string, dashes int, ms []measurement) {
		s := figure.Series{Name: name, Dashes: dashes}
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
		add(name, 0, res.dense[s])
	}
	add("optimal, loss only", 1, res.lossOnly)
	add("optimal, general path", 1, res.general)
	add("plain dense fixed point", 1, res.plain)
	return ss
}

// compute factorizes w by the named strategy with default options under
// single participation.
func compute(ctx context.Context, name string, w *factorize.Workload) (*factorize.Factorization, error) {
	s, err := factorize.ParseStrategy(name)
	if err != nil {
		return nil, err
	}
	return s.Factorize(ctx, w, factorize.Participation{})
}

// The sections of the report measured by hand (lent machines, other days)
// sit between these markers, at its end: a full run keeps them as they are.
const (
	handBegin = "<!-- hand: begin -->"
	handEnd   = "<!-- hand: end -->"
)

// keptSection returns the section of the report at path between the markers
// begin and end (markers included, preceded by a blank line), or "" when the
// report or the section does not exist.
func keptSection(path, begin, end string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(old)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return ""
	}
	return "\n" + s[i:j+len(end)] + "\n"
}
