package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/progress"
	"github.com/dpmf/dpmf/reproduce"
)

const reproduceUsage = `Usage: ofl reproduce PART... -out DIR [-quick] [-workers N]

Rebuilds the figures of Zhang, Zhu and Johansson (package reproduce) and
writes PNG, SVG and CSV files and summary.md into DIR. PART is one of
fig2, fig3, fig4, tuning, beyond, or all. See docs/reproduction.md.

Example:
  ofl reproduce all -out docs/reproduction
  ofl reproduce fig4 tuning -out /tmp/r -quick

Flags:
`

// runReproduce is "ofl reproduce".
func runReproduce(ctx context.Context, args []string, e env) error {
	fs := cli.NewFlagSet("ofl reproduce")
	out := fs.String("out", "", "output `DIR` (required)")
	quick := fs.Bool("quick", false, "reduced sizes: a pipeline check in seconds, not results")
	workers := fs.Int("workers", 0, "repetitions run at once (0: one per CPU); results do not depend on it")
	quiet := fs.Bool("quiet", false, "no progress bar and no log")
	// Parts and flags may come in any order; each flag once.
	parts, err := cli.ParseInterspersed(fs, args, cli.Once)
	if err == flag.ErrHelp {
		return cli.PrintUsage(e.stdout, fs, reproduceUsage)
	}
	if err != nil {
		return cli.Usagef("reproduce: %v", err)
	}
	if len(parts) == 0 {
		return cli.Usagef("reproduce: no part given, want %s or all", strings.Join(reproduce.Parts(), ", "))
	}
	for _, p := range parts {
		if p != "all" && !slices.Contains(reproduce.Parts(), p) {
			return cli.Usagef("reproduce: part %q, want %s or all", p, strings.Join(reproduce.Parts(), ", "))
		}
	}
	if *out == "" {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "out" })
		if given {
			return cli.Usagef("reproduce: -out is empty: want a directory")
		}
		return cli.Usagef("reproduce: -out DIR is required")
	}
	if *workers < 0 {
		return cli.Usagef("reproduce: -workers %d, want >= 0", *workers)
	}
	// Fail before the work, not after it.
	if err := cli.CheckOutputDir("-out", *out); err != nil {
		return err
	}
	opt := reproduce.Options{Quick: *quick, Workers: *workers}
	// The bar starts at the first report, which carries the total; log
	// lines go through it so that they do not break its line.
	var bar atomic.Pointer[progress.Bar]
	var once sync.Once
	if !*quiet {
		opt.Log = writerFunc(func(p []byte) (int, error) {
			if b := bar.Load(); b != nil {
				return b.Write(p)
			}
			return e.stderr.Write(p)
		})
		if e.progress {
			opt.Progress = func(done, total int64) {
				once.Do(func() {
					bar.Store(progress.Start(e.stderr, progress.Options{Prefix: "ofl: ", Label: "reproduce", Total: int(total)}))
				})
				bar.Load().Set(int(done))
			}
		}
	}
	rep, err := reproduce.Run(ctx, parts, *out, opt)
	if b := bar.Load(); b != nil {
		b.Finish()
	}
	if err != nil {
		return err
	}
	if !*quiet {
		wrote := fmt.Sprintf("wrote %s/summary.md and the figures of %s", *out, strings.Join(rep.Parts, ", "))
		// The files are in place: a failed print says so.
		if _, err := fmt.Fprintf(e.stdout, "%s in %s\n", wrote, rep.Elapsed.Round(1e9)); err != nil {
			return fmt.Errorf("%s, but printing the report failed: %v", wrote, err)
		}
	}
	return nil
}

// writerFunc is an io.Writer from a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
