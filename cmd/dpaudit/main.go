// Command dpaudit audits a whole run's privacy claim with package audit.
//
// Usage:
//
//	dpaudit replay [plan flags] [-dropout P] [-network] [-force] [-json]
//	dpaudit canary [plan flags] [-canaries M] [-level L] [-confidence C] [-network] [-force] [-out DIR] [-json]
//
// Plan flags (defaults: the paper's Fig. 4 setting, as in ofl): -algo
// (correlated, independent, baseline-correlated), -strategy (a strategy
// spec, NAME[:KEY=VALUE,...] as factorize.ParseStrategy reads it, for
// example blt:buffers=2), -participation (single, epochs:K, minsep:B[,K]),
// -learners, -rounds, -tau, -dim, -clip, -eta, -eta-g, -eps, -delta,
// -calibration (exact, paper), -dropout (probability that a learner misses
// a round; replay only) and -seed. dpaudit -h prints the usage and exits
// with status 0. An audit estimated at more than 10^14 operations (the
// federation's local steps, the dense algebra and the factorization with
// its solver's iterations; see docs/cli.md) is
// refused as a usage error naming the flags and the estimate, unless
// -force is given; on a terminal a progress bar of the rounds appears on
// standard error.
//
// replay runs the federation twice on neighbouring data sets with
// identical randomness and the same released models, measures
// ||C (G - G')||_F against the declared sensitivity, and checks that every
// data-independent decision and the noise agree (see audit.Replay); with
// -network it also runs data set D's federation over gRPC and checks that
// it releases the in-process models bit for bit (audit.ReplayNetwork). canary
// runs the canary audit (see audit.Canary): an estimate of mu with an
// interval, and a rigorous one-run lower bound on eps. With -network the
// canary run goes over gRPC: a package fednet server on 127.0.0.1 and its
// learners in goroutines (audit.CanaryOptions.Network). With -out DIR it
// writes DIR/canary.json (the report with every score), DIR/canary.png
// and DIR/canary.svg (the histograms against the predicted Gaussians).
//
// Output is a summary on standard output, or with -json one JSON object.
// The exit status is 0 when the audit passes, 3 when it finds a violation,
// 2 for a usage error and 1 for any other error; errors are one line on
// standard error, starting "dpaudit: ".
//
// Example:
//
//	$ dpaudit replay -rounds 200 -seed 1
//	replay correlated optimal single n=10 R=200 tau=10: measured 1 declared 1 ratio 1.000000000000000 expected 1 (learner 0, rounds [0] with 0 learners missing; 0 learner-rounds dropped) 0.07s PASS
//	  ok   sensitivity            ||C (G - G')||_F = 1, declared 1 (largest column norm), ratio 1.000000000000000
//	  ...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dpmf/dpmf/audit"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/progress"
)

// helpText is what dpaudit -h prints on standard output.
const helpText = `Usage: dpaudit replay [plan flags] [-dropout P] [-network] [-force] [-json]
       dpaudit canary [plan flags] [-canaries M] [-level L] [-confidence C] [-network] [-force] [-out DIR] [-json]

Audits a whole run's privacy claim on the real roles: replay measures the
sensitivity on neighbouring data sets and checks the data-independent
decisions and the noise; canary estimates mu with an interval and a
rigorous one-run lower bound on eps. Run "dpaudit replay -h" or
"dpaudit canary -h" for the flags; see docs/audit.md.

Exit status: 0 when the audit passes, 3 when it finds a violation, 2 on a
usage error, 1 on any other error.
`

// exitViolation is the exit status of an audit that found a violation.
const exitViolation = 3

func main() {
	ctx, stop := cli.SignalContext()
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpaudit: "+cli.OneLine(err.Error()))
		code = cli.ExitCode(err)
	}
	os.Exit(code)
}

type options struct {
	plan                 audit.Plan
	algo, strategy, part string
	cal                  string
	json                 bool
	out                  string
	canaries             int
	defaultCanaries      int // the audit's own number where -canaries is 0, once known
	level, confidence    float64
	network              bool
	force                bool // -force: run an audit above maxWork
}

// run is dpaudit with its arguments; it returns the exit status and the
// error to print. A run cancelled by SIGINT or SIGTERM says so, whatever
// failed (it writes its -out files only after the audit), unless some of
// its -out files are in place already (a *cli.WrittenError: a rename
// failed after others succeeded), whose error names them.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	code, err := runAudit(ctx, args, stdout, stderr)
	var we *cli.WrittenError
	if err != nil && ctx.Err() != nil && !errors.As(err, &we) {
		return 0, errors.New("interrupted; nothing written")
	}
	return code, err
}

// runAudit parses the command line and runs one audit.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		_, err := io.WriteString(stdout, helpText)
		return 0, err
	}
	switch {
	case len(args) == 0:
		return 0, cli.Usagef("missing command: want replay or canary, as in dpaudit replay [flags] (dpaudit -h for usage)")
	case args[0] != "replay" && args[0] != "canary":
		// A misspelt command (replya), or flags without one.
		return 0, cli.Usagef("unknown command %q: want replay or canary, as in dpaudit replay [flags] (dpaudit -h for usage)", args[0])
	}
	cmd := args[0]
	o := &options{}
	fs := cli.NewFlagSet("dpaudit " + cmd)
	p := &o.plan
	fs.StringVar(&o.algo, "algo", "correlated", "algorithm: correlated, independent or baseline-correlated")
	fs.StringVar(&o.strategy, "strategy", "optimal", "factorization strategy `SPEC`: NAME[:KEY=VALUE,...], for example blt:buffers=2 (mfsolve -h lists the strategies and their settings)")
	fs.StringVar(&o.part, "participation", "single", "participation: single, epochs:K or minsep:B[,K]")
	fs.StringVar(&o.cal, "calibration", "exact", "calibration: exact or paper")
	fs.IntVar(&p.Learners, "learners", 10, "learners n")
	fs.IntVar(&p.Rounds, "rounds", 800, "rounds R")
	fs.IntVar(&p.Tau, "tau", 10, "local steps per round")
	fs.IntVar(&p.Dim, "dim", 60, "model dimension d (the canary audit uses max(d, canaries))")
	fs.Float64Var(&p.Clip, "clip", 5, "clipping bound B_g")
	fs.Float64Var(&p.Eta, "eta", 0.003, "local step eta; max(eta, eta eta_g) tau max(B_g, 1) must be at most 1.8e308 (a round's noise-free move must fit a float64)")
	fs.Float64Var(&p.EtaG, "eta-g", 1, "global step eta_g")
	fs.Float64Var(&p.Eps, "eps", 5, "epsilon")
	cli.Float64DownVar(fs, &p.Delta, "delta", 1e-3, "delta (a subnormal is read as the largest float64 not above it)")
	fs.Float64Var(&p.Dropout, "dropout", 0, "probability that a learner misses a round (replay)")
	fs.Uint64Var(&p.Seed, "seed", 1, "seed of the noise key, the dropouts and the data")
	fs.BoolVar(&o.json, "json", false, "print one JSON object")
	fs.BoolVar(&o.force, "force", false, "run an audit estimated at more than 1e14 operations (about a day at 1e9 a second), which dpaudit otherwise refuses; the estimate counts the federation's local steps, the dense algebra and the factorization with its solver's iterations (assumed: 64 for optimal, 32 for optimal:path=dense, 25 log2 R under epochs:K), see docs/cli.md")
	if cmd == "canary" {
		fs.IntVar(&o.canaries, "canaries", 0, "canary clients m (0: what a mu-hat interval within 10% needs, at least 1000, at most the slots)")
		fs.Float64Var(&o.level, "level", 0.99, "confidence level of the mu-hat interval")
		fs.Float64Var(&o.confidence, "confidence", 0.95, "confidence of the one-run epsilon lower bound")
		fs.StringVar(&o.out, "out", "", "directory for canary.json, canary.png and canary.svg")
		fs.BoolVar(&o.network, "network", false, "run the federation over gRPC: a fednet server on 127.0.0.1 and its learners")
	} else {
		fs.BoolVar(&o.network, "network", false, "also run data set D's federation over gRPC (a fednet server on 127.0.0.1 and its learners) and check it releases the in-process models bit for bit; no -dropout")
	}
	set, err := cli.ParseFlags(fs, args[1:], stdout, "Usage of dpaudit "+cmd+":\n", "", cli.Once)
	if errors.Is(err, flag.ErrHelp) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if err := o.check(cmd, set); err != nil {
		return 0, err
	}
	if err := checkMemory(cmd, o, false, memAvailable); err != nil {
		return 0, err
	}
	if err := checkWork(cmd, o, false); err != nil {
		return 0, err
	}
	if o.out != "" {
		// The output policy (docs/cli.md, "Output files") for the files
		// canary -out DIR writes, before the audit.
		if err := cli.CheckOutputsIn("-out", o.out, outFiles, nil); err != nil {
			return 0, err
		}
	}
	s, err := audit.NewSetup(ctx, *p)
	if err != nil {
		// A release sensitivity that overflows (-clip 1e308) names
		// -clip, as in mfsolve and ofl.
		return 0, cli.CalibrationError(err, p.Clip, p.Learners, p.Eps, "")
	}
	if cmd == "canary" {
		// The participation may leave fewer than 3 slots (epochs:R gives
		// n): no number of canaries fits then, whatever -canaries says.
		// DefaultCanaries is at most the slots, and at least 1000 below them.
		if d, err := audit.DefaultCanaries(s, o.level); err == nil && d < 3 {
			return 0, cli.Usagef("-participation %s with -learners %d and -rounds %d leaves %d learner-round %s for canaries, want at least 3", o.part, p.Learners, p.Rounds, d, plural(d, "slot", "slots"))
		}
	}
	if cmd == "canary" && o.canaries == 0 {
		// The default number of canaries depends on the calibration, and
		// the audit's model has one coordinate per canary: check the
		// memory again with the number the audit will plant.
		if o.defaultCanaries, err = audit.DefaultCanaries(s, o.level); err != nil {
			return 0, err
		}
		if err := checkMemory(cmd, o, true, memAvailable); err != nil {
			return 0, err
		}
		if err := checkWork(cmd, o, true); err != nil {
			return 0, err
		}
	}
	// A progress bar on a terminal, for the rounds of the federation; it
	// appears only after a second, and is erased when the audit returns.
	finish := func() {}
	if f, ok := stderr.(*os.File); ok && cli.IsTerminal(f) {
		bar := progress.Start(stderr, progress.Options{Prefix: "dpaudit: ", Label: fmt.Sprintf("%s R=%d", cmd, p.Rounds), Total: p.Rounds, Delay: time.Second})
		finish = bar.Finish
		defer finish()
		s.Progress = func(done, _ int) { bar.Set(done) }
	}
	if cmd == "replay" {
		replay := audit.Replay
		if o.network {
			replay = audit.ReplayNetwork
		}
		rep, err := replay(ctx, s)
		finish()
		if err != nil {
			return 0, err
		}
		status := "PASS"
		if !rep.OK {
			status = "VIOLATION"
		}
		out := &cli.StickyWriter{W: stdout}
		if o.json {
			out.Err = writeJSON(out, rep)
		} else {
			fmt.Fprintf(out, "replay %s %s %s n=%d R=%d tau=%d: measured %.12g declared %.12g ratio %.15f expected %.12g (learner %d, rounds %v with %d learners missing; %d learner-rounds dropped) %.2fs %s\n",
				rep.Algorithm, rep.Strategy, rep.Participation, rep.Learners, rep.Rounds, rep.Tau, rep.Measured, rep.Declared, rep.Ratio, rep.Expected, rep.AuditedLearner, short(rep.AuditedRounds), rep.AuditedDropped, rep.Dropped, rep.Seconds, status)
			for _, c := range rep.Checks {
				mark := "ok  "
				if !c.OK {
					mark = "FAIL"
				}
				fmt.Fprintf(out, "  %s %-22s %s\n", mark, c.Name, c.Detail)
			}
		}
		if out.Err != nil {
			// The verdict is not lost with the report.
			return 0, fmt.Errorf("replay: %s, but printing the report failed: %w", status, out.Err)
		}
		if !rep.OK {
			return exitViolation, nil
		}
		return 0, nil
	}
	rep, err := audit.Canary(ctx, s, audit.CanaryOptions{Canaries: o.canaries, Level: o.level, Confidence: o.confidence, Network: o.network})
	finish()
	var pe *audit.ParamError
	if errors.As(err, &pe) && pe.Param == "canaries" {
		// The participation leaves fewer slots than n R (checked before).
		return 0, cli.Usagef("-canaries %d with -participation %s: want %s", o.canaries, o.part, pe.Want)
	} else if err != nil {
		return 0, err
	}
	if o.out != "" {
		if err := writeOut(ctx, o.out, rep, stderr); err != nil {
			return 0, err
		}
	}
	status := "consistent with the claim"
	if rep.Violation {
		status = "VIOLATION"
	}
	out := &cli.StickyWriter{W: stdout}
	if o.json {
		slim := *rep
		slim.AllIterates.Scores, slim.AllIterates.In, slim.AllIterates.Weights = nil, nil, nil
		slim.FinalModel.Scores, slim.FinalModel.In, slim.FinalModel.Weights = nil, nil, nil
		out.Err = writeJSON(out, &slim)
	} else {
		where := "in process"
		if rep.Network {
			where = "over gRPC"
		}
		fmt.Fprintf(out, "canary %s %s %s n=%d R=%d tau=%d (%g, %g) %s: m=%d canaries, claimed mu %.4f, noise std %.6g, %.1fs: %s\n",
			rep.Algorithm, rep.Strategy, rep.Participation, rep.Learners, rep.Rounds, rep.Tau, rep.Eps, rep.Delta, where, rep.Canaries, rep.MuClaimed, rep.NoiseStd, rep.Seconds, status)
		for _, ob := range []struct {
			name string
			o    audit.Observer
		}{{"all iterates", rep.AllIterates}, {"final model", rep.FinalModel}} {
			o := ob.o
			fmt.Fprintf(out, "  %-12s analytic mu %.4f (eps %.3f); mu-hat %.4f [%.4f, %.4f] at %g (eps %.3f [%.3f, %.3f]); one-run eps >= %.3f at %g confidence (%d/%d guesses right)\n",
				ob.name, o.MuAnalytic, o.EpsAnalytic, o.Mu.Mu, o.Mu.Lo, o.Mu.Hi, o.Mu.Level, o.EpsOfMu, o.EpsOfMuLo, o.EpsOfMuHi, o.Bound.Epsilon, o.Bound.Confidence, o.Bound.Correct, o.Bound.Guesses)
		}
	}
	if out.Err != nil {
		// The verdict, and the -out files in place, are not lost with
		// the report.
		wrote := ""
		if o.out != "" {
			files := make([]string, len(outFiles))
			for i, f := range outFiles {
				files[i] = filepath.Join(o.out, f)
			}
			wrote = "; wrote " + strings.Join(files, ", ")
		}
		return 0, fmt.Errorf("canary: %s%s, but printing the report failed: %w", status, wrote, out.Err)
	}
	if note := powerNote(rep, o.level); note != "" {
		fmt.Fprintln(stderr, "dpaudit: "+note)
	}
	if rep.Violation {
		return exitViolation, nil
	}
	return 0, nil
}

// powerNote says, when the canary audit planted fewer canaries than a
// mu-hat interval within 10% of the analytic mu needs at level (the number
// -canaries 0 aims at: m = 400 z^2 (1 + mu^2 / 8) / mu^2, as
// audit.DefaultCanaries computes it before clamping it to the slots), how
// wide the interval is expected to be, 2 z sqrt((1 + mu^2 / 8) / m): the
// verdict "consistent with the claim" then says little. "" otherwise.
func powerNote(rep *audit.CanaryReport, level float64) string {
	mu, m := rep.AllIterates.MuAnalytic, float64(rep.Canaries)
	z := math.Sqrt2 * math.Erfinv(level)
	need := math.Ceil(400 * z * z * (1 + mu*mu/8) / (mu * mu))
	if math.IsInf(mu*mu, 1) {
		need = math.Ceil(400 * z * z / 8) // the limit, as audit.DefaultCanaries takes it
	}
	if !(mu > 0) || !(m < need) {
		return ""
	}
	hw := 2 * z * math.Sqrt((1+mu*mu/8)/m)
	return fmt.Sprintf("note: %d canaries give a mu-hat interval of about +-%.3g at %g, %.0f%% of the analytic mu %.4f (one within 10%% needs %.0f canaries, which -canaries 0 plants up to the run's learner-round slots): a leak of that size can pass as consistent with the claim",
		rep.Canaries, hw, level, 100*hw/mu, mu, need)
}

func short(r []int) string {
	if len(r) <= 4 {
		return fmt.Sprint(r)
	}
	return fmt.Sprintf("[%d %d ... %d] (%d rounds)", r[0], r[1], r[len(r)-1], len(r))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// plural returns one for n = 1 and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
