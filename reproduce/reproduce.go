package reproduce

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/atomicfile"
	"github.com/dpmf/dpmf/internal/cli"
)

// Parts lists the parts [Run] accepts, in the order "all" runs them.
func Parts() []string { return []string{"fig2", "fig3", "fig4", "tuning", "beyond"} }

// Options configure [Run].
type Options struct {
	// Quick runs every part at a reduced scale (fewer rounds, repetitions
	// and grid points) to check the pipeline end to end in seconds.
	Quick bool
	// Workers bounds the repetitions run at once; 0 means GOMAXPROCS. The
	// numbers do not depend on it.
	Workers int
	// Progress, if not nil, is called with the work done and the total,
	// in per-sample gradient evaluations, from several goroutines.
	Progress func(done, total int64)
	// Log, if not nil, receives one line per finished part.
	Log io.Writer
	// SeedShift is added to the data seeds of tuning and evaluation
	// (TuneSeed, EvalSeed), and so changes every noise seed too. The
	// documented results use 0; other values estimate how often an
	// ordering would come out otherwise.
	SeedShift uint64
	// DataRoot is the directory testdata/breast_cancer.csv is read from;
	// "" means the current directory or the nearest parent that has it.
	DataRoot string
}

// Report is what [Run] measured: the summary's sections, and the claims.
type Report struct {
	// Parts are the parts run.
	Parts []string
	// Claims are the paper's claims checked by the parts run.
	Claims []Claim
	// Checks are the qualitative orderings that quick mode asserts.
	Checks []Check
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
	// sections of summary.md, in order.
	sections []string
}

// Claim is one of the paper's claims beside what was measured.
type Claim struct {
	// Claim is the paper's statement.
	Claim string
	// Verdict is "reproduced", "not reproduced", "reproduced only under
	// stated conditions" or, for a comparison whose difference is within
	// the margin of noise (zMargin), "inconclusive".
	Verdict string
	// Measured gives the numbers and the conditions.
	Measured string
}

// Check is a qualitative ordering: Less's mean should be below More's. The
// standard errors are those of the means (std / sqrt(repetitions)).
type Check struct {
	Name               string
	Less, More         string
	LessMean, MoreMean float64
	LessSE, MoreSE     float64
}

// Z returns the difference of the means in standard errors (positive when
// the ordering holds); +Inf or -Inf when both standard errors are 0.
func (c Check) Z() float64 {
	d := c.MoreMean - c.LessMean
	se := math.Hypot(c.LessSE, c.MoreSE)
	if se == 0 {
		if d > 0 {
			return math.Inf(1)
		}
		return math.Inf(-1)
	}
	return d / se
}

// Holds reports whether the ordering holds.
func (c Check) Holds() bool { return c.LessMean < c.MoreMean }

// Run runs the named parts ("all" for every part) and writes their files
// and summary.md into dir, which is created if needed. Everything that can
// be checked before the work is checked before anything is created: the
// parts, the test data of "beyond" ([Options.DataRoot]) and every output
// file's name under dir. Every file is written to a temporary file next to
// its destination, and they are all renamed into place only when the
// whole run has succeeded: a run that fails or is cancelled replaces no
// file, adds none, and leaves no directory it created behind.
func Run(ctx context.Context, parts []string, dir string, opt Options) (*Report, error) {
	var want []string // in the order given, each once
	for _, p := range parts {
		if p != "all" && !slices.Contains(Parts(), p) {
			return nil, fmt.Errorf("reproduce: unknown part %q, want one of %s or all", p, strings.Join(Parts(), ", "))
		}
		for _, q := range Parts() {
			if (p == "all" || q == p) && !slices.Contains(want, q) {
				want = append(want, q)
			}
		}
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("reproduce: no part to run")
	}
	var root string
	if slices.Contains(want, "beyond") {
		var err error
		if root, err = dataRoot(opt.DataRoot); err != nil {
			return nil, err
		}
	}
	// Every file the run will write must be replaceable before any work
	// (docs/cli.md, "Output files"): a FIFO, device, symbolic link or
	// read-only file under one of the names would otherwise fail the run
	// after it.
	for _, name := range append(outputFiles(want), "summary.md") {
		if err := atomicfile.CheckTarget(filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("reproduce: %w", err)
		}
	}
	start := time.Now()
	// A dry pass counts the work for the progress bar without running it.
	dry := newRunner(opt, dir, root, true)
	if err := dry.run(ctx, want); err != nil {
		return nil, err
	}
	// Everything is checked: only now is anything created. A run that
	// fails removes the directories it created (its files were never
	// renamed into them, and runParts removed their temporary files).
	undo, err := cli.MkdirAll(dir)
	if err != nil {
		return nil, fmt.Errorf("reproduce: %w", err)
	}
	rep, err := runParts(ctx, opt, dir, root, want, dry.units.Load(), start)
	if err != nil {
		undo() // stops at a directory someone else wrote in meanwhile
		return nil, err
	}
	return rep, nil
}

// runParts is the real pass of [Run]: it runs the parts into dir and
// writes summary.md.
func runParts(ctx context.Context, opt Options, dir, root string, want []string, total int64, start time.Time) (*Report, error) {
	r := newRunner(opt, dir, root, false)
	r.total, r.ctx = total, ctx
	defer r.discard()
	if err := r.run(ctx, want); err != nil {
		return nil, err
	}
	rep := &Report{Parts: want, Claims: r.claims, Checks: r.checks, Elapsed: time.Since(start), sections: r.sections}
	if err := r.writeSummary(rep); err != nil {
		return nil, err
	}
	if err := r.commit(ctx); err != nil {
		return nil, err
	}
	return rep, nil
}

// partsByName are the parts' methods and the files each writes into the
// output directory (TestQuick checks them against a run).
var partsByName = map[string]struct {
	run   func(*runner, context.Context) error
	files []string
}{
	"fig2":   {(*runner).fig2, []string{"fig2.csv", "fig2.png", "fig2.svg"}},
	"fig3":   {(*runner).fig3, []string{"fig3.csv", "fig3.png", "fig3.svg"}},
	"fig4":   {(*runner).runFig4, []string{"fig4.csv", "fig4.png", "fig4.svg"}},
	"tuning": {(*runner).tuningFigure, []string{"tuning.csv", "tuning.png", "tuning.svg"}},
	"beyond": {(*runner).beyond, []string{"beyond_tau.csv", "beyond_tau.png", "beyond_tau.svg", "beyond_mechanisms.csv", "beyond_cancer.csv"}},
}

// outputFiles returns the files the parts write, besides summary.md.
func outputFiles(parts []string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, partsByName[p].files...)
	}
	return out
}

// runner holds the caches and results of one pass. Only the goroutine
// that runs the parts uses it (the repetitions' goroutines call only
// progress, which is atomic).
type runner struct {
	opt   Options
	sc    scale
	dir   string
	root  string
	dry   bool
	units atomic.Int64
	total int64

	problems map[problemKey]*experiment.Problem
	facts    map[factKey]*factorize.Factorization
	tunings  map[tuneKey]*tuning

	// ctx is the real pass's context, for the files it prepares; pending
	// are those files, renamed into dir only when the run has succeeded.
	ctx     context.Context
	pending []*atomicfile.Pending
	names   []string // the pending files' names in dir

	sections []string
	claims   []Claim
	checks   []Check
	// Results shared between parts (fig4 and tuning).
	fig4 *fig4Result
}

func newRunner(opt Options, dir, root string, dry bool) *runner {
	return &runner{
		opt: opt, sc: scaleFor(opt.Quick), dir: dir, root: root, dry: dry,
		problems: map[problemKey]*experiment.Problem{},
		facts:    map[factKey]*factorize.Factorization{},
		tunings:  map[tuneKey]*tuning{},
	}
}

func (r *runner) run(ctx context.Context, parts []string) error {
	for _, p := range parts {
		t0 := time.Now()
		if err := partsByName[p].run(r, ctx); err != nil {
			return fmt.Errorf("reproduce: %s: %w", p, err)
		}
		if !r.dry && r.opt.Log != nil {
			fmt.Fprintf(r.opt.Log, "reproduce: %s done in %s\n", p, time.Since(t0).Round(100*time.Millisecond))
		}
	}
	return nil
}

// section appends a section to summary.md.
func (r *runner) section(s string) {
	if !r.dry {
		r.sections = append(r.sections, s)
	}
}

// progress adds units of work done.
func (r *runner) progress(units int64) {
	d := r.units.Add(units)
	if !r.dry && r.opt.Progress != nil {
		r.opt.Progress(min(d, r.total), r.total)
	}
}

// dataRoot finds the directory with testdata/breast_cancer.csv.
func dataRoot(root string) (string, error) {
	const rel = "testdata/breast_cancer.csv"
	if root != "" {
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			return "", fmt.Errorf("reproduce: %w", err)
		}
		return root, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("reproduce: %w", err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("reproduce: %s not found in the current directory or its parents (run from the dpmf module)", rel)
		}
	}
}
