// Package figure draws the project's figures with gonum.org/v1/plot: one or
// more panels of lines (optionally with a shaded band, such as a mean plus
// or minus one standard deviation), on linear or logarithmic axes, written
// as PNG and SVG. It is the one way dpmf draws (the reproduction of the
// paper's figures and the scaling report use it).
//
// Every axis follows one tick policy: clean decimal labels (0.01, 0.1, 1,
// 2.5e8; never float noise such as 0.09999999999999998), at least two
// labelled ticks even on an axis spanning less than a decade, unlabelled
// minor ticks. The legend goes in the corner of the data area that no line
// or point crosses; where none is free, the value axis is extended to make
// one free, and where that would squeeze the data, the legend goes below
// the plot.
package figure

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dpmf/dpmf/internal/atomicfile"
)

// Series is one line of a panel.
type Series struct {
	// Name is the legend entry; "" leaves the series out of the legend.
	Name string
	// X and Y are the points, of equal length. Points that cannot be shown
	// (non-finite, or non-positive on a logarithmic axis) are left out.
	X, Y []float64
	// Lo and Hi, if not nil, bound a shaded band around the line (same
	// length as X). On a logarithmic axis a non-positive Lo is raised to
	// the smallest positive value of the panel.
	Lo, Hi []float64
	// Color indexes the palette (colour-blind safe, Okabe and Ito); a
	// negative value means the series' position in the panel.
	Color int
	// Dashes selects a dash pattern: 0 solid, 1 dashed, 2 dotted, 3
	// dash-dotted.
	Dashes int
	// Points marks every point with a glyph.
	Points bool
}

// Panel is one plot.
type Panel struct {
	Title, XLabel, YLabel string
	// LogX and LogY select logarithmic axes.
	LogX, LogY bool
	Series     []Series
}

// Figure is a grid of panels, filled row by row.
type Figure struct {
	Panels []Panel
	// Cols is the number of panel columns; 0 means all panels in one row.
	Cols int
	// Width and Height of the whole figure; 0 means 6.5 x 4 inches per
	// row of panels at one or two columns.
	Width, Height vg.Length
}

// DPI is the resolution of the PNG output: a 6.5-inch panel is 780 pixels
// wide, readable on screen and in print at its size.
const DPI = 120

// Palette is the Okabe-Ito palette without its yellow, distinguishable
// under the common forms of colour blindness and in grey print.
var Palette = []color.Color{
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{128, 128, 128, 255}, // grey
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2.5)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}

func (f Figure) grid() (rows, cols int, w, h vg.Length) {
	cols = f.Cols
	if cols <= 0 {
		cols = max(len(f.Panels), 1)
	}
	rows = max((len(f.Panels)+cols-1)/cols, 1)
	w = cmp.Or(f.Width, vg.Length(max(6.5, 3.25*float64(cols)))*vg.Inch)
	h = cmp.Or(f.Height, vg.Length(rows)*4*vg.Inch)
	return rows, cols, w, h
}

// draw renders the figure on c and returns the plots as drawn, with their
// legends.
func (f Figure) draw(c draw.Canvas) ([]drawn, error) {
	if len(f.Panels) == 0 {
		return nil, fmt.Errorf("figure: no panels")
	}
	rows, cols, _, _ := f.grid()
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
	}
	// Panel i is plots[i/cols][i%cols], with legends[i].
	legends := make([]*legend, len(f.Panels))
	for i, panel := range f.Panels {
		p, l, err := panel.plot()
		if err != nil {
			return nil, fmt.Errorf("figure: panel %d (%s): %w", i, panel.Title, err)
		}
		plots[i/cols][i%cols], legends[i] = p, l
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align(plots, tiles, c)
	// Placing a legend may extend an axis, which may change the width of
	// its tick labels: align again.
	changed := false
	for i, l := range legends {
		changed = l.place(plots[i/cols][i%cols], canvases[i/cols][i%cols]) || changed
	}
	if changed {
		canvases = plot.Align(plots, tiles, c)
	}
	var out []drawn
	for i, l := range legends {
		p, pc := plots[i/cols][i%cols], canvases[i/cols][i%cols]
		if l.outside {
			strip := pc
			strip.Max.Y = strip.Min.Y + l.stripHeight(pc.Size().X)
			pc.Min.Y = strip.Max.Y
			l.drawBelow(strip)
		}
		p.Draw(pc)
		out = append(out, drawn{plot: p, legend: l, canvas: pc})
	}
	return out, nil
}

// drawn is a panel as drawn: its plot, its legend and the canvas it was
// drawn on.
type drawn struct {
	plot   *plot.Plot
	legend *legend
	canvas draw.Canvas
}

// PNG writes the figure as a PNG image at [DPI].
func (f Figure) PNG(w io.Writer) error {
	_, _, wd, ht := f.grid() // at least one row: draw reports an empty figure
	c := vgimg.NewWith(vgimg.UseWH(wd, ht), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	if _, err := f.draw(draw.New(c)); err != nil {
		return err
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	return enc.Encode(w, c.Image())
}

// SVG writes the figure as an SVG document.
func (f Figure) SVG(w io.Writer) error {
	_, _, wd, ht := f.grid() // at least one row: draw reports an empty figure
	c := vgsvg.New(wd, ht)
	if _, err := f.draw(draw.New(c)); err != nil {
		return err
	}
	_, err := c.WriteTo(w)
	return err
}

// Save writes base+".png" and base+".svg", each atomically (complete or not
// at all).
func (f Figure) Save(base string) error {
	for _, out := range []struct {
		ext   string
		write func(io.Writer) error
	}{{".png", f.PNG}, {".svg", f.SVG}} {
		// Render first, so that a failure leaves no file behind.
		var buf bytes.Buffer
		if err := out.write(&buf); err != nil {
			return err
		}
		if err := atomicfile.Write(base+out.ext, 0o644, func(w io.Writer) error {
			_, err := buf.WriteTo(w)
			return err
		}); err != nil {
			return fmt.Errorf("figure: %w", err)
		}
	}
	return nil
}

// show reports whether (x, y) can be drawn on the panel's axes.
func (p *Panel) show(x, y float64) bool {
	ok := func(v float64, log bool) bool {
		return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
	}
	return ok(x, p.LogX) && ok(y, p.LogY)
}

// xy returns the point (x, y) in the plot's coordinates: log10 of the
// value on a logarithmic axis.
func (p *Panel) xy(x, y float64) plotter.XY {
	if p.LogX {
		x = math.Log10(x)
	}
	if p.LogY {
		y = math.Log10(y)
	}
	return plotter.XY{X: x, Y: y}
}

// plot builds the gonum plot of the panel and its legend, which the plot
// draws after the data (the plot's own legend stays empty).
func (p *Panel) plot() (*plot.Plot, *legend, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	pl.Y.Label.Text = p.YLabel
	// A logarithmic axis is a linear axis of log10 of the values, whose
	// ticker labels the values: gonum lays out its own logarithmic axes
	// by the arithmetic mean of the range (the label of a long y axis then
	// pushes the plot down).
	pl.X.Tick.Marker = ticker{log: p.LogX}
	pl.Y.Tick.Marker = ticker{log: p.LogY}
	pl.Add(plotter.NewGrid())
	leg := &legend{}

	// The smallest positive y, for bands on a logarithmic axis.
	floor := math.Inf(1)
	for _, s := range p.Series {
		if len(s.Y) != len(s.X) || (s.Lo != nil && len(s.Lo) != len(s.X)) || (s.Hi != nil && len(s.Hi) != len(s.X)) {
			return nil, nil, fmt.Errorf("series %q: lengths differ", s.Name)
		}
		for k := range s.X {
			if p.show(s.X[k], s.Y[k]) {
				floor = math.Min(floor, s.Y[k])
			}
		}
	}
	drawn := false
	for i, s := range p.Series {
		col := s.Color
		if col < 0 {
			col = i
		}
		c := Palette[col%len(Palette)]
		var pts plotter.XYs
		for k := range s.X {
			if p.show(s.X[k], s.Y[k]) {
				pts = append(pts, p.xy(s.X[k], s.Y[k]))
			}
		}
		if len(pts) == 0 {
			continue
		}
		drawn = true
		leg.lines = append(leg.lines, pts)
		if s.Lo != nil && s.Hi != nil {
			if band := p.band(s, floor); band != nil {
				band.Color = withAlpha(c, 50)
				band.LineStyle.Width = 0
				pl.Add(band)
			}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, nil, err
		}
		line.Color = c
		line.Width = vg.Points(1.5)
		line.Dashes = dashes[s.Dashes%len(dashes)]
		pl.Add(line)
		thumbs := []plot.Thumbnailer{line}
		if s.Points {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, nil, err
			}
			sc.Color = c
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2)
			pl.Add(sc)
			thumbs = append(thumbs, sc)
		}
		if s.Name != "" {
			leg.entries = append(leg.entries, entry{s.Name, thumbs})
		}
	}
	if !drawn {
		return nil, nil, fmt.Errorf("no point can be drawn")
	}
	pl.Add(leg)
	return pl, leg, nil
}

// band returns the polygon between s.Lo and s.Hi, or nil if it has fewer
// than two drawable points.
func (p *Panel) band(s Series, floor float64) *plotter.Polygon {
	var up, down plotter.XYs
	for k := range s.X {
		lo, hi := s.Lo[k], s.Hi[k]
		if p.LogY && lo <= 0 {
			lo = floor
		}
		if !p.show(s.X[k], lo) || !p.show(s.X[k], hi) {
			continue
		}
		up = append(up, p.xy(s.X[k], hi))
		down = append(down, p.xy(s.X[k], lo))
	}
	if len(up) < 2 {
		return nil
	}
	slices.Reverse(down)
	up = append(up, down...)
	poly, err := plotter.NewPolygon(up)
	if err != nil {
		return nil
	}
	return poly
}

// withAlpha returns c with opacity a (0 to 255).
func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), a}
}
