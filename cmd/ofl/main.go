package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/progress"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
)

// env is what run takes from its surroundings, so tests can replace it.
type env struct {
	stdout, stderr io.Writer
	// progress shows a progress bar on stderr (stderr is a terminal).
	progress bool
	// randomSeed returns the seed of a run without -seed.
	randomSeed func() (uint64, error)
	// memAvailable reports the available memory; nil skips the check.
	memAvailable func() (uint64, error)
}

func main() {
	ctx, stop := cli.SignalContext()
	code := run(ctx, os.Args[1:], env{
		stdout:       os.Stdout,
		stderr:       os.Stderr,
		progress:     cli.IsTerminal(os.Stderr),
		randomSeed:   cryptoSeed,
		memAvailable: cli.MemAvailable,
	})
	stop()
	os.Exit(code)
}

// cryptoSeed returns a seed from crypto/rand.
func cryptoSeed() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("no random seed: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// run is ofl with its arguments and surroundings; it returns the exit
// status.
func run(ctx context.Context, args []string, e env) int {
	cmd := "ofl" // the name its error is reported under
	var err error
	switch {
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
		err = simulate(ctx, args, e)
	case args[0] == "reproduce":
		err = runReproduce(ctx, args[1:], e)
	case args[0] == "server":
		cmd, err = "ofl server", runServer(ctx, args[1:], e)
	case args[0] == "learner":
		cmd, err = "ofl learner", runLearner(ctx, args[1:], e)
	case args[0] == "evaluate":
		cmd, err = "ofl evaluate", runEvaluate(ctx, args[1:], e)
	default:
		err = cli.Usagef("unknown command %q: want reproduce, server, learner or evaluate, or flags only (ofl -h)", args[0])
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	interrupted := ctx.Err() != nil
	err = failure(interrupted, cmd, err)
	fmt.Fprintf(e.stderr, "%s: %s\n", cmd, cli.OneLine(strings.ReplaceAll(err.Error(), "fednet: ", "")))
	if interrupted {
		return cli.ExitFailure
	}
	return cli.ExitCode(err)
}

// failure returns the error that cmd reports for err. An interrupted
// command other than the server and the learner (which say where they
// stopped) reports "interrupted; nothing written", whatever failed: its
// outputs are renamed into place only if not cancelled; but a
// *cli.WrittenError (a rename that failed after others succeeded, as
// ofl reproduce's) is reported as it is, naming the files in place.
func failure(interrupted bool, cmd string, err error) error {
	var we *cli.WrittenError
	if interrupted && cmd != "ofl server" && cmd != "ofl learner" && !errors.As(err, &we) {
		return errors.New("interrupted; nothing written")
	}
	return err
}

// simulate is ofl without a subcommand: it parses the command line, and
// prints the usage for -h (returning flag.ErrHelp) or does the work.
func simulate(ctx context.Context, args []string, e env) error {
	c, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		if werr := cli.PrintUsage(e.stdout, newFlagSet(new(config)), usageText); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	return execute(ctx, c, e)
}

// execute does the work of a parsed command line. Nothing is written
// before the run has succeeded and its report is encoded: a failed or
// interrupted run leaves -out as it was.
func execute(ctx context.Context, c config, e env) error {
	start := time.Now()
	if !c.seedSet {
		s, err := e.randomSeed()
		if err != nil {
			return err
		}
		c.seed = s
	}
	if err := checkMemory(c, e.memAvailable); err != nil {
		return err
	}
	if err := checkOut(c); err != nil {
		return err
	}
	ds, err := loadDataContext(ctx, c)
	if err != nil {
		return err
	}
	// Without an L2 term the per-round minima (100 samples in 60
	// dimensions) are typically not attained: no dynamic regret then.
	p, err := experiment.NewProblem(ctx, ds, model.Logistic{L2: c.l2}, experiment.ProblemOptions{NoDynamic: c.l2 == 0})
	if err != nil {
		return err
	}
	// The plan (runPlan) carries the strategy's spec; the registry says
	// whether its noise mechanism keeps past rows.
	strat, err := factorize.ParseStrategy(c.strategy)
	if err != nil {
		return err
	}
	if c.correlated() && factorize.KeepsPastRows(strat, participation(c.epochs)) &&
		int64(c.rounds)*int64(p.Data.Dim)*8 > mechanism.DefaultKeepLimit {
		fmt.Fprintf(e.stderr, "ofl: the %s noise mechanism would keep more than %d GiB of past noise rows (R = %d, d = %d), so it regenerates them each round instead (slower)\n",
			c.strategy, mechanism.DefaultKeepLimit>>30, c.rounds, p.Data.Dim)
	}
	exp := experiment.Experiment{
		Problem: p,
		Config:  c.optimiser(),
		Repeat:  experiment.RepeatOptions{Reps: c.reps, Workers: c.workers},
		// ofl simulates: its noise is seeded by -seed, or by the seed it
		// drew from crypto/rand and prints, so that every run can be
		// repeated (docs/cli.md, "ofl's seed"); it is not a release.
		Seed:   c.seed,
		Seeded: true,
	}
	if c.algo.Private() {
		exp.Plan = c.runPlan(p.Data.Dim)
	}
	var bar *progress.Bar
	if e.progress && !c.quiet {
		bar = progress.Start(e.stderr, progress.Options{Prefix: "ofl: ", Total: c.reps * c.rounds})
		exp.Repeat.Progress = func(done, _ int) { bar.Set(done) }
	}
	res, err := exp.Run(ctx)
	if bar != nil {
		bar.Finish()
	}
	if err := cli.CalibrationError(err, c.clip, c.learners, c.eps, ""); err != nil {
		return err
	}
	return finish(ctx, c, e, p, res, start)
}

// checkOut applies the output policy to -out DIR/rounds.csv before any
// work (docs/cli.md): DIR, or its nearest existing ancestor, must accept
// new files, and an existing rounds.csv must be a writable regular file
// that is not the -data file. Nothing is created.
func checkOut(c config) error {
	if c.out == "" {
		return nil
	}
	return cli.CheckOutputsIn("-out", c.out, []string{"rounds.csv"}, []cli.File{{Flag: "-data", Path: c.data.file}})
}

// finish reports a completed run: it checks that the results are finite,
// encodes the report, and only then creates -out and writes rounds.csv, so
// a run that cannot report writes nothing; the report goes to stdout last.
func finish(ctx context.Context, c config, e env, p *experiment.Problem, res *experiment.Result, start time.Time) error {
	if err := checkFinite(p, res.Summary, c.l2 != 0); err != nil {
		return err
	}
	rep := newReport(c, p, res, time.Since(start).Seconds())
	var out []byte
	switch {
	case c.json:
		js, err := json.Marshal(rep)
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		out = append(js, '\n')
	case !c.quiet:
		out = []byte(rep.summary() + "\n")
	}
	if c.out != "" {
		undo, err := cli.MkdirAll(c.out)
		if err != nil {
			return fmt.Errorf("-out %s: %v", c.out, err)
		}
		if err := writeRounds(ctx, filepath.Join(c.out, "rounds.csv"), res.Summary, e.stderr); err != nil {
			// Nothing written: no directory created either.
			undo()
			return err
		}
	}
	if len(out) == 0 {
		return nil
	}
	if _, err := e.stdout.Write(out); err != nil {
		if c.out != "" {
			// rounds.csv is complete and in place: say so, rather than
			// let the failure read as "nothing written".
			return fmt.Errorf("wrote %s, but printing the report failed: %w", filepath.Join(c.out, "rounds.csv"), err)
		}
		return err
	}
	return nil
}

// dataWant is what -data takes, for the errors that name it.
const dataWant = "synthetic, synthetic:alpha=A,beta=B or a CSV file"

// loadData makes the data set of c.
func loadData(c config) (*dataset.Dataset, error) {
	if c.data.file == "" {
		s := dataset.Synthetic{Alpha: c.data.alpha, Beta: c.data.beta, Dim: c.data.dim}
		d, err := s.Dataset(c.learners, c.rounds/c.epochs, c.tau, c.seed)
		if err != nil {
			return nil, fmt.Errorf("-data %s: %s", c.raw.data, strings.TrimPrefix(err.Error(), "dataset: "))
		}
		if c.epochs == 1 {
			return d, nil
		}
		return d.Epochs(c.epochs)
	}
	t, err := dataset.LoadCSV(c.data.file)
	if err != nil {
		return nil, dataError(c.data.file, err)
	}
	if c.split.Kind == dataset.ByFeature && c.split.Feature >= t.Dim {
		return nil, cli.Usagef("-split %v: want a feature index in [0, %d): -data %s has %d features", c.split, t.Dim, c.data.file, t.Dim)
	}
	d, err := t.Deal(c.learners, c.rounds/c.epochs, c.tau, c.split, c.seed)
	if err != nil {
		return nil, dataError(c.data.file, err)
	}
	if c.epochs == 1 {
		return d, nil
	}
	return d.Epochs(c.epochs)
}

// loadDataContext is loadData that returns ctx's error once ctx is done,
// also while a -data file blocks: a FIFO that no process writes blocks in
// open(2), where the first Ctrl-C, which only cancels ctx, did not reach
// it (cli.Interruptible).
func loadDataContext(ctx context.Context, c config) (*dataset.Dataset, error) {
	return cli.Interruptible(ctx, func() (*dataset.Dataset, error) { return loadData(c) })
}

// dataError words an error of package dataset about the -data file so
// that it names the flag: "-data FILE:LINE: ..." where the message starts
// with the file, "-data FILE: ..." otherwise.
func dataError(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		// Most likely a misspelt name (-data synthtic): say which
		// there are.
		return fmt.Errorf("-data %s: %v (want %s)", file, cli.UnwrapPath(err), dataWant)
	}
	msg := strings.TrimPrefix(err.Error(), "dataset: ")
	if rest, ok := strings.CutPrefix(msg, file+":"); ok {
		return fmt.Errorf("-data %s:%s", file, rest)
	}
	if rest, ok := strings.CutPrefix(msg, "open "+file+": "); ok {
		msg = rest // the file is named already
	}
	return fmt.Errorf("-data %s: %s", file, msg)
}

// participation returns single participation for one epoch and K fixed
// epochs otherwise.
func participation(epochs int) factorize.Participation {
	if epochs == 1 {
		return factorize.SingleParticipation()
	}
	return factorize.FixedEpochs(epochs)
}
