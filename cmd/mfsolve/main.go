package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	dpcache "github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/internal/param"
	"github.com/dpmf/dpmf/internal/progress"
	"github.com/dpmf/dpmf/npy"
	"gonum.org/v1/gonum/mat"
)

// env is what run takes from its surroundings, so tests can replace it.
type env struct {
	stdout, stderr io.Writer
	// progress shows the progress line on stderr (stderr is a terminal).
	progress bool
	// progressDelay is how long a solve runs before the line appears.
	progressDelay time.Duration
	// memAvailable reports the available memory; nil skips the check.
	memAvailable func() (uint64, error)
	// defaultCacheDir is the cache directory when -cache is not given.
	defaultCacheDir func() (string, error)
	// getenv reads the environment (DPMF_CACHE_BUDGET); nil reads
	// nothing.
	getenv func(string) string
}

func main() {
	ctx, stop := cli.SignalContext()
	code := run(ctx, os.Args[1:], env{
		stdout:          os.Stdout,
		stderr:          os.Stderr,
		progress:        cli.IsTerminal(os.Stderr),
		progressDelay:   500 * time.Millisecond,
		memAvailable:    cli.MemAvailable,
		defaultCacheDir: dpcache.DefaultDir,
		getenv:          os.Getenv,
	})
	stop()
	os.Exit(code)
}

// run is mfsolve with its arguments and surroundings; it returns the exit
// status.
func run(ctx context.Context, args []string, e env) int {
	var (
		err error
		cfg config
	)
	if len(args) > 0 && args[0] == "cache" {
		err = runCache(args[1:], e)
	} else {
		cfg, err = parseArgs(args)
		if errors.Is(err, flag.ErrHelp) {
			// A help that cannot be written is a failure (-h > /dev/full).
			if err = printUsage(e.stdout); err == nil {
				return cli.ExitOK
			}
		}
		if err == nil {
			err = resolveBudget(&cfg, e.getenv)
		}
		if err == nil {
			err = solve(ctx, cfg, e)
		}
	}
	if err == nil {
		return cli.ExitOK
	}
	var we *cli.WrittenError
	if ctx.Err() != nil && !errors.As(err, &we) {
		// Whatever failed, the run was cancelled: no output was
		// replaced and no temporary file is left.
		err = errors.New("interrupted; nothing written")
	}
	msg := err.Error()
	var nc *factorize.NotConvergedError
	if errors.As(err, &nc) {
		msg += rerunAdvice(nc, cfg.strat)
	}
	fmt.Fprintf(e.stderr, "mfsolve: %s\n", cli.OneLine(msg))
	return cli.ExitCode(err)
}

// rerunAdvice returns the strategy specs that let a rerun succeed where nc
// stopped strategy s (nc.Advice as its tol setting, with which a rerun
// succeeds, and a higher max-iter, with which it may; every strategy that
// can return nc takes both); "" when none would help.
func rerunAdvice(nc *factorize.NotConvergedError, s factorize.Strategy) string {
	tol, more := nc.Advice()
	var ways []string
	if t, err := factorize.WithSetting(s, "tol", fmt.Sprintf("%.0e", tol)); err == nil && tol > 0 {
		ways = append(ways, "-strategy "+t.Spec())
	}
	if t, err := factorize.WithSetting(s, "max-iter", strconv.Itoa(10*max(nc.Iter, 1))); err == nil && more {
		ways = append(ways, fmt.Sprintf("a max-iter above %d (-strategy %s)", nc.Iter, t.Spec()))
	}
	if len(ways) == 0 {
		return ""
	}
	return "; rerun with " + strings.Join(ways, ", or with ")
}

// solve does the work of a parsed command line.
func solve(ctx context.Context, cfg config, e env) error {
	var w *factorize.Workload
	r := cfg.r
	if beta, ok := strings.CutPrefix(cfg.workload, "momentum:"); ok {
		b, err := cli.ParseFloat(beta)
		if err != nil {
			return cli.Usagef("-workload %s: momentum %q: %v", cfg.workload, beta, err)
		}
		if w, err = factorize.Momentum(r, b); err != nil {
			return cli.Usagef("-workload %s: %s", cfg.workload, paramText(err))
		}
	} else if cfg.workload != prefixWorkload {
		var err error
		// Given up when ctx is done (SIGINT or SIGTERM): a FIFO such as
		// -workload <(cmd) blocks the open until its writer starts, and
		// each read until it writes.
		if w, err = cli.Interruptible(ctx, func() (*factorize.Workload, error) { return loadWorkload(cfg.workload, e.memAvailable) }); err != nil {
			return err
		}
		if cfg.rSet && cfg.r != w.R() {
			return cli.Usagef("-R %d, but the workload in %s is %d x %d", cfg.r, cfg.workload, w.R(), w.R())
		}
		r = w.R()
	}
	// The prefix-sum workload (and every file workload that turns out to
	// be one) has a bidiagonal inverse.
	banded := w == nil
	if w != nil {
		_, banded = w.InverseBand()
	}
	if err := checkMemory(cfg, r, banded, e.memAvailable); err != nil {
		return err
	}
	if w == nil {
		var err error
		if w, err = factorize.Prefix(r); err != nil {
			return err
		}
	}
	if cfg.compare {
		return compare(ctx, cfg, w, e)
	}
	if err := cli.CheckOutputs(cfg.outputs(), cfg.inputs()); err != nil {
		return err
	}

	warn := &lineWriter{w: e.stderr, prefix: "mfsolve: "}
	var prog *progress.Bar
	var onProgress func(factorize.Progress)
	if e.progress && !cfg.quiet {
		prog = progress.Start(e.stderr, progress.Options{
			Prefix: "mfsolve: ", Label: fmt.Sprintf("%s R=%d", cfg.strategy, r), Delay: e.progressDelay,
		})
		onProgress = func(pr factorize.Progress) { prog.Status(progressStatus(pr)) }
		// Warnings during the solve erase the progress line first.
		warn.w = prog
	}
	if cfg.sampling > 0 {
		// Cyclic Poisson sampling over b groups: each sample takes part
		// only in the rounds of its group, b apart.
		b, _ := factorize.CBands(cfg.strat)
		cfg.participation = factorize.MinSeparation(min(b, r), 0)
	}
	strat := factorize.WithProgress(cfg.strat, onProgress)
	if err := cfg.participation.Validate(r); err != nil {
		return cli.Usagef("-participation %v: %v", cfg.participation, cli.Want(err))
	}
	if err := checkServes(cfg, w, cfg.participation); err != nil {
		return err
	}
	if err := factorize.CheckUnder(strat, cfg.participation); err != nil {
		return cli.Usagef("-strategy %s: %s", cfg.strategy, cli.Want(err))
	}
	start := time.Now()
	f, cached, err := factorizeWith(ctx, cacheFor(cfg, e, warn), strat, w, cfg.participation, warn)
	seconds := time.Since(start).Seconds()
	if prog != nil {
		prog.Finish()
	}
	var pe *factorize.ParamError
	if errors.As(err, &pe) && pe.Param == "workload" {
		// The factorization refuses the workload's values (metrics
		// beyond float64): named by the flag that gave it.
		return fmt.Errorf("-workload %s: %s", cfg.workload, paramText(err))
	}
	if err != nil {
		return err
	}

	// B and C are formed densely only when written, each as its file is
	// written (on its own goroutine: one is written while the other is
	// still being formed).
	var fb, fc factorize.LazyFactor
	if cfg.outB != "" || cfg.outC != "" {
		if fb, fc, err = f.FactorsLazily(); err != nil {
			return fmt.Errorf("strategy %s returned no B and C to write", cfg.strategy)
		}
	}
	if cfg.outNoise != "" && f.Operator == nil {
		return fmt.Errorf("strategy %s returned no noise operator to draw -noise with", cfg.strategy)
	}
	res := newResult(f, seconds, cached)
	if err := res.checkFinite(); err != nil {
		return err
	}
	res.Plan = cfg.runPlan(r, strat)
	if cfg.calibrate {
		if err := calibrate(ctx, cfg, res.Plan, f); err != nil {
			return err
		}
		rec := res.Plan.Privacy
		res.NoiseStd, res.Sigma, res.ReleaseSensitivity = &rec.NoiseStd, &rec.Sigma, &rec.Sensitivity
	}
	var z *mat.Dense
	if cfg.outNoise != "" {
		if z, err = noiseSamples(ctx, cfg, f, res, warn); err != nil {
			return err
		}
	}
	// The outputs given, in this order: B, C, the noise samples.
	var outs []output
	for _, o := range []struct {
		what string
		out  output
	}{{"B", output{"-o", cfg.outB, fb, 0o644, cfg.sparse}}, {"C", output{"-C", cfg.outC, fc, 0o644, cfg.sparse}}, {"noise", output{"-noise", cfg.outNoise, formed(z), 0o600, false}}} {
		if o.out.path != "" {
			r, c := o.out.m.Rows, o.out.m.Cols
			outs = append(outs, o.out)
			res.Wrote = append(res.Wrote, written{What: o.what, File: o.out.path, Rows: r, Cols: c})
		}
	}
	// The report is checked and encoded before any file is written, so a
	// run that cannot report writes nothing.
	var report []byte
	switch {
	case cfg.json:
		js, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("encoding the result: %w", err)
		}
		report = append(js, '\n')
	case !cfg.quiet:
		report = []byte(res.summary(cfg.lossOnly) + "\n")
	}
	if err := writeOutputs(ctx, outs, e.stderr); err != nil {
		return err
	}
	if _, err := e.stdout.Write(report); err != nil {
		if len(res.Wrote) > 0 {
			// The files are complete and in place: say so, rather than
			// let the failure read as "nothing written".
			return fmt.Errorf("%s, but printing the report failed: %w", res.wroteText(false), err)
		}
		return err
	}
	return nil
}

// loadWorkload reads a workload matrix from a .npy file. An array whose
// data (twice its data in Fortran order, for the copy in C order) takes
// more memory than avail reports is refused from the header, before its
// data is read: the solver's own check (checkMemory) comes only once R
// is known from the loaded matrix, too late for an array larger than the
// memory. A nil avail skips the check.
func loadWorkload(path string, avail func() (uint64, error)) (*factorize.Workload, error) {
	a, err := npy.LoadChecked(path, func(shape []int, fortran bool) error {
		need := 8.0
		for _, d := range shape {
			need *= float64(d)
		}
		what := ""
		if fortran {
			need *= 2
			what = " in Fortran order (loaded with a copy in C order)"
		}
		if have, short := cli.Short(need, avail); short {
			return fmt.Errorf("shape %s%s takes about %s to load, this machine has %s available", npy.FormatShape(shape), what, cli.FormatBytes(need), cli.FormatBytes(have))
		}
		return nil
	})
	if err != nil {
		var fe *npy.FileError
		if errors.As(err, &fe) {
			err = fe.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			// Most likely a misspelt name (-workload prefx, momentum
			// without :BETA): say which names there are.
			return nil, fmt.Errorf("-workload %s: %v (want %s, momentum:BETA or a .npy file)", path, err, prefixWorkload)
		}
		return nil, fmt.Errorf("-workload %s: %v", path, err)
	}
	m, err := a.Dense()
	if err != nil {
		return nil, fmt.Errorf("-workload %s: %v", path, err)
	}
	w, err := factorize.NewWorkload(m)
	if err != nil {
		return nil, fmt.Errorf("-workload %s: %s", path, paramText(err))
	}
	return w, nil
}

// paramText words a *factorize.ParamError for a message that already names
// the flag; other errors are returned whole.
func paramText(err error) string {
	var pe *factorize.ParamError
	if errors.As(err, &pe) {
		return param.Text(pe.Param, pe.Value, pe.Want)
	}
	return err.Error()
}

// lineWriter writes each line with a prefix, for warnings from packages
// that print them without the program name. It is safe for concurrent use.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

// Write implements io.Writer; a partial line waits for its newline.
func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf = append(lw.buf, p...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := fmt.Fprintf(lw.w, "%s%s\n", lw.prefix, lw.buf[:i]); err != nil {
			return len(p), err
		}
		lw.buf = lw.buf[i+1:]
	}
}

// progressStatus is the status of the progress line for a solver report:
// the iteration and the certified gap against its target, and the order of
// the coarse level being solved, if one is.
func progressStatus(pr factorize.Progress) string {
	s := fmt.Sprintf("iteration %d  gap %.2e (target %.0e)", pr.Iter, pr.Gap, pr.Tol)
	if pr.Coarse > 0 {
		s = fmt.Sprintf("coarse level R=%d  %s", pr.Coarse, s)
	}
	return s
}
