package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
	if p.Algorithm == fedopt.Independent && set["strategy"] {
		// The baseline's noise is independent (C = I): the audit would
		// ignore the strategy, as ofl refuses it.
		return cli.Usagef("-strategy applies to -algo correlated and baseline-correlated only (the independent baseline's noise is the identity's)")
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
		// n R, saturated at math.MaxInt: the product of two large
		// flags wrapped to 0 or below and was refused as too few slots.
		slots := math.MaxInt
		if p.Learners <= math.MaxInt/p.Rounds {
			slots = p.Learners * p.Rounds
		}
		if slots < 3 {
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
// independent baseline), the noise streams' state (factorize.StreamBytes,
// one per run), and what the audit itself holds at its peak, counted from
// its code (d the canary audit's dimension, at least the canaries:
// -canaries, or for -canaries 0 the number the audit chooses, known once
// the plan is calibrated, and 1000 before; m the rows of C, R for every
// strategy but the tree's 2 R - popcount(R)):
//   - replay: the aggregates of both runs and the noise each drew (4 R d),
//     D's released models ((R + 1) d), the distance C (G - G') (m d), the
//     drawn noise concatenated and whitened (2 R d), both runs' learners,
//     their iterate and gradient (4 n d), and their updates (2 n d), with
//     n d more for the probes' tap servers, garbage between collections
//     (measured 1.04 to 1.1 times the estimate at n = 200 without it), the
//     32 background samples, the probes and the server's vectors (48 d),
//     the presence and the weights (2 R n); for the tree's tall C the
//     whitener's M (R x m), Sigma, its Cholesky factor and L (3 R^2).
//     With -network (replay and canary), the networked run: its learners,
//     their messages encoded and decoded and the server's copies (12 n d,
//     measured: the canary's networked run took 13 n d at n = 50,
//     d = 2000, against 4 n d in process), the released models read back
//     ((R + 1) d) and its noise stream.
//   - canary: the released increments Y and P Y (2 R d), the learners'
//     iterate and gradient, their updates and the simulation's copies of
//     them (4 n d), the server's and
//     the observers' vectors (8 d), the slots (n R int32); the precision
//     P = C^T C (R^2), or for the tree M, Sigma, its Cholesky factor, its
//     inverse and P (R m + 4 R^2).
//
// TestMemoryNeedMeasured checks it against the peak heap of small audits.
// Deliberately coarse: it turns an out-of-memory crash into an immediate,
// clear error. With solved set the factorization is already in memory
// (and no longer available), so it is not counted again.
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
	rows, tall := cRows(s, p.Rounds)
	stream := float64(factorize.StreamBytes(s, p.Rounds, int(d)))
	var run float64
	if cmd == "canary" {
		run = 8*(2*r*d+4*n*d+8*d) + 4*n*r + stream
		if tall {
			run += 8 * (r*rows + 4*r*r)
		} else {
			run += 8 * r * r
		}
		if o.network {
			run += 8*(12*n*d+(r+1)*d) + stream
		}
	} else {
		run = 8*((7*r+rows+1)*d+7*n*d+48*d+2*r*n) + 2*stream
		if tall {
			run += 8 * (r*rows + 3*r*r)
		}
		if o.network {
			run += 8*(12*n*d+(r+1)*d) + stream
		}
	}
	if solved {
		return run
	}
	// Dense factors (not loss-only): the same under any participation.
	return factorize.SolveBytes(s, p.Rounds, factorize.SingleParticipation(), true) + run
}

// cRows returns the rows m of the audit's C for strategy s at R = r
// rounds (r validated, at most factorize.MaxRounds), and whether C is
// tall (m > R): factorize.TreeRows(R) = 2 R - popcount(R) for the tree,
// R for every other strategy.
func cRows(s factorize.Strategy, r int) (float64, bool) {
	if _, ok := s.(factorize.TreeStrategy); ok && r > 1 {
		return float64(factorize.TreeRows(r)), true
	}
	return float64(r), false
}

// patternRounds returns the number of rounds, summed over the patterns
// that the replay's search for the worst sample tries under participation
// p at R = r rounds (audit's patterns: every round once under single
// participation and fixed epochs, R in all; under min-separation b with
// at most k participations, k = ceil(R / b) when not given, the rounds
// c, c + b, ... of every start c, at most k of them). For each it sums n
// columns of C: n m patternRounds operations. With j = R - c the pattern
// of start c has min(k, ceil(j / b)) rounds, so the sum is
// sum_{j=1}^{J} ceil(j / b) + (R - J) k with J = min(R, k b), and
// sum_{j=1}^{J} ceil(j / b) = b q (q + 1) / 2 + (J - q b)(q + 1) with
// q = floor(J / b) (in float64: no overflow).
func patternRounds(p factorize.Participation, r int) float64 {
	rf := float64(r)
	if p.Kind != factorize.KindMinSep || p.B < 1 {
		return rf
	}
	b := float64(p.B)
	k := float64(p.K)
	if p.K == 0 {
		k = math.Ceil(rf / b)
	}
	j := math.Min(rf, k*b)
	q := math.Floor(j / b)
	return b*q*(q+1)/2 + (j-q*b)*(q+1) + (rf-j)*k
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

// The solvers' iteration counts that factorizationWork assumes: the
// measured counts with a margin (TestFactorizationWork checks them
// against measured iterations of small solves). The optimal solver's
// structured path (and semiseparable's): 39 to 46 iterations at R = 500
// to 2000, 50 at 10^5 and 63 at 10^6 (docs/solver.md); its dense path
// (optimal:path=dense): 17 to 22 at R = 60 to 1000. solverShifts bounds
// the nodes of the rational approximation of x^{-1/2} that each iteration
// evaluates (30 to 56, docs/solver.md).
const (
	structuredIterations = 64
	denseIterations      = 32
	solverShifts         = 64
)

// epochIterations is the number of iterations factorizationWork assumes
// for the multi-epoch solver (optimal under epochs:K) at R = r rounds,
// 25 log2 R: 148 at R = 60, 248 at R = 960, 274 at R = 2000. Measured: 47
// to 94 at R = 60 and 120, 71 to 137 at R = 240 and 480, 65 to 185 at
// R = 960 to 2000, with 2 to 30 epochs (the count grows with R and K, not
// regularly); not measured beyond R = 2000.
func epochIterations(r int) float64 { return 25 * math.Log2(float64(max(r, 2))) }

// factorizationWork estimates the operations (floating-point operations,
// counted as workNeed counts the rest) of the audit's factorization of
// strategy s under participation p at R = r rounds, with its dense
// factors: assumed iterations times the work of one iteration, plus the
// work done once.
//   - optimal (single participation or min-separation) and semiseparable,
//     structured path: per iteration solverShifts O(R) recurrences, 20 R
//     each; once, the dense B and C from the quasiseparable factor of K
//     state vectors (factorize.StreamBytes), 4 R^2 K.
//   - optimal:path=dense: per iteration the Householder reduction of an
//     R x R symmetric matrix to tridiagonal form and the accumulation of
//     its orthogonal factor, 4/3 R^3 each (Golub and Van Loan, "Matrix
//     Computations", 8.3.1), and the shifts' tridiagonal solves, 6 R^2
//     each; once, the dense factors, R^3 (Cholesky, triangular inverse
//     and B = A C^{-1}, R^3 / 3 each).
//   - optimal under epochs:K, 1 < K < R (b = R / K classes of K rounds,
//     q = K (K - 1) / 2 in-class multipliers): per iteration, per shift,
//     the band factorization and selected inversion of an R x R band
//     matrix of w = 5 K + 2 diagonals, 2 R w^2, and the Jacobian's entries,
//     2 b q^2 (2 b q without the full Jacobian), and once per iteration
//     its Newton solves, b q^3 / 3 (b q); once, X formed densely, 2 R^2 K
//     per shift, and the dense factors, R^3.
//   - every other strategy (and optimal under epochs:R, in closed form):
//     R^3, the dense factors (their solves, closed forms and the banded
//     and BLT optimisers, took 0.02 to 0.7 R^3 nanoseconds of one
//     thread's CPU time at R = 1000 and 2000, up to 2 R^3 at R = 500).
func factorizationWork(s factorize.Strategy, p factorize.Participation, r int) float64 {
	iters, perIter, once := factorizationCost(s, p, r)
	return iters*perIter + once
}

// factorizationCost returns the parts of factorizationWork: the assumed
// iterations, the operations of one iteration and those done once.
func factorizationCost(s factorize.Strategy, p factorize.Participation, r int) (iters, perIter, once float64) {
	rf := float64(r)
	dense := rf * rf * rf
	structured := func() (float64, float64, float64) {
		k := float64(factorize.StreamBytes(s, r, 1) / 8)
		return structuredIterations, solverShifts * 20 * rf, 4 * rf * rf * k
	}
	switch o := s.(type) {
	case factorize.OptimalStrategy:
		switch {
		case p.Kind == factorize.KindEpochs && p.K > 1 && p.K < r:
			k := float64(p.K)
			b, q, w := rf/k, k*(k-1)/2, 5*k+2
			jac, newton := 2*b*q, b*q
			if factorize.EpochsFullJacobian(r, p.K) {
				jac, newton = 2*b*q*q, b*q*q*q/3
			}
			return epochIterations(r), solverShifts*(2*rf*w*w+jac) + newton, solverShifts*2*rf*rf*k + dense
		case p.Kind == factorize.KindEpochs && p.K > 1:
			return 0, 0, dense
		case o.Method == factorize.Dense:
			return denseIterations, 8.0/3*dense + solverShifts*6*rf*rf, dense
		}
		return structured()
	case factorize.SemisepStrategy:
		return structured()
	}
	return 0, 0, dense
}

// workNeed estimates the operations an audit of o takes: the local steps
// of the federation, tau per learner and round, each d + stepOps (the
// replay runs it once per neighbouring data set, and with -network once
// more over gRPC; the canary audit once, with d the canary audit's
// dimension as memoryNeed takes it), the replay's probes of the
// aggregation weights (n aggregations of n updates of d per round, before
// the run and again in it), the replay's search for the worst sample (n
// columns of C, m rows each, per round of every pattern:
// n m patternRounds), the checks' products (the canary's P Y, R^2 d; the
// replay's whitening of the noise, R^2 d, the pairwise comparison of the
// whitened rows, R^2 d / 2, and the distance C (G - G'), at most m R d)
// and the whitener's R^3 (with R^2 m more for the tree's tall C, its
// Sigma); unless solved, also the factorization (factorizationWork: the
// strategy's solver, its iterations counted, and the dense factors). Deliberately coarse, like memoryNeed: it turns a
// run that would go on for days unannounced into an immediate, clear
// error.
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
		w = runs*r*n*tau*(d+stepOps) + 2*r*n*n*d + r*r*r
	}
	s := p.Strategy
	if p.Algorithm == fedopt.Independent {
		s = factorize.IdentityStrategy{}
	}
	rows, tall := cRows(s, p.Rounds)
	if cmd == "replay" {
		w += n*rows*patternRounds(p.Participation, p.Rounds) + (1.5*r+rows)*r*d
	}
	if tall {
		w += r * r * rows // the whitener's Sigma = M M^T
	}
	if !solved {
		w += factorizationWork(s, p.Participation, p.Rounds)
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
	undo, err := cli.MkdirAll(dir)
	if err != nil {
		return fmt.Errorf("-out %s: %v", dir, err)
	}
	err = writeOutputs(ctx, stderr, "dpaudit: ", outs...)
	if err != nil {
		// No directory created either where nothing was written (undo
		// removes only empty directories).
		undo()
	}
	return err
}
