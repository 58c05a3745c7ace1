package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// cliResult is the JSON object that `mfsolve -json` prints (docs/cli.md).
type cliResult struct {
	R          int     `json:"R"`
	Strategy   string  `json:"strategy"`
	Loss       float64 `json:"loss"`
	FrobBSq    float64 `json:"frob_B_sq"`
	Iterations int     `json:"iterations"`
	Gap        float64 `json:"gap"`
	Seconds    float64 `json:"seconds"`
	Cached     bool    `json:"cached"`
}

// cliRun is one run of mfsolve as a subprocess.
type cliRun struct {
	Seconds float64 // wall time of the process, start to exit
	MaxRSS  int64   // peak resident set size in bytes
	Out     cliResult
}

// runCLI runs bin with args in dir and parses its JSON output.
func runCLI(ctx context.Context, dir, bin string, args []string) (cliRun, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		return cliRun{}, fmt.Errorf("mfsolve %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var r cliRun
	r.Seconds = secs
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if err := json.Unmarshal(stdout.Bytes(), &r.Out); err != nil {
		return cliRun{}, fmt.Errorf("mfsolve %s: output %q is not the JSON summary: %v", strings.Join(args, " "), stdout.String(), err)
	}
	return r, nil
}

// cliMeasurement is the median of several runs of one mfsolve command.
type cliMeasurement struct {
	Runs    int
	Seconds float64 // median wall time
	MaxRSS  int64   // largest peak RSS over the runs
	Last    cliResult
}

// measureCLI runs the command reps times (fewer when slow, see runsAfter);
// before, if not nil, runs (untimed) before each run.
func measureCLI(ctx context.Context, dir, bin string, args []string, reps int, before func() error) (cliMeasurement, error) {
	var m cliMeasurement
	var secs []float64
	runs := reps
	for i := 0; i < runs; i++ {
		if before != nil {
			if err := before(); err != nil {
				return m, err
			}
		}
		r, err := runCLI(ctx, dir, bin, args)
		if err != nil {
			return m, err
		}
		secs = append(secs, r.Seconds)
		m.MaxRSS = max(m.MaxRSS, r.MaxRSS)
		m.Last = r.Out
		if i == 0 {
			runs = runsAfter(reps, r.Seconds)
		}
	}
	m.Runs = len(secs)
	m.Seconds = median(secs)
	return m, nil
}
