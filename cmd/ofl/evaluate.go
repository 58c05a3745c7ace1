package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/fednet"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

const evaluateUsage = `Usage: ofl evaluate -state DIR -seed N [run and data flags] [-json] [-out DIR]

The observer of a networked run: reads the released models x^0..x^R from a
server's state directory and evaluates them on the whole data set (which
neither the server nor any learner holds), reporting what ofl reports for
a simulated run of the same flags with -reps 1: the same numbers when the
networked run released the simulation's models. The run (algorithm,
shape, steps, strategy, budget) and its privacy record come from the plan
in DIR/run.json; a run flag given here must agree with it, and the data
flags must give the data the plan records (its SHA-256), when it records
any (ofl server -data).

Flags (the defaults shown for the run flags, such as -eps and -rounds, are
those of a new simulation, ofl -h: evaluate takes the run's values from
its plan and checks only the run flags given here against it):
`

// runEvaluate runs "ofl evaluate".
func runEvaluate(ctx context.Context, args []string, e env) error {
	start := time.Now()
	fs := cli.NewFlagSet("ofl evaluate")
	var state string
	given := runFlags(fs, "the seed the learners dealt the data with (required; its SHA-256 must be the plan's when the plan records one)", "reps", "workers")
	fs.StringVar(&state, "state", "", "the server's state directory (required)")
	set, err := cli.ParseFlags(fs, args, e.stdout, evaluateUsage, "", cli.Once)
	switch {
	case err != nil:
		return err
	case state == "":
		return cli.Usagef("-state is required: the server's state directory")
	case !set["seed"]:
		return cli.Usagef("-seed is required: the seed the learners dealt the data with")
	}
	raw, err := fednet.ReadPlan(state)
	if _, serr := os.Lstat(filepath.Join(state, "run.json")); err != nil && errors.Is(serr, os.ErrNotExist) {
		// A mistyped directory, or one no server has run in.
		return fmt.Errorf("-state %s: no run.json there, want the -state directory of an ofl server run", state)
	}
	if err != nil {
		return fmt.Errorf("-state %s: %v", state, err)
	}
	pl, err := plan.Parse(raw)
	if err != nil {
		var f struct {
			Format int `json:"format"`
		}
		if json.Unmarshal(raw, &f) == nil && f.Format > plan.Format {
			return fmt.Errorf("-state %s: run.json holds a plan of format %d, this ofl reads format %d: a run of a newer dpmf, evaluate it with that version", state, f.Format, plan.Format)
		}
		return fmt.Errorf("-state %s: run.json holds no plan this ofl reads (a run of an older dpmf? evaluate it with that version): %v", state, err)
	}
	simArgs, err := evaluateArgs(given(), pl, filepath.Join(state, "run.json"))
	if err != nil {
		return err
	}
	c, err := parseArgs(simArgs)
	if err != nil {
		return err
	}
	if err := checkEvaluateMemory(c, e.memAvailable); err != nil {
		return err
	}
	if pl.Privacy != nil {
		// The record is reported as recorded, once its metrics are the
		// plan's factorization's: Parse checked the rest of it.
		if err := pl.VerifyRecord(ctx); err != nil {
			return fmt.Errorf("-state %s: run.json's privacy record is not its plan's: %v", state, err)
		}
	}
	if err := checkOut(c); err != nil {
		return err
	}
	ds, err := loadDataContext(ctx, c)
	if err != nil {
		return err
	}
	where := filepath.Join(state, "run.json")
	if ds.Dim != pl.Model.Features {
		return cli.Usagef("-data %s has %d features, contradicting the run's plan in %s: features %d", c.data.file, ds.Dim, where, pl.Model.Features)
	}
	// The data the run was trained on, when its plan records it: the
	// digest of the data set as dealt covers the file's contents, the
	// split and the seed.
	if rec, got := pl.Data, dataRecord(c, ds); rec != nil && got.SHA256 != rec.SHA256 {
		return cli.Usagef("%s contradicts the run's plan in %s: the data given is %s, the run's is %s", dataFlags(c), where, describeData(got), describeData(rec))
	}
	p, err := experiment.NewProblem(ctx, ds, model.Logistic{L2: c.l2}, experiment.ProblemOptions{NoDynamic: c.l2 == 0})
	if err != nil {
		return err
	}
	// The privacy record is the run's, as recorded: never recomputed.
	res := &experiment.Result{}
	cfg := c.optimiser()
	if c.algo.Private() {
		if res.Privacy, err = fedopt.PrivacyOf(pl); err != nil {
			return fmt.Errorf("-state %s: %v", state, err)
		}
		res.Plan = pl
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
	if err := finish(ctx, c, e, p, res, start); err != nil {
		return err
	}
	if pl.Data == nil {
		// Said once the evaluation is done: an evaluation that fails says
		// only why.
		fmt.Fprintf(e.stderr, "ofl evaluate: the run's plan in %s records no data (a server started without -data, or by an older dpmf): the data given (-data, -split) could not be checked against the run's\n", where)
	}
	return nil
}
