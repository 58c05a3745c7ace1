package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/internal/cli"
)

// contradict returns a value of run flag k that differs from v.
func contradict(k, v string) string {
	switch k {
	case "algo":
		if v == "correlated" {
			return "baseline-correlated"
		}
		return "correlated"
	case "strategy":
		if v == "tree" {
			return "sqrt"
		}
		return "tree"
	case "calibration":
		if v == "exact" {
			return "paper"
		}
		return "exact"
	case "secure-aggregation":
		return strconv.FormatBool(v != "true")
	}
	if n, err := strconv.Atoi(v); err == nil {
		return strconv.Itoa(n + 1)
	}
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		if x == 0 {
			return "0.5"
		}
		return strconv.FormatFloat(x/2, 'g', -1, 64)
	}
	panic("no contradicting value for -" + k + " " + v)
}

// Every run flag the plan records, given to evaluate with another value,
// is a usage error naming both values; this includes -secure-aggregation
// against a plan without secure aggregation (before, evaluate took it,
// and evaluated a run that the plan says had none). Flags the plan does
// not record (data, evaluation and output flags) are taken as given.
func TestEvaluateRefusesEveryContradiction(t *testing.T) {
	base := []string{"-learners", "3", "-tau", "2", "-rounds", "8", "-seed", "9"}
	for _, run := range [][]string{
		{"-eps", "1", "-delta", "1e-5", "-strategy", "banded:bands=2", "-epochs", "2"},
		{"-eps", "1", "-delta", "1e-5", "-secure-aggregation", "-threshold", "3"},
		{"-algo", "independent", "-eta-ind", "0.05", "-calibration", "paper"},
		{"-algo", "nonprivate"},
	} {
		cfg, err := parseArgs(append(run, base...))
		if err != nil {
			t.Fatalf("%v: %v", run, err)
		}
		p := cfg.runPlan(4)
		recorded, err := planArgs(p)
		if err != nil {
			t.Fatal(err)
		}
		if p.SecureAggregation == nil {
			// The flags runPlan reads but a plan without secure
			// aggregation holds no field of.
			recorded["secure-aggregation"] = "false"
		}
		for k, v := range recorded {
			w := contradict(k, v)
			_, err := evaluateArgs(map[string]string{"seed": "9", k: w}, p, "run.json")
			var ue *cli.UsageError
			want := "-" + k + " " + w + " contradicts the run's plan in run.json: " + k + " " + v
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: evaluate -%s %s: %v, want a usage error %q", run, k, w, err, want)
			}
		}
		given := map[string]string{"seed": "9", "eval-every": "3", "data": "synthetic:alpha=0.5,beta=0.5", "json": "true", "out": "o"}
		args, err := evaluateArgs(given, p, "run.json")
		if err != nil {
			t.Fatalf("%v: flags the plan does not record: %v", run, err)
		}
		if _, err := parseArgs(args); err != nil {
			t.Errorf("%v: %v: %v", run, args, err)
		}
	}
}
