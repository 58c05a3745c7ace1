package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/model"
)

const evaluateUsage = `Usage: ofl evaluate -state DIR [run and data flags] [-json] [-out DIR]

The observer of a networked run: reads the released models x^0..x^R from a
server's state directory and evaluates them on the whole data set (which
neither the server nor any learner holds), reporting what ofl reports for
a simulated run of the same flags with -reps 1: the same numbers when the
networked run released the simulation's models.

Flags:
`

// runEvaluate runs "ofl evaluate".
func runEvaluate(ctx context.Context, args []string, e env) error {
	start := time.Now()
	fs := flag.NewFlagSet("ofl evaluate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var state string
	sim := newFlagSet(new(config))
	sim.VisitAll(func(f *flag.Flag) {
		if f.Name != "reps" && f.Name != "workers" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	fs.StringVar(&state, "state", "", "the server's state directory (required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(e.stdout)
			fmt.Fprint(e.stdout, evaluateUsage)
			fs.PrintDefaults()
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	if state == "" {
		return usagef("-state is required: the server's state directory")
	}
	simArgs := []string{"-reps=1"}
	fs.Visit(func(f *flag.Flag) {
		if sim.Lookup(f.Name) != nil {
			simArgs = append(simArgs, "-"+f.Name+"="+f.Value.String())
		}
	})
	c, err := parseArgs(simArgs)
	if err != nil {
		return err
	}
	if !c.seedSet {
		return usagef("-seed is required: the seed the learners dealt the data with")
	}
	if err := checkEvaluateMemory(c, e.memAvailable); err != nil {
		return err
	}
	if err := checkOut(c); err != nil {
		return err
	}
	ds, err := loadData(c)
	if err != nil {
		return err
	}
	p, err := experiment.NewProblem(ctx, ds, model.Logistic{L2: c.l2}, experiment.ProblemOptions{NoDynamic: c.l2 == 0})
	if err != nil {
		return err
	}
	res := &experiment.Result{}
	cfg := c.optimiser()
	if c.algo.Private() {
		strat, err := factorize.ParseStrategy(c.strategy)
		if err != nil {
			return err
		}
		exp := experiment.Experiment{Config: cfg, Strategy: strat, Participation: participation(c.epochs),
			Calibration: c.calibration, Eps: c.eps, Delta: c.delta}
		if res.Factorization, res.Privacy, err = exp.Noise(ctx, c.learners, c.rounds); err != nil {
			return err
		}
		cfg.Privacy = res.Privacy
	}
	ev := experiment.NewEvaluator(p, cfg)
	for r := 0; r <= c.rounds; r++ {
		rel, err := fednet.ReadRound(state, r)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("-state %s: round %d of %d is not released", state, r, c.rounds)
		}
		if err != nil {
			return err
		}
		if len(rel.X) != ds.Dim {
			return fmt.Errorf("-state %s: models of dimension %d, the data has %d features", state, len(rel.X), ds.Dim)
		}
		if err := ev.Observe(r, rel.X); err != nil {
			return err
		}
	}
	if res.Summary, err = experiment.Summarize([]*experiment.Trace{ev.Trace()}); err != nil {
		return err
	}
	return finish(ctx, c, e, p, res, start)
}
