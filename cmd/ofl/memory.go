package main

import (
	"cmp"
	"fmt"
	"runtime"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
)

// memoryNeed estimates the bytes a run of c needs: the data set (n R tau
// samples of d features and a label, 8 bytes each), the traces of the
// repetitions (six series over the evaluated rounds and the final model,
// plus about 256 bytes of bookkeeping each), and for the correlated
// algorithms the strategy's solve and each worker's noise stream, as the
// registry estimates them (see factorizationNeed). The estimate is
// deliberately coarse: it turns an out-of-memory crash into a clear error.
func memoryNeed(c config, workers int) float64 {
	r := float64(c.rounds)
	dim := float64(c.data.dim)
	if c.data.file != "" {
		dim = 0 // unknown until the file is read; the data check covers it
	}
	need := 8 * float64(c.learners) * r * float64(c.tau) * (dim + 1)
	evals := r/float64(c.evalEvery) + 2
	need += float64(c.reps) * (8*6*evals + 8*dim + 256)
	if c.correlated() {
		solve, stream := factorizationNeed(c, dim)
		need += solve + float64(workers)*stream
	}
	return need
}

// factorizationNeed returns the bytes of the solve of c's strategy, with
// its factors, and of one noise stream of d-dimensional noise over the
// rounds (factorize.SolveBytes and StreamBytes, or all R past noise rows
// when its operator under c's epochs reads them again,
// factorize.KeepsPastRows; the optimal strategy's when -strategy is not a
// valid spec, which parseArgs refuses).
func factorizationNeed(c config, d float64) (solve, stream float64) {
	s, err := factorize.ParseStrategy(c.strategy)
	if err != nil {
		s = factorize.OptimalStrategy{}
	}
	if s, err = factorize.WithLossOnly(s, false); err != nil {
		s = factorize.OptimalStrategy{}
	}
	stream = float64(factorize.StreamBytes(s, c.rounds, int(d)))
	if factorize.KeepsPastRows(s, participation(c.epochs)) {
		stream = 8 * float64(c.rounds) * d
	}
	return factorize.SolveBytes(s, c.rounds, participation(c.epochs), true), stream
}

// serverMemoryNeed estimates the bytes "ofl server" needs for c: no data
// set, but the round's updates of the n learners and a few copies of the
// model of d parameters (the current and the released model, the
// aggregate, the noise row, the encoded round file), 8 bytes each, and for
// the correlated algorithms the strategy's solve and the mechanism's noise
// stream as memoryNeed counts them.
func serverMemoryNeed(c config) float64 {
	params := float64(c.data.dim)
	need := 8 * (float64(c.learners) + 6) * params
	if c.correlated() {
		solve, stream := factorizationNeed(c, params)
		need += solve + stream
	}
	return need
}

// checkMemory returns an error if the run needs more memory than avail
// reports. If avail is nil or fails, the check is skipped.
func checkMemory(c config, avail func() (uint64, error)) error {
	workers := cmp.Or(c.workers, runtime.GOMAXPROCS(0))
	return checkNeed(fmt.Sprintf("-reps %d, ", c.reps), c, memoryNeed(c, min(workers, c.reps)), avail)
}

// checkEvaluateMemory is checkMemory for "ofl evaluate": one repetition's
// data set and trace (no factorization: the privacy record is the plan's).
func checkEvaluateMemory(c config, avail func() (uint64, error)) error {
	c.reps = 1
	c.algo = fedopt.NonPrivate
	return checkNeed("", c, memoryNeed(c, 1), avail)
}

// checkNeed returns an error if need bytes are more than avail reports;
// the message names the flags of c that set it, after reps. If avail is
// nil or fails, the check is skipped.
func checkNeed(reps string, c config, need float64, avail func() (uint64, error)) error {
	have, short := cli.Short(need, avail)
	if !short {
		return nil
	}
	dim := ""
	if c.data.file == "" {
		dim = fmt.Sprintf(", -dim %d", c.data.dim)
	}
	return fmt.Errorf("%s-rounds %d, -learners %d, -tau %d%s need about %s, this machine has %s available; use smaller values",
		reps, c.rounds, c.learners, c.tau, dim, cli.FormatBytes(need), cli.FormatBytes(have))
}
