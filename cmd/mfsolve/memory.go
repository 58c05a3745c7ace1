package main

import (
	"fmt"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// checkMemory returns an error if the run needs more memory than avail
// reports. If avail fails, the check is skipped.
func checkMemory(cfg config, r int, bandedInverse bool, avail func() (uint64, error)) error {
	need := factorize.SolveBytes(cfg.strat, r, cfg.participation, bandedInverse)
	noise := 0.0
	if cfg.outNoise != "" {
		// The R x D noise matrix, plus the state of the mechanism's
		// stream (R past rows where the operator reads them again).
		stream := float64(factorize.StreamBytes(cfg.strat, r, cfg.dim))
		if factorize.KeepsPastRows(cfg.strat, cfg.participation) {
			stream = 8 * float64(r) * float64(cfg.dim)
		}
		noise = 8*float64(r)*float64(cfg.dim) + stream
		need += noise
	}
	have, short := cli.Short(need, avail)
	if !short {
		return nil
	}
	what := "for dense output"
	if cfg.lossOnly {
		what = "for the dense computation"
	}
	// A strategy with a loss-only path that fits can do without dense
	// matrices where parseArgs accepts -loss-only: under a participation
	// it supports, without -compare and -noise (and without -o or -C,
	// which the hint says).
	hint := "use a smaller -R"
	info, _ := factorize.Lookup(cfg.strat.Name())
	lossOnly, _ := factorize.WithLossOnly(cfg.strat, true)
	switch {
	case noise > need/2:
		what, hint = "for the noise samples", "use a smaller -dim"
	case cfg.lossOnly && need < 8*float64(r)*float64(r): // no R x R matrix
		what = "for the structured loss-only solver"
	case !cfg.lossOnly && info.LossOnlyUnder(cfg.participation) && !cfg.compare && cfg.outNoise == "" &&
		factorize.SolveBytes(lossOnly, r, cfg.participation, bandedInverse) <= have:
		hint = "use -loss-only"
		if cfg.outB != "" || cfg.outC != "" {
			hint += " without -o and -C"
		}
	}
	return fmt.Errorf("R = %d needs about %s %s, this machine has %s available; %s",
		r, cli.FormatBytes(need), what, cli.FormatBytes(have), hint)
}
