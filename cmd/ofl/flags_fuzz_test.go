package main

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/plan"
)

// FuzzParseArgs gives ofl's run flags arbitrary text (-algo, -strategy,
// -data, -split, -calibration, -eps, -delta, -eta, -clip; a flag whose
// text is empty is left out) and small counts. Whatever the text,
// parseArgs must not panic; it refuses with a *cli.UsageError that names
// a flag, or accepts a configuration whose -data and -split are the
// values strconv reads from the text (synthetic:alpha=A,beta=B;
// feature:K, whose String reads back to the same split), and whose plan
// makes a round trip twice: through its JSON (plan.Parse of Marshal
// gives the plan back) and through ofl evaluate's flags (parseArgs of
// evaluateArgs gives the same plan). The seeds run in every plain go test.
func FuzzParseArgs(f *testing.F) {
	type seed struct {
		algo, strategy, data, split, calib string
		eps, delta, eta, clip              string
		learners, tau, rounds, epochs      uint8
		secure                             bool
		threshold                          uint8
	}
	for _, s := range []seed{
		{"correlated", "optimal", "synthetic", "", "exact", "5", "1e-3", "0.003", "5", 10, 10, 8, 1, false, 0},
		{"correlated", "banded:bands=2", "synthetic:alpha=0.5,beta=2", "", "paper", "1", "1e-5", "0.1", "1", 3, 2, 8, 2, false, 0},
		{"baseline-correlated", "blt:buffers=2", "synthetic:beta=1000", "", "", "0.7", "3e-7", "0.1234567890123", "1e-3", 3, 2, 8, 1, false, 0},
		{"independent", "", "data.csv", "feature:3", "exact", "2", "1e-10", "0.01", "1", 4, 1, 6, 3, false, 0},
		{"nonprivate", "", "data.csv", "label", "", "", "", "0.5", "0", 2, 1, 4, 1, false, 0},
		{"correlated", "tree", "synthetic", "", "", "1", "1e-5", "0.1", "1", 5, 2, 8, 1, true, 4},
		{"correlated", "optimal", "synthetic:alpha=1e-400", "", "", "1", "1e-5", "0.1", "1", 3, 2, 8, 1, false, 0},
		{"correlated", "optimal\n", "synthetic:alpha=1,alpha=2", "feature:-1", "Exact", "inf", "1", "nan", "-1", 0, 0, 0, 0, true, 9},
		{"correlated", "semiseparable", "synthetic", "", "", "1e308", "0x1p-1074", "1e308", "1e308", 255, 255, 255, 5, false, 0},
	} {
		f.Add(s.algo, s.strategy, s.data, s.split, s.calib, s.eps, s.delta, s.eta, s.clip, s.learners, s.tau, s.rounds, s.epochs, s.secure, s.threshold)
	}
	f.Fuzz(func(t *testing.T, algo, strategy, data, split, calib, eps, delta, eta, clip string, learners, tau, rounds, epochs uint8, secure bool, threshold uint8) {
		args := []string{"-seed", "9", "-learners", strconv.Itoa(int(learners)), "-tau", strconv.Itoa(int(tau)),
			"-rounds", strconv.Itoa(int(rounds)), "-epochs", strconv.Itoa(int(epochs))}
		for _, fl := range []struct{ name, v string }{
			{"algo", algo}, {"strategy", strategy}, {"data", data}, {"split", split}, {"calibration", calib},
			{"eps", eps}, {"delta", delta}, {"eta", eta}, {"clip", clip},
		} {
			if fl.v != "" {
				args = append(args, "-"+fl.name+"="+fl.v)
			}
		}
		if secure {
			args = append(args, "-secure-aggregation", "-threshold", strconv.Itoa(int(threshold)))
		}
		cfg, err := parseArgs(args)
		if err != nil {
			var ue *cli.UsageError
			msg := cli.OneLine(err.Error())
			if !errors.As(err, &ue) || !strings.Contains(" "+msg, " -") {
				t.Fatalf("%q: %T %q, want a usage error naming a flag", args, err, msg)
			}
			return
		}
		if sd, ok := strings.CutPrefix(data, "synthetic:"); ok {
			want := map[string]float64{"alpha": 0.1, "beta": 0.1}
			for _, kv := range strings.Split(sd, ",") {
				k, v, _ := strings.Cut(kv, "=")
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("%q: accepted -data %q, whose %s is not a number: %v", args, data, k, err)
				}
				want[k] = x
			}
			if len(want) != 2 || cfg.data.alpha != want["alpha"] || cfg.data.beta != want["beta"] || cfg.data.file != "" {
				t.Fatalf("%q: -data %q read as %+v", args, data, cfg.data)
			}
		}
		if split != "" {
			if back, err := dataset.ParseSplit(cfg.split.String()); err != nil || back != cfg.split {
				t.Fatalf("%q: -split %q read as %v, which reads back as %v (%v)", args, split, cfg.split, back, err)
			}
			if k, ok := strings.CutPrefix(split, "feature:"); ok {
				if x, err := strconv.Atoi(k); err != nil || cfg.split != (dataset.Split{Kind: dataset.ByFeature, Feature: x}) {
					t.Fatalf("%q: -split %q read as %v", args, split, cfg.split)
				}
			}
		}
		features := cfg.data.dim
		if cfg.data.file != "" {
			features = 4
		}
		p := cfg.runPlan(features)
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("%q: the plan of an accepted command line does not marshal: %v", args, err)
		}
		q, err := plan.Parse(b)
		if err != nil {
			t.Fatalf("%q: the plan of an accepted command line does not parse: %v\n%s", args, err, b)
		}
		if !reflect.DeepEqual(q, p) {
			t.Fatalf("%q: plan %+v parsed back as %+v", args, p, q)
		}
		ev, err := evaluateArgs(map[string]string{"seed": "9"}, p, "run.json")
		if err != nil {
			t.Fatalf("%q: evaluateArgs: %v", args, err)
		}
		back, err := parseArgs(ev)
		if err != nil {
			t.Fatalf("%q: evaluate's flags %q refused: %v", args, ev, err)
		}
		if r := back.runPlan(features); !reflect.DeepEqual(r, p) {
			t.Fatalf("%q: plan %+v read back through %q as %+v", args, p, ev, r)
		}
	})
}
