package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// compare computes every strategy on w and prints a markdown table of their
// metrics, or one JSON object per line with -json. A strategy that does not
// support the workload gets a row that says why. The table is the whole
// output: a write to stdout that fails ends the run with its error.
func compare(ctx context.Context, cfg config, w *factorize.Workload, e env) error {
	out := &cli.StickyWriter{W: e.stdout}
	warn := &lineWriter{w: e.stderr, prefix: "mfsolve: "}
	cache := cacheFor(cfg, e, warn)
	if cache != nil {
		// Stored entries of every strategy are read, but only the
		// solvers' results are stored.
		cache.Keep = compareKeeps
	}
	if !cfg.json {
		fmt.Fprintf(out, "| strategy | gamma | unit sensitivity (%v) | loss | RMSE | MaxSE | iterations | seconds |\n", cfg.participation)
		fmt.Fprintf(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	}
	for _, s := range factorize.Strategies() {
		if out.Err != nil {
			return out.Err
		}
		strat, err := factorize.ParseStrategy(s)
		if err != nil {
			return err
		}
		if strat, err = factorize.WithLossOnly(strat, false); err != nil {
			return err
		}
		start := time.Now()
		f, cached, err := factorizeWith(ctx, cache, strat, w, cfg.participation, warn)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted")
		}
		if err == nil {
			// A result that overflows gets a row that says so.
			err = newResult(f, 0, cached).checkFinite()
		}
		if err != nil {
			msg := err.Error()
			if cfg.json {
				js, _ := json.Marshal(map[string]string{"strategy": s, "error": msg})
				fmt.Fprintf(out, "%s\n", js)
			} else {
				fmt.Fprintf(out, "| %s | n/a: %s | | | | | | |\n", s, msg)
			}
			continue
		}
		res := newResult(f, time.Since(start).Seconds(), cached)
		if cfg.json {
			js, err := json.Marshal(res)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s\n", js)
			continue
		}
		exact := ""
		if !res.SensitivityExact {
			exact = " (bound)"
		}
		fmt.Fprintf(out, "| %s | %s | %s%s | %.6g | %s | %s | %d | %.2f |\n",
			s, cell(res.Gamma), cell(res.Sensitivity), exact, res.Loss, cell(res.RMSE), cell(res.MaxSE), res.Iterations, res.Seconds)
	}
	return out.Err
}

// cell formats a table entry with four decimals, or with five significant
// digits outside [1e-3, 1e9), where four decimals would print 0.0000 for a
// workload scaled by 1e-40 or forty digits for one scaled by 1e40.
func cell(v float64) string {
	if a := math.Abs(v); a == 0 || (a >= 1e-3 && a < 1e9) {
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'g', 5, 64)
}
