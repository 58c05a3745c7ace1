package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/cli"
	"github.com/dpmf/dpmf/mechanism"
)

// usagef returns a usage error (exit status 2).
var usagef = cli.Usagef

// prefixWorkload is the -workload value of the prefix-sum workload.
const prefixWorkload = "prefix"

// config is the parsed command line.
type config struct {
	methodName string
	method     factorize.Method
	r          int
	rSet       bool // -R was given explicitly
	strategy   string
	workload   string // prefixWorkload or a .npy file
	tol        float64
	tolSet     bool // -tol was given explicitly
	maxIter    int
	bands      int
	buffers    int
	lossOnly   bool
	// participation is the -participation pattern.
	participation factorize.Participation

	outB, outC string

	cacheDir string
	noCache  bool
	// budget is the cache's size budget in bytes (-cache-budget, else
	// DPMF_CACHE_BUDGET, else 1 GiB; negative: unlimited); 0 turns the
	// cache off. budgetSet says -cache-budget was given.
	budget    int64
	budgetSet bool
	json      bool
	quiet     bool

	// Privacy calibration: set when -eps or -delta is given.
	calibrate   bool
	eps, delta  float64
	clip        float64
	learners    int
	calibration string
	relation    accountant.Relation
	// sampling is the cyclic Poisson sampling probability q (0: none).
	sampling float64

	// Noise samples: -noise FILE with -dim, -std (or the calibrated std)
	// and -seed.
	outNoise string
	dim      int
	std      float64
	seed     uint64
	seedSet  bool
	// memory is -memory: how the dense and Toeplitz mechanisms get past
	// noise rows (auto, keep or regenerate).
	memory string

	// compare runs every strategy and prints a table.
	compare bool
}

const usageText = `Usage: mfsolve [flags]

mfsolve computes a matrix factorization A = B C of the prefix-sum workload
A (R x R, ones on and below the diagonal) for correlated-noise private
learning, writes B (R x m) and optionally C (m x R) as float64 .npy files, and
prints its metrics. Results are cached on disk.

Examples:
  mfsolve -R 800 -o B.npy                optimal factorization for 800 rounds
  mfsolve -R 800 -o B.npy -C C.npy       write C as well
  mfsolve -R 2000 -strategy tree -json   metrics of binary-tree aggregation
  mfsolve -R 100000 -loss-only           optimal loss without dense matrices
  mfsolve -workload A.npy -o B.npy       a workload matrix of your own
  mfsolve -workload momentum:0.9 -R 500  SGD with momentum 0.9
  mfsolve -R 800 -eps 5 -delta 1e-3 -clip 1 -learners 10
                                         noise std for (5, 1e-3)-DP online FL
  mfsolve -R 512 -strategy banded -bands 64 -participation minsep:64
                                         metrics when a sample returns at
                                         most every 64 rounds
  mfsolve -R 800 -noise Z.npy -dim 60 -std 0.4 -seed 1
                                         800 x 60 correlated noise samples
  mfsolve -R 1000 -compare               a table of every strategy
  mfsolve cache list                     the cache's entries and budget
  mfsolve cache clear                    remove every cache entry

Flags:
`

const usageTail = `
Exit status: 0 on success, 2 on a usage error, 1 on any other error.
Documentation: docs/cli.md.
`

// newFlagSet defines the flags on cfg.
func newFlagSet(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("mfsolve", flag.ContinueOnError)
	fs.IntVar(&cfg.r, "R", 800, "number of rounds `R` (the order of the workload)")
	fs.StringVar(&cfg.strategy, "strategy", factorize.StrategyOptimal,
		"factorization strategy `NAME`, one of: "+strings.Join(factorize.Strategies(), ", "))
	fs.StringVar(&cfg.workload, "workload", prefixWorkload,
		"workload: prefix, momentum:BETA (SGD with heavy-ball momentum), or a `FILE`.npy holding a square lower-triangular float64 matrix (sets R)")
	fs.StringVar(&cfg.methodName, "method", "auto", "path `P` of the optimal solver: auto, structured (workloads with a banded inverse: O(R) per iteration) or dense (any workload: O(R^3) per iteration)")
	fs.Float64Var(&cfg.tol, "tol", factorize.DefaultTol, "stop the optimal solver (-strategy optimal, semiseparable, or banded under -participation minsep, whose default is 1e-08) when its certified relative duality gap is at most `TOL`")
	fs.IntVar(&cfg.maxIter, "max-iter", factorize.DefaultMaxIter, "iteration limit `N` of the solver of -strategy optimal, semiseparable, or banded under -participation minsep (reaching it is an error)")
	fs.IntVar(&cfg.bands, "bands", 0, "number of bands `N` of C for -strategy banded, bsr and banded-toeplitz (0: 16, or the separation B under -participation minsep:B if smaller), of C^{-1} for bisr and bandinv (0: 16)")
	fs.IntVar(&cfg.buffers, "buffers", 0, "number of buffers `K` for -strategy blt (0: its default) and of state vectors for -strategy semiseparable (0: the fewest within 0.1% of the optimal loss)")
	fs.BoolVar(&cfg.lossOnly, "loss-only", false, "compute only the metrics of -strategy optimal or semiseparable (single participation), banded-toeplitz, bisr or bandinv (single or min-separation), not B and C (cannot be used with -o or -C)")
	fs.Func("participation", "participation `PATTERN` of one sample: single (one round), epochs:K (K epochs of R/K rounds), or minsep:B[,K] (at most K rounds, B apart; K defaults to as many as fit); the sensitivity, loss, RMSE, MaxSE and the calibration are under it (default single)", func(v string) error {
		p, err := factorize.ParseParticipation(v)
		if err != nil {
			return errors.New(paramWant(err))
		}
		cfg.participation = p
		return nil
	})
	fs.StringVar(&cfg.outB, "o", "", "write B to `FILE` (.npy, R x m float64)")
	fs.StringVar(&cfg.outC, "C", "", "write C to `FILE` (.npy, m x R float64)")
	fs.StringVar(&cfg.cacheDir, "cache", "", "keep the cache in directory `DIR` (default: the user cache directory + /dpmf)")
	fs.BoolVar(&cfg.noCache, "no-cache", false, "neither read nor write the cache")
	fs.Func("cache-budget", "keep the cache within `SIZE` (500M, 2G, ...; K, M, G, T are powers of 1024), evicting the least recently used entries; 0: no cache, unlimited: no limit (default: $DPMF_CACHE_BUDGET, else 1G)", func(v string) error {
		b, err := parseSize(v)
		if err != nil {
			return err
		}
		cfg.budget, cfg.budgetSet = b, true
		return nil
	})
	fs.BoolVar(&cfg.json, "json", false, "print the result as one JSON object instead of the summary line")
	fs.BoolVar(&cfg.quiet, "quiet", false, "print neither the progress line nor the summary line")
	fs.Float64Var(&cfg.eps, "eps", 0, "calibrate the noise for (`EPS`, delta)-DP (with -delta)")
	fs.Float64Var(&cfg.delta, "delta", 0, "calibrate the noise for (eps, `DELTA`)-DP (with -eps)")
	fs.Float64Var(&cfg.clip, "clip", 1, "per-sample gradient clipping norm `B_g` for the calibration")
	fs.IntVar(&cfg.learners, "learners", 1, "number of learners `n` whose clipped updates are averaged each round")
	fs.StringVar(&cfg.calibration, "calibration", "exact", "calibration `METHOD`: exact (analytic Gaussian, release sensitivity 2 sens B_g / n for replace-one, sens the sensitivity of C under -participation) or paper (the paper's formula, sensitivity 2 sens B_g)")
	fs.Float64Var(&cfg.sampling, "sampling", 0, "amplified banded accounting: cyclic Poisson sampling with probability `Q` in (0, 1] over b groups for a b-banded C (-strategy banded or bsr), ceil(R/b) compositions of the subsampled Gaussian (Choquette-Choo et al. 2023, Thm. 4); add/remove neighbours unless -relation replace-one (an upper bound); with -eps and -delta")
	fs.Func("relation", "neighbouring `RELATION` of the calibration: replace-one (default; one sample moves its learner's update by 2 B_g) or add-remove (by B_g)", func(v string) error {
		r, err := accountant.ParseRelation(v)
		if err != nil {
			return err
		}
		cfg.relation = r
		return nil
	})
	fs.StringVar(&cfg.outNoise, "noise", "", "write R x D noise samples (row r = round r's noise vector) to `FILE` (.npy)")
	fs.IntVar(&cfg.dim, "dim", 1, "dimension `D` of each noise vector for -noise")
	fs.Float64Var(&cfg.std, "std", 0, "standard deviation `V` of the independent noise Z for -noise (default: the calibrated noise std)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "seed `N` of the noise for -noise (default: a key from crypto/rand, not reproducible)")
	fs.StringVar(&cfg.memory, "memory", "auto", "how the noise mechanism of -noise gets past noise rows: `MODE` auto (keep them up to 1 GiB, else regenerate, with a warning), keep, or regenerate")
	fs.BoolVar(&cfg.compare, "compare", false, "compute every strategy and print a table of their metrics (markdown; JSON lines with -json)")
	return fs
}

// printUsage writes the usage text with the flag defaults to w.
func printUsage(w io.Writer) {
	var cfg config
	fs := newFlagSet(&cfg)
	fs.SetOutput(w)
	fmt.Fprint(w, usageText)
	fs.PrintDefaults()
	fmt.Fprint(w, summaryHelp())
	fmt.Fprint(w, usageTail)
}

// parseArgs parses and checks the command line. It returns flag.ErrHelp
// for -h and a *cli.UsageError for anything else that is wrong.
func parseArgs(args []string) (config, error) {
	cfg := config{relation: accountant.ReplaceOne}
	fs := newFlagSet(&cfg)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, usagef("%v (mfsolve -h for help)", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.rSet = set["R"]
	cfg.tolSet = set["tol"]

	if fs.NArg() > 0 {
		return cfg, usagef("unexpected argument %q: output files are given with -o and -C", fs.Arg(0))
	}
	if cfg.r < 1 {
		return cfg, usagef("-R %d: the number of rounds must be at least 1", cfg.r)
	}
	if !slices.Contains(factorize.Strategies(), cfg.strategy) {
		return cfg, usagef("-strategy %q: unknown strategy, want one of %s", cfg.strategy, strings.Join(factorize.Strategies(), ", "))
	}
	if cfg.workload == "" {
		return cfg, usagef("-workload is empty: want prefix or a .npy file")
	}
	switch cfg.methodName {
	case "auto":
		cfg.method = factorize.Auto
	case "structured":
		cfg.method = factorize.Structured
	case "dense":
		cfg.method = factorize.Dense
	default:
		return cfg, usagef("-method %q: want auto, structured or dense", cfg.methodName)
	}
	if cfg.method != factorize.Auto && cfg.strategy != factorize.StrategyOptimal {
		return cfg, usagef("-method %s applies to -strategy optimal only, not %s", cfg.methodName, cfg.strategy)
	}
	if math.IsNaN(cfg.tol) || math.IsInf(cfg.tol, 0) || cfg.tol <= 0 {
		return cfg, usagef("-tol %v: want a finite number > 0", cfg.tol)
	}
	if cfg.maxIter < 1 {
		return cfg, usagef("-max-iter %d: want at least 1", cfg.maxIter)
	}
	if cfg.bands < 0 {
		return cfg, usagef("-bands %d: want a number >= 1 (or 0 for the default)", cfg.bands)
	}
	if set["bands"] && !usesBands(cfg.strategy) {
		return cfg, usagef("-bands applies only to -strategy banded, bsr, banded-toeplitz, bisr and bandinv, not %s", cfg.strategy)
	}
	if cfg.buffers < 0 {
		return cfg, usagef("-buffers %d: want a number >= 1 (or 0 for the default)", cfg.buffers)
	}
	if set["buffers"] && cfg.strategy != factorize.StrategyBLT && cfg.strategy != factorize.StrategySemisep {
		return cfg, usagef("-buffers applies only to -strategy blt and semiseparable, not %s", cfg.strategy)
	}
	for _, f := range []string{"tol", "max-iter"} {
		if !set[f] || cfg.compare || cfg.strategy == factorize.StrategyOptimal || cfg.strategy == factorize.StrategySemisep {
			continue
		}
		if cfg.strategy != factorize.StrategyBanded {
			return cfg, usagef("-%s applies only to -strategy optimal, semiseparable and banded, not %s", f, cfg.strategy)
		}
		if cfg.participation.Kind != factorize.KindMinSep {
			return cfg, usagef("-%s applies to -strategy banded only under -participation minsep:B (its certified solver), not %v", f, cfg.participation)
		}
	}
	if cfg.lossOnly && cfg.strategy != factorize.StrategyOptimal && cfg.strategy != factorize.StrategySemisep && !bandedLossOnly(cfg.strategy) {
		return cfg, usagef("-loss-only applies only to -strategy optimal, semiseparable, banded-toeplitz, bisr and bandinv, not %s", cfg.strategy)
	}
	if err := cfg.participation.Validate(cfg.r); err != nil && !strings.HasSuffix(cfg.workload, ".npy") {
		return cfg, usagef("-participation %v: %s", cfg.participation, paramWant(err))
	}
	if cfg.lossOnly && cfg.participation.Kind != factorize.KindSingle && !(bandedLossOnly(cfg.strategy) && cfg.participation.Kind == factorize.KindMinSep) {
		return cfg, usagef("-loss-only gives no C to compute the sensitivity under -participation %v: drop -loss-only", cfg.participation)
	}
	for _, f := range []string{"o", "C", "noise", "cache"} {
		if set[f] && fs.Lookup(f).Value.String() == "" {
			want := "a file name"
			if f == "cache" {
				want = "a directory"
			}
			return cfg, usagef("-%s is empty: want %s", f, want)
		}
	}
	if cfg.lossOnly && (cfg.outB != "" || cfg.outC != "") {
		return cfg, usagef("-loss-only computes no B or C to write: drop -o and -C, or -loss-only")
	}
	if cfg.outB != "" && cfg.outC != "" && filepath.Clean(cfg.outB) == filepath.Clean(cfg.outC) {
		return cfg, usagef("-o and -C are the same file %s", cfg.outB)
	}
	if cfg.noCache && set["cache"] {
		return cfg, usagef("-cache and -no-cache contradict each other")
	}
	if cfg.noCache && set["cache-budget"] {
		return cfg, usagef("-cache-budget and -no-cache contradict each other")
	}
	if err := checkPrivacyFlags(&cfg, set); err != nil {
		return cfg, err
	}
	if err := checkNoiseFlags(&cfg, set); err != nil {
		return cfg, err
	}
	if cfg.compare {
		for _, f := range []string{"strategy", "o", "C", "noise", "loss-only"} {
			if set[f] {
				return cfg, usagef("-compare computes every strategy and writes no files: drop -%s", f)
			}
		}
	}
	return cfg, nil
}

// checkPrivacyFlags validates the calibration flags where they enter.
func checkPrivacyFlags(cfg *config, set map[string]bool) error {
	cfg.calibrate = set["eps"] || set["delta"]
	if !cfg.calibrate {
		for _, f := range []string{"clip", "learners", "calibration", "relation", "sampling"} {
			if set[f] {
				return usagef("-%s is a calibration flag: give -eps and -delta too", f)
			}
		}
		return nil
	}
	if !set["eps"] || !set["delta"] {
		return usagef("the calibration needs both -eps and -delta")
	}
	if math.IsNaN(cfg.eps) || math.IsInf(cfg.eps, 0) || cfg.eps <= 0 {
		return usagef("-eps %v: want a finite number > 0", cfg.eps)
	}
	if math.IsNaN(cfg.delta) || cfg.delta <= 0 || cfg.delta >= 1 {
		return usagef("-delta %v: want a number in (0, 1)", cfg.delta)
	}
	if math.IsNaN(cfg.clip) || math.IsInf(cfg.clip, 0) || cfg.clip <= 0 {
		return usagef("-clip %v: want a finite clipping norm > 0", cfg.clip)
	}
	if cfg.learners < 1 {
		return usagef("-learners %d: want at least 1", cfg.learners)
	}
	if cfg.calibration != "exact" && cfg.calibration != "paper" {
		return usagef("-calibration %q: want exact or paper", cfg.calibration)
	}
	if set["sampling"] {
		if !(cfg.sampling > 0 && cfg.sampling <= 1) {
			return usagef("-sampling %v: want a sampling probability in (0, 1]", cfg.sampling)
		}
		if (cfg.strategy != factorize.StrategyBanded && cfg.strategy != factorize.StrategyBSR) || cfg.compare {
			return usagef("-sampling accounts a banded factorization: use -strategy banded or bsr (without -compare)")
		}
		if cfg.calibration != "exact" {
			return usagef("-sampling uses the PLD accountant: drop -calibration %s", cfg.calibration)
		}
		if cfg.participation.Kind != factorize.KindSingle {
			return usagef("-sampling fixes the participation (each sample in the rounds of its group, b apart): drop -participation")
		}
		if !set["relation"] {
			// Amplification by Poisson sampling is stated for add/remove
			// neighbours; replace-one (an upper bound) must be asked for.
			cfg.relation = accountant.AddRemove
		}
	}
	return nil
}

// checkNoiseFlags validates the noise-sample flags.
func checkNoiseFlags(cfg *config, set map[string]bool) error {
	cfg.seedSet = set["seed"]
	if cfg.outNoise == "" {
		for _, f := range []string{"dim", "std", "seed", "memory"} {
			if set[f] {
				return usagef("-%s applies only with -noise FILE", f)
			}
		}
		return nil
	}
	if cfg.lossOnly {
		return usagef("-noise needs the factors: drop -loss-only")
	}
	if cfg.dim < 1 {
		return usagef("-dim %d: want at least 1", cfg.dim)
	}
	if _, ok := memoryModes[cfg.memory]; !ok {
		return usagef("-memory %q: want auto, keep or regenerate", cfg.memory)
	}
	if set["std"] {
		if math.IsNaN(cfg.std) || math.IsInf(cfg.std, 0) || cfg.std <= 0 {
			return usagef("-std %v: want a finite number > 0", cfg.std)
		}
		if cfg.calibrate {
			// The reported (eps, delta) guarantee would describe the
			// calibrated std, not the -std noise written.
			return usagef("-std and -eps/-delta both set the noise level: give -std (no privacy claim) or -eps and -delta (the calibrated std), not both")
		}
	} else if !cfg.calibrate {
		return usagef("-noise needs a noise level: give -std, or -eps and -delta to calibrate it")
	}
	for _, other := range []string{cfg.outB, cfg.outC} {
		if other != "" && filepath.Clean(other) == filepath.Clean(cfg.outNoise) {
			return usagef("-noise and -o or -C are the same file %s", cfg.outNoise)
		}
	}
	return nil
}

// strategy returns the strategy named name with the options of cfg
// (progress, if not nil, receives the optimal solver's progress).
func (cfg config) strategyNamed(name string, progress func(factorize.Progress)) (factorize.Strategy, error) {
	switch name {
	case factorize.StrategyOptimal:
		return factorize.OptimalStrategy{Options: factorize.Options{
			Tol:      cfg.tol,
			MaxIter:  cfg.maxIter,
			LossOnly: cfg.lossOnly,
			Method:   cfg.method,
			Progress: progress,
		}}, nil
	case factorize.StrategyBanded:
		s := factorize.BandedStrategy{Bands: cfg.bands, MaxIter: cfg.maxIter}
		if cfg.tolSet {
			s.Tol = cfg.tol
		}
		return s, nil
	case factorize.StrategyBLT:
		return factorize.BLTStrategy{Buffers: cfg.buffers}, nil
	case factorize.StrategySemisep:
		return factorize.SemisepStrategy{Buffers: cfg.buffers, Factors: !cfg.lossOnly, Options: factorize.Options{
			Tol:      cfg.tol,
			MaxIter:  cfg.maxIter,
			Progress: progress,
		}}, nil
	case factorize.StrategyBSR:
		return factorize.BSRStrategy{Bands: cfg.bands}, nil
	case factorize.StrategyBandedToeplitz:
		return factorize.BandedToeplitzStrategy{Bands: cfg.bands, LossOnly: cfg.lossOnly}, nil
	case factorize.StrategyBISR:
		return factorize.BISRStrategy{Bands: cfg.bands, LossOnly: cfg.lossOnly}, nil
	case factorize.StrategyBandInv:
		return factorize.BandInvStrategy{Bands: cfg.bands, LossOnly: cfg.lossOnly}, nil
	}
	return factorize.ParseStrategy(name)
}

// outputs returns the files the run writes.
func (cfg config) outputs() []cli.File {
	var outs []cli.File
	for _, o := range []cli.File{{Flag: "-o", Path: cfg.outB}, {Flag: "-C", Path: cfg.outC}, {Flag: "-noise", Path: cfg.outNoise}} {
		if o.Path != "" {
			outs = append(outs, o)
		}
	}
	return outs
}

// inputs returns the files the run reads: the workload file.
func (cfg config) inputs() []cli.File {
	if cfg.workload == prefixWorkload || strings.HasPrefix(cfg.workload, "momentum:") {
		return nil
	}
	return []cli.File{{Flag: "-workload", Path: cfg.workload}}
}

// memoryModes are the values of -memory.
var memoryModes = map[string]mechanism.Memory{
	"auto":       mechanism.MemoryAuto,
	"keep":       mechanism.MemoryKeep,
	"regenerate": mechanism.MemoryRegenerate,
}

// usesBands reports whether -bands sets an option of strategy: the number
// of bands of C (banded, bsr, banded-toeplitz) or of C^{-1} (bisr,
// bandinv).
func usesBands(strategy string) bool {
	switch strategy {
	case factorize.StrategyBanded, factorize.StrategyBSR, factorize.StrategyBandedToeplitz, factorize.StrategyBISR, factorize.StrategyBandInv:
		return true
	}
	return false
}

// bandedLossOnly reports whether strategy has a structured loss-only path
// under single participation and min-separation (O(R) memory).
func bandedLossOnly(strategy string) bool {
	switch strategy {
	case factorize.StrategyBandedToeplitz, factorize.StrategyBISR, factorize.StrategyBandInv:
		return true
	}
	return false
}
