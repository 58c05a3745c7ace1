package main

import (
	"fmt"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
)

// noiseRows returns m, the number of rows of C for strategy at R rounds:
// one per dyadic interval for the tree, R otherwise.
func noiseRows(strategy string, r int) int {
	if strategy != factorize.StrategyTree {
		return r
	}
	m := 0
	for size := 1; size <= r; size *= 2 {
		m += r / size
	}
	return m
}

// lossOnlyFloatsPerRound bounds the float64 vectors of length R that the
// structured loss-only solver keeps: about 25 measured (peak RSS 193 MB for
// mfsolve -R 1000000 -loss-only -max-iter 3), with a margin.
const lossOnlyFloatsPerRound = 40

// memoryNeed estimates the bytes a run needs: the dense factors B and C
// (R x m and m x R float64) plus the working space of the strategy, about
// 4 R^2 float64 for the solvers (dense Cholesky factor, triangular inverse,
// X and the workload) and R^2 float64 for the identity (a copy of A). A
// loss-only run of the optimal solver forms no B and C; on a workload with a
// banded inverse (bandedInverse: and the structured path) it needs only
// O(R) memory, lossOnlyFloatsPerRound floats per round; on the dense path
// about 6 R^2 float64 (S, M and its reduction, two R x R work matrices, and
// the workload).
func memoryNeed(strategy string, r int, lossOnly, bandedInverse bool) float64 {
	rf := float64(r)
	factors := 8 * 2 * rf * float64(noiseRows(strategy, r))
	switch strategy {
	case factorize.StrategyOptimal:
		if lossOnly && bandedInverse {
			return 8 * lossOnlyFloatsPerRound * rf
		}
		if lossOnly {
			return 8 * 6 * rf * rf
		}
		return factors + 8*4*rf*rf
	case factorize.StrategySemisep:
		// The optimal solver's O(R) vectors, then the generators (3 R K
		// floats, K <= MaxSemisepBuffers) and the factors if formed.
		need := 8 * (lossOnlyFloatsPerRound + 3*factorize.MaxSemisepBuffers) * rf
		if !lossOnly {
			need += factors
		}
		return need
	case factorize.StrategyBandedToeplitz, factorize.StrategyBISR, factorize.StrategyBandInv:
		if lossOnly {
			// Coefficient vectors of length R: C's, B's and the
			// optimiser's work (a handful).
			return 8 * 8 * rf
		}
		return factors + 8*4*rf*rf
	case factorize.StrategyBanded, factorize.StrategyBLT, factorize.StrategyBSR:
		return factors + 8*4*rf*rf
	case factorize.StrategyIdentity:
		return factors + 8*rf*rf
	}
	return factors
}

// checkMemory returns an error if the run needs more memory than avail
// reports. If avail fails, the check is skipped.
func checkMemory(cfg config, r int, bandedInverse bool, avail func() (uint64, error)) error {
	// -method dense takes the dense path whatever the workload.
	need := memoryNeed(cfg.strategy, r, cfg.lossOnly, bandedInverse && cfg.method != factorize.Dense)
	noise := 0.0
	if cfg.outNoise != "" {
		// The R x D noise matrix, plus as much again for the dense
		// mechanism's kept past rows.
		noise = 2 * 8 * float64(r) * float64(cfg.dim)
		need += noise
	}
	if avail == nil {
		return nil
	}
	have, err := avail()
	if err != nil {
		return nil
	}
	if need <= float64(have) {
		return nil
	}
	what := "for dense output"
	if cfg.lossOnly {
		what = "for the dense computation"
	}
	// Only the optimal solver on a banded-inverse workload can do without
	// dense matrices, and only where parseArgs accepts -loss-only: single
	// participation, no -compare, no -noise (and no -o or -C, which the
	// hint says).
	hint := "use a smaller -R"
	switch {
	case noise > need/2:
		what, hint = "for the noise samples", "use a smaller -dim"
	case cfg.strategy == factorize.StrategyOptimal && bandedInverse && cfg.lossOnly:
		what = "for the structured loss-only solver"
	case cfg.strategy == factorize.StrategyOptimal && bandedInverse && cfg.participation.Kind == factorize.KindSingle && !cfg.compare && cfg.outNoise == "":
		hint = "use -loss-only"
		if cfg.outB != "" || cfg.outC != "" {
			hint += " without -o and -C"
		}
	}
	return fmt.Errorf("R = %d needs about %s %s, this machine has %s available; %s",
		r, cli.FormatBytes(need), what, cli.FormatBytes(float64(have)), hint)
}
