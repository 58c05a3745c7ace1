package reproduce

import (
	"context"
	"fmt"
	"math"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/figure"
)

// fig2 computes ||B||_F^2 of the optimal factorization (columns of C of
// unit norm, so gamma = 1 and ||B||_F^2 is the loss gamma^2 ||B||_F^2) for
// every R of the scale, loss only (O(R) memory), and fits
//
//	||B||_F^2 = (R / pi^2) ln^2 R + a R ln R + b R
//
// by least squares in relative terms (each point weighted by 1/y), the
// leading term being the known asymptote.
func (r *runner) fig2(ctx context.Context) error {
	if r.dry {
		return nil
	}
	rs := r.sc.fig2R
	ys := make([]float64, len(rs))
	for k, R := range rs {
		w, err := factorize.Prefix(R)
		if err != nil {
			return err
		}
		f, err := factorize.Optimal(ctx, w, factorize.Options{LossOnly: true})
		if err != nil {
			return fmt.Errorf("optimal factorization for R = %d: %w", R, err)
		}
		ys[k] = f.Metrics.Loss
	}
	lead := func(R float64) float64 { l := math.Log(R); return R / (math.Pi * math.Pi) * l * l }
	// Weighted least squares for (a, b) on the residual y - lead(R):
	// minimise sum ((y - lead - a R ln R - b R) / y)^2 by the 2 x 2 normal
	// equations.
	var s11, s12, s22, t1, t2 float64
	for k, R := range rs {
		x := float64(R)
		u, v, e := x*math.Log(x)/ys[k], x/ys[k], (ys[k]-lead(x))/ys[k]
		s11 += u * u
		s12 += u * v
		s22 += v * v
		t1 += u * e
		t2 += v * e
	}
	det := s11*s22 - s12*s12
	a, b := (t1*s22-t2*s12)/det, (s11*t2-s12*t1)/det
	fit := func(R float64) float64 { return lead(R) + a*R*math.Log(R) + b*R }
	maxRel := 0.0
	var rows, trows [][]string // the CSV's and the summary's
	xs := make([]float64, len(rs))
	sq, ind, ref, ft := make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs)), make([]float64, len(rs))
	for k, R := range rs {
		x := float64(R)
		xs[k], sq[k], ind[k], ref[k], ft[k] = x, x*x, x*(x+1)/2, lead(x), fit(x)
		maxRel = math.Max(maxRel, math.Abs(ft[k]-ys[k])/ys[k])
		rows = append(rows, []string{fmt.Sprint(R), g(ys[k]), g(sq[k]), g(ind[k]), g(ref[k]), g(ft[k])})
		trows = append(trows, []string{fmt.Sprint(R), f3(ys[k]), f3(ys[k] / sq[k]), f3(ind[k] / ys[k]), f3(ys[k] / ref[k])})
	}
	fitText := fmt.Sprintf("fit: (R/π²) ln²R %+.4f R ln R %+.4f R (max rel. error %.1g)", a, b, maxRel)
	fig := figure.Figure{Panels: []figure.Panel{{
		Title:  "Fig. 2: ||B||²_F of the optimal factorization (γ = 1)\n" + fitText,
		XLabel: "rounds R", YLabel: "||B||²_F", LogX: true, LogY: true,
		Series: []figure.Series{
			{Name: "optimal (dpmf)", X: xs, Y: ys, Color: 5, Points: true},
			{Name: "R²", X: xs, Y: sq, Color: 0, Dashes: 2},
			{Name: "R(R+1)/2 (independent noise)", X: xs, Y: ind, Color: 4, Dashes: 1},
			{Name: "(R/π²) ln²R", X: xs, Y: ref, Color: 3, Dashes: 3},
			{Name: "fit", X: xs, Y: ft, Color: 7, Dashes: 1},
		},
	}}}
	if err := r.writeFigure("fig2", []string{"R", "frob_b_sq_optimal", "R_squared", "independent_R(R+1)/2", "R_ln2R_over_pi2", "fit"}, rows, fig); err != nil {
		return err
	}
	// The claim at the paper's R = 800 (or the nearest R computed) and at
	// the largest R.
	k800 := 0
	for k, R := range rs {
		if math.Abs(float64(R)-800) < math.Abs(float64(rs[k800])-800) {
			k800 = k
		}
	}
	last := len(rs) - 1
	ratio800, ratioLast := ys[k800]/sq[k800], ys[last]/sq[last]
	verdict := "reproduced"
	if ratio800 > 0.05 || ratioLast > 0.05 {
		verdict = "not reproduced"
	}
	r.claim(Claim{
		Claim:   "||B||_F^2 of the optimal factorization is far below R^2 (Fig. 2)",
		Verdict: verdict,
		Measured: fmt.Sprintf("R = %d: %s = %.2g R^2 (independent noise: %s); R = %d: %s = %.2g R^2; %s",
			rs[k800], f3(ys[k800]), ratio800, f3(ind[k800]), rs[last], f3(ys[last]), ratioLast, fitText),
	})
	r.section("## Fig. 2\n\n" + fitText + ".\n\n" + table([]string{"R", "||B||_F^2", "/ R^2", "R(R+1)/2 / ||B||_F^2", "/ ((R/pi^2) ln^2 R)"}, trows))
	return nil
}
