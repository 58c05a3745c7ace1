package audit

import (
	"fmt"
	"math"

	"github.com/dpmf/dpmf/internal/figure"
)

// Figure returns the histogram figure of a canary audit: for each
// observer (all iterates, final model), the densities of the included and
// excluded canaries' scores as step lines, against the densities the
// claim predicts (dashed): the mixtures over canaries of
// N(+-w_j mu / 2, 1), mu the observer's analytic mu.
func (r *CanaryReport) Figure() figure.Figure {
	return figure.Figure{Cols: 1, Panels: []figure.Panel{
		histogramPanel("all iterates", &r.AllIterates),
		histogramPanel("final model only", &r.FinalModel),
	}}
}

func histogramPanel(name string, o *Observer) figure.Panel {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range o.Scores {
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	const bins = 40
	width := (hi - lo) / bins
	if !(width > 0) {
		width = 1
	}
	var series []figure.Series
	for k, in := range []bool{true, false} {
		count := make([]float64, bins)
		total := 0
		for j, t := range o.Scores {
			if o.In[j] != in {
				continue
			}
			b := min(int((t-lo)/width), bins-1)
			count[b]++
			total++
		}
		var xs, ys []float64
		for b, c := range count {
			x0 := lo + float64(b)*width
			dens := c / (float64(max(total, 1)) * width)
			xs = append(xs, x0, x0+width)
			ys = append(ys, dens, dens)
		}
		label := "in"
		if !in {
			label = "out"
		}
		series = append(series, figure.Series{Name: fmt.Sprintf("%s (%d canaries)", label, total), X: xs, Y: ys, Color: k})
		// The predicted density: the mixture over this group's canaries.
		var px, py []float64
		for s := 0; s <= 200; s++ {
			x := lo + (hi-lo)*float64(s)/200
			d := 0.0
			for j := range o.Scores {
				if o.In[j] != in {
					continue
				}
				mean := o.Weights[j] * o.MuAnalytic / 2
				if !in {
					mean = -mean
				}
				d += math.Exp(-(x-mean)*(x-mean)/2) / math.Sqrt(2*math.Pi)
			}
			px = append(px, x)
			py = append(py, d/float64(max(total, 1))) // total: this group's canaries
		}
		series = append(series, figure.Series{Name: "predicted " + label, X: px, Y: py, Color: k, Dashes: 1})
	}
	return figure.Panel{
		Title:  fmt.Sprintf("%s: mu-hat %.3f [%.3f, %.3f], analytic mu %.3f", name, o.Mu.Mu, o.Mu.Lo, o.Mu.Hi, o.MuAnalytic),
		XLabel: "canary score (whitened, units of the noise)",
		YLabel: "density",
		Series: series,
	}
}
