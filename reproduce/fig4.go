package reproduce

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/figure"
	"github.com/dpmf/dpmf/plan"
)

// fig4Cell is one algorithm at one budget and calibration in Fig. 4.
type fig4Cell struct {
	algo fedopt.Algorithm
	cal  plan.Calibration
	eps  float64
	res  *experiment.Result
	tune *tuning
}

type fig4Result struct {
	cells []fig4Cell
	np    fig4Cell
}

var (
	calibrations = []plan.Calibration{plan.Exact, plan.Paper}
	budgets      = []float64{5, 1}
)

func (r *runner) fig4Setting() setting { return synthetic(10, r.sc.fig4R, 10, r.sc.evalEvery) }

// fig4Jobs returns the jobs of Fig. 4, in the order of the cells.
func (r *runner) fig4Jobs() (cells []job, np job) {
	s := r.fig4Setting()
	for _, cal := range calibrations {
		for _, eps := range budgets {
			for _, algo := range privateAlgos {
				cells = append(cells, job{s: s, algo: algo, mech: "optimal", eps: eps, cal: cal})
			}
		}
	}
	return cells, job{s: s, algo: fedopt.NonPrivate}
}

// ensureFig4 runs Fig. 4's tunings and evaluations once.
func (r *runner) ensureFig4(ctx context.Context) (*fig4Result, error) {
	if r.fig4 != nil {
		return r.fig4, nil
	}
	jobs, npj := r.fig4Jobs()
	out := &fig4Result{}
	for _, j := range jobs {
		res, t, err := r.evaluate(ctx, j)
		if err != nil {
			return nil, err
		}
		out.cells = append(out.cells, fig4Cell{j.algo, j.cal, j.eps, res, t})
	}
	res, t, err := r.evaluate(ctx, npj)
	if err != nil {
		return nil, err
	}
	out.np = fig4Cell{fedopt.NonPrivate, 0, 0, res, t}
	r.fig4 = out
	return out, nil
}

func (c fig4Cell) noiseStd() float64 {
	if c.res.Privacy == nil {
		return 0
	}
	return c.res.Privacy.NoiseStd
}

func (r *runner) runFig4(ctx context.Context) error {
	f4, err := r.ensureFig4(ctx)
	if err != nil {
		return err
	}
	var panels []figure.Panel
	var rows, trows [][]string
	find := func(cal plan.Calibration, eps float64, algo fedopt.Algorithm) fig4Cell {
		for _, c := range f4.cells {
			if c.cal == cal && c.eps == eps && c.algo == algo {
				return c
			}
		}
		panic("reproduce: missing Fig. 4 cell")
	}
	npm, _ := finalLoss(f4.np.res.Summary)
	// The claims: Algorithm 1 against the baseline at both budgets (each
	// cell's panel and its verdict in one pass); the baseline's step.
	var wins []string
	winsA, winsB := 0, 0 // cells won by Algorithm 1, by the baseline, beyond the margin
	var steps []stepCell
	for _, cal := range calibrations {
		for _, eps := range budgets {
			p := figure.Panel{Title: fmt.Sprintf("Fig. 4: (%g, 1e-3), %s calibration, τ = 10, R = %d", eps, cal, r.sc.fig4R),
				XLabel: "round r", YLabel: "loss error F(x^r) - F(x*)", LogY: true}
			for k, algo := range privateAlgos {
				c := find(cal, eps, algo)
				p.Series = append(p.Series, curve(fmt.Sprintf("%s (η~ = %s)", algoName(algo), g(c.tune.step())), c.res.Summary, []int{5, 4, 3}[k], 0, true))
				rows = append(rows, curveRows([]string{cal.String(), g(eps), algo.String(), g(c.tune.step()), g(c.noiseStd())}, c.res.Summary)...)
				m, sd := finalLoss(c.res.Summary)
				edge := ""
				if c.tune.edge {
					edge = " (grid end)"
				}
				trows = append(trows, []string{cal.String(), fmt.Sprintf("(%g, 1e-3)", eps), algoName(algo), g(c.tune.step()) + edge, f3(c.noiseStd()), pm(m, sd)})
			}
			p.Series = append(p.Series, curve(fmt.Sprintf("non-private (η~ = %s)", g(f4.np.tune.step())), f4.np.res.Summary, 0, 1, false))
			panels = append(panels, p)
			// The cell of the claims: Algorithm 1 against the baseline.
			a, b := find(cal, eps, fedopt.Correlated), find(cal, eps, fedopt.Independent)
			am, as := finalLoss(a.res.Summary)
			bm, bs := finalLoss(b.res.Summary)
			z := pairedZ(a.res.Summary, b.res.Summary)
			switch {
			case z >= zMargin:
				winsA++
			case z <= -zMargin:
				winsB++
			}
			wins = append(wins, fmt.Sprintf("%s (%g, 1e-3): Algorithm 1 %s, baseline %s (paired z = %.1f)", cal, eps, pm(am, as), pm(bm, bs), z))
			steps = append(steps, stepCell{cal, eps, a.tune, b.tune})
			r.check(fmt.Sprintf("fig4 %s (%g, 1e-3)", cal, eps), "baseline + correlated noise", mustFinal(find(cal, eps, fedopt.BaselineCorrelated)), sdFinal(find(cal, eps, fedopt.BaselineCorrelated)), r.sc.reps, "baseline", bm, bs, r.sc.reps)
		}
	}
	rows = append(rows, curveRows([]string{"none", "", "nonprivate", g(f4.np.tune.step()), "0"}, f4.np.res.Summary)...)
	trows = append(trows, []string{"", "", "non-private", g(f4.np.tune.step()), "0", f3(npm)})
	if err := r.writeFigure("fig4", []string{"calibration", "eps", "algorithm", "eta_tilde", "noise_std", "round", "loss_error_mean", "loss_error_std"}, rows, figure.Figure{Panels: panels, Cols: 2, Width: 10 * 72, Height: 8 * 72}); err != nil {
		return err
	}
	r.section(fmt.Sprintf("## Fig. 4\n\nn = 10, tau = 10, R = %d, optimal factorization for the correlated noise; each algorithm at its own tuned step; final loss error at round R, %d repetitions.\n\n", r.sc.fig4R, r.sc.reps) +
		table([]string{"calibration", "budget", "algorithm", "tuned eta~", "noise std V", "final loss error"}, trows))

	// Orderings with a large effect, asserted by quick mode: the same
	// algorithm with less noise, and no noise against the most noise.
	ae, ap := find(plan.Exact, 1, fedopt.Correlated), find(plan.Paper, 1, fedopt.Correlated)
	r.check("fig4 Algorithm 1 (1, 1e-3)", "exact calibration", mustFinal(ae), sdFinal(ae), r.sc.reps, "paper calibration", mustFinal(ap), sdFinal(ap), r.sc.reps)
	r.check("fig4 paper (1, 1e-3) non-private", "non-private", npm, 0, 1, "Algorithm 1", mustFinal(ap), sdFinal(ap), r.sc.reps)
	cells := len(calibrations) * len(budgets)
	verdict := "reproduced only under stated conditions"
	switch {
	case winsA == cells:
		verdict = "reproduced"
	case winsB == cells:
		verdict = "not reproduced"
	case winsA+winsB < cells:
		verdict = "inconclusive"
	}
	r.claim(Claim{
		Claim:   "Algorithm 1 beats the baseline at (5, 1e-3) and (1, 1e-3), tau = 10 (Fig. 4)",
		Verdict: verdict,
		Measured: fmt.Sprintf("each at its tuned step, final loss error: %s; a cell is decided when |paired z| >= %g (Algorithm 1 lower in %d of %d, the baseline in %d)",
			strings.Join(wins, "; "), zMargin, winsA, cells, winsB),
	})
	r.claim(stepClaim(steps, r.fig4Setting().n, r.fig4Setting().tau))
	return nil
}

// stepCell is the tuning of Algorithm 1 (a) and of the baseline (b) at one
// calibration and budget of Fig. 4.
type stepCell struct {
	cal  plan.Calibration
	eps  float64
	a, b *tuning
}

// plausible returns the indices of the grid steps that t's tuning cannot
// tell from its chosen one: those whose criterion is not above the
// chosen step's by zMargin standard errors of the paired difference (the
// tuning repetitions share their noise seeds across steps; see [diffZ]).
// The chosen step is always in; so is every step when the tuning has
// fewer than two repetitions or no per-repetition values.
func (t *tuning) plausible() []int {
	var in []int
	for k := range t.grid {
		if k == t.best || len(t.tails) != len(t.grid) || !(diffZ(t.tails[t.best], t.tails[k]) >= zMargin) {
			in = append(in, k)
		}
	}
	return in
}

// stepOrder compares the baseline's step with Algorithm 1's, the
// baseline's scaled by fb and Algorithm 1's by fa (the units): -1 when
// every plausible baseline step (see [tuning.plausible]) is below every
// plausible Algorithm 1 step, +1 when none is below any, 0 when the sets
// overlap in a way that decides neither.
func stepOrder(c stepCell, fa, fb float64) int {
	span := func(t *tuning, f float64) (lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, k := range t.plausible() {
			lo, hi = math.Min(lo, f*t.grid[k]), math.Max(hi, f*t.grid[k])
		}
		return lo, hi
	}
	alo, ahi := span(c.a, fa)
	blo, bhi := span(c.b, fb)
	switch {
	case bhi < alo:
		return -1
	case blo >= ahi:
		return 1
	}
	return 0
}

// stepClaim judges "the baseline has to use a smaller step than
// Algorithm 1" from the tunings of Fig. 4's cells, at n learners and tau
// local steps: a cell counts only when the plausible steps of the two
// tunings (see [tuning.plausible]) are ordered. It is judged in
// mean-gradient units and in the paper's raw units, where the baseline's
// step multiplies a sum over n learners and tau steps (eta~ / (n tau))
// and Algorithm 1's local step is eta~ / tau. Reproduced if the baseline's
// step is smaller in every cell in mean-gradient units; reproduced under
// stated conditions if a cell decides against it there but every cell
// decides for it in raw units; not reproduced if a cell decides against
// it in raw units; inconclusive otherwise.
//
// A cell is decided the wrong way only if the truly best step of one of
// the two tunings is left out of its plausible set, which needs a step
// that is truly not better to beat it by zMargin: with 6 tuning
// repetitions and under a normal model of the differences (Student's t,
// 5 degrees of freedom) that has probability at most 0.015 for each such
// step, so at most 0.015 for each grid step whose criterion is truly
// within a few standard errors of the best (in the worst case, by the
// union bound over the 9 other steps of both tunings, 2 x 9 x 0.015 =
// 0.27 per cell).
func stepClaim(cells []stepCell, n, tau int) Claim {
	var steps []string
	var count [2][3]int // [units][order + 1]
	for _, c := range cells {
		nt := float64(n * tau)
		o := stepOrder(c, 1, 1)
		raw := stepOrder(c, 1/float64(tau), 1/nt)
		count[0][o+1]++
		count[1][raw+1]++
		word := func(o int) string { return []string{"smaller", "undecided", "not smaller"}[o+1] }
		steps = append(steps, fmt.Sprintf("%s (%g): %s vs %s, %s (raw: %s vs %s, %s)", c.cal, c.eps, g(c.b.step()), g(c.a.step()), word(o),
			g(c.b.step()/nt), g(c.a.step()/float64(tau)), word(raw)))
	}
	all := len(cells)
	sv := "inconclusive"
	switch {
	case count[0][0] == all:
		sv = "reproduced"
	case count[0][2] > 0 && count[1][0] == all:
		sv = "reproduced only under stated conditions"
	case count[1][2] > 0:
		sv = "not reproduced"
	}
	return Claim{
		Claim:   "the baseline has to use a smaller step than Algorithm 1",
		Verdict: sv,
		Measured: fmt.Sprintf("tuned eta~ (mean-gradient units), baseline vs Algorithm 1: %s; smaller beyond the margin in %d of %d in mean-gradient units (not smaller in %d), in %d of %d in the paper's raw units (baseline eta~ / (n tau), Algorithm 1's local eta~ / tau; not smaller in %d); a cell is decided when every step the tuning cannot tell from its best (within %g standard errors of the paired difference over the tuning repetitions) of the baseline is below, or none is below, every such step of Algorithm 1",
			strings.Join(steps, "; "), count[0][0], all, count[0][2], count[1][0], all, count[1][2], zMargin),
	}
}

// zMargin is the margin, in standard errors, by which one configuration
// must beat another for a claim's verdict to count it: with 20
// repetitions, a paired difference of zero mean exceeds it on a given side
// with probability 0.0037 under a normal model of the differences
// (Student's t with 19 degrees of freedom), so a cell is decided the wrong
// way with at most that probability. Fig. 3's ratio claim uses it too
// ([withinZ]); so does the step claim, over the 6 tuning repetitions,
// where one comparison errs with probability up to 0.015 ([stepClaim]).
const zMargin = 3.0

// pairedZ returns the mean over repetitions of the difference of the final
// loss errors, b's minus a's, in standard errors of that mean: positive
// when a ends lower. Repetition k of both shares the data set and the
// noise seed RepSeed(seed, k), so the two are compared repetition by
// repetition (a paired test: the differences are independent across
// repetitions whatever the correlation within one). A run that diverged
// (+Inf or NaN) loses to one that did not (z = -Inf or +Inf); both
// diverged, or fewer than two repetitions, give NaN: undecided.
func pairedZ(a, b *experiment.Summary) float64 {
	return diffZ(finals(a), finals(b))
}

// finals returns each repetition's final loss error.
func finals(s *experiment.Summary) []float64 {
	x := make([]float64, len(s.Traces))
	for k, tr := range s.Traces {
		x[k] = tr.LossError[len(tr.LossError)-1]
	}
	return x
}

// diffZ returns the mean of b[k] - a[k] in standard errors of that mean:
// the paired z of [pairedZ] on per-repetition values. A vector with a
// non-finite entry (a diverged run) loses to one without (-Inf or +Inf);
// both such, different lengths or fewer than two repetitions give NaN, as
// do equal vectors.
func diffZ(a, b []float64) float64 {
	if len(a) != len(b) || len(a) < 2 {
		return math.NaN()
	}
	diverged := func(x []float64) bool {
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return true
			}
		}
		return false
	}
	switch da, db := diverged(a), diverged(b); {
	case da && db:
		return math.NaN()
	case da:
		return math.Inf(-1)
	case db:
		return math.Inf(1)
	}
	d := make([]float64, len(a))
	for k := range d {
		d[k] = b[k] - a[k]
	}
	m, sd := meanStd(d)
	return m / (sd / math.Sqrt(float64(len(d))))
}

func mustFinal(c fig4Cell) float64 { m, _ := finalLoss(c.res.Summary); return m }
func sdFinal(c fig4Cell) float64   { _, s := finalLoss(c.res.Summary); return s }

// tuningFigure draws the tuning curves of Fig. 4's setting: the tuning
// criterion on the tuning data against eta~.
func (r *runner) tuningFigure(ctx context.Context) error {
	jobs, npj := r.fig4Jobs()
	npt, err := r.tune(ctx, npj)
	if err != nil {
		return err
	}
	var panels []figure.Panel
	var rows [][]string
	series := func(name string, t *tuning, color, dashes int) figure.Series {
		s := figure.Series{Name: fmt.Sprintf("%s (chosen %s)", name, g(t.step())), X: t.grid, Y: t.mean, Color: color, Dashes: dashes, Points: true}
		s.Lo, s.Hi = band(t.mean, t.std)
		return s
	}
	addRows := func(pre []string, t *tuning) {
		for k := range t.grid {
			rows = append(rows, append(append([]string{}, pre...), g(t.grid[k]), g(t.mean[k]), g(t.std[k]), fmt.Sprint(k == t.best)))
		}
	}
	k := 0
	for _, cal := range calibrations {
		for _, eps := range budgets {
			p := figure.Panel{Title: fmt.Sprintf("Tuning: (%g, 1e-3), %s calibration, τ = 10, R = %d", eps, cal, r.sc.fig4R),
				XLabel: "step η~ (mean-gradient units)", YLabel: "tail loss error", LogX: true, LogY: true}
			for a, algo := range privateAlgos {
				t, err := r.tune(ctx, jobs[k]) // the job of this cell (see fig4Jobs)
				if err != nil {
					return err
				}
				p.Series = append(p.Series, series(algoName(algo), t, []int{5, 4, 3}[a], 0))
				addRows([]string{cal.String(), g(eps), algo.String()}, t)
				k++
			}
			p.Series = append(p.Series, series("non-private", npt, 0, 1))
			panels = append(panels, p)
		}
	}
	addRows([]string{"none", "", "nonprivate"}, npt)
	return r.writeFigure("tuning", []string{"calibration", "eps", "algorithm", "eta_tilde", "tune_tail_loss_error_mean", "tune_tail_loss_error_std", "chosen"}, rows, figure.Figure{Panels: panels, Cols: 2, Width: 10 * 72, Height: 8 * 72})
}
