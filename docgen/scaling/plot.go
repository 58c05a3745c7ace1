package main

import (
	"bytes"

	"github.com/dpmf/dpmf/internal/figure"
)

// series is one line of the plot: times (seconds) against R.
type series struct {
	Name   string
	Dashed bool
	X, Y   []float64
}

// logLogSVG draws the series on log-log axes (package figure, on
// gonum.org/v1/plot) and returns the SVG document. Points with a
// non-positive coordinate are left out. Solid series past the palette's
// length are dash-dotted, so that no two series look the same.
func logLogSVG(title, xLabel, yLabel string, ss []series) ([]byte, error) {
	p := figure.Panel{Title: title, XLabel: xLabel, YLabel: yLabel, LogX: true, LogY: true}
	for i, s := range ss {
		fs := figure.Series{Name: s.Name, X: s.X, Y: s.Y, Color: i, Points: true}
		if s.Dashed {
			fs.Dashes = 1
		} else if i >= len(figure.Palette) {
			// The palette comes round again: tell the line from the
			// first one of its colour.
			fs.Dashes = 3
		}
		p.Series = append(p.Series, fs)
	}
	var b bytes.Buffer
	if err := (figure.Figure{Panels: []figure.Panel{p}, Width: 8 * 72, Height: 5 * 72}).SVG(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
