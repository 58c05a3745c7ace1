package figure

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// render draws f on an in-memory canvas of its size and returns the panels
// as drawn.
func render(t *testing.T, f Figure) []drawn {
	t.Helper()
	_, _, w, h := f.grid()
	ds, err := f.draw(draw.New(vgimg.New(w, h)))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// overlaps reports whether the legend's box in panel d meets a line or a
// point of series, sampling each segment at 1000 points in drawing
// coordinates (independently of how the legend was placed), and whether the
// box lies in the data area.
func overlaps(d drawn, p Panel) (meets, inside bool) {
	dc := d.plot.DataCanvas(d.canvas)
	box := d.legend.box(dc, d.legend.corner)
	inside = box.Min.X >= dc.Min.X-1e-6 && box.Max.X <= dc.Max.X+1e-6 && box.Min.Y >= dc.Min.Y-1e-6 && box.Max.Y <= dc.Max.Y+1e-6
	at := func(x, y float64) vg.Point {
		xy := p.xy(x, y)
		return vg.Point{X: dc.X(d.plot.X.Norm(xy.X)), Y: dc.Y(d.plot.Y.Norm(xy.Y))}
	}
	in := func(q vg.Point) bool {
		// Half a line width and a glyph radius of clearance.
		m := vg.Points(2)
		return q.X > box.Min.X-m && q.X < box.Max.X+m && q.Y > box.Min.Y-m && q.Y < box.Max.Y+m
	}
	for _, s := range p.Series {
		for k := range s.X {
			a := at(s.X[k], s.Y[k])
			if in(a) {
				return true, inside
			}
			if k == 0 {
				continue
			}
			b := at(s.X[k-1], s.Y[k-1])
			for i := 0; i <= 1000; i++ {
				u := vg.Length(float64(i) / 1000)
				if in(vg.Point{X: a.X + u*(b.X-a.X), Y: a.Y + u*(b.Y-a.Y)}) {
					return true, inside
				}
			}
		}
	}
	return false, inside
}

func linspace(a, b float64, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = a + (b-a)*float64(i)/float64(n-1)
	}
	return x
}

// The legend goes to the emptiest corner, or the y axis is extended to make
// room, or it goes below the plot; it never meets a line or a point.
func TestLegendClearOfData(t *testing.T) {
	x := linspace(1, 100, 40)
	apply := func(f func(float64) float64) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = f(v)
		}
		return y
	}
	names := []string{"Algorithm 1 (chosen 0.05)", "baseline (chosen 0.2)", "non-private (chosen 1)"}
	panel := func(log bool, ys ...[]float64) Panel {
		p := Panel{Title: "t", XLabel: "x", YLabel: "y", LogX: log, LogY: log}
		for i, y := range ys {
			p.Series = append(p.Series, Series{Name: names[i%len(names)], X: x, Y: y, Color: -1, Points: true})
		}
		return p
	}
	// A deterministic cloud filling the square.
	var cloud []float64
	u := uint64(7)
	for range x {
		u = u*6364136223846793005 + 1442695040888963407
		cloud = append(cloud, 1+99*float64(u>>11)/(1<<53))
	}
	many := panel(false, x)
	for i := range 30 {
		many.Series = append(many.Series, Series{Name: "series " + strconv.Itoa(i), X: x, Y: apply(func(v float64) float64 { return v + float64(i) })})
	}
	for _, c := range []struct {
		name    string
		p       Panel
		corner  int  // -1: any
		outside bool // below the plot
	}{
		{"falling", panel(false, apply(func(v float64) float64 { return 100 - v })), topRight, false},
		{"rising", panel(false, apply(func(v float64) float64 { return v })), topLeft, false},
		{"rising, log", panel(true, apply(func(v float64) float64 { return v * v }), x), topLeft, false},
		{"valley", panel(false, apply(func(v float64) float64 { return (v - 50) * (v - 50) })), bottomRight, false},
		{"hill", panel(false, apply(func(v float64) float64 { return 2500 - (v-50)*(v-50) })), topRight, false},
		{"fan to the top right", panel(true, apply(func(v float64) float64 { return v }), apply(func(v float64) float64 { return math.Sqrt(v) }), apply(func(v float64) float64 { return 1 / v })), -1, false},
		{"cloud", panel(false, cloud), -1, false},
		{"many entries", many, -1, true},
	} {
		f := Figure{Panels: []Panel{c.p}}
		d := render(t, f)[0]
		if d.legend.outside != c.outside {
			t.Errorf("%s: outside = %v, want %v", c.name, d.legend.outside, c.outside)
			continue
		}
		if c.outside {
			continue
		}
		if c.corner >= 0 && d.legend.corner != c.corner {
			t.Errorf("%s: corner %d, want %d", c.name, d.legend.corner, c.corner)
		}
		meets, inside := overlaps(d, c.p)
		if meets {
			t.Errorf("%s: the legend (corner %d) meets the data", c.name, d.legend.corner)
		}
		if !inside {
			t.Errorf("%s: the legend leaves the data area", c.name)
		}
	}
}

// Every number in a rendered SVG is a clean label, and each axis has at
// least two.
func TestSVGNumbersClean(t *testing.T) {
	f := Figure{Cols: 2, Panels: []Panel{
		{Title: "short log", LogX: true, LogY: true, Series: []Series{{Name: "a", X: []float64{2, 3, 4.5}, Y: []float64{0.0959, 0.097, 0.0998}}}},
		{Title: "long log", LogX: true, LogY: true, Series: []Series{{Name: "b", X: []float64{2, 16}, Y: []float64{1.44, 3.81e-13}}}},
		{Title: "linear", Series: []Series{{Name: "c", X: []float64{0, 800}, Y: []float64{-0.3, 0.7}}}},
		{Title: "one decade", LogY: true, Series: []Series{{Name: "d", X: []float64{1, 2}, Y: []float64{0.09, 0.6}}}},
	}}
	var buf bytes.Buffer
	if err := f.SVG(&buf); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	numbers, inText := 0, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			s := strings.TrimSpace(string(tok))
			if !inText || s == "" {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				continue // a title or a name
			}
			numbers++
			if d := sigDigits(s); d > 4 {
				t.Errorf("label %q: %d significant digits", s, d)
			}
			if short := strconv.FormatFloat(v, 'g', -1, 64); sigDigits(short) != sigDigits(s) {
				t.Errorf("label %q: not the shortest form %q", s, short)
			}
		}
	}
	if numbers < 2*2*len(f.Panels) {
		t.Errorf("%d numeric labels in %d panels, want at least two per axis", numbers, len(f.Panels))
	}
}
