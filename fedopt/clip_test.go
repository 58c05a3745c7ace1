package fedopt

import (
	"math"
	"testing"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		g     []float64
		bound float64
		want  []float64
	}{
		{[]float64{3, 4}, 1, []float64{0.6, 0.8}},
		{[]float64{3, 4}, 5, []float64{3, 4}},
		{[]float64{3, 4}, 10, []float64{3, 4}},
		{[]float64{0, 0}, 1, []float64{0, 0}},
		{[]float64{3e300, 4e300}, 1, []float64{0.6, 0.8}}, // sum of squares overflows
	} {
		g := append([]float64(nil), c.g...)
		norm := Clip(g, c.bound)
		if want := math.Hypot(c.g[0], c.g[1]); math.Abs(norm-want) > 1e-15*want {
			t.Errorf("Clip(%v) returned norm %v, want %v", c.g, norm, want)
		}
		for k := range g {
			if math.Abs(g[k]-c.want[k]) > 1e-15 {
				t.Errorf("Clip(%v, %v) = %v, want %v", c.g, c.bound, g, c.want)
				break
			}
		}
	}
}
