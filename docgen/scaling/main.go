// Command scaling measures dpmf's factorizations against the number of rounds
// R and writes docs/scaling.md: the machine, the speed targets with PASS or
// FAIL, a side-by-side with the plain dense fixed point, the agreement of the
// structured and general solvers, a table of time, iterations, certified
// gap and allocations per strategy, and a log-log plot of time against R
// (an SVG beside the report).
//
// Usage:
//
//	go run ./docgen/scaling -out docs/scaling.md [-svg FILE] [-quick] [-reps 5]
//	go run ./docgen/scaling -out docs/scaling.md -participation-only
//	go run ./docgen/scaling -out docs/scaling.md -further-only
//	go run ./docgen/scaling -out docs/scaling.md -issue20-only [-long] [-issue20-sizes small]
//
// It must run inside the dpmf module: it builds cmd/mfsolve and times the
// binary as a subprocess for the end-to-end targets (through a copy of
// itself as launcher, so that each subprocess's peak RSS is its own). Every
// time quoted is the median of -reps runs, fewer for slow computations (at
// most 3 above 10 s, one above 60 s); the report gives the number of runs of
// each. The full run takes about 20 minutes on a 2-core machine, a quarter
// of it the plain dense fixed point at R = 800, which -quick leaves out.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpmf/dpmf/internal/cli"
)

// config holds the command-line flags.
type config struct {
	out, svg string
	quick    bool
	reps     int
	// partOnly measures only the participation section and rewrites it in
	// the existing report.
	partOnly bool
	// furtherOnly measures only the issue-13 section ("an order of
	// magnitude further") and rewrites it in the existing report.
	furtherOnly bool
	// issue20Only measures only the issue-20 section (GOMAXPROCS 1
	// against 2, R = 10^7, banded, the accountant, BLT) and rewrites it in
	// the existing report; issue20Sizes picks its sizes (full or small),
	// long adds banded at the largest R.
	issue20Only  bool
	issue20Sizes string
	long         bool
	// replot redraws the report's figures from its tables, measuring
	// nothing.
	replot bool
	args   []string // as given, for the report
}

func main() {
	if report := os.Getenv(spawnEnv); report != "" {
		os.Exit(spawn(os.Args[1:], report))
	}
	ctx, stop := cli.SignalContext()
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err == nil {
		err = run(ctx, cfg, os.Stderr)
	}
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "scaling: %v\n", err)
		os.Exit(cli.ExitCode(err)) // 2 for a bad command line
	}
}

// parseFlags parses and checks the command line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{args: args}
	fs := cli.NewFlagSet("scaling")
	fs.StringVar(&cfg.out, "out", "docs/scaling.md", "write the report to `FILE`")
	fs.StringVar(&cfg.svg, "svg", "", "write the plot to `FILE` (default: scaling.svg beside -out)")
	fs.BoolVar(&cfg.quick, "quick", false, "leave out the plain dense fixed point at R = 800 (many minutes)")
	fs.BoolVar(&cfg.partOnly, "participation-only", false, "measure only the participation section and rewrite it in the existing -out report")
	fs.BoolVar(&cfg.furtherOnly, "further-only", false, "measure only the section on B and C from the structure, R = 10^6 and streaming with K buffers, and rewrite it in the existing -out report")
	fs.BoolVar(&cfg.issue20Only, "issue20-only", false, "measure only the issue-20 section (GOMAXPROCS=1 against 2 on each heavy path, R = 10^7, banded under min-separation, the two-sided accountant, BLT against the number of buffers) and rewrite it in the existing -out report")
	fs.StringVar(&cfg.issue20Sizes, "issue20-sizes", "full", "sizes `SET` of the issue-20 section: full (the issue's) or small (a quick test of the generator)")
	fs.BoolVar(&cfg.long, "long", false, "with -issue20-only: also banded under min-separation at R = 10^5 (up to 10 minutes)")
	fs.BoolVar(&cfg.replot, "replot", false, "measure nothing: redraw the figures (-svg, and the streaming figure beside -out) from the tables of the existing -out report")
	fs.IntVar(&cfg.reps, "reps", 5, "take the median of `N` runs (fewer for slow computations)")
	usage := "Usage: go run ./docgen/scaling [flags]\n\n" +
		"Measures dpmf's factorizations against R and writes a Markdown report with a\n" +
		"log-log plot. Run it from inside the dpmf module.\n\n" +
		"Example:\n  go run ./docgen/scaling -out docs/scaling.md -reps 5\n\nFlags:\n"
	if _, err := cli.ParseFlags(fs, args, stderr, usage, ""); err != nil {
		return cfg, err
	}
	if cfg.reps < 1 {
		return cfg, cli.Usagef("-reps %d: want at least 1", cfg.reps)
	}
	if _, ok := i20SizeSets[cfg.issue20Sizes]; !ok {
		return cfg, cli.Usagef("-issue20-sizes %s: want full or small", cfg.issue20Sizes)
	}
	if !strings.HasSuffix(cfg.out, ".md") {
		return cfg, cli.Usagef("-out %s: want a .md file name", cfg.out)
	}
	cfg.svg = cmp.Or(cfg.svg, filepath.Join(filepath.Dir(cfg.out), "scaling.svg"))
	if !strings.HasSuffix(cfg.svg, ".svg") {
		return cfg, cli.Usagef("-svg %s: want a .svg file name", cfg.svg)
	}
	return cfg, nil
}

// cmdLine is the command line as the report quotes it.
func (c config) cmdLine() string {
	return strings.Join(append([]string{"go run ./docgen/scaling"}, c.args...), " ")
}
