package main

import (
	"bytes"
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

// prefixWorkload is the -workload value of the prefix-sum workload.
const prefixWorkload = "prefix"

// config is the parsed command line.
type config struct {
	r    int
	rSet bool // -R was given explicitly
	// strategy is the -strategy spec, strat the strategy it names.
	strategy string
	strat    factorize.Strategy
	workload string // prefixWorkload or a .npy file
	lossOnly bool
	// participation is the -participation pattern.
	participation factorize.Participation

	outB, outC string
	// sparse writes B and C as sparse files (-sparse).
	sparse bool

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

mfsolve computes a matrix factorization A = B C of a workload A (R x R):
the prefix sums (ones on and below the diagonal) by default, SGD with
momentum or a matrix from a file with -workload, for correlated-noise private
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
  mfsolve -R 512 -strategy banded:bands=64 -participation minsep:64
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
	fs.StringVar(&cfg.strategy, "strategy", "optimal",
		"factorization strategy `SPEC`: a name with optional settings, NAME[:KEY=VALUE,...] (banded:bands=64, optimal:tol=1e-8,path=dense); the strategies and their settings are listed below")
	fs.StringVar(&cfg.workload, "workload", prefixWorkload,
		"workload: prefix, momentum:BETA (SGD with heavy-ball momentum), or a `FILE`.npy holding a square lower-triangular float64 matrix (sets R)")
	fs.BoolVar(&cfg.lossOnly, "loss-only", false, "compute only the metrics of the strategy, not B and C (cannot be used with -o or -C; for "+lossOnlyStrategies()+")")
	fs.Func("participation", "participation `PATTERN` of one sample: single (one round), epochs:K (K epochs of R/K rounds), or minsep:B[,K] (at most K rounds, B apart; K defaults to as many as fit); the sensitivity, loss, RMSE, MaxSE and the calibration are under it (default single)", func(v string) error {
		p, err := factorize.ParseParticipation(v)
		if err != nil {
			return errors.New(cli.Want(err))
		}
		cfg.participation = p
		return nil
	})
	fs.StringVar(&cfg.outB, "o", "", "write B to `FILE` (.npy, R x m float64)")
	fs.StringVar(&cfg.outC, "C", "", "write C to `FILE` (.npy, m x R float64)")
	fs.BoolVar(&cfg.sparse, "sparse", false, "write B and C (-o, -C) as sparse files: their zero upper triangles become holes, about half the disk, but replacing or removing such a file costs more (its rows leave as many extents)")
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
	cli.Float64DownVar(fs, &cfg.delta, "delta", 0, "calibrate the noise for (eps, `DELTA`)-DP (with -eps); a subnormal is read as the largest float64 not above it")
	fs.Float64Var(&cfg.clip, "clip", 1, "per-sample gradient clipping norm `B_g` for the calibration")
	fs.IntVar(&cfg.learners, "learners", 1, "number of learners `n` whose clipped updates are averaged each round")
	fs.StringVar(&cfg.calibration, "calibration", "exact", "calibration `METHOD`: exact (analytic Gaussian, release sensitivity 2 sens B_g / n for replace-one, sens the sensitivity of C under -participation) or paper (the paper's formula, sensitivity 2 sens B_g)")
	fs.Float64Var(&cfg.sampling, "sampling", 0, "amplified banded accounting: cyclic Poisson sampling with probability `Q` in (0, 1] over b groups for a b-banded C (-strategy banded or bsr), ceil(R/b) compositions of the subsampled Gaussian (Choquette-Choo et al. 2023, Thm. 4); add/remove neighbours unless -relation replace-one (an upper bound); with -eps and -delta")
	fs.Func("relation", "neighbouring `RELATION` of the calibration: replace-one (default; one sample moves its learner's update by 2 B_g) or add-remove (by B_g: one gradient per sample, so Algorithm 1 with tau = 1 only)", func(v string) error {
		r, err := accountant.ParseRelation(v)
		if err != nil {
			return errors.New("want replace-one or add-remove") // without the package's prefix
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

// printUsage writes the usage text with the flag defaults to w, and
// returns the write's error.
func printUsage(w io.Writer) error {
	var b bytes.Buffer
	if err := cli.PrintUsage(&b, newFlagSet(new(config)), usageText); err != nil {
		return err
	}
	b.WriteString(strategyHelp())
	b.WriteString(summaryHelp())
	b.WriteString(usageTail)
	_, err := b.WriteTo(w)
	return err
}

// parseArgs parses and checks the command line. It returns flag.ErrHelp
// for -h and a *cli.UsageError for anything else that is wrong.
func parseArgs(args []string) (config, error) {
	cfg := config{relation: accountant.ReplaceOne}
	fs := newFlagSet(&cfg)
	var used [][2]string
	removedFlags(fs, &used)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := cli.Parse(fs, args, cli.Once); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, cli.Usagef("%v (mfsolve -h for help)", err)
	}
	if len(used) > 0 {
		return cfg, removedError(cfg.strategy, used[0][0], used[0][1])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.rSet = set["R"]

	strat, err := factorize.ParseStrategy(cfg.strategy)
	switch {
	case fs.NArg() > 0 && !strings.ContainsAny(fs.Arg(0), "./"):
		// Not a file name: a misspelt command (mfsolve cach list).
		return cfg, cli.Usagef("unexpected argument %q: want flags (output files are given with -o and -C), or the command cache list or cache clear", fs.Arg(0))
	case fs.NArg() > 0:
		return cfg, cli.Usagef("unexpected argument %q: output files are given with -o and -C", fs.Arg(0))
	case cfg.r < 1:
		return cfg, cli.Usagef("-R %d: the number of rounds must be at least 1", cfg.r)
	case cfg.r > factorize.MaxRounds:
		// The limit of every workload (Prefix and Momentum refuse more).
		return cfg, cli.Usagef("-R %d: the number of rounds must be at most %d", cfg.r, factorize.MaxRounds)
	case err != nil:
		return cfg, cli.Usagef("-strategy %s: %s", cfg.strategy, cli.Want(err))
	}
	info, _ := factorize.Lookup(strat.Name())
	switch {
	case cfg.workload == "":
		return cfg, cli.Usagef("-workload is empty: want prefix or a .npy file")
	case cfg.lossOnly && !info.HasLossOnly():
		return cfg, cli.Usagef("-loss-only applies only to -strategy %s, not %s", lossOnlyStrategies(), strat.Name())
	}
	// -loss-only chooses whether B and C are formed (semiseparable forms
	// them only when asked to).
	if cfg.strat, err = factorize.WithLossOnly(strat, cfg.lossOnly); err != nil {
		return cfg, cli.Usagef("-loss-only: %s", cli.Want(err))
	}
	// A workload file sets R, whatever its name (-workload <(cmd) is
	// /dev/fd/N): solve checks the participation against its order.
	if err := cfg.participation.Validate(cfg.r); err != nil && cfg.inputs() == nil {
		return cfg, cli.Usagef("-participation %v: %s", cfg.participation, cli.Want(err))
	}
	if w := namedWorkload(cfg); w != nil {
		if err := checkServes(cfg, w, cfg.participation); err != nil {
			return cfg, err
		}
	}
	if cfg.lossOnly && !info.LossOnlyUnder(cfg.participation) {
		return cfg, cli.Usagef("-loss-only gives no C to compute the sensitivity under -participation %v: drop -loss-only", cfg.participation)
	}
	for _, f := range [][2]string{{"o", "a file name"}, {"C", "a file name"}, {"noise", "a file name"}, {"cache", "a directory"}} {
		if set[f[0]] && fs.Lookup(f[0]).Value.String() == "" {
			return cfg, cli.Usagef("-%s is empty: want %s", f[0], f[1])
		}
	}
	switch {
	case cfg.lossOnly && (cfg.outB != "" || cfg.outC != ""):
		return cfg, cli.Usagef("-loss-only computes no B or C to write: drop -o and -C, or -loss-only")
	case cfg.outB != "" && cfg.outC != "" && filepath.Clean(cfg.outB) == filepath.Clean(cfg.outC):
		return cfg, cli.Usagef("-o and -C are the same file %s", cfg.outB)
	case cfg.sparse && cfg.outB == "" && cfg.outC == "":
		return cfg, cli.Usagef("-sparse is how -o and -C are written: give -o or -C, or drop -sparse")
	}
	if err := cli.NotFlag("-cache", cfg.cacheDir, "a directory"); err != nil {
		return cfg, err
	}
	switch {
	case cfg.noCache && set["cache"]:
		return cfg, cli.Usagef("-cache and -no-cache contradict each other")
	case cfg.noCache && set["cache-budget"]:
		return cfg, cli.Usagef("-cache-budget and -no-cache contradict each other")
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
				return cfg, cli.Usagef("-compare computes every strategy and writes no files: drop -%s", f)
			}
		}
		if cfg.calibrate {
			// The table has no noise column: the calibration would be
			// dropped without a word.
			return cfg, cli.Usagef("-compare prints the strategies' metrics, not a calibration: drop -eps and -delta (and the calibration flags), or -compare")
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
				return cli.Usagef("-%s is a calibration flag: give -eps and -delta too", f)
			}
		}
		return nil
	}
	_, banded := factorize.CBands(cfg.strat)
	switch sampling := set["sampling"]; {
	case !set["eps"] || !set["delta"]:
		return cli.Usagef("the calibration needs both -eps and -delta")
	case math.IsNaN(cfg.eps) || math.IsInf(cfg.eps, 0) || cfg.eps <= 0:
		return cli.Usagef("-eps %v: want a finite number > 0", cfg.eps)
	case math.IsNaN(cfg.delta) || cfg.delta <= 0 || cfg.delta >= 1:
		return cli.Usagef("-delta %v: want a number in (0, 1)", cfg.delta)
	case math.IsNaN(cfg.clip) || math.IsInf(cfg.clip, 0) || cfg.clip <= 0:
		return cli.Usagef("-clip %v: want a finite clipping norm > 0", cfg.clip)
	case cfg.learners < 1:
		return cli.Usagef("-learners %d: want at least 1", cfg.learners)
	case cfg.calibration != "exact" && cfg.calibration != "paper":
		return cli.Usagef("-calibration %q: want exact or paper", cfg.calibration)
	case sampling && !(cfg.sampling > 0 && cfg.sampling <= 1):
		return cli.Usagef("-sampling %v: want a sampling probability in (0, 1]", cfg.sampling)
	case sampling && (!banded || cfg.compare):
		return cli.Usagef("-sampling accounts a banded factorization: use -strategy banded or bsr (without -compare)")
	case sampling && cfg.calibration != "exact":
		return cli.Usagef("-sampling uses the PLD accountant: drop -calibration %s", cfg.calibration)
	case sampling && set["participation"]:
		return cli.Usagef("-sampling fixes the participation (each sample in the rounds of its group, b apart): drop -participation")
	case sampling && !set["relation"]:
		// Amplification by Poisson sampling is stated for add/remove
		// neighbours; replace-one (an upper bound) must be asked for.
		cfg.relation = accountant.AddRemove
	}
	return nil
}

// checkNoiseFlags validates the noise-sample flags.
func checkNoiseFlags(cfg *config, set map[string]bool) error {
	cfg.seedSet = set["seed"]
	if cfg.outNoise == "" {
		for _, f := range []string{"dim", "std", "seed", "memory"} {
			if set[f] {
				return cli.Usagef("-%s applies only with -noise FILE", f)
			}
		}
		return nil
	}
	_, memoryMode := memoryModes[cfg.memory]
	switch std := set["std"]; {
	case cfg.lossOnly:
		return cli.Usagef("-noise needs the factors: drop -loss-only")
	case cfg.dim < 1:
		return cli.Usagef("-dim %d: want at least 1", cfg.dim)
	case !memoryMode:
		return cli.Usagef("-memory %q: want auto, keep or regenerate", cfg.memory)
	case std && (math.IsNaN(cfg.std) || math.IsInf(cfg.std, 0) || !(cfg.std >= 0x1p-1022)):
		// mechanism.New refuses a subnormal std too (it keeps too few bits).
		return cli.Usagef("-std %v: want a finite number of at least 2.2e-308 (the normal float64 range)", cfg.std)
	case std && cfg.calibrate:
		// The reported (eps, delta) guarantee would describe the
		// calibrated std, not the -std noise written.
		return cli.Usagef("-std and -eps/-delta both set the noise level: give -std (no privacy claim) or -eps and -delta (the calibrated std), not both")
	case !std && !cfg.calibrate:
		return cli.Usagef("-noise needs a noise level: give -std, or -eps and -delta to calibrate it")
	}
	for _, other := range []string{cfg.outB, cfg.outC} {
		if other != "" && filepath.Clean(other) == filepath.Clean(cfg.outNoise) {
			return cli.Usagef("-noise and -o or -C are the same file %s", cfg.outNoise)
		}
	}
	return nil
}

// outputs returns the files the run writes.
func (cfg config) outputs() []cli.File {
	all := []cli.File{{Flag: "-o", Path: cfg.outB}, {Flag: "-C", Path: cfg.outC}, {Flag: "-noise", Path: cfg.outNoise}}
	return slices.DeleteFunc(all, func(o cli.File) bool { return o.Path == "" })
}

// inputs returns the files the run reads: the workload file (none for
// the workloads named by the flag, prefix and momentum:BETA, which leave
// R to -R).
func (cfg config) inputs() []cli.File {
	if cfg.workload == prefixWorkload || strings.HasPrefix(cfg.workload, "momentum:") {
		return nil
	}
	return []cli.File{{Flag: "-workload", Path: cfg.workload}}
}

// namedWorkload returns a workload of the structure of the one that
// -workload names (prefix or momentum:BETA) at -R, or nil for a file (or a
// BETA that solve refuses). The structure that strategies ask of a
// workload (prefix sums, Toeplitz, the bandwidth of its inverse) is the
// same for every R >= 3, so at most 16 rounds stand for any R: the check
// of the flags allocates nothing that grows with -R.
func namedWorkload(cfg config) *factorize.Workload {
	r := min(cfg.r, 16)
	if cfg.workload == prefixWorkload {
		w, _ := factorize.Prefix(r)
		return w
	}
	if beta, ok := strings.CutPrefix(cfg.workload, "momentum:"); ok {
		if b, err := cli.ParseFloat(beta); err == nil {
			w, _ := factorize.Momentum(r, b)
			return w
		}
	}
	return nil
}

// checkServes returns a usage error naming -workload and -strategy, and
// what the strategy accepts, when it does not factorize w under p
// (factorize.StrategyInfo.Serves): checked with the flags for prefix and
// momentum:BETA, and once a workload file is read.
func checkServes(cfg config, w *factorize.Workload, p factorize.Participation) error {
	info, err := factorize.Lookup(cfg.strat.Name())
	if err != nil || info.Serves(cfg.strat, w, p) == nil {
		return nil
	}
	under := ""
	if p.Kind != factorize.KindSingle {
		under = fmt.Sprintf(" (-participation %v)", p)
	}
	return cli.Usagef("-workload %s with -strategy %s%s: %s factorizes %s", cfg.workload, cfg.strategy, under, info.Name, info.Workloads)
}

// memoryModes are the values of -memory.
var memoryModes = map[string]mechanism.Memory{
	"auto":       mechanism.MemoryAuto,
	"keep":       mechanism.MemoryKeep,
	"regenerate": mechanism.MemoryRegenerate,
}

// lossOnlyStrategies lists the strategies with a loss-only path.
func lossOnlyStrategies() string {
	var names []string
	for _, info := range factorize.Registry() {
		if info.HasLossOnly() {
			names = append(names, info.Name)
		}
	}
	return strings.Join(names, ", ")
}

// removed are the flags that the strategy spec replaced, with the setting
// that replaces each.
var removed = map[string]string{"bands": "bands", "buffers": "buffers", "tol": "tol", "max-iter": "max-iter", "method": "path"}

// removedFlags defines the removed flags on fs; each use is appended to
// *used as "-flag value".
func removedFlags(fs *flag.FlagSet, used *[][2]string) {
	for f := range removed {
		fs.Func(f, "removed", func(v string) error {
			*used = append(*used, [2]string{f, v})
			return nil
		})
	}
}

// removedError returns the usage error for the first removed flag used:
// the spec to write instead, with the setting added to the -strategy
// given, or why that strategy does not take it.
func removedError(spec string, f, v string) error {
	key := removed[f]
	s, err := factorize.ParseStrategy(spec)
	if err == nil {
		if s, err = factorize.WithSetting(s, key, v); err == nil {
			return cli.Usagef("-%s was removed: write -strategy %s", f, s.Spec())
		}
	}
	return cli.Usagef("-%s was removed: give %s=%s in the -strategy spec, but -strategy %s: %s (mfsolve -h lists each strategy's settings)", f, key, v, spec, cli.Want(err))
}

// strategyHelp lists the strategies and their settings for the usage
// text.
func strategyHelp() string {
	var b strings.Builder
	b.WriteString("\nStrategies (-strategy NAME[:KEY=VALUE,...]):\n")
	for _, info := range factorize.Registry() {
		fmt.Fprintf(&b, "  %s\n    \t%s\n", info.Name, info.Doc)
		for _, st := range info.Settings {
			typ := st.Type
			if typ == "int" || typ == "float" {
				typ = strings.ToUpper(typ)
			}
			fmt.Fprintf(&b, "    \t%s=%s: %s (default %s)\n", st.Name, typ, st.Doc, st.Default)
		}
	}
	return b.String()
}
