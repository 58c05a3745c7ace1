package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpmf/dpmf/audit"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/param"
	"github.com/dpmf/dpmf/plan"
)

// memAvailable reports the memory available to the audit; tests replace
// it. Where it fails (no /proc/meminfo) the memory check is skipped.
var memAvailable = cli.MemAvailable

// writeOutputs writes canary -out's files (cli.WriteOutputs); tests
// replace it.
var writeOutputs = cli.WriteOutputs

// outFiles are the files that canary -out DIR writes into DIR.
var outFiles = []string{"canary.json", "canary.png", "canary.svg"}

// check parses the plan flags into o.plan and checks every flag where it
// enters: a bad value is a *cli.UsageError naming the flag. The audit
// package reads a zero budget, clip or step as "the default", so a zero
// given on the command line is refused here rather than replaced.
func (o *options) check(cmd string, set map[string]bool) error {
	p := &o.plan
	var err error
	if p.Algorithm, err = fedopt.ParseAlgorithm(o.algo); err != nil || !p.Algorithm.Private() {
		return cli.Usagef("-algo %q: want correlated, independent or baseline-correlated (the private algorithms, whose claim is audited)", o.algo)
	}
	if p.Strategy, err = factorize.ParseStrategy(o.strategy); err != nil {
		return cli.Usagef("-strategy %s: %s", o.strategy, cli.Want(err))
	}
	if p.Participation, err = factorize.ParseParticipation(o.part); err != nil {
		return cli.Usagef("-participation %s: %s", o.part, cli.Want(err))
	}
	if p.Calibration, err = plan.ParseCalibration(o.cal); err != nil {
		return cli.Usagef("-calibration %q: want exact or paper", o.cal)
	}
	// The plan's own checks (audit.Plan.Validate), worded for the flag
	// that set each field; the plan is checked before WithDefaults, so a
	// zero is refused rather than read as "the default".
	if err := p.Validate(); err != nil {
		var pe *param.Error
		if !errors.As(err, &pe) {
			return err
		}
		if pe.Param == "participation" {
			return cli.Usagef("-participation %s: %s", o.part, cli.Want(err))
		}
		flag := map[string]string{"Learners": "learners", "Rounds": "rounds", "Tau": "tau", "Dim": "dim",
			"Eta": "eta", "EtaG": "eta-g", "Clip": "clip", "Eps": "eps", "Delta": "delta", "Dropout": "dropout"}[pe.Param]
		if flag == "" {
			return err
		}
		return cli.Usagef("-%s %v: want %s", flag, pe.Value, strings.SplitN(pe.Want, " (WithDefaults", 2)[0])
	}
	if p.Algorithm != fedopt.Independent {
		if err := factorize.CheckUnder(p.Strategy, p.Participation); err != nil {
			return cli.Usagef("-strategy %s: %s", o.strategy, cli.Want(err))
		}
	}
	if cmd == "replay" && o.network && p.Dropout != 0 {
		return cli.Usagef("-network runs without dropouts: fednet's learners submit in every round (-dropout exercises its dropout policy in process)")
	}
	if cmd == "canary" {
		if p.Dropout != 0 {
			return cli.Usagef("-dropout applies to replay only: the canary audit runs without dropouts")
		}
		if slots := p.Learners * p.Rounds; slots < 3 {
			return cli.Usagef("-learners %d and -rounds %d: the canary audit needs at least 3 learner-round slots", p.Learners, p.Rounds)
		} else if o.canaries != 0 && (o.canaries < 3 || o.canaries > slots) {
			// The participation may leave fewer slots: audit.Canary
			// checks the exact number.
			return cli.Usagef("-canaries %d: want 3 to %d (at most one canary per learner and round), or 0 (as many as a mu-hat interval within 10%% needs)", o.canaries, slots)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"level", o.level}, {"confidence", o.confidence}} {
			if !(f.v >= 0.5 && f.v < 1) {
				// Below 1/2 a correct run fails the audit by chance more
				// often than not (-level 1e-300 reported a violation).
				return cli.Usagef("-%s %v: want a number in [0.5, 1)", f.name, f.v)
			}
		}
		if set["out"] && o.out == "" {
			return cli.Usagef("-out is empty: want a directory")
		}
	}
	return nil
}

// memoryNeed estimates the bytes an audit of o needs: the factorization
// with its dense factors (factorize.SolveBytes; the identity for the
// independent baseline), the R x R whitener, the R x d gradient and model
// series of both worlds (d the canary audit's dimension, at least the
// canaries: -canaries, or for -canaries 0 the number the audit chooses,
// known once the plan is calibrated, and 1000 before), the dropout
// schedule and weights (R x n) and
// the learners' updates. Deliberately coarse: it turns an out-of-memory crash into an
// immediate, clear error. With solved set the factorization is already in
// memory (and no longer available), so it is not counted again.
func memoryNeed(cmd string, o *options, solved bool) float64 {
	p := o.plan
	r, n, d := float64(p.Rounds), float64(p.Learners), float64(p.Dim)
	if cmd == "canary" {
		m := cmp.Or(o.canaries, o.defaultCanaries, 1000)
		d = max(d, float64(min(m, p.Learners*p.Rounds)))
	}
	s := p.Strategy
	if p.Algorithm == fedopt.Independent {
		s = factorize.IdentityStrategy{}
	}
	if t, err := factorize.WithLossOnly(s, false); err == nil {
		s = t
	}
	run := 8*r*r + 8*(4*r*d+2*r*n+(2*n+8)*d)
	if solved {
		return run
	}
	// Dense factors (not loss-only): the same under any participation.
	return factorize.SolveBytes(s, p.Rounds, factorize.SingleParticipation(), true) + run
}

// checkMemory refuses an audit that needs more memory than avail reports,
// before any work, or with solved set once the factorization is in memory
// (the canary audit's default number of canaries is known only then). If
// avail is nil or fails, the check is skipped.
func checkMemory(cmd string, o *options, solved bool, avail func() (uint64, error)) error {
	need := memoryNeed(cmd, o, solved)
	have, short := cli.Short(need, avail)
	if !short {
		return nil
	}
	p := o.plan
	flags := fmt.Sprintf("-rounds %d, -learners %d, -dim %d", p.Rounds, p.Learners, p.Dim)
	if cmd == "canary" && o.canaries > 0 {
		flags += fmt.Sprintf(", -canaries %d", o.canaries)
	} else if cmd == "canary" && o.defaultCanaries > 0 {
		flags += fmt.Sprintf(" with -canaries 0 (%d canaries at this calibration)", o.defaultCanaries)
	}
	return fmt.Errorf("%s need about %s, this machine has %s available; use smaller values",
		flags, cli.FormatBytes(need), cli.FormatBytes(have))
}

// maxWork is the most operations (workNeed) an audit may take without
// -force: 10^14, about a day at 10^9 operations a second.
const maxWork = 1e14

// stepOps is what workNeed counts for one local step besides its d
// coordinates: the sample's stream, the gradient call and the clipping.
const stepOps = 32

// workNeed estimates the operations an audit of o takes: the local steps
// of the federation, tau per learner and round, each d + stepOps (the
// replay runs it once per neighbouring data set, and with -network once
// more over gRPC; the canary audit once, with d the canary audit's
// dimension as memoryNeed takes it), the replay's probes of the
// aggregation weights (n aggregations of n updates of d per round, before
// the run and again in it), the dense products of the checks (R^2 d) and
// the whitener's R^3; unless solved, also R^3 for the factorization (a
// lower bound: the optimal solver iterates). Deliberately coarse, like
// memoryNeed: it turns a run that would go on for days unannounced into
// an immediate, clear error.
func workNeed(cmd string, o *options, solved bool) float64 {
	p := o.plan
	r, n, tau, d := float64(p.Rounds), float64(p.Learners), float64(p.Tau), float64(p.Dim)
	var w float64
	if cmd == "canary" {
		m := cmp.Or(o.canaries, o.defaultCanaries, 1000)
		d = max(d, float64(min(m, p.Learners*p.Rounds)))
		w = r*n*tau*(d+stepOps) + r*r*d + r*r*r
	} else {
		runs := 2.0
		if o.network {
			runs = 3
		}
		w = runs*r*n*tau*(d+stepOps) + 2*r*n*n*d + r*r*d + r*r*r
	}
	if !solved {
		w += r * r * r
	}
	return w
}

// checkWork refuses, as a usage error, an audit whose workNeed is above
// maxWork, unless -force is given: the line names the flags that set the
// work and the estimate. solved is as for checkMemory.
func checkWork(cmd string, o *options, solved bool) error {
	need := workNeed(cmd, o, solved)
	if o.force || need <= maxWork {
		return nil
	}
	p := o.plan
	flags := fmt.Sprintf("-rounds %d, -learners %d, -tau %d, -dim %d", p.Rounds, p.Learners, p.Tau, p.Dim)
	if cmd == "canary" && o.canaries > 0 {
		flags += fmt.Sprintf(", -canaries %d", o.canaries)
	} else if cmd == "canary" && o.defaultCanaries > 0 {
		flags += fmt.Sprintf(" with -canaries 0 (%d canaries at this calibration)", o.defaultCanaries)
	}
	if cmd == "replay" && o.network {
		flags += " with -network"
	}
	return cli.Usagef("%s need about %.2g operations, %s at 10^9 a second (more than the %.0e dpaudit runs without -force); use smaller values, or -force to run it all the same",
		flags, need, duration(need/1e9), maxWork)
}

// duration words a number of seconds in its largest unit: "27.8 hours",
// "30.4 years".
func duration(sec float64) string {
	for _, u := range []struct {
		name string
		secs float64
	}{{"years", 365.25 * 86400}, {"days", 86400}, {"hours", 3600}, {"minutes", 60}} {
		if sec >= u.secs {
			return fmt.Sprintf("%.3g %s", sec/u.secs, u.name)
		}
	}
	return fmt.Sprintf("%.3g seconds", sec)
}

// writeOut writes the canary report into dir, all or nothing: the JSON
// report and both renderings of its figure are encoded first, then
// written to temporary files, and renamed into place only when all three
// are complete (cli.WriteOutputs). A failure leaves the existing files
// unchanged and no partial file behind.
func writeOut(ctx context.Context, dir string, rep *audit.CanaryReport, stderr io.Writer) error {
	fig := rep.Figure()
	writers := []func(io.Writer) error{
		func(w io.Writer) error { return writeJSON(w, rep) },
		fig.PNG,
		fig.SVG,
	}
	outs := make([]cli.Output, len(writers))
	for i, write := range writers {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return fmt.Errorf("-out %s: %s: %v", dir, outFiles[i], err)
		}
		outs[i] = cli.Output{File: cli.File{Flag: "-out", Path: filepath.Join(dir, outFiles[i])}, Perm: 0o644, Write: func(w io.Writer) error {
			_, err := buf.WriteTo(w)
			return err
		}}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-out %s: %v", dir, err)
	}
	return writeOutputs(ctx, stderr, outs...)
}
