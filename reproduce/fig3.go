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

// paperEta is the local step of the paper-style runs of Fig. 3: the same
// eta for every tau (so eta~ = paperEta tau), small enough for every tau.
const paperEta = 0.003

// curve returns the series of a summary's loss error: mean, with a band of
// one standard deviation when withBand is set.
func curve(name string, s *experiment.Summary, color, dashes int, withBand bool) figure.Series {
	x := make([]float64, len(s.Rounds))
	for k, r := range s.Rounds {
		x[k] = float64(r)
	}
	c := figure.Series{Name: name, X: x, Y: s.LossErrorMean, Color: color, Dashes: dashes}
	if withBand {
		c.Lo, c.Hi = band(s.LossErrorMean, s.LossErrorStd)
	}
	return c
}

// band returns mean - std and mean + std, entry by entry: the band of one
// standard deviation around a curve.
func band(mean, std []float64) (lo, hi []float64) {
	lo, hi = make([]float64, len(mean)), make([]float64, len(mean))
	for k, m := range mean {
		lo[k], hi[k] = m-std[k], m+std[k]
	}
	return lo, hi
}

// curveRows returns CSV rows (prefix..., round, mean, std) of a summary.
func curveRows(prefix []string, s *experiment.Summary) [][]string {
	var rows [][]string
	for k, r := range s.Rounds {
		row := append(append([]string{}, prefix...), fmt.Sprint(r), g(s.LossErrorMean[k]), g(s.LossErrorStd[k]))
		rows = append(rows, row)
	}
	return rows
}

func (r *runner) fig3(ctx context.Context) error {
	taus := []int{1, 2, 4}
	kinds := []string{"paper-style step", "tuned step"}
	var panels []figure.Panel
	var rows, trows [][]string
	priv := make([][]*experiment.Summary, len(kinds))
	for ki, kind := range kinds {
		p := figure.Panel{Title: "Fig. 3, " + kind + ": (5, 1e-3), n = 10, R τ = " + fmt.Sprint(r.sc.fig3Samples),
			XLabel: "round r", YLabel: "loss error F(x^r) - F(x*)", LogY: true}
		for k, tau := range taus {
			s := synthetic(10, r.sc.fig3Samples/tau, tau, max(r.sc.evalEvery/tau, 1))
			j := job{s: s, algo: fedopt.Correlated, mech: "optimal", eps: 5, cal: plan.Exact, reps: r.sc.reps, seed: EvalSeed + r.opt.SeedShift}
			if ki == 0 {
				j.etaT = paperEta * float64(tau)
			} else {
				t, err := r.tune(ctx, j)
				if err != nil {
					return err
				}
				j.etaT = t.step()
			}
			pr, err := r.exp(ctx, j)
			if err != nil {
				return err
			}
			j.algo = fedopt.NonPrivate
			np, err := r.exp(ctx, j)
			if err != nil {
				return err
			}
			p.Series = append(p.Series,
				curve(fmt.Sprintf("τ = %d, private (η~ = %s)", tau, g(j.etaT)), pr.Summary, k+1, 0, true),
				curve(fmt.Sprintf("τ = %d, non-private", tau), np.Summary, k+1, 1, false))
			pre := []string{kind, fmt.Sprint(tau), fmt.Sprint(pr.Summary.Rounds[len(pr.Summary.Rounds)-1]), g(j.etaT)}
			rows = append(rows, curveRows(append(pre, "private"), pr.Summary)...)
			rows = append(rows, curveRows(append(pre, "nonprivate"), np.Summary)...)
			m, sd := finalLoss(pr.Summary)
			nm, _ := finalLoss(np.Summary)
			trows = append(trows, []string{kind, fmt.Sprint(tau), g(j.etaT), pm(m, sd), f3(nm)})
			r.check(fmt.Sprintf("fig3 %s, tau = %d", kind, tau), "non-private", nm, 0, 1, "private", m, sd, r.sc.reps)
			priv[ki] = append(priv[ki], pr.Summary)
		}
		panels = append(panels, p)
	}
	if err := r.writeFigure("fig3", []string{"step", "tau", "R", "eta_tilde", "curve", "round", "loss_error_mean", "loss_error_std"}, rows, figure.Figure{Panels: panels, Cols: 1}); err != nil {
		return err
	}
	r.claim(fig3Claim(taus, priv[0], priv[1]))
	r.section("## Fig. 3\n\nFinal loss error (round R), private at (5, 1e-3) with the optimal factorization, and non-private at the same step.\n\n" +
		table([]string{"step", "tau", "eta~", "private", "non-private"}, trows))
	return nil
}

// fig3Ratio is the reading of "almost the same utility": final private
// loss errors within 25% of each other.
const fig3Ratio = 1.25

// withinZ returns the least, over ordered pairs (i, j) of the summaries,
// of the paired z of fig3Ratio x_j - x_i (x the final loss errors, per
// repetition; see [diffZ]), and that pair. The means are within the
// ratio of each other when every such difference has a positive mean, so
// the least z at or above zMargin decides "within" and one at or below
// -zMargin decides "not within". Repetition k shares its noise seed
// RepSeed(EvalSeed, k) across tau, so the vectors (x_1k, x_2k, x_3k) are
// independent across k and the differences are paired.
//
// False-verdict rates, with 20 repetitions and under a normal model of
// the differences (Student's t, 19 degrees of freedom): when the means are
// truly within the ratio, each of the 6 ordered pairs reaches z <= -3 with
// probability at most 0.0037, so "not within" is decided wrongly with
// probability at most 6 x 0.0037 = 0.022; when they are not, the pair of
// the largest and the smallest mean has a difference of negative mean and
// reaches z >= 3 with probability at most 0.0037, so "within" is decided
// wrongly with at most that probability. A NaN z (both diverged, or fewer
// than two repetitions) leaves the comparison undecided.
func withinZ(s []*experiment.Summary) (z float64, i, j int) {
	z = math.Inf(1)
	undecided := false
	for a := range s {
		for b := range s {
			if a == b {
				continue
			}
			xb := finals(s[b])
			for k := range xb {
				xb[k] *= fig3Ratio
			}
			switch zz := diffZ(finals(s[a]), xb); {
			case math.IsNaN(zz):
				undecided = true
			case zz < z:
				z, i, j = zz, a, b
			}
		}
	}
	if undecided && z > -zMargin {
		return math.NaN(), 0, 0
	}
	return z, i, j
}

// fig3Claim judges "tau in {1, 2, 4} reach almost the same utility" from
// the private runs at the paper-style step and at the tuned steps (one
// summary per tau, in the order of taus): a step kind counts only when
// [withinZ] decides it beyond the margin. Reproduced if both kinds are
// within the ratio, not reproduced if neither is, reproduced under stated
// conditions if they differ, inconclusive if a kind is undecided.
func fig3Claim(taus []int, paper, tuned []*experiment.Summary) Claim {
	within, decided := 0, 0
	var parts []string
	for _, k := range []struct {
		name string
		s    []*experiment.Summary
	}{{fmt.Sprintf("the paper-style step (eta = %g for every tau)", paperEta), paper}, {"each tau's tuned step", tuned}} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range k.s {
			m, _ := finalLoss(s)
			lo, hi = math.Min(lo, m), math.Max(hi, m)
		}
		z, i, j := withinZ(k.s)
		state := "undecided"
		switch {
		case z >= zMargin:
			within++
			decided++
			state = "within"
		case z <= -zMargin:
			decided++
			state = "not within"
		}
		pair := ""
		if !math.IsNaN(z) {
			pair = fmt.Sprintf(" (tau = %d against %g x tau = %d)", taus[i], fig3Ratio, taus[j])
		}
		parts = append(parts, fmt.Sprintf("%.3g at %s, %s: least paired z = %.1f%s", hi/lo, k.name, state, z, pair))
	}
	verdict := "reproduced only under stated conditions"
	switch {
	case decided < 2:
		verdict = "inconclusive"
	case within == 2:
		verdict = "reproduced"
	case within == 0:
		verdict = "not reproduced"
	}
	return Claim{
		Claim:   "tau in {1, 2, 4} (R tau fixed) reach almost the same utility (Fig. 3); 'almost the same' taken as final private loss errors within 25% of each other",
		Verdict: verdict,
		Measured: fmt.Sprintf("largest / smallest final loss error over tau: %s; a step kind is decided when the least paired z of %g x (one tau's final loss error) - (another's), over the ordered pairs, is beyond %g either way",
			strings.Join(parts, "; "), fig3Ratio, zMargin),
	}
}
