package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/factorize"
)

// memAvailable returns the memory available to a new process in bytes:
// MemAvailable from /proc/meminfo, or MemTotal on kernels that do not report
// MemAvailable. It is an error where /proc/meminfo does not exist; the
// memory check is then skipped.
func memAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMeminfo(f)
}

// parseMeminfo reads the MemAvailable (or else MemTotal) line, in kB, of a
// /proc/meminfo file.
func parseMeminfo(r io.Reader) (uint64, error) {
	fields := map[string]uint64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		fields[name] = v * 1024
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if v, ok := fields["MemAvailable"]; ok {
		return v, nil
	}
	if v, ok := fields["MemTotal"]; ok {
		return v, nil
	}
	return 0, errors.New("no MemAvailable or MemTotal line in /proc/meminfo")
}

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

// memoryNeed estimates the bytes a run needs: the dense factors B and C
// (R x m and m x R float64) plus the working space of the strategy, about
// 4 R^2 float64 for the solvers (dense Cholesky factor, triangular inverse,
// X and the workload) and R^2 float64 for the identity (a copy of A). A
// loss-only run of the optimal solver forms no B and C; on a workload with a
// banded inverse it needs only O(R) memory and is reported as 0.
func memoryNeed(strategy string, r int, lossOnly, bandedInverse bool) float64 {
	rf := float64(r)
	factors := 8 * 2 * rf * float64(noiseRows(strategy, r))
	switch strategy {
	case factorize.StrategyOptimal:
		if lossOnly && bandedInverse {
			return 0
		}
		if lossOnly {
			return 8 * 4 * rf * rf
		}
		return factors + 8*4*rf*rf
	case factorize.StrategyBanded, factorize.StrategyBLT:
		return factors + 8*4*rf*rf
	case factorize.StrategyIdentity:
		return factors + 8*rf*rf
	}
	return factors
}

// checkMemory returns an error if the run needs more memory than avail
// reports. If avail fails, the check is skipped.
func checkMemory(cfg config, r int, bandedInverse bool, avail func() (uint64, error)) error {
	need := memoryNeed(cfg.strategy, r, cfg.lossOnly, bandedInverse)
	noise := 0.0
	if cfg.outNoise != "" {
		// The R x D noise matrix, plus as much again for the dense
		// mechanism's kept past rows.
		noise = 2 * 8 * float64(r) * float64(cfg.dim)
		need += noise
	}
	if need == 0 || avail == nil {
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
	// dense matrices (a loss-only run of it needs no check at all).
	hint := "use a smaller -R"
	switch {
	case noise > need/2:
		what, hint = "for the noise samples", "use a smaller -dim"
	case cfg.strategy == factorize.StrategyOptimal && bandedInverse:
		hint = "use -loss-only"
	}
	return fmt.Errorf("R = %d needs about %s %s, this machine has %s available; %s",
		r, formatBytes(need), what, formatBytes(float64(have)), hint)
}

// formatBytes formats n bytes with a decimal unit: "1.9 TB", "22.9 GB".
func formatBytes(n float64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for n >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f bytes", n)
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
