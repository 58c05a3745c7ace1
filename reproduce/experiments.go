package reproduce

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// Seeds of the protocol: data sets and noise for tuning are never reported;
// reported numbers come from the evaluation seeds. [Options.SeedShift] adds
// to both.
const (
	// EvalSeed is the data seed of the reported runs; repetition k draws
	// its noise with experiment.RepSeed(EvalSeed, k).
	EvalSeed uint64 = 1
	// TuneSeed is the data seed of the tuning runs; repetition k draws its
	// noise with experiment.RepSeed(TuneSeed, k).
	TuneSeed uint64 = 1001
)

// scale holds the sizes of one mode (full or quick).
type scale struct {
	reps, tuneReps int
	grid           []float64 // eta~, mean-gradient units
	fig2R          []int
	fig3Samples    int   // R tau per learner in fig3
	fig4R          int   // R at tau = 10
	taus           []int // tau sweep
	mechanisms     []string
	evalEvery      int
	cancerReps     int
}

func scaleFor(quick bool) scale {
	if quick {
		return scale{
			reps: 4, tuneReps: 2,
			grid:        []float64{0.01, 0.03, 0.1, 0.3},
			fig2R:       []int{100, 300, 1000},
			fig3Samples: 100, fig4R: 100,
			taus:       []int{1, 10},
			mechanisms: []string{"identity", "blt:buffers=2", "optimal"},
			evalEvery:  10, cancerReps: 4,
		}
	}
	var grid []float64
	for e := -3; e < 0; e++ { // 1e-3 to 1 in steps 1, 2, 5
		for _, m := range []float64{1, 2, 5} {
			grid = append(grid, roundSig(m*math.Pow10(e), 3))
		}
	}
	grid = append(grid, 1)
	var rs []int
	for k := 0; k <= 16; k++ { // 100 to 10,000 at eighth decades, and 800
		R := int(math.Round(100 * math.Pow(10, float64(k)/8)))
		if R > 800 && rs[len(rs)-1] < 800 {
			rs = append(rs, 800)
		}
		rs = append(rs, R)
	}
	return scale{
		reps: 20, tuneReps: 6,
		grid:        grid,
		fig2R:       rs,
		fig3Samples: 800, fig4R: 800,
		taus:       []int{1, 2, 4, 7, 10, 20},
		mechanisms: []string{"identity", "tree", "sqrt", "sqrt-normalized", "banded", "blt:buffers=2", "blt:buffers=4", "optimal"},
		evalEvery:  20, cancerReps: 20,
	}
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', n, 64), 64)
	return v
}

// setting is a data set and model with its sizes.
type setting struct {
	data      string // "synthetic" or "cancer"
	split     dataset.Split
	n, R, tau int
	clip, l2  float64
	evalEvery int
}

func synthetic(n, R, tau, evalEvery int) setting {
	return setting{data: "synthetic", n: n, R: R, tau: tau, clip: 5, l2: 1e-4, evalEvery: evalEvery}
}

// problemKey identifies a problem: the data and model, not the run's
// clipping or evaluation stride.
type problemKey struct {
	data      string
	split     dataset.Split
	n, R, tau int
	l2        float64
	seed      uint64
}

// problem returns the (cached) problem of s with data seed seed.
func (r *runner) problem(ctx context.Context, s setting, seed uint64) (*experiment.Problem, error) {
	key := problemKey{s.data, s.split, s.n, s.R, s.tau, s.l2, seed}
	if p, ok := r.problems[key]; ok {
		return p, nil
	}
	var ds *dataset.Dataset
	var err error
	switch s.data {
	case "synthetic":
		ds, err = dataset.Synthetic{Alpha: 0.1, Beta: 0.1}.Dataset(s.n, s.R, s.tau, seed)
	case "cancer":
		var t *dataset.Table
		t, err = dataset.LoadCSV(filepath.Join(r.root, "testdata", "breast_cancer.csv"))
		if err == nil {
			ds, err = t.Deal(s.n, s.R, s.tau, s.split, seed)
		}
	default:
		err = fmt.Errorf("unknown data %q", s.data)
	}
	if err != nil {
		return nil, err
	}
	p, err := experiment.NewProblem(ctx, ds, model.Logistic{L2: s.l2}, experiment.ProblemOptions{NoDynamic: true})
	if err != nil {
		return nil, err
	}
	r.problems[key] = p
	return p, nil
}

type factKey struct {
	mech string
	R    int
}

// factorization returns the (cached) factorization of the prefix sums over
// R rounds for a mechanism: a factorize strategy spec ("blt:buffers=2").
func (r *runner) factorization(ctx context.Context, mech string, R int) (*factorize.Factorization, error) {
	key := factKey{mech, R}
	if f, ok := r.facts[key]; ok {
		return f, nil
	}
	strategy, err := factorize.ParseStrategy(mech)
	if err != nil {
		return nil, err
	}
	w, err := factorize.Prefix(R)
	if err != nil {
		return nil, err
	}
	f, err := strategy.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		return nil, fmt.Errorf("%s factorization for %d rounds: %w", mech, R, err)
	}
	r.facts[key] = f
	return f, nil
}

// job is one configuration run with repetitions.
type job struct {
	s     setting
	algo  fedopt.Algorithm
	mech  string // factorization for Correlated and BaselineCorrelated
	eps   float64
	cal   plan.Calibration
	etaT  float64 // eta~, mean-gradient units
	reps  int
	seed  uint64 // data seed; noise of repetition k: RepSeed(seed, k)
	final bool   // evaluate at rounds 0, R/10, 2R/10, ..., R only
}

// delta is the paper's delta, used at every budget.
const delta = 1e-3

// config returns the optimiser's configuration for the job: eta_g = 1 and
// the local step eta~ / tau for Algorithm 1, eta_ind = eta~ / tau for the
// baselines.
func (j job) config() fedopt.Config {
	step := j.etaT / float64(j.s.tau)
	c := fedopt.Config{Algorithm: j.algo, Eta: step, EtaG: 1, Clip: j.s.clip, EvalEvery: j.s.evalEvery}
	if !j.algo.LocalSteps() {
		c.EtaInd = step
	}
	if j.final {
		c.EvalEvery = tailEvery(j.s.R)
	}
	return c
}

// units is the job's work in per-sample gradient evaluations.
func (j job) units() int64 {
	runs := j.reps
	if !j.algo.Private() {
		runs = 1
	}
	return int64(runs) * int64(j.s.n*j.s.R*j.s.tau)
}

// exp runs the job. In the dry pass it only counts the work and returns a
// result of the right shape.
func (r *runner) exp(ctx context.Context, j job) (*experiment.Result, error) {
	if r.dry {
		r.units.Add(j.units())
		return dryResult(j), nil
	}
	p, err := r.problem(ctx, j.s, j.seed)
	if err != nil {
		return nil, err
	}
	e := experiment.Experiment{
		Problem: p, Config: j.config(),
		Plan:   &plan.Plan{Target: &plan.Target{Eps: j.eps, Delta: delta, Calibration: j.cal}},
		Repeat: experiment.RepeatOptions{Reps: j.reps, Workers: r.opt.Workers, Progress: func(int, int) { r.progress(int64(j.s.n * j.s.tau)) }},
		Seed:   j.seed,
		Seeded: true,
	}
	if j.algo == fedopt.Correlated || j.algo == fedopt.BaselineCorrelated {
		if e.Factorization, err = r.factorization(ctx, j.mech, j.s.R); err != nil {
			return nil, err
		}
		// The plan names the factorization with its settings
		// (blt:buffers=2, not blt).
		e.Plan.Strategy = j.mech
	}
	return e.Run(ctx)
}

// dryResult is a stand-in result for the dry pass, evaluated at the rounds
// of the job's configuration (as experiment.Evaluator evaluates them).
func dryResult(j job) *experiment.Result {
	every := max(j.config().EvalEvery, 1)
	var rounds []int
	for k := 0; k < j.s.R; k += every {
		rounds = append(rounds, k)
	}
	rounds = append(rounds, j.s.R)
	ones := slices.Repeat([]float64{1}, len(rounds))
	tr := &experiment.Trace{Rounds: rounds, LossError: ones, Accuracy: ones}
	s := &experiment.Summary{Rounds: rounds, LossErrorMean: ones, LossErrorStd: ones, AccuracyMean: ones, RegretMean: ones, RegretStd: ones, Traces: []*experiment.Trace{tr}}
	res := &experiment.Result{Summary: s}
	if j.algo.Private() {
		res.Privacy = &fedopt.Privacy{Gamma: 1}
		res.Privacy.NoiseStd = 1
	}
	return res
}

// tuning is the outcome of tuning one algorithm's step.
type tuning struct {
	grid, mean, std []float64
	// tails[k] holds each tuning repetition's criterion at grid[k]
	// (see [tailLoss]); repetition i shares its noise seed at every
	// step, so two steps compare repetition by repetition.
	tails [][]float64
	best  int  // index of the chosen step
	edge  bool // the chosen step is at an end of the grid
}

func (t *tuning) step() float64 { return t.grid[t.best] }

type tuneKey struct {
	s    setting
	algo fedopt.Algorithm
	mech string
	eps  float64
	cal  plan.Calibration
}

// tune returns the (cached) step of j's algorithm on j's setting: the grid
// point with the least tail loss error (see [tailLoss]), averaged over
// r.sc.tuneReps repetitions on the tuning data set (seed TuneSeed). j.etaT, j.reps, j.seed
// and j.final are ignored.
func (r *runner) tune(ctx context.Context, j job) (*tuning, error) {
	key := tuneKey{j.s, j.algo, j.mech, j.eps, j.cal}
	if t, ok := r.tunings[key]; ok {
		return t, nil
	}
	t := &tuning{grid: r.sc.grid}
	best := math.Inf(1)
	for k, eta := range r.sc.grid {
		jj := j
		jj.etaT, jj.reps, jj.seed, jj.final = eta, r.sc.tuneReps, TuneSeed+r.opt.SeedShift, true
		res, err := r.exp(ctx, jj)
		if err != nil {
			return nil, err
		}
		m, sd := tailLoss(res.Summary)
		t.mean, t.std, t.tails = append(t.mean, m), append(t.std, sd), append(t.tails, tails(res.Summary))
		if m < best { // NaN and +Inf never win
			best, t.best = m, k
		}
	}
	t.edge = t.best == 0 || t.best == len(t.grid)-1
	r.tunings[key] = t
	return t, nil
}

// evaluate tunes j's step and runs it on the evaluation data set with
// r.sc.reps repetitions.
func (r *runner) evaluate(ctx context.Context, j job) (*experiment.Result, *tuning, error) {
	t, err := r.tune(ctx, j)
	if err != nil {
		return nil, nil, err
	}
	j.etaT, j.seed, j.reps = t.step(), EvalSeed+r.opt.SeedShift, cmp.Or(j.reps, r.sc.reps)
	res, err := r.exp(ctx, j)
	return res, t, err
}

// tailEvery is the evaluation stride of runs that only need the end of
// the curve: 11 evaluations, 3 of them in the last fifth of the run.
func tailEvery(R int) int { return max(R/10, 1) }

// tailLoss returns the mean over repetitions, and the standard deviation,
// of each repetition's average loss error over the evaluated rounds in the
// last fifth of the run (r >= 0.8 R). It is the tuning criterion: the loss
// error at one round moves with that round's samples, which every
// repetition shares, so a criterion at round R alone would reward steps
// that happen to suit the last round's data. A non-finite value (a
// diverged run) gives +Inf.
func tailLoss(s *experiment.Summary) (mean, std float64) {
	return divergedInf(meanStd(tails(s)))
}

// tails returns each repetition's average loss error over the evaluated
// rounds in the last fifth of the run: the values [tailLoss] averages.
func tails(s *experiment.Summary) []float64 {
	R := s.Rounds[len(s.Rounds)-1]
	var xs []float64
	for _, tr := range s.Traces {
		sum, n := 0.0, 0
		for k, r := range tr.Rounds {
			if 5*r >= 4*R {
				sum += tr.LossError[k]
				n++
			}
		}
		xs = append(xs, sum/float64(n))
	}
	return xs
}

// finalLoss returns the mean and standard deviation of the final loss
// error; a non-finite value (a diverged run) gives +Inf. Where every
// repetition's final loss error is the same (the non-private algorithm,
// which draws no noise) the summary's deviation is exactly 0.
func finalLoss(s *experiment.Summary) (mean, std float64) {
	m, sd, _, _ := s.Final()
	return divergedInf(m, sd)
}

// equal reports whether xs has at least one value and all its values are
// the same: its spread max - min is 0.
func equal(xs []float64) bool {
	if len(xs) == 0 {
		return false
	}
	return slices.Max(xs)-slices.Min(xs) == 0
}

// divergedInf returns mean and std, or +Inf and NaN for a mean that is not
// finite (a diverged run), which then ranks last.
func divergedInf(mean, std float64) (float64, float64) {
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return math.Inf(1), math.NaN()
	}
	return mean, std
}

// finalAccuracy returns the mean and standard deviation over repetitions of
// the final accuracy.
func finalAccuracy(s *experiment.Summary) (mean, std float64) {
	var xs []float64
	for _, tr := range s.Traces {
		xs = append(xs, tr.Accuracy[len(tr.Accuracy)-1])
	}
	return meanStd(xs)
}

func meanStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 || equal(xs) {
		// Equal values: exactly 0, where the sum below leaves the
		// rounding of the mean (0.1, 0.1, 0.1 gave 1.7e-17).
		return mean, 0
	}
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)-1))
}

// algoName is the name used in figures and tables.
func algoName(a fedopt.Algorithm) string {
	switch a {
	case fedopt.Correlated:
		return "Algorithm 1"
	case fedopt.Independent:
		return "baseline"
	case fedopt.BaselineCorrelated:
		return "baseline + correlated noise"
	}
	return "non-private"
}

// privateAlgos are the three private algorithms in the order of the figures.
var privateAlgos = []fedopt.Algorithm{fedopt.Correlated, fedopt.Independent, fedopt.BaselineCorrelated}
