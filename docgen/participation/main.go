// Command participation computes the RMSE of every factorization strategy
// under fixed-epoch and min-separation participation and writes the tables
// of docs/participation.md (between the markers "<!-- rmse:begin -->" and
// "<!-- rmse:end -->"; the rest of the file is left as it is).
//
// Usage:
//
//	go run ./docgen/participation -out docs/participation.md [-sizes 128,512,2048] [-k 1,2,4,8]
//
// For each strategy of factorize.Strategies() with its default options (the
// semiseparable one with its factors formed), each number of rounds n in
// -sizes and each k in -k, it factorizes the prefix-sum workload under k
// fixed epochs (period n/k) and under (n/k)-min-separation with at most k
// participations (k = 1: single participation), and reports the RMSE
// sqrt(sens^2 ||B||_F^2 / n), sens the sensitivity of C under the pattern
// (marked when it is an upper bound, so the RMSE is one too). The full run
// takes 5 to 15 minutes on a shared 2-core machine (the first line of the
// tables records it), most of it the certified multi-epoch optimum at
// n = 2048 and the min-separation bounds of dense factors.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/docgen"
)

const (
	beginMarker = "<!-- rmse:begin -->"
	endMarker   = "<!-- rmse:end -->"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "participation:", err)
		os.Exit(1)
	}
}

// config holds the command line.
type config struct {
	out   string
	sizes []int
	ks    []int
	args  []string
}

func parseArgs(args []string) (config, error) {
	c := config{args: args}
	fs := flag.NewFlagSet("participation", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.out, "out", "docs/participation.md", "the Markdown `FILE` whose RMSE section is rewritten")
	sizes := fs.String("sizes", "128,512,2048", "numbers of rounds `n`")
	ks := fs.String("k", "1,2,4,8", "participations `k`")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.sizes, err = docgen.ParseInts("sizes", *sizes); err != nil {
		return c, err
	}
	if c.ks, err = docgen.ParseInts("k", *ks); err != nil {
		return c, err
	}
	for _, n := range c.sizes {
		for _, k := range c.ks {
			if n%k != 0 {
				return c, fmt.Errorf("n = %d is not a multiple of k = %d", n, k)
			}
		}
	}
	return c, nil
}

// cell is one table entry.
type cell struct {
	rmse  float64
	bound bool
	err   error
}

func (c cell) String() string {
	if c.err != nil {
		return "n/a"
	}
	s := strconv.FormatFloat(c.rmse, 'f', 3, 64)
	if c.bound {
		s += "†"
	}
	return s
}

func run(ctx context.Context, args []string, log io.Writer) error {
	c, err := parseArgs(args)
	if err != nil {
		return err
	}
	section := docgen.Section{Path: c.out, Begin: beginMarker, End: endMarker}
	if err := section.Open(); err != nil {
		return err
	}
	start := time.Now()
	var tables bytes.Buffer
	var notes []string
	for _, kind := range []factorize.ParticipationKind{factorize.KindEpochs, factorize.KindMinSep} {
		title := "Fixed epochs: k epochs of n/k rounds, each sample once per epoch at the same place"
		if kind == factorize.KindMinSep {
			title = "Min-separation: at most k participations, any two at least b = n/k rounds apart"
		}
		fmt.Fprintf(&tables, "\n%s (RMSE; † an upper bound, from an upper bound on the sensitivity).\n\n", title)
		fmt.Fprintf(&tables, "| strategy |")
		for _, n := range c.sizes {
			for _, k := range c.ks {
				fmt.Fprintf(&tables, " n=%d k=%d |", n, k)
			}
		}
		fmt.Fprintf(&tables, "\n|---|%s\n", strings.Repeat("---:|", len(c.sizes)*len(c.ks)))
		for _, name := range factorize.Strategies() {
			s, err := factorize.ParseStrategy(name)
			if err != nil {
				return err
			}
			if ss, ok := s.(factorize.SemisepStrategy); ok {
				// Its sensitivity under a participation needs C.
				ss.Factors = true
				s = ss
			}
			fmt.Fprintf(&tables, "| %s |", name)
			for _, n := range c.sizes {
				w, err := factorize.Prefix(n)
				if err != nil {
					return err
				}
				for _, k := range c.ks {
					p := factorize.FixedEpochs(k)
					switch {
					case k == 1:
						p = factorize.SingleParticipation() // one epoch, one participation
					case kind == factorize.KindMinSep:
						p = factorize.MinSeparation(n/k, k)
					}
					t0 := time.Now()
					f, err := s.Factorize(ctx, w, p)
					if ctx.Err() != nil {
						return ctx.Err()
					}
					var e cell
					if err != nil {
						e.err = err
						notes = append(notes, fmt.Sprintf("%s, n = %d, %v: %v", name, n, p, err))
					} else {
						e.rmse, e.bound = f.Metrics.RMSE, !f.Metrics.UnitSensitivity.Exact
					}
					fmt.Fprintf(log, "%s n=%d %v: %v (%.1fs)\n", name, n, p, e, time.Since(t0).Seconds())
					fmt.Fprintf(&tables, " %v |", e)
				}
			}
			fmt.Fprintln(&tables)
		}
	}
	var sec bytes.Buffer
	fmt.Fprintf(&sec, "%s\nGenerated by `go run ./docgen/participation %s` on %s in %s; do not edit by hand, rerun the command. Prefix-sum workload, default options of every strategy (banded: %d bands, blt: %d buffers), noise of unit standard deviation per unit sensitivity.\n",
		beginMarker, strings.Join(c.args, " "), time.Now().UTC().Format("2006-01-02 15:04 UTC"), time.Since(start).Round(time.Second),
		factorize.DefaultBands, factorize.DefaultBuffers)
	sec.Write(tables.Bytes())
	docgen.Notes(&sec, notes)
	sec.WriteString("\n")
	return section.Replace(sec.Bytes())
}
