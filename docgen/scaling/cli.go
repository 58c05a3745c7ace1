package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/procusage"
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

// cliRun is one run of mfsolve as a subprocess: what the launcher measured
// of it and its output.
type cliRun struct {
	spawnReport
	Out cliResult
}

// spawnEnv, when set in this program's environment, makes it a launcher
// (see spawn) that writes its report to the file the variable names.
const spawnEnv = "DPMF_SCALING_SPAWN_REPORT"

// pinEnv, when set in a launcher's environment to n, makes it pin the
// thread that starts its command to the first n CPUs of its affinity mask
// (pinToCPUs); the command inherits the mask.
const pinEnv = "DPMF_SCALING_PIN_CPUS"

// spawnReport is what the launcher measures of the command it runs.
type spawnReport struct {
	// Seconds is the wall time of the process, start to exit.
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpu_seconds"` // user + system
	MaxRSS  int64   `json:"max_rss"`     // peak resident set size, bytes
}

// spawn runs args as a command with this process's standard streams, writes
// its wall time and peak resident set size to reportPath and returns its
// exit status.
//
// Why a launcher: Go starts a child with vfork, and Linux folds the peak RSS
// of the address space that the child replaces at exec into the child's
// ru_maxrss. Started from this (large) process, every child would report at
// least this process's own peak; started from a fresh small launcher it
// reports its own.
func spawn(args []string, reportPath string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "scaling: launcher: no command")
		return 2
	}
	if v := os.Getenv(pinEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil && n < 1 {
			err = fmt.Errorf("want at least 1")
		}
		if err == nil {
			err = pinToCPUs(n)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "scaling: launcher: %s=%q: %v\n", pinEnv, v, err)
			return 1
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, pinEnv+"=") })
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	rep := spawnReport{Seconds: time.Since(start).Seconds()}
	if cmd.ProcessState == nil {
		fmt.Fprintf(os.Stderr, "scaling: launcher: %v\n", err)
		return 1
	}
	rep.CPU, rep.MaxRSS = procusage.Child(cmd.ProcessState)
	b, _ := json.Marshal(rep)
	if werr := os.WriteFile(reportPath, b, 0o644); werr != nil {
		fmt.Fprintf(os.Stderr, "scaling: launcher: %v\n", werr)
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// runCLI runs bin with args in dir, through a launcher (see spawn), and
// parses its JSON output. When the command fails, the error carries its
// stderr and the result still holds its time and peak RSS if the launcher
// reported them.
func runCLI(ctx context.Context, dir, bin string, args []string) (cliRun, error) {
	r, stdout, err := launch(ctx, dir, nil, append([]string{bin}, args...))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(stdout, &r.Out); err != nil {
		return r, fmt.Errorf("output %q is not the JSON summary: %v", stdout, err)
	}
	return r, nil
}

// launch runs argv in dir with env added to this process's environment,
// through a launcher (see spawn), and returns its time, CPU time and peak
// RSS (Out is left empty) and its standard output. When the command fails,
// the error carries its stderr and the result still holds what the
// launcher reported.
func launch(ctx context.Context, dir string, env, argv []string) (cliRun, []byte, error) {
	self, err := os.Executable()
	if err != nil {
		return cliRun{}, nil, err
	}
	reportPath := filepath.Join(dir, "spawn-report.json")
	os.Remove(reportPath)
	cmd := exec.CommandContext(ctx, self, argv...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), spawnEnv+"="+reportPath)
	// The launcher and its command in a process group of their own (where
	// the platform has them), so that a cancelled context stops both, not
	// the launcher alone.
	ownProcessGroup(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var r cliRun
	if b, err := os.ReadFile(reportPath); err == nil {
		if err := json.Unmarshal(b, &r.spawnReport); err != nil {
			return r, nil, fmt.Errorf("launcher report %s: %v", reportPath, err)
		}
	} else if runErr == nil {
		return r, nil, fmt.Errorf("%s: no launcher report: %v", strings.Join(argv, " "), err)
	}
	if runErr != nil {
		return r, nil, fmt.Errorf("%v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	return r, stdout.Bytes(), nil
}

// cliMeasurement is the median of several runs of one mfsolve command.
type cliMeasurement struct {
	Runs    int
	Seconds float64 // median wall time (of the failed run after an error)
	MaxRSS  int64   // largest peak RSS over the runs
	Last    cliResult
}

// measureCLI runs the command reps times (fewer when slow, see runsAfter);
// before, if not nil, runs (untimed) before each run. It stops at the first
// failed run and returns its error, with that run's time.
func measureCLI(ctx context.Context, dir, bin string, args []string, reps int, before func() error) (cliMeasurement, error) {
	var m cliMeasurement
	secs, err := repeat(reps, func() (float64, error) {
		if before != nil {
			if err := before(); err != nil {
				return 0, err
			}
		}
		r, err := runCLI(ctx, dir, bin, args)
		if err != nil {
			m = cliMeasurement{Runs: 1, Seconds: r.Seconds, MaxRSS: r.MaxRSS}
			return 0, err
		}
		m.MaxRSS, m.Last = max(m.MaxRSS, r.MaxRSS), r.Out
		return r.Seconds, nil
	})
	if err != nil {
		return m, err
	}
	m.Runs, m.Seconds = len(secs), docgen.Median(secs)
	return m, nil
}
