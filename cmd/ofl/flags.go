package main

import (
	"cmp"
	"errors"
	"flag"
	"math"
	"strings"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/plan"
	"github.com/dpmf/dpmf/secagg"
)

// config is a parsed command line.
type config struct {
	algo        fedopt.Algorithm
	strategy    string
	data        dataSpec
	split       dataset.Split
	learners    int
	tau         int
	rounds      int
	epochs      int
	eta, etaG   float64
	etaInd      float64
	clip        float64
	l2          float64
	eps, delta  float64
	calibration plan.Calibration
	reps        int
	workers     int
	evalEvery   int
	seed        uint64
	seedSet     bool
	out         string
	json        bool
	quiet       bool
	// secure is -secure-aggregation, threshold its -threshold T (0: the
	// default floor(2n/3) + 1), colluders its -colluders c (the learners
	// that may collude with the server: 2T > n + c) and quantizer its
	// quantization (nil without).
	secure    bool
	threshold int
	colluders int
	quantizer *secagg.Quantizer
	// raw holds the flags that are parsed after flag.Parse.
	raw struct {
		algo, calibration, split, data string
		dim                            int
	}
}

// dataSpec is the -data flag: synthetic(alpha, beta) of dimension dim, or a
// CSV file.
type dataSpec struct {
	file        string
	alpha, beta float64
	dim         int
}

// maxSyntheticBeta is the largest beta of -data synthetic:alpha=A,beta=B.
// beta scales the features (their means are N(B_i, 1), B_i ~ N(0, beta^2)),
// so the logistic Hessian's entries grow as beta^2 against the L2 term and
// the features' unit-scale spread: at the default -l2 1e-4 and d = 60 the
// reference minimiser (Newton with Cholesky) fails from about beta = 3e4
// (a Hessian singular to float64, or a gradient norm that rounding keeps
// above 1e-10), long before the features overflow (beta near 1e153).
// 1000 leaves a factor 30 in beta (about 10^3 in beta^2) below the first
// failures; a smaller -l2 lowers them, and is named by the minimiser.
const maxSyntheticBeta = 1000.0

// parseData parses "synthetic", "synthetic:alpha=A,beta=B" or a file name.
func parseData(s string, dim int) (dataSpec, error) {
	d := dataSpec{alpha: 0.1, beta: 0.1, dim: dim}
	switch {
	case s == "synthetic":
		return d, nil
	case strings.HasPrefix(s, "synthetic:"):
		unset := map[string]*float64{"alpha": &d.alpha, "beta": &d.beta}
		for _, kv := range strings.Split(strings.TrimPrefix(s, "synthetic:"), ",") {
			k, v, ok := strings.Cut(kv, "=")
			x, err := cli.ParseFloat(v) // 1e-400 is refused, not read as 0
			if !ok || err != nil || unset[k] == nil || !(x >= 0) || math.IsInf(x, 1) {
				return d, cli.Usagef("-data %q: want synthetic:alpha=A,beta=B with A, B finite and >= 0", s)
			}
			if k == "beta" && x > maxSyntheticBeta {
				return d, cli.Usagef("-data %q: beta %v, want 0 <= beta <= %g (beta scales the features; the reference minimiser loses its precision above it)", s, x, maxSyntheticBeta)
			}
			*unset[k] = x
			delete(unset, k) // each key once
		}
		return d, nil
	case s == "":
		return d, cli.Usagef("-data is empty: want %s", dataWant)
	}
	d.file = s
	return d, nil
}

const usageText = `Usage: ofl [flags]
       ofl reproduce PART... -out DIR [-quick]   (the paper's figures; ofl reproduce -h)
       ofl server | learner | evaluate ...        (separate processes over gRPC; ofl server -h,
                                                   docs/distributed.md)

Runs the online federated optimiser (Algorithm 1 of Zhang, Zhu and
Johansson, or its baseline) on one configuration, -reps times.

Example: the paper's Fig. 4 setting (the defaults), then the baseline at
(1, 1e-3)-DP, each writing rounds.csv and printing one JSON object:

  ofl -out fig4/correlated-eps5 -json
  ofl -algo independent -eps 1 -out fig4/independent-eps1 -json

Flags:
`

// newFlagSet defines the flags on a fresh FlagSet bound to c.
func newFlagSet(c *config) *flag.FlagSet {
	fs := cli.NewFlagSet("ofl")
	fs.StringVar(&c.raw.algo, "algo", "correlated", "algorithm: correlated (Algorithm 1), independent (the baseline), baseline-correlated (the baseline's update with correlated noise) or nonprivate")
	fs.StringVar(&c.strategy, "strategy", "optimal", "factorization of the correlated noise, a strategy `SPEC` NAME[:KEY=VALUE,...] (blt:buffers=2, banded:bands=64; mfsolve -h lists the settings) with NAME one of "+strings.Join(factorize.Strategies(), ", "))
	fs.StringVar(&c.raw.data, "data", "synthetic", "data: synthetic (alpha = beta = 0.1), synthetic:alpha=A,beta=B (A >= 0 finite, 0 <= B <= 1000), or a CSV file (label first, +-1 or 0/1)")
	fs.IntVar(&c.raw.dim, "dim", 60, "feature dimension d of synthetic data")
	fs.StringVar(&c.raw.split, "split", "iid", "how CSV rows are dealt to learners: iid, label (sorted by label) or feature:K (sorted by feature K)")
	fs.IntVar(&c.learners, "learners", 10, "number of learners n")
	fs.IntVar(&c.tau, "tau", 10, "local steps per round (one new client each)")
	fs.IntVar(&c.rounds, "rounds", 800, "communication rounds R")
	fs.IntVar(&c.epochs, "epochs", 1, "replay each learner's clients for `K` epochs: the data has R/K rounds, each seen K times (K must divide R); the noise is calibrated to the factorization's sensitivity under K fixed epochs")
	fs.Float64Var(&c.eta, "eta", 0.003, "local step size eta; max(eta, eta eta_g, eta_ind) tau max(B_g, 1) must be at most 1.8e308 (a round's noise-free move must fit a float64)")
	fs.Float64Var(&c.etaG, "eta-g", 1, "global step size eta_g; the server step is eta~ = eta eta_g tau")
	fs.Float64Var(&c.etaInd, "eta-ind", 0, "server step of independent and baseline-correlated (0: eta eta_g)")
	fs.Float64Var(&c.clip, "clip", 5, "per-sample gradient clipping bound B_g (0: none, nonprivate only)")
	fs.Float64Var(&c.l2, "l2", 1e-4, "L2 coefficient of the logistic loss")
	fs.Float64Var(&c.eps, "eps", 5, "privacy budget epsilon")
	cli.Float64DownVar(fs, &c.delta, "delta", 1e-3, "privacy budget delta (a subnormal is read as the largest float64 not above it)")
	fs.StringVar(&c.raw.calibration, "calibration", "exact", "noise calibration: exact (analytic Gaussian, sensitivity 2 gamma B_g / n) or paper (the paper's formulas)")
	fs.IntVar(&c.reps, "reps", 20, "repetitions (noise drawn afresh; the data is the same)")
	fs.IntVar(&c.workers, "workers", 0, "repetitions run in parallel (0: one per CPU)")
	fs.IntVar(&c.evalEvery, "eval-every", 20, "evaluate the loss error over all data every this many rounds (and at R)")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the data and the noise (default: drawn from crypto/rand and printed, seed=N (rerun with -seed N), or \"seed\" and \"seed_drawn\": true in -json)")
	fs.StringVar(&c.out, "out", "", "write DIR/rounds.csv")
	fs.BoolVar(&c.json, "json", false, "print one JSON object")
	fs.BoolVar(&c.quiet, "quiet", false, "print no summary and no progress bar")
	fs.BoolVar(&c.secure, "secure-aggregation", false, "secure aggregation: updates quantized to the ring Z_2^64 (the plan's scale bits and quantization term; the calibration includes the term)")
	fs.IntVar(&c.threshold, "threshold", 0, "with -secure-aggregation, the threshold `T` of learners that must survive each phase, n/2 < T <= n (0: floor(2n/3)+1)")
	fs.IntVar(&c.colluders, "colluders", 0, "with -secure-aggregation, the most learners `C` that may collude with the server, recorded in the plan: the server learns only the sums if 2T > n + C (the default T allows C <= 2 floor(2n/3) + 1 - n, 3 of n = 10; 0 assumes none)")
	return fs
}

// parseArgs parses and checks the command line. Every error is a
// *cli.UsageError, except flag.ErrHelp for -h.
func parseArgs(args []string) (config, error) {
	var c config
	set, err := cli.ParseFlags(newFlagSet(&c), args, nil, "", "", cli.Once)
	if err != nil {
		return c, err
	}
	algo, calib, split, data, dim := c.raw.algo, c.raw.calibration, c.raw.split, c.raw.data, c.raw.dim
	c.seedSet = set["seed"]

	if c.algo, err = fedopt.ParseAlgorithm(algo); err != nil {
		return c, cli.Usagef("-algo %q: want correlated, independent, baseline-correlated or nonprivate", algo)
	}
	if c.calibration, err = plan.ParseCalibration(calib); err != nil {
		return c, cli.Usagef("-calibration %q: want exact or paper", calib)
	}
	strat, err := factorize.ParseStrategy(c.strategy)
	if err != nil {
		return c, cli.Usagef("-strategy %s: %s", c.strategy, cli.Want(err))
	}
	switch {
	case set["strategy"] && !c.correlated():
		return c, cli.Usagef("-strategy applies to -algo correlated and baseline-correlated only (the baseline uses independent noise, nonprivate none)")
	case dim < 1:
		return c, cli.Usagef("-dim %d: want >= 1", dim)
	}
	if c.data, err = parseData(data, dim); err != nil {
		return c, err
	}
	if c.data.file != "" && set["dim"] {
		return c, cli.Usagef("-dim applies to synthetic data only (a CSV file sets d)")
	}
	if c.split, err = dataset.ParseSplit(split); err != nil {
		return c, cli.Usagef("-split %q: want iid, label or feature:K", split)
	}
	if c.data.file == "" && set["split"] {
		return c, cli.Usagef("-split applies to CSV data only (synthetic data is split by learner)")
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"learners", c.learners}, {"tau", c.tau}, {"rounds", c.rounds}, {"reps", c.reps}, {"epochs", c.epochs}} {
		if p.v < 1 {
			return c, cli.Usagef("-%s %d: want >= 1", p.name, p.v)
		}
	}
	if c.rounds%c.epochs != 0 {
		return c, cli.Usagef("-epochs %d: -rounds %d is not a whole number of epochs", c.epochs, c.rounds)
	}
	if err := factorize.CheckUnder(strat, participation(c.epochs)); err != nil {
		return c, cli.Usagef("-strategy %s: %s", c.strategy, cli.Want(err))
	}
	switch private, t := c.algo.Private(), c.threshold; {
	case set["out"] && c.out == "":
		return c, cli.Usagef("-out is empty: want a directory")
	case c.workers < 0:
		return c, cli.Usagef("-workers %d: want >= 0", c.workers)
	case c.evalEvery < 1:
		return c, cli.Usagef("-eval-every %d: want >= 1", c.evalEvery)
	case !(c.l2 >= 0) || math.IsInf(c.l2, 1):
		return c, cli.Usagef("-l2 %v: want a finite number >= 0", c.l2)
	case private && (!(c.eps > 0) || math.IsInf(c.eps, 1)):
		return c, cli.Usagef("-eps %v: want a finite number > 0", c.eps)
	case private && !(c.delta > 0 && c.delta < 1):
		return c, cli.Usagef("-delta %v: want 0 < delta < 1", c.delta)
	case !private && (set["eps"] || set["delta"] || set["calibration"]):
		return c, cli.Usagef("-eps, -delta and -calibration apply to the private algorithms only")
	case set["eta-ind"] && c.algo.LocalSteps():
		return c, cli.Usagef("-eta-ind applies to -algo independent and baseline-correlated only")
	case set["threshold"] && !c.secure:
		return c, cli.Usagef("-threshold applies with -secure-aggregation only")
	case set["colluders"] && !c.secure:
		return c, cli.Usagef("-colluders applies with -secure-aggregation only")
	case c.secure && !(c.clip > 0):
		return c, cli.Usagef("-clip %v with -secure-aggregation: want a finite number > 0 (updates of norm at most tau B_g are quantized)", c.clip)
	case c.secure && (c.learners < 2 || c.learners > secagg.MaxLearners):
		return c, cli.Usagef("-learners %d with -secure-aggregation: want 2..%d learners (the protocol's secret shares are over GF(2^8))", c.learners, secagg.MaxLearners)
	case c.secure && t != 0 && !(2*t > c.learners && t <= c.learners):
		return c, cli.Usagef("-threshold %d: want n/2 < T <= n for -learners %d (or 0: %d)", t, c.learners, plan.DefaultThreshold(c.learners))
	}
	if c.secure {
		t := c.threshold
		if t == 0 {
			t = plan.DefaultThreshold(c.learners)
		}
		if err := plan.CheckColluders(c.learners, t, c.colluders); err != nil {
			return c, cli.Usagef("-%v (-threshold %d, -learners %d)", err, t, c.learners)
		}
		q, err := secagg.NewQuantizer(c.learners, c.tau, c.clip)
		if err != nil {
			return c, cli.Usagef("-secure-aggregation with -learners %d, -tau %d, -clip %v: %s", c.learners, c.tau, c.clip, strings.TrimPrefix(err.Error(), "secagg: "))
		}
		c.quantizer = &q
	}
	// CheckSteps: each step size finite can still overflow with tau and
	// B_g (-eta 1e308 -tau 10).
	if err := cmp.Or(c.optimiser().Validate(), c.optimiser().CheckSteps(c.tau)); err != nil {
		var pe *fedopt.ParamError
		if errors.As(err, &pe) {
			if name, ok := configFlags[pe.Param]; ok {
				return c, cli.Usagef("-%s %v: want %s", name, pe.Value, pe.Want)
			}
		}
		return c, cli.Usagef("%v", err)
	}
	return c, nil
}

// configFlags maps the parameters of fedopt.Config, as a *fedopt.ParamError
// names them, to the flags that set them.
var configFlags = map[string]string{
	"eta": "eta", "eta_g": "eta-g", "eta_ind": "eta-ind", "clip": "clip", "eval-every": "eval-every",
}

// correlated reports whether c's algorithm adds correlated noise (and
// takes -strategy).
func (c *config) correlated() bool {
	return c.algo == fedopt.Correlated || c.algo == fedopt.BaselineCorrelated
}

// optimiser returns the library configuration of c.
func (c *config) optimiser() fedopt.Config {
	return fedopt.Config{
		Algorithm: c.algo,
		Eta:       c.eta,
		EtaG:      c.etaG,
		EtaInd:    c.etaInd,
		Clip:      c.clip,
		EvalEvery: c.evalEvery,
		Quantizer: c.quantizer,
	}
}
