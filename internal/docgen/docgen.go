// Package docgen holds what the generators of the docs' measured tables
// share (docgen/participation, docgen/strategies, docgen/scaling and the
// bench commands): their main function, a comma-separated list flag, the
// median of timings, a table cell of an RMSE, and a generated section of a
// Markdown file between two marker comments, replaced atomically so that an
// interrupted run leaves the file as it was.
package docgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/atomicfile"
)

// Main runs the generator name: run with the command line and stderr for
// its log, cancelled by Ctrl-C. An error is printed after name and exits 1.
func Main(name string, run func(ctx context.Context, args []string, log io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// ParseInts parses the value s of flag -name as a comma-separated list of
// integers >= 1, in decimal or exponent notation (1e6).
func ParseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v >= 1 && v <= 1<<53) || v != math.Trunc(v) {
			return nil, fmt.Errorf("-%s %q: want a comma-separated list of integers >= 1 (1e6 allowed)", name, s)
		}
		out = append(out, int(v))
	}
	return out, nil
}

// Median returns the median of xs, the mean of the two middle values for
// an even count (0 for none), leaving xs as it is.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

// Cell is one entry of a table of RMSEs: the RMSE per unit noise, whether
// it is an upper bound (from an upper bound on the sensitivity), or the
// error that kept it from being computed.
type Cell struct {
	RMSE  float64
	Bound bool
	Err   error
}

// RMSECell returns the cell of the factorization f, or of err.
func RMSECell(f *factorize.Factorization, err error) Cell {
	if err != nil {
		return Cell{Err: err}
	}
	return Cell{RMSE: f.Metrics.RMSE, Bound: !f.Metrics.UnitSensitivity.Exact}
}

// Text formats the cell for a table: the RMSE to three decimals, followed
// by † when it is an upper bound, or "n/a" for an error.
func (c Cell) Text() string {
	if c.Err != nil {
		return "n/a"
	}
	s := strconv.FormatFloat(c.RMSE, 'f', 3, 64)
	if c.Bound {
		s += "†"
	}
	return s
}

// Section is the generated part of a Markdown file: from the line Begin
// up to, not including, End.
type Section struct {
	Path       string
	Begin, End string

	doc        []byte
	begin, end int
}

// Open reads the file and finds the section, so that a generator fails
// before its measurements rather than after them.
func (s *Section) Open() error {
	doc, err := os.ReadFile(s.Path)
	if err != nil {
		return err
	}
	begin, end := bytes.Index(doc, []byte(s.Begin)), bytes.Index(doc, []byte(s.End))
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %s ... %s section", s.Path, s.Begin, s.End)
	}
	s.doc, s.begin, s.end = doc, begin, end
	return nil
}

// Replace writes the file with the section replaced by content (which
// starts with the Begin marker), keeping the file's permission bits.
func (s *Section) Replace(content []byte) error {
	if s.doc == nil {
		return fmt.Errorf("docgen: %s: Replace before Open", s.Path)
	}
	var out bytes.Buffer
	out.Write(s.doc[:s.begin])
	out.Write(content)
	out.Write(s.doc[s.end:])
	return WriteFile(s.Path, out.Bytes())
}

// WriteFile writes data to path through a temporary file in the same
// directory (internal/atomicfile), so that path holds either its old
// content or data. An existing file keeps its permission bits; a new one
// gets 0644 (less the umask).
func WriteFile(path string, data []byte) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Notes writes the list of cells that could not be computed ("n/a:"), if
// there are any, to w.
func Notes(w io.Writer, notes []string) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nn/a:\n\n")
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
}
