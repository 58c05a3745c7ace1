package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// series is one line of the plot: times (seconds) against R.
type series struct {
	Name   string
	Dashed bool
	X, Y   []float64
}

// Plot geometry, in SVG user units.
const (
	plotW, plotH             = 860, 520
	marginL, marginR         = 80, 250
	marginT, marginB         = 40, 60
	innerW, innerH   float64 = plotW - marginL - marginR, plotH - marginT - marginB
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// decades returns the powers of ten lo <= hi that enclose the positive
// values of every series along one axis (x when useX).
func decades(ss []series, useX bool) (lo, hi int) {
	minV, maxV := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		vs := s.Y
		if useX {
			vs = s.X
		}
		for _, v := range vs {
			if v > 0 {
				minV, maxV = math.Min(minV, v), math.Max(maxV, v)
			}
		}
	}
	if math.IsInf(minV, 1) {
		return 0, 1
	}
	lo, hi = int(math.Floor(math.Log10(minV))), int(math.Ceil(math.Log10(maxV)))
	if hi == lo {
		hi++
	}
	return lo, hi
}

// roundsLabel names 10^e rounds: 100, 1k, 10k, ...
func roundsLabel(e int) string {
	switch {
	case e < 3:
		return fmt.Sprint(math.Pow10(e))
	case e < 6:
		return fmt.Sprintf("%gk", math.Pow10(e-3))
	}
	return fmt.Sprintf("%gM", math.Pow10(e-6))
}

// secondsLabel names 10^e seconds: 1 µs, 10 ms, 1 s, 100 s, ...
func secondsLabel(e int) string {
	switch {
	case e < -3:
		return fmt.Sprintf("%g µs", math.Pow10(e+6))
	case e < 0:
		return fmt.Sprintf("%g ms", math.Pow10(e+3))
	}
	return fmt.Sprintf("%g s", math.Pow10(e))
}

// logLogSVG draws the series on log-log axes with decade grid lines, minor
// ticks at 2..9 times each decade, and a legend, and returns the SVG
// document. Points with a non-positive coordinate are left out.
func logLogSVG(title, xLabel, yLabel string, ss []series) string {
	xlo, xhi := decades(ss, true)
	ylo, yhi := decades(ss, false)
	px := func(x float64) float64 {
		return marginL + (math.Log10(x)-float64(xlo))/float64(xhi-xlo)*innerW
	}
	py := func(y float64) float64 {
		return marginT + innerH - (math.Log10(y)-float64(ylo))/float64(yhi-ylo)*innerH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", marginL+innerW/2, html.EscapeString(title))

	// Grid and ticks.
	for e := xlo; e <= xhi; e++ {
		x := px(math.Pow10(e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, marginT, x, marginT+innerH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginT+innerH+18, roundsLabel(e))
		for k := 2; e < xhi && k <= 9; k++ {
			xm := px(float64(k) * math.Pow10(e))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", xm, marginT+innerH, xm, marginT+innerH-4)
		}
	}
	for e := ylo; e <= yhi; e++ {
		y := py(math.Pow10(e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, y, marginL+innerW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, html.EscapeString(secondsLabel(e)))
		for k := 2; e < yhi && k <= 9; k++ {
			ym := py(float64(k) * math.Pow10(e))
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", marginL, ym, marginL+4, ym)
		}
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%g" height="%g" fill="none" stroke="black"/>`+"\n", marginL, marginT, innerW, innerH)
	fmt.Fprintf(&b, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+innerW/2, plotH-15, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(22 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+innerH/2, html.EscapeString(yLabel))

	// Series and legend.
	for i, s := range ss {
		color := palette[i%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for j := range s.X {
			if s.X[j] > 0 && s.Y[j] > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[j]), py(s.Y[j])))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), color, dash)
		}
		for _, p := range pts {
			x, y, _ := strings.Cut(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, color)
		}
		ly := float64(marginT) + 10 + 20*float64(i)
		lx := marginL + innerW + 15
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+25, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+32, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
