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
// reference. The strategies with a structured (O(R) memory) path run at
// every R: identity (closed form), sqrt (Toeplitz: exact sensitivity by
// Kalinin and Lampert 2024, Thm. 2), bisr, bandinv and banded-toeplitz
// (loss-only), semiseparable (single, loss-only). The others form dense
// R x R factors and run only up to -dense-max rounds; the references run
// up to -ref-max rounds for min-separation (the banded solver at R = 10^5
// takes longer than a shared 2-core machine allows).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/docgen"
)

const (
	beginMarker = "<!-- strategies:begin -->"
	endMarker   = "<!-- strategies:end -->"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "strategies:", err)
		os.Exit(1)
	}
}

// config holds the command line.
type config struct {
	out      string
	sizes    []int
	seps     []int
	denseMax int
	refMax   int
	args     []string
}

func parseArgs(args []string) (config, error) {
	c := config{args: args}
	fs := flag.NewFlagSet("strategies", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.out, "out", "docs/strategies.md", "the Markdown `FILE` whose strategies section is rewritten")
	sizes := fs.String("sizes", "1000,10000", "numbers of rounds `R`")
	seps := fs.String("seps", "16,64", "min-separations `b`")
	fs.IntVar(&c.denseMax, "dense-max", 2000, "largest R at which strategies with dense factors run")
	fs.IntVar(&c.refMax, "ref-max", 10000, "largest R at which the certified banded reference runs under min-separation")
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
	if c.seps, err = docgen.ParseInts("seps", *seps); err != nil {
		return c, err
	}
	return c, nil
}

// errSkipped marks a cell not computed at this size.
var errSkipped = errors.New("not run")

// cell is one table entry.
type cell struct {
	rmse  float64
	bound bool
	err   error
}

// memory is the streaming state per coordinate, in vectors, of each
// strategy with its default options (p, b = 16 bands or coefficients of
// C^{-1}; blt 4 buffers).
var memory = map[string]string{
	factorize.StrategyIdentity:       "0",
	factorize.StrategyTree:           "log2 R",
	factorize.StrategySqrt:           "R (or regenerated)",
	factorize.StrategySqrtNormalized: "R (or regenerated)",
	factorize.StrategyBanded:         "b - 1 = 15",
	factorize.StrategyBSR:            "b - 1 = 15",
	factorize.StrategyBandedToeplitz: "b - 1 = 15",
	factorize.StrategyBISR:           "p - 1 = 15",
	factorize.StrategyBandInv:        "p - 1 = 15",
	factorize.StrategyBLT:            "4",
	factorize.StrategySemisep:        "K (fewest within 0.1%)",
	factorize.StrategyOptimal:        "R (or regenerated)",
}

// sqrtCell returns the RMSE of the sqrt strategy (C = B = A^{1/2}, Toeplitz
// with c_k = binom(2k, k)/4^k) from its coefficients: ||B||_F^2 =
// sum_m (R - m) c_m^2, and sens exact by ToeplitzMinSepSensitivity.
func sqrtCell(r int, p factorize.Participation) cell {
	c := factorize.SqrtCoefficients(r)
	frob := 0.0
	for m, v := range c {
		frob += float64(r-m) * v * v
	}
	k := p.Participations(r)
	b := r
	if p.Kind == factorize.KindMinSep {
		b = p.B
	}
	sens, err := factorize.ToeplitzMinSepSensitivity(c, b, k)
	if err != nil {
		return cell{err: err}
	}
	return cell{rmse: math.Sqrt(sens * sens * frob / float64(r))}
}

// compute returns the cell of strategy name at R = r under p.
func compute(ctx context.Context, c config, name string, w *factorize.Workload, p factorize.Participation) cell {
	r := w.R()
	var s factorize.Strategy
	switch name {
	case factorize.StrategyIdentity:
		k := float64(max(1, p.Participations(r)))
		return cell{rmse: math.Sqrt(k * float64(r+1) / 2)}
	case factorize.StrategySqrt:
		return sqrtCell(r, p)
	case factorize.StrategyBISR:
		s = factorize.BISRStrategy{LossOnly: true}
	case factorize.StrategyBandInv:
		s = factorize.BandInvStrategy{LossOnly: true}
	case factorize.StrategyBandedToeplitz:
		s = factorize.BandedToeplitzStrategy{LossOnly: true}
	case factorize.StrategyOptimal:
		if p.Kind == factorize.KindSingle {
			s = factorize.OptimalStrategy{Options: factorize.Options{LossOnly: true}}
		}
	case factorize.StrategySemisep:
		if p.Kind == factorize.KindSingle {
			s = factorize.SemisepStrategy{}
		} else {
			s = factorize.SemisepStrategy{Factors: true}
		}
	}
	if s == nil || (name == factorize.StrategySemisep && p.Kind != factorize.KindSingle) {
		if r > c.denseMax {
			return cell{err: errSkipped}
		}
		if s == nil {
			var err error
			if s, err = factorize.ParseStrategy(name); err != nil {
				return cell{err: err}
			}
		}
	}
	f, err := s.Factorize(ctx, w, p)
	if err != nil {
		return cell{err: err}
	}
	return cell{rmse: f.Metrics.RMSE, bound: !f.Metrics.UnitSensitivity.Exact}
}

// wideBands is the number of coefficients (bisr, bandinv) or bands
// (banded-toeplitz) of the extra rows: the larger separation of the
// default table, where the anchors compare against a reference with as
// many bands.
const wideBands = 64

// computeWide returns the cell of the loss-only strategy name with
// wideBands coefficients or bands.
func computeWide(ctx context.Context, name string, w *factorize.Workload, p factorize.Participation) cell {
	var s factorize.Strategy
	switch name {
	case factorize.StrategyBISR:
		s = factorize.BISRStrategy{Bands: wideBands, LossOnly: true}
	case factorize.StrategyBandInv:
		s = factorize.BandInvStrategy{Bands: wideBands, LossOnly: true}
	default:
		s = factorize.BandedToeplitzStrategy{Bands: wideBands, LossOnly: true}
	}
	f, err := s.Factorize(ctx, w, p)
	if err != nil {
		return cell{err: err}
	}
	return cell{rmse: f.Metrics.RMSE, bound: !f.Metrics.UnitSensitivity.Exact}
}

// reference returns the certified reference RMSE of a column.
func reference(ctx context.Context, c config, w *factorize.Workload, p factorize.Participation) cell {
	r := w.R()
	if p.Kind == factorize.KindSingle {
		f, err := factorize.Optimal(ctx, w, factorize.Options{LossOnly: true})
		if err != nil {
			return cell{err: err}
		}
		return cell{rmse: f.Metrics.RMSE}
	}
	if r > c.refMax {
		return cell{err: errSkipped}
	}
	f, err := factorize.OptimalBanded(ctx, w, min(p.B, r), p.Participations(r), factorize.Options{LossOnly: true})
	if err != nil {
		return cell{err: err}
	}
	return cell{rmse: f.Metrics.RMSE}
}

func format(e, ref cell) string {
	switch {
	case errors.Is(e.err, errSkipped):
		return "—"
	case e.err != nil:
		return "n/a"
	}
	s := strconv.FormatFloat(e.rmse, 'f', 3, 64)
	if e.bound {
		s += "†"
	}
	if ref.err == nil && ref.rmse > 0 {
		s += fmt.Sprintf(" (%+.1f%%)", 100*(e.rmse/ref.rmse-1))
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
	type column struct {
		w   *factorize.Workload
		p   factorize.Participation
		ref cell
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
			fmt.Fprintf(&refRow, " %s |", format(ref, cell{}))
		}
	}
	var table bytes.Buffer
	fmt.Fprintf(&table, "| strategy | state per coordinate |%s\n|---|---|%s\n", head.String(), strings.Repeat("---:|", len(cols)))
	fmt.Fprintf(&table, "| certified reference | |%s\n", refRow.String())
	var notes []string
	type row struct {
		name, label, mem string
		wide             bool // p = b = wideBands coefficients or bands
	}
	var rows []row
	for _, name := range factorize.Strategies() {
		rows = append(rows, row{name: name, label: name, mem: memory[name]})
	}
	for _, name := range []string{factorize.StrategyBandedToeplitz, factorize.StrategyBISR, factorize.StrategyBandInv} {
		rows = append(rows, row{name: name, label: fmt.Sprintf("%s, %d", name, wideBands), mem: strconv.Itoa(wideBands - 1), wide: true})
	}
	for _, rw := range rows {
		name := rw.name
		fmt.Fprintf(&table, "| %s | %s |", rw.label, rw.mem)
		for _, col := range cols {
			t0 := time.Now()
			var e cell
			if rw.wide {
				e = computeWide(ctx, name, col.w, col.p)
			} else {
				e = compute(ctx, c, name, col.w, col.p)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if e.err != nil && !errors.Is(e.err, errSkipped) {
				notes = append(notes, fmt.Sprintf("%s, R = %d, %v: %v", rw.label, col.w.R(), col.p, e.err))
			}
			fmt.Fprintf(log, "%s R=%d %v: %s (%.1fs)\n", rw.label, col.w.R(), col.p, format(e, col.ref), time.Since(t0).Seconds())
			fmt.Fprintf(&table, " %s |", format(e, col.ref))
		}
		fmt.Fprintln(&table)
	}
	var sec bytes.Buffer
	fmt.Fprintf(&sec, "%s\nGenerated by `go run ./docgen/strategies %s` on %s in %s; do not edit by hand, rerun the command. Prefix-sum workload, default options (16 bands or coefficients, blt 4 buffers; the last rows with %d), RMSE per unit noise with the percentage above the certified reference of the column; minsep:B allows ceil(R/B) participations. Reference: single, the certified optimum (gap 1e-10); minsep:B, the certified optimal C with B bands and unit columns (gap 1e-8), an optimum over banded C only. † an upper bound (dynamic-programming sensitivity bound); — not run at this R (dense R x R factors above R = %d; the banded reference above R = %d).\n\n",
		beginMarker, strings.Join(c.args, " "), time.Now().UTC().Format("2006-01-02 15:04 UTC"), time.Since(start).Round(time.Second), wideBands, c.denseMax, c.refMax)
	sec.Write(table.Bytes())
	docgen.Notes(&sec, notes)
	sec.WriteString("\n")
	return section.Replace(sec.Bytes())
}
