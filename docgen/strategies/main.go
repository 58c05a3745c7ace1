// Command strategies computes the RMSE of every factorization strategy of
// the prefix-sum workload at large R, under single participation and
// b-min-separation, against a certified reference, and writes the table of
// docs/strategies.md between the markers "<!-- strategies:begin -->" and
// "<!-- strategies:end -->" (the rest of the file is left as it is).
//
// Usage:
//
//	go run ./docgen/strategies -out docs/strategies.md [-sizes 1000,10000] [-seps 16,64] [-dense-max 2000] [-ref-max 10000]
//
// The reference of a column is certified: under single participation the
// optimal factorization (factorize.Optimal, loss-only, relative duality gap
// 1e-10); under b-min-separation (k = ceil(R/b) participations, as many as
// fit) the certified optimal banded factor with b bands and unit columns
// (factorize.OptimalBanded, loss-only, gap 1e-8), the optimum over C with
// at most b bands, which is not a certified optimum over all C. Every
// other cell is the strategy's RMSE with the percentage above the
// reference. Identity is a closed form; every strategy with a loss-only
// path under the column's participation (O(R) or O(R b) memory; see the
// registry's LossOnlyUnder) runs at every R: tree, sqrt, sqrt-normalized,
// bsr, banded, banded-toeplitz, bisr, bandinv and blt, and semiseparable
// and optimal under single participation; under min-separation these two
// have a quasiseparable C whose bound comes from its generators in
// O(R^2 K) (up to -ref-max rounds). The others form dense R x R factors
// and run only up to -dense-max rounds; the certified banded solver (the
// references, and banded, under min-separation) runs up to -ref-max rounds
// (at R = 10^5 it takes longer than a shared 2-core machine allows).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/docgen"
)

const (
	beginMarker = "<!-- strategies:begin -->"
	endMarker   = "<!-- strategies:end -->"
)

func main() { docgen.Main("strategies", run) }

// config holds the command line.
type config struct {
	out      string
	sizes    []int
	seps     []int
	denseMax int
	refMax   int
	args     []string
	// structured holds the single-participation results that
	// structuredCell reuses across the min-separation columns of an R.
	structured map[string]*factorize.Factorization
}

// parseArgs parses the command line; -h writes the usage to help.
func parseArgs(args []string, help io.Writer) (config, error) {
	c := config{args: args, structured: map[string]*factorize.Factorization{}}
	fs := cli.NewFlagSet("strategies")
	fs.StringVar(&c.out, "out", "docs/strategies.md", "the Markdown `FILE` whose strategies section is rewritten")
	sizes := fs.String("sizes", "1000,10000", "numbers of rounds `R`")
	seps := fs.String("seps", "16,64", "min-separations `b`")
	fs.IntVar(&c.denseMax, "dense-max", 2000, "largest R at which strategies with dense factors run")
	fs.IntVar(&c.refMax, "ref-max", 10000, "largest R at which the certified banded reference runs under min-separation")
	usage := "Usage: go run ./docgen/strategies [flags]\n\nComputes every strategy's metrics and rewrites the strategies section of\n-out between its markers. Run it from inside the dpmf module.\n\nFlags:\n"
	if _, err := cli.ParseFlags(fs, args, help, usage, ""); err != nil {
		return c, err
	}
	var err error
	if c.sizes, err = docgen.ParseInts("sizes", *sizes); err != nil {
		return c, err
	}
	if c.seps, err = docgen.ParseInts("seps", *seps); err != nil {
		return c, err
	}
	return c, nil
}

// errSkipped marks a cell not computed at this size.
var errSkipped = errors.New("not run")

// compute returns the cell of the strategy of spec at R = r under p: a
// closed form for identity, the loss-only path where the strategy has one
// under p (at every R; banded's under min-separation, the certified banded
// solver, up to -ref-max rounds as the reference), else the dense factors
// (up to -dense-max rounds).
func compute(ctx context.Context, c config, spec string, w *factorize.Workload, p factorize.Participation) docgen.Cell {
	r := w.R()
	s, err := factorize.ParseStrategy(spec)
	if err != nil {
		return docgen.Cell{Err: err}
	}
	if _, ok := s.(factorize.IdentityStrategy); ok {
		k := float64(max(1, p.Participations(r)))
		return docgen.Cell{RMSE: math.Sqrt(k * float64(r+1) / 2)}
	}
	// Banded under min-separation is the certified banded solver; blt's C
	// has coefficients that change sign, so its reported sensitivity is
	// the O(R^2 k) bound of every candidate of its fit (6 minutes at
	// R = 10^4 under minsep:16). Both run up to -ref-max rounds.
	if (s.Name() == factorize.StrategyBanded || s.Name() == factorize.StrategyBLT) && p.Kind == factorize.KindMinSep && r > c.refMax {
		return docgen.Cell{Err: errSkipped}
	}
	info, err := factorize.Lookup(s.Name())
	if err != nil {
		return docgen.Cell{Err: err}
	}
	lossOnly := info.LossOnlyUnder(p)
	if !lossOnly && r > c.denseMax {
		if p.Kind == factorize.KindMinSep && r <= c.refMax && info.LossOnlyUnder(factorize.SingleParticipation()) {
			return structuredCell(ctx, c, s, w, p)
		}
		return docgen.Cell{Err: errSkipped}
	}
	if s, err = factorize.WithLossOnly(s, lossOnly); err != nil {
		return docgen.Cell{Err: err}
	}
	return docgen.RMSECell(s.Factorize(ctx, w, p))
}

// structuredCell returns the cell of s under the min-separation p at an R
// above -dense-max for a strategy whose single-participation result keeps
// C in structured form (the quasiseparable C of semiseparable and of the
// structured optimal factorization): the loss-only result, or the
// factorization if that has no operator, computed once per R, with its
// sensitivity under p from that form (Factorization.WithParticipation,
// O(R^2 K)), up to -ref-max rounds. A result with dense factors is not
// run.
func structuredCell(ctx context.Context, c config, s factorize.Strategy, w *factorize.Workload, p factorize.Participation) docgen.Cell {
	key := fmt.Sprintf("%s/%d", s.Spec(), w.R())
	f, ok := c.structured[key]
	if !ok {
		for _, lossOnly := range []bool{true, false} {
			t, err := factorize.WithLossOnly(s, lossOnly)
			if err != nil {
				return docgen.Cell{Err: err}
			}
			if f, err = t.Factorize(ctx, w, factorize.SingleParticipation()); err != nil {
				return docgen.Cell{Err: err}
			}
			if f.Operator != nil {
				break
			}
		}
		c.structured[key] = f
	}
	if f.C != nil || f.Operator == nil {
		return docgen.Cell{Err: errSkipped}
	}
	return docgen.RMSECell(f.WithParticipation(p))
}

// wideBands is the number of coefficients (bisr, bandinv) or bands
// (banded-toeplitz) of the extra rows: the larger separation of the
// default table, where the anchors compare against a reference with as
// many bands.
const wideBands = 64

// wideRows are the strategies of the extra rows with wideBands: the
// anchors' (jax_privacy's) banded strategies.
var wideRows = []string{factorize.StrategyBandedToeplitz, factorize.StrategyBISR, factorize.StrategyBandInv}

// reference returns the certified reference RMSE of a column.
func reference(ctx context.Context, c config, w *factorize.Workload, p factorize.Participation) docgen.Cell {
	r := w.R()
	if p.Kind == factorize.KindSingle {
		return docgen.RMSECell(factorize.Optimal(ctx, w, factorize.Options{LossOnly: true}))
	}
	if r > c.refMax {
		return docgen.Cell{Err: errSkipped}
	}
	return docgen.RMSECell(factorize.OptimalBanded(ctx, w, min(p.B, r), p.Participations(r), factorize.Options{LossOnly: true}))
}

// format renders a cell with its percentage above the column's reference
// ref, or "—" for a cell not run at this R.
func format(e, ref docgen.Cell) string {
	if errors.Is(e.Err, errSkipped) {
		return "—"
	}
	s := e.Text()
	if e.Err == nil && ref.Err == nil && ref.RMSE > 0 {
		s += fmt.Sprintf(" (%+.1f%%)", 100*(e.RMSE/ref.RMSE-1))
	}
	return s
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
	type column struct {
		w   *factorize.Workload
		p   factorize.Participation
		ref docgen.Cell
	}
	var cols []column
	var head strings.Builder
	var refRow strings.Builder
	for _, r := range c.sizes {
		w, err := factorize.Prefix(r)
		if err != nil {
			return err
		}
		ps := []factorize.Participation{factorize.SingleParticipation()}
		for _, b := range c.seps {
			ps = append(ps, factorize.MinSeparation(b, 0))
		}
		for _, p := range ps {
			t0 := time.Now()
			ref := reference(ctx, c, w, p)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(log, "reference R=%d %v: %v (%.1fs)\n", r, p, ref, time.Since(t0).Seconds())
			cols = append(cols, column{w: w, p: p, ref: ref})
			fmt.Fprintf(&head, " R=%d %v |", r, p)
			fmt.Fprintf(&refRow, " %s |", format(ref, docgen.Cell{}))
		}
	}
	var table bytes.Buffer
	fmt.Fprintf(&table, "| strategy | state per coordinate |%s\n|---|---|%s\n", head.String(), strings.Repeat("---:|", len(cols)))
	fmt.Fprintf(&table, "| certified reference | |%s\n", refRow.String())
	var notes []string
	type row struct{ spec, label, mem string }
	var rows []row
	for _, info := range factorize.Registry() {
		rows = append(rows, row{spec: info.Name, label: info.Name, mem: info.Stream})
	}
	// The anchors' strategies with wideBands coefficients or bands.
	for _, name := range wideRows {
		s, err := factorize.ParseStrategy(name + ":bands=" + strconv.Itoa(wideBands))
		if err != nil {
			return err
		}
		mem := strconv.FormatInt(factorize.StreamBytes(s, c.sizes[0], 1)/8, 10)
		rows = append(rows, row{spec: s.Spec(), label: fmt.Sprintf("%s, %d", name, wideBands), mem: mem})
	}
	for _, rw := range rows {
		fmt.Fprintf(&table, "| %s | %s |", rw.label, rw.mem)
		for _, col := range cols {
			t0 := time.Now()
			e := compute(ctx, c, rw.spec, col.w, col.p)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if e.Err != nil && !errors.Is(e.Err, errSkipped) {
				notes = append(notes, fmt.Sprintf("%s, R = %d, %v: %v", rw.label, col.w.R(), col.p, e.Err))
			}
			fmt.Fprintf(log, "%s R=%d %v: %s (%.1fs)\n", rw.label, col.w.R(), col.p, format(e, col.ref), time.Since(t0).Seconds())
			fmt.Fprintf(&table, " %s |", format(e, col.ref))
		}
		fmt.Fprintln(&table)
	}
	return section.Generated("strategies", c.args, start, fmt.Sprintf("Prefix-sum workload, default options (16 bands or coefficients, blt 4 buffers; the last rows with %d), RMSE per unit noise with the percentage above the certified reference of the column; minsep:B allows ceil(R/B) participations. Reference: single, the certified optimum (gap 1e-10); minsep:B, the certified optimal C with B bands and unit columns (gap 1e-8), an optimum over banded C only. † an upper bound (dynamic-programming sensitivity bound); — not run at this R: a strategy without a loss-only path under the column's participation forms dense R x R factors, up to R = %d; the certified banded solver (the reference, and banded, under min-separation), the min-separation bound of the quasiseparable C of optimal and semiseparable (O(R^2 K)) and blt under min-separation (its loss-only path is O(R) in memory but O(R^2 k) in time, the dynamic-programming bound for each candidate of its fit) run up to R = %d.\n\n",
		wideBands, c.denseMax, c.refMax), table.Bytes(), notes)
}
