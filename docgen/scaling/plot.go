package main

import (
	"bytes"

	"github.com/dpmf/dpmf/internal/docgen"
	"github.com/dpmf/dpmf/internal/figure"
)

// writeTimePlot writes the plot of time against R of res's tables (see
// plotSeries) to path, an SVG document.
func (res *results) writeTimePlot(path string) error {
	svg, err := logLogSVG("Factorization time against R (prefix-sum workload, median wall time)", "rounds R", "time (s)", res.plotSeries())
	if err != nil {
		return err
	}
	return docgen.WriteFile(path, svg)
}

// logLogSVG draws the series (times in seconds against R; Dashes 0 for
// solid, 1 for dashed) on log-log axes (package figure, on
// gonum.org/v1/plot) with markers and returns the SVG document. Points with
// a non-positive coordinate are left out. Solid series past the palette's
// length are dash-dotted, so that no two series look the same.
func logLogSVG(title, xLabel, yLabel string, ss []figure.Series) ([]byte, error) {
	p := figure.Panel{Title: title, XLabel: xLabel, YLabel: yLabel, LogX: true, LogY: true}
	for i, s := range ss {
		s.Color, s.Points = i, true
		if s.Dashes == 0 && i >= len(figure.Palette) {
			s.Dashes = 3 // the palette comes round again
		}
		p.Series = append(p.Series, s)
	}
	var b bytes.Buffer
	err := figure.Figure{Panels: []figure.Panel{p}, Width: 8 * 72, Height: 5 * 72}.SVG(&b)
	return b.Bytes(), err
}
