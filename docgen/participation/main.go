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
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/docgen"
)

const (
	beginMarker = "<!-- rmse:begin -->"
	endMarker   = "<!-- rmse:end -->"
)

func main() { docgen.Main("participation", run) }

// config holds the command line.
type config struct {
	out   string
	sizes []int
	ks    []int
	args  []string
}

// parseArgs parses the command line; -h writes the usage to help.
func parseArgs(args []string, help io.Writer) (config, error) {
	c := config{args: args}
	fs := cli.NewFlagSet("participation")
	fs.StringVar(&c.out, "out", "docs/participation.md", "the Markdown `FILE` whose RMSE section is rewritten")
	sizes := fs.String("sizes", "128,512,2048", "numbers of rounds `n`")
	ks := fs.String("k", "1,2,4,8", "participations `k`")
	usage := "Usage: go run ./docgen/participation [flags]\n\nComputes the RMSE of every strategy under fixed epochs and min-separation\nand rewrites the tables of -out between its rmse markers. Run it from inside\nthe dpmf module.\n\nFlags:\n"
	if _, err := cli.ParseFlags(fs, args, help, usage, ""); err != nil {
		return c, err
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

func run(ctx context.Context, args []string, log io.Writer) error {
	c, err := parseArgs(args, log)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage is written
	} else if err != nil {
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
			// Its sensitivity under the epochs may need C (semiseparable's
			// loss-only path is single participation's): form it.
			if s, err = factorize.WithLossOnly(s, false); err != nil {
				return err
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
					e := docgen.RMSECell(f, err)
					if err != nil {
						notes = append(notes, fmt.Sprintf("%s, n = %d, %v: %v", name, n, p, err))
					}
					fmt.Fprintf(log, "%s n=%d %v: %s (%.1fs)\n", name, n, p, e.Text(), time.Since(t0).Seconds())
					fmt.Fprintf(&tables, " %s |", e.Text())
				}
			}
			fmt.Fprintln(&tables)
		}
	}
	return section.Generated("participation", c.args, start, fmt.Sprintf("Prefix-sum workload, default options of every strategy (banded: %d bands, blt: %d buffers), noise of unit standard deviation per unit sensitivity.\n",
		factorize.DefaultBands, factorize.DefaultBuffers), tables.Bytes(), notes)
}
