package reproduce

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/experiment"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/internal/figure"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

func (r *runner) beyond(ctx context.Context) error {
	if err := r.tauSweep(ctx); err != nil {
		return err
	}
	if err := r.mechanisms(ctx); err != nil {
		return err
	}
	return r.cancer(ctx)
}

// tauSweep runs the three private algorithms at (5, 1e-3) (exact
// calibration, optimal factorization) and the non-private one, each tuned,
// at every tau of the scale with R = fig4R rounds.
func (r *runner) tauSweep(ctx context.Context) error {
	algos := append(append([]fedopt.Algorithm{}, privateAlgos...), fedopt.NonPrivate)
	type point struct {
		m, s, tm, ts float64
		sum          *experiment.Summary
	}
	pts := map[fedopt.Algorithm][]point{}
	var rows, trows [][]string
	var xs []float64 // the taus, the figure's abscissae
	for _, tau := range r.sc.taus {
		xs = append(xs, float64(tau))
		s := synthetic(10, r.sc.fig4R, tau, r.sc.evalEvery)
		row := []string{fmt.Sprint(tau)}
		for _, algo := range algos {
			j := job{s: s, algo: algo, mech: "optimal", eps: 5, cal: plan.Exact, final: true}
			res, t, err := r.evaluate(ctx, j)
			if err != nil {
				return err
			}
			m, sd := finalLoss(res.Summary)
			tm, ts := tailLoss(res.Summary)
			pts[algo] = append(pts[algo], point{m, sd, tm, ts, res.Summary})
			rows = append(rows, []string{fmt.Sprint(tau), algo.String(), g(t.step()), fmt.Sprint(t.edge), g(m), g(sd), g(tm), g(ts)})
			row = append(row, pm(m, sd)+"; "+pm(tm, ts)+" (η~ "+g(t.step())+")")
		}
		trows = append(trows, row)
	}
	var panels []figure.Panel
	for _, tail := range []bool{false, true} {
		p := figure.Panel{Title: fmt.Sprintf("Loss error at round R against τ: (5, 1e-3), n = 10, R = %d", r.sc.fig4R),
			XLabel: "local steps τ", YLabel: "loss error at R (mean ± std)", LogX: true, LogY: true}
		if tail {
			p.Title = "The same, averaged over rounds 0.8 R, 0.9 R and R"
			p.YLabel = "loss error, last 20% of rounds"
		}
		for a, algo := range algos {
			s := figure.Series{Name: algoName(algo), X: xs, Color: []int{5, 4, 3, 0}[a], Points: true}
			for _, q := range pts[algo] {
				m, sd := q.m, q.s
				if tail {
					m, sd = q.tm, q.ts
				}
				s.Y = append(s.Y, m)
				s.Lo, s.Hi = append(s.Lo, m-sd), append(s.Hi, m+sd)
			}
			if algo == fedopt.NonPrivate {
				s.Dashes, s.Lo, s.Hi = 1, nil, nil
			}
			p.Series = append(p.Series, s)
		}
		panels = append(panels, p)
	}
	if err := r.writeFigure("beyond_tau", []string{"tau", "algorithm", "eta_tilde", "eta_at_grid_end", "final_loss_error_mean", "final_loss_error_std", "tail_loss_error_mean", "tail_loss_error_std"}, rows, figure.Figure{Panels: panels, Cols: 1}); err != nil {
		return err
	}
	var as, bs []*experiment.Summary
	for k := range r.sc.taus {
		as, bs = append(as, pts[fedopt.Correlated][k].sum), append(bs, pts[fedopt.Independent][k].sum)
	}
	breakEven := breakEven(r.sc.taus, as, bs)
	a0, b0 := pts[fedopt.Correlated][0], pts[fedopt.Independent][0]
	r.check(fmt.Sprintf("tau = %d", r.sc.taus[0]), "Algorithm 1", a0.m, a0.s, r.sc.reps, "baseline", b0.m, b0.s, r.sc.reps)
	last := len(r.sc.taus) - 1
	c, b := pts[fedopt.BaselineCorrelated][last], pts[fedopt.Independent][last]
	r.check(fmt.Sprintf("tau = %d", r.sc.taus[last]), "baseline + correlated noise", c.m, c.s, r.sc.reps, "baseline", b.m, b.s, r.sc.reps)
	head := []string{"tau"}
	for _, a := range algos {
		head = append(head, algoName(a))
	}
	r.section(fmt.Sprintf("## Beyond: tau sweep\n\n(5, 1e-3), exact calibration, optimal factorization, n = 10, R = %d (so learner i sees %d tau samples), each algorithm tuned at each tau; loss error at round R; then averaged over rounds 0.8 R, 0.9 R and R (the tuning criterion, less sensitive to the last round's samples). Break-even: %s.\n\n", r.sc.fig4R, r.sc.fig4R, breakEven) +
		table(head, trows))
	return nil
}

// breakEven says where, along taus, Algorithm 1 (final loss errors a[k] at
// taus[k]) stops beating the baseline (b[k]), with the margin of the
// claims (pairedZ, zMargin): the first tau at which Algorithm 1 is not
// lower beyond the margin, and the first at which the baseline is lower
// beyond it.
func breakEven(taus []int, a, b []*experiment.Summary) string {
	const none = "none in the sweep"
	notBetter, worse := none, none
	var zs, ts []string
	for k, tau := range taus {
		z := pairedZ(a[k], b[k])
		zs, ts = append(zs, fmt.Sprintf("%.1f", z)), append(ts, fmt.Sprint(tau))
		if !(z >= zMargin) && notBetter == none {
			notBetter = fmt.Sprintf("tau = %d", tau)
		}
		if z <= -zMargin && worse == none {
			worse = fmt.Sprintf("tau = %d", tau)
		}
	}
	return fmt.Sprintf("Algorithm 1 is first not lower than the baseline by %g standard errors at %s, and the baseline first lower by that margin at %s (paired z, the baseline's final loss error minus Algorithm 1's per repetition: %s at tau = %s)",
		zMargin, notBetter, worse, strings.Join(zs, ", "), strings.Join(ts, ", "))
}

// mechanisms runs Algorithm 1 with every mechanism of the scale at both
// budgets (exact calibration), each tuned, in Fig. 4's setting.
func (r *runner) mechanisms(ctx context.Context) error {
	s := r.fig4Setting()
	var rows, trows [][]string
	for _, mech := range r.sc.mechanisms {
		var gamma, loss, perCoord float64
		if !r.dry {
			f, err := r.factorization(ctx, mech, s.R)
			if err != nil {
				return err
			}
			gamma, loss = f.Metrics.Gamma, f.Metrics.Loss
			if perCoord, err = noiseState(f, s.R); err != nil {
				return err
			}
		}
		row := []string{mech, f3(gamma), f3(loss), f3(perCoord)}
		for _, eps := range budgets {
			j := job{s: s, algo: fedopt.Correlated, mech: mech, eps: eps, cal: plan.Exact, final: true}
			res, t, err := r.evaluate(ctx, j)
			if err != nil {
				return err
			}
			m, sd := finalLoss(res.Summary)
			rows = append(rows, []string{mech, g(eps), g(gamma), g(loss), g(perCoord), g(t.step()), fmt.Sprint(t.edge), g(res.Privacy.NoiseStd), g(m), g(sd)})
			row = append(row, g(t.step()), pm(m, sd))
		}
		trows = append(trows, row)
	}
	if err := r.writeCSV("beyond_mechanisms.csv", []string{"mechanism", "eps", "gamma", "loss_gamma2_frob_b_sq", "noise_state_floats_per_coordinate", "eta_tilde", "eta_at_grid_end", "noise_std", "final_loss_error_mean", "final_loss_error_std"}, rows); err != nil {
		return err
	}
	r.section(fmt.Sprintf("## Beyond: Algorithm 1 with every mechanism\n\nn = 10, tau = 10, R = %d, exact calibration, each mechanism's step tuned at each budget; loss = gamma^2 ||B||_F^2 (the total squared error of the prefix sums per unit noise); noise state = the largest number of float64 per model coordinate the mechanism holds while streaming R rounds (banded: its bands; BLT: its buffers; tree: its levels; sqrt: every past noise vector; optimal: the state vectors of its quasiseparable factor).\n\n", s.R) +
		table([]string{"mechanism", "gamma", "loss", "noise state per coordinate", "eta~ (5, 1e-3)", "(5, 1e-3)", "eta~ (1, 1e-3)", "(1, 1e-3)"}, trows))
	return nil
}

// noiseState returns the largest noise state of f's mechanism over R rounds,
// in float64 per model coordinate: the growth of StateBytes from d = 8 to
// d = 16 (within one block of coordinates), which leaves out what does not
// grow with d (keep mode's slice headers, 48 bytes per row, 6 float64 per
// coordinate at d = 8).
func noiseState(f *factorize.Factorization, R int) (float64, error) {
	const dim = 8
	var ms [2]mechanism.Mechanism
	buf := make([]float64, 2*dim)
	for k := range ms {
		m, err := mechanism.New(f, (k+1)*dim, 1, mechanism.WithSeed(1))
		if err != nil {
			return 0, err
		}
		ms[k] = m
	}
	grow := func() int64 { return ms[1].StateBytes() - ms[0].StateBytes() }
	peak := grow()
	for range R {
		for k, m := range ms {
			if err := m.Next(buf[:(k+1)*dim]); err != nil {
				return 0, err
			}
		}
		peak = max(peak, grow())
	}
	return float64(peak) / (8 * dim), nil
}

// cancer runs every algorithm on the breast-cancer data over 10 learners,
// dealt iid and by label, at both budgets.
func (r *runner) cancer(ctx context.Context) error {
	// Read first, in the dry pass too, so that a file that cannot be read
	// fails the run before any part's work. The section states its
	// counts (Options.DataRoot may name another file than the shipped one,
	// of 569 rows and 30 features).
	tab, err := dataset.LoadCSV(filepath.Join(r.root, "testdata", "breast_cancer.csv"))
	if err != nil {
		return err
	}
	var rows, trows [][]string
	base := setting{data: "cancer", n: 10, R: 28, tau: 2, clip: 1, l2: 1e-3, evalEvery: 28}
	for _, split := range []dataset.Split{{Kind: dataset.IID}, {Kind: dataset.ByLabel}} {
		s := base
		s.split = split
		for _, eps := range budgets {
			for _, algo := range privateAlgos {
				j := job{s: s, algo: algo, mech: "optimal", eps: eps, cal: plan.Exact, final: true, reps: r.sc.cancerReps}
				res, t, err := r.evaluate(ctx, j)
				if err != nil {
					return err
				}
				m, sd := finalLoss(res.Summary)
				am, as := finalAccuracy(res.Summary)
				rows = append(rows, []string{split.String(), g(eps), algo.String(), g(t.step()), fmt.Sprint(t.edge), g(m), g(sd), g(am), g(as)})
				trows = append(trows, []string{split.String(), fmt.Sprintf("(%g, 1e-3)", eps), algoName(algo), g(t.step()), pm(m, sd), pm(am, as)})
			}
		}
		j := job{s: s, algo: fedopt.NonPrivate, final: true, reps: r.sc.cancerReps}
		res, t, err := r.evaluate(ctx, j)
		if err != nil {
			return err
		}
		m, _ := finalLoss(res.Summary)
		am, _ := finalAccuracy(res.Summary)
		rows = append(rows, []string{split.String(), "", "nonprivate", g(t.step()), fmt.Sprint(t.edge), g(m), "0", g(am), "0"})
		trows = append(trows, []string{split.String(), "", "non-private", g(t.step()), f3(m), f3(am)})
	}
	if err := r.writeCSV("beyond_cancer.csv", []string{"split", "eps", "algorithm", "eta_tilde", "eta_at_grid_end", "final_loss_error_mean", "final_loss_error_std", "accuracy_mean", "accuracy_std"}, rows); err != nil {
		return err
	}
	used := base.n * base.R * base.tau
	r.section(fmt.Sprintf("## Beyond: breast-cancer data\n\ntestdata/breast_cancer.csv (%d rows, %d standardised features), n = %d learners, tau = %d, R = %d (%d rows used), B_g = 1, L2 = 1e-3, optimal factorization, exact calibration; iid: rows shuffled and dealt; label: sorted by label, so most learners see one class. Tuning deals the rows with another seed (the same rows in another order: with %d rows there is no separate tuning set), so each (eps, delta) is that of a run at its chosen step and does not cover the choice of the step, which saw the same rows. Final loss error and accuracy over the %d rows.\n\n",
		tab.Len(), tab.Dim, base.n, base.tau, base.R, used, tab.Len(), used) +
		table([]string{"split", "budget", "algorithm", "eta~", "final loss error", "accuracy"}, trows))
	return nil
}
