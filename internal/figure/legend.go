package figure

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Corners of the data area where a legend can go.
const (
	topRight = iota
	topLeft
	bottomRight
	bottomLeft
)

const (
	// legendMargin is the white margin around the legend's entries.
	legendMargin = vg.Length(3)
	// legendClear is the distance kept between the legend's box and any
	// line or point (half a line, a glyph's radius and some air).
	legendClear = vg.Length(3)
	// maxStretch bounds how far an axis is extended to free a corner: the
	// data keep at least 1/maxStretch of the height, else the legend goes
	// below the plot.
	maxStretch = 1.5
	// maxInside bounds the legend's share of the data area's width and
	// height; a larger legend goes below the plot.
	maxInside = 0.6
)

// entry is one line of a legend.
type entry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// legend is a panel's legend. The plot draws it after the data (it is a
// plot.Plotter), at a corner chosen by place; or, if outside, the figure
// draws it in a strip below the plot.
type legend struct {
	entries []entry
	// lines are the panel's drawable points, one slice per series, which
	// the legend keeps clear of.
	lines   []plotter.XYs
	corner  int
	outside bool
}

// style returns a gonum legend with the given entries, in the figures'
// style.
func style(entries []entry) plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(8)
	l.Padding = vg.Points(2)
	l.ThumbnailWidth = vg.Points(20)
	for _, e := range entries {
		l.Add(e.name, e.thumbs...)
	}
	return l
}

// entrySize returns the size of the legend's entries alone, without margin.
func entrySize(entries []entry) (w, h vg.Length) {
	l := style(entries)
	r := l.Rectangle(draw.Canvas{})
	return r.Size().X, r.Size().Y + l.TextStyle.FontExtents().Descent
}

// size returns the size of the legend's box, margins included.
func (l *legend) size() (w, h vg.Length) {
	w, h = entrySize(l.entries)
	return w + 2*legendMargin, h + 2*legendMargin
}

// box returns the legend's box on the data canvas dc, at corner k.
func (l *legend) box(dc draw.Canvas, k int) vg.Rectangle {
	w, h := l.size()
	var r vg.Rectangle
	if k == topRight || k == bottomRight {
		r.Max.X, r.Min.X = dc.Max.X, dc.Max.X-w
	} else {
		r.Min.X, r.Max.X = dc.Min.X, dc.Min.X+w
	}
	if k == topRight || k == topLeft {
		r.Max.Y, r.Min.Y = dc.Max.Y, dc.Max.Y-h
	} else {
		r.Min.Y, r.Max.Y = dc.Min.Y, dc.Min.Y+h
	}
	return r
}

// Plot implements plot.Plotter: it draws the legend at its corner, on a
// white box.
func (l *legend) Plot(c draw.Canvas, _ *plot.Plot) {
	if len(l.entries) == 0 || l.outside {
		return
	}
	box := l.box(c, l.corner)
	c.SetColor(color.NRGBA{255, 255, 255, 235})
	c.Fill(box.Path())
	gl := style(l.entries)
	gl.Top = true
	gl.Left = l.corner == topLeft || l.corner == bottomLeft
	inner := vg.Rectangle{Min: box.Min.Add(vg.Point{X: legendMargin, Y: legendMargin}), Max: box.Max.Sub(vg.Point{X: legendMargin, Y: legendMargin})}
	gl.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: inner})
}

// place chooses the legend's corner for plot p drawn on canvas c: the
// corner that needs the least extension of the y axis to be free of data
// (none if a corner is free already; ties go to top right, top left,
// bottom right, bottom left in that order), and extends the y axis by that
// much. If no corner is free within maxStretch, or the legend is too large
// for the data area, it goes below the plot. place reports whether it
// changed the axes.
func (l *legend) place(p *plot.Plot, c draw.Canvas) bool {
	if len(l.entries) == 0 {
		return false
	}
	dc := p.DataCanvas(c)
	w, h := l.size()
	if float64(w) > maxInside*float64(dc.Size().X) || float64(h) > maxInside*float64(dc.Size().Y) {
		l.outside = true
		return false
	}
	best, bestS := -1, math.Inf(1)
	for k := topRight; k <= bottomLeft; k++ {
		if s := l.stretch(p, dc, k); s < bestS-1e-9 {
			best, bestS = k, s
		}
	}
	if bestS > maxStretch {
		l.outside = true
		return false
	}
	l.corner = best
	changed := false
	// Extending the axis may widen its tick labels and so narrow the data
	// area: check again, a few times.
	for try := 0; try < 4; try++ {
		s := l.stretch(p, p.DataCanvas(c), best)
		if s <= 1 {
			break
		}
		extend(&p.Y, best == topRight || best == topLeft, s*1.01)
		changed = true
	}
	return changed
}

// extend grows the axis' range (of log10 of the values on a logarithmic
// axis) by the factor s, at the top or at the bottom.
func extend(a *plot.Axis, top bool, s float64) {
	d := s * (a.Max - a.Min)
	if top {
		a.Max = a.Min + d
	} else {
		a.Min = a.Max - d
	}
}

// stretch returns the factor by which the y axis' range must grow, at the top for a top corner k and at the bottom for a
// bottom one, for the legend's box at corner k of the data canvas dc to be
// legendClear away from every line and point: 1 if it is already, +Inf if
// no growth can do it.
func (l *legend) stretch(p *plot.Plot, dc draw.Canvas, k int) float64 {
	W, H := float64(dc.Size().X), float64(dc.Size().Y)
	if W <= 0 || H <= 0 {
		return math.Inf(1)
	}
	box := l.box(dc, k)
	// The box in the data area's unit square, grown by the clearance.
	x0 := (float64(box.Min.X-dc.Min.X) - float64(legendClear)) / W
	x1 := (float64(box.Max.X-dc.Min.X) + float64(legendClear)) / W
	y0 := (float64(box.Min.Y-dc.Min.Y) - float64(legendClear)) / H
	y1 := (float64(box.Max.Y-dc.Min.Y) + float64(legendClear)) / H
	top := k == topRight || k == topLeft
	lo, hi, any := l.yRange(p, x0, x1)
	if !any {
		return 1
	}
	if top {
		if hi < y0 {
			return 1
		}
		if y0 <= 0 {
			return math.Inf(1)
		}
		return hi / y0 // y becomes y / s
	}
	if lo > y1 {
		return 1
	}
	if y1 >= 1 {
		return math.Inf(1)
	}
	return (1 - lo) / (1 - y1) // y becomes (y + s - 1) / s
}

// yRange returns the least and greatest normalized y of the panel's lines
// and points over normalized x in [x0, x1], and whether any lies there.
func (l *legend) yRange(p *plot.Plot, x0, x1 float64) (lo, hi float64, any bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	add := func(y float64) {
		lo, hi, any = math.Min(lo, y), math.Max(hi, y), true
	}
	for _, pts := range l.lines {
		for i := range pts {
			ax, ay := p.X.Norm(pts[i].X), p.Y.Norm(pts[i].Y)
			if ax >= x0 && ax <= x1 {
				add(ay)
			}
			if i == 0 {
				continue
			}
			bx, by := p.X.Norm(pts[i-1].X), p.Y.Norm(pts[i-1].Y)
			// Where the segment crosses the edges x0 and x1.
			for _, x := range []float64{x0, x1} {
				if (ax-x)*(bx-x) < 0 {
					add(ay + (by-ay)*(x-ax)/(bx-ax))
				}
			}
		}
	}
	return lo, hi, any
}

// columns lays out a legend drawn below a plot of the given width: its
// entries in rows of len(cols) columns (entry i in column i % len(cols)),
// each colW wide.
func (l *legend) columns(width vg.Length) (cols [][]entry, colW vg.Length) {
	for _, e := range l.entries {
		w, _ := entrySize([]entry{e})
		colW = max(colW, w+vg.Points(12))
	}
	cols = make([][]entry, max(1, min(len(l.entries), int(float64(width)/float64(colW)))))
	for i, e := range l.entries {
		cols[i%len(cols)] = append(cols[i%len(cols)], e)
	}
	return cols, colW
}

// stripHeight returns the height of the strip below the plot that the
// legend takes, at the given width: that of its first column, the longest.
func (l *legend) stripHeight(width vg.Length) vg.Length {
	cols, _ := l.columns(width)
	_, h := entrySize(cols[0])
	return h + 2*legendMargin
}

// drawBelow draws the legend in the strip c, entries row by row, centred.
func (l *legend) drawBelow(c draw.Canvas) {
	cols, colW := l.columns(c.Size().X)
	left := c.Min.X + (c.Size().X-vg.Length(len(cols))*colW)/2
	for j, col := range cols {
		gl := style(col)
		gl.Top, gl.Left = true, true
		r := vg.Rectangle{
			Min: vg.Point{X: left + vg.Length(j)*colW, Y: c.Min.Y + legendMargin},
			Max: vg.Point{X: left + vg.Length(j+1)*colW, Y: c.Max.Y - legendMargin},
		}
		gl.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: r})
	}
}
