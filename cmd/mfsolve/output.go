package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/npy"
	"github.com/dpmf/dpmf/plan"
)

// result is what mfsolve reports: the JSON object of -json and the fields
// of the summary line. noise_std and sigma are present only when the run
// calibrates the noise (-eps and -delta).
type result struct {
	R        int     `json:"R"`
	Strategy string  `json:"strategy"`
	Loss     float64 `json:"loss"`
	FrobBSq  float64 `json:"frob_B_sq"`
	// Gamma is the largest column norm of C; Sensitivity is the unit
	// sensitivity of C under Participation (gamma for single; the
	// release's is ReleaseSensitivity), exact or an upper bound as
	// SensitivityExact says. JSON keeps "sensitivity" for the release's L2
	// sensitivity, as dpacct, ofl and accountant records do.
	Gamma            float64 `json:"gamma"`
	Participation    string  `json:"participation"`
	Sensitivity      float64 `json:"unit_sensitivity"`
	SensitivityExact bool    `json:"unit_sensitivity_exact"`
	SensitivityRule  string  `json:"unit_sensitivity_rule"`
	RMSE             float64 `json:"rmse"`
	MaxSE            float64 `json:"max_se"`
	Iterations       int     `json:"iterations"`
	Gap              float64 `json:"gap"`
	Seconds          float64 `json:"seconds"`
	Cached           bool    `json:"cached"`
	// NoiseStd is the calibrated std V of each entry of Z (round r adds
	// row r of M Z, M = C^{-1} for square factors, of std V times the
	// norm of row r of M); Sigma is V divided
	// by the sensitivity of the release (the noise multiplier), and
	// ReleaseSensitivity that sensitivity.
	NoiseStd           *float64 `json:"noise_std,omitempty"`
	ReleaseSensitivity *float64 `json:"release_sensitivity,omitempty"`
	Sigma              *float64 `json:"sigma,omitempty"`
	// Wrote lists the files the run wrote (-o, -C, -noise), in that
	// order; empty when it wrote none.
	Wrote []written `json:"wrote"`
	// Plan is the run's plan (package plan): what a run of this
	// factorization needs, with the privacy record under -eps and -delta.
	Plan *plan.Plan `json:"plan"`
}

// written is one file that the run wrote: which matrix, where, its shape.
type written struct {
	// What is "B", "C" or "noise".
	What string `json:"what"`
	File string `json:"file"`
	Rows int    `json:"rows"`
	Cols int    `json:"cols"`
}

// wroteText is the end of the summary line: the files written with their
// shapes, for example "wrote B (800 x 800) to B.npy".
func (r result) wroteText(lossOnly bool) string {
	if len(r.Wrote) == 0 {
		if lossOnly {
			return "wrote no files"
		}
		return "wrote no files (-o FILE writes B, -C FILE writes C)"
	}
	parts := make([]string, len(r.Wrote))
	for i, w := range r.Wrote {
		parts[i] = fmt.Sprintf("%s (%d x %d) to %s", w.What, w.Rows, w.Cols, fileName(w.File))
	}
	return "wrote " + strings.Join(parts, ", ")
}

// fileName returns name as the summary line prints it: as it is, or as a
// Go quoted string if a character of it does not print (a newline would
// break the line in two) or it is not UTF-8.
func fileName(name string) string {
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(name)
	}
	return name
}

// newResult collects the reported fields of f.
func newResult(f *factorize.Factorization, seconds float64, cached bool) result {
	return result{
		R:                f.Workload.R(),
		Strategy:         f.Strategy,
		Loss:             f.Metrics.Loss,
		FrobBSq:          f.Metrics.FrobBSq,
		Gamma:            f.Metrics.Gamma,
		Participation:    f.Metrics.Participation.String(),
		Sensitivity:      f.Metrics.UnitSensitivity.Value,
		SensitivityExact: f.Metrics.UnitSensitivity.Exact,
		SensitivityRule:  string(f.Metrics.UnitSensitivity.Rule),
		RMSE:             f.Metrics.RMSE,
		MaxSE:            f.Metrics.MaxSE,
		Iterations:       f.Iterations,
		Gap:              f.Gap,
		Seconds:          seconds,
		Cached:           cached,
		Wrote:            []written{},
	}
}

// checkFinite returns an error naming the metric that is not finite, or
// that is 0 although it cannot be: a workload with huge entries makes the
// loss overflow, one with tiny entries makes it underflow, and such a
// result must be neither written nor reported as a number.
func (r result) checkFinite() error {
	for _, m := range []struct {
		name string
		v    float64
	}{{"unit sensitivity", r.Sensitivity}, {"loss", r.Loss}, {"||B||_F^2", r.FrobBSq}, {"RMSE", r.RMSE}, {"MaxSE", r.MaxSE}, {"gap", r.Gap}} {
		if math.IsNaN(m.v) || math.IsInf(m.v, 0) {
			return fmt.Errorf("the %s factorization's %s is %v: the workload's entries are too large or too small for float64 (rescale it)", r.Strategy, m.name, m.v)
		}
		// A nonsingular workload has B != 0 and C != 0: a zero loss,
		// ||B||_F^2 or sensitivity has underflowed, for example the loss of
		// a workload scaled by 1e-300, whose square is below the float64
		// range. RMSE and MaxSE underflow only with the loss (MaxSE >=
		// loss / R), and MaxSE is 0 by design where it is not computed
		// (the general path with -loss-only), so they are not tested.
		if m.v == 0 && m.name != "gap" && m.name != "RMSE" && m.name != "MaxSE" {
			return fmt.Errorf("the %s factorization's %s underflows to 0: the workload's entries are too small for float64 (rescale it)", r.Strategy, m.name)
		}
	}
	return nil
}

// summary is the one-line human-readable form of r: the fields as
// name=value (explained by summaryFields), the calibration's assumptions
// with -eps and -delta, and after "; " the files written.
func (r result) summary(lossOnly bool) string {
	g := func(v float64, digits int) string { return strconv.FormatFloat(v, 'g', digits, 64) }
	line := fmt.Sprintf("strategy=%s R=%d loss=%s rmse=%s max_se=%s participation=%s gamma=%s unit_sensitivity=%s unit_sensitivity_exact=%t iterations=%d gap=%s seconds=%.3f cached=%t",
		r.Strategy, r.R, g(r.Loss, 12), g(r.RMSE, 8), g(r.MaxSE, 8), r.Participation, g(r.Gamma, 8), g(r.Sensitivity, 8), r.SensitivityExact,
		r.Iterations, g(r.Gap, 3), r.Seconds, r.Cached)
	if r.Plan != nil && r.Plan.Privacy != nil {
		p := r.Plan.Privacy
		line += fmt.Sprintf(" noise_std=%s sigma=%s %s", g(p.NoiseStd, 8), g(p.Sigma, 8), p.Rule)
	}
	return line + "; " + r.wroteText(lossOnly)
}

// summaryFields explains each name=value field of the summary line in one
// line, for mfsolve -h (docs/cli.md has the same list; a test checks that
// both match the line).
var summaryFields = [][2]string{
	{"strategy", "the factorization strategy"},
	{"R", "the number of rounds"},
	{"loss", "sens^2 ||B||_F^2: the total squared error over all rounds per unit noise multiplier"},
	{"rmse", "sqrt(loss / R): the root-mean-square error of one round"},
	{"max_se", "sens^2 max_r ||B[r,:]||^2: the worst round's squared error"},
	{"participation", "the -participation pattern that the sensitivity and the errors are under"},
	{"gamma", "the largest column norm of C"},
	{"unit_sensitivity", "sens, the sensitivity of C under the participation (gamma for single)"},
	{"unit_sensitivity_exact", "true if unit_sensitivity is exact, false if it is an upper bound"},
	{"iterations", "solver iterations; 0 for the closed forms"},
	{"gap", "the solver's certified relative duality gap; 0 for the closed forms"},
	{"seconds", "wall time of the computation or of the cache load"},
	{"cached", "whether the result was loaded from the cache"},
	{"noise_std", "with -eps/-delta: the calibrated std V of the noise Z"},
	{"sigma", "with -eps/-delta: V / the release sensitivity (the noise multiplier), then the assumptions in words"},
}

// summaryHelp is the explanation of the summary line in mfsolve -h.
func summaryHelp() string {
	var b strings.Builder
	b.WriteString("\nOutput: one line of name=value fields, then \"; wrote\" and the files written\nwith their shapes (-json: one object with these fields and more; docs/cli.md):\n")
	for _, f := range summaryFields {
		fmt.Fprintf(&b, "  %-23s %s\n", f[0], f[1])
	}
	return b.String()
}

// output is one matrix to write.
type output struct {
	flagName, path string
	// m is the matrix written, formed when its file is written (see
	// factorize.Factorization.FactorsLazily).
	m factorize.LazyFactor
	// perm is the permission of a new file, minus the umask: 0644 for
	// B and C, 0600 for the noise samples, which are secret.
	perm os.FileMode
	// sparse leaves runs of zeros as holes (npy.Write on a ZeroSkipper);
	// otherwise every byte is written.
	sparse bool
}

// denseWriter hides the ZeroSkipper of the writer it wraps, so that
// npy.Write writes every byte: a file with holes in every row saves no
// time when written and costs about four times as much to remove on ext4
// (B.npy at R = 10^4: 0.8 s against 0.2 s), and so to replace
// (docs/cli.md, Output).
type denseWriter struct{ io.Writer }

// formed returns m as a LazyFactor (nil: none).
func formed(m *mat.Dense) factorize.LazyFactor {
	if m == nil {
		return factorize.LazyFactor{}
	}
	r, c := m.Dims()
	return factorize.LazyFactor{Rows: r, Cols: c, Form: func() *mat.Dense { return m }}
}

// writeOutputs writes every output as a .npy file, all or none
// (cli.WriteOutputs: the point "commit" of cli.PauseForTest comes between
// the temporary files and the renames; stderr receives its line).
func writeOutputs(ctx context.Context, outs []output, stderr io.Writer) error {
	files := make([]cli.Output, len(outs))
	for i, o := range outs {
		files[i] = cli.Output{File: cli.File{Flag: o.flagName, Path: o.path}, Perm: o.perm, Write: func(w io.Writer) error {
			m := o.m.Form()
			r, c := m.Dims()
			data := m.RawMatrix().Data
			if m.RawMatrix().Stride != c {
				data = mat.DenseCopyOf(m).RawMatrix().Data
			}
			if !o.sparse {
				w = denseWriter{w}
			}
			err := npy.Write(w, []int{r, c}, data)
			if fe := (*npy.FileError)(nil); errors.As(err, &fe) {
				return fe.Err
			}
			return err
		}}
	}
	return cli.WriteOutputs(ctx, stderr, "mfsolve: ", files...)
}
