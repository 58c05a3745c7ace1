package figure

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sigDigits returns the number of significant digits of a label: its
// mantissa's digits without leading or trailing zeros.
func sigDigits(s string) int {
	s = strings.TrimPrefix(s, "-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, ".", "")
	s = strings.Trim(s, "0")
	return len(s)
}

// checkLabels checks the labelled ticks of [min, max]: at least two; each
// parses as a number within the range, at the tick's position, without
// float noise (at most maxDigits significant digits, and the shortest
// representation of the number it parses to); no label twice; and returns
// the labels.
func checkLabels(t *testing.T, min, max float64, log bool, maxDigits int) []string {
	t.Helper()
	var labels []string
	for _, tk := range ticks(min, max, log) {
		if tk.Label == "" {
			continue
		}
		v, err := strconv.ParseFloat(tk.Label, 64)
		if err != nil {
			t.Errorf("[%g, %g] log %v: label %q is not a number", min, max, log, tk.Label)
			continue
		}
		if d := sigDigits(tk.Label); d > maxDigits {
			t.Errorf("[%g, %g] log %v: label %q has %d significant digits, want at most %d", min, max, log, tk.Label, d, maxDigits)
		}
		if short := strconv.FormatFloat(v, 'g', -1, 64); sigDigits(short) != sigDigits(tk.Label) {
			t.Errorf("[%g, %g] log %v: label %q is not the shortest form %q", min, max, log, tk.Label, short)
		}
		if strings.Contains(tk.Label, "e+") || strings.Contains(tk.Label, "e-0") || strings.Contains(tk.Label, "e0") {
			t.Errorf("[%g, %g] log %v: label %q has a padded exponent", min, max, log, tk.Label)
		}
		if math.Abs(v-tk.Value) > 1e-12*math.Abs(v) {
			t.Errorf("[%g, %g] log %v: label %q at %g", min, max, log, tk.Label, tk.Value)
		}
		if tol := 1e-9 * (max - min); v < min-tol || v > max+tol {
			t.Errorf("[%g, %g] log %v: label %q outside the range", min, max, log, tk.Label)
		}
		if slices.Contains(labels, tk.Label) {
			t.Errorf("[%g, %g] log %v: label %q twice", min, max, log, tk.Label)
		}
		labels = append(labels, tk.Label)
	}
	if len(labels) < 2 {
		t.Errorf("[%g, %g] log %v: labels %q, want at least two", min, max, log, labels)
	}
	if len(labels) > 9 {
		t.Errorf("[%g, %g] log %v: %d labels %q, want at most 9", min, max, log, len(labels), labels)
	}
	return labels
}

// Every label of many ranges, linear and logarithmic, short and long, huge
// and tiny, is a clean number at its tick, and every axis has two.
func TestTickLabelsClean(t *testing.T) {
	ranges := [][2]float64{
		{0, 1}, {0, 800}, {0, 100}, {-3, 7}, {-1e-7, 2e-7}, {0.0959, 0.0998}, {0.3, 0.5},
		{1, 1.0003}, {1e6, 1e6 + 3}, {123456, 987654}, {1e-300, 5e-300}, {2e300, 9e300},
		{0.01, 0.6}, {1.1, 1.9}, {2.1, 4.9}, {5.5, 19}, {7.9, 8.6}, {0.81, 0.99}, {100, 10000},
		{1e-13, 1.44}, {3.81e-13, 1.44}, {1e-300, 1e300}, {0.016, 0.52}, {0.09, 0.11},
		{4e-5, 3e-4}, {2e7, 3e9}, {0.5, 2}, {0.2, 0.3}, {9.99, 10.01}, {1e-320, 1e-310},
	}
	for _, r := range ranges {
		// A relative span under 1% needs more digits than 4 to tell the
		// labels apart: allow what the span needs.
		digits := 4
		if scale := math.Max(math.Abs(r[0]), math.Abs(r[1])); (r[1]-r[0])/scale < 0.01 {
			digits = 2 + int(math.Ceil(math.Log10(scale/(r[1]-r[0]))))
		}
		checkLabels(t, r[0], r[1], false, digits)
		if r[0] > 0 {
			checkLabels(t, r[0], r[1], true, digits)
		}
	}
	// Random ranges.
	x := uint64(1)
	rnd := func() float64 {
		x = x*6364136223846793005 + 1442695040888963407
		return float64(x>>11) / (1 << 53)
	}
	for range 2000 {
		lo := math.Pow(10, 40*rnd()-20)
		hi := lo * math.Pow(10, 6*rnd()+0.01)
		checkLabels(t, lo, hi, true, 4)
		checkLabels(t, lo, hi, false, 4)
		checkLabels(t, -hi, lo, false, 4)
	}
}

// The labels of typical axes, worked out by hand.
func TestTickLabelsKnown(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		log      bool
		want     string
	}{
		{0, 800, false, "0 200 400 600 800"},
		{0, 100, false, "0 20 40 60 80 100"},
		{-3, 7, false, "-2 0 2 4 6"},
		{0.0959, 0.0998, true, "0.096 0.097 0.098 0.099"},
		{0.01, 0.6, true, "0.01 0.02 0.05 0.1 0.2 0.5"},
		{0.001, 1, true, "0.001 0.01 0.1 1"},
		{100, 10000, true, "100 1000 10000"},
		{3.81e-13, 1.44, true, "1e-12 1e-10 1e-8 1e-6 0.0001 0.01 1"},
		{2.1, 4.9, true, "3 4"},
		{1.1, 1.9, true, "1.2 1.4 1.6 1.8"},
		{5.5, 19, true, "6 7 8 9 10"},
		{0.35, 0.49, true, "0.4"}, // then the linear policy: below
		{2e7, 3e9, true, "2e7 5e7 1e8 2e8 5e8 1e9 2e9"},
		{1e-300, 1e300, true, "1e-300 1e-200 1e-100 1 1e100 1e200 1e300"},
	} {
		var got []string
		for _, tk := range ticks(c.min, c.max, c.log) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		want := c.want
		if c.min == 0.35 {
			want = "0.36 0.38 0.4 0.42 0.44 0.46 0.48"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("[%g, %g] log %v: labels %q, want %q", c.min, c.max, c.log, strings.Join(got, " "), want)
		}
	}
}

// Minor ticks carry no label, lie in the range and are not labelled ticks;
// on a logarithmic axis of a few decades they are 2 to 9 times the powers of
// ten.
func TestMinorTicks(t *testing.T) {
	var minor []float64
	for _, tk := range ticks(1, 100, true) {
		if tk.IsMinor() {
			minor = append(minor, tk.Value)
		}
	}
	want := []float64{2, 3, 4, 5, 6, 7, 8, 9, 20, 30, 40, 50, 60, 70, 80, 90}
	if !slices.Equal(minor, want) {
		t.Errorf("minor ticks of [1, 100]: %v, want %v", minor, want)
	}
	// [0, 1]: labels every 0.2, minor ticks every 0.05.
	for _, tk := range ticks(0, 1, false) {
		if tk.IsMinor() && (tk.Value < 0 || tk.Value > 1 || math.Abs(tk.Value*20-math.Round(tk.Value*20)) > 1e-9) {
			t.Errorf("minor tick of [0, 1] at %v", tk.Value)
		}
	}
}

// The ticker of a logarithmic axis, which gonum sees as a linear axis of
// log10 of the values, puts the labels at log10 of their values.
func TestTickerLog(t *testing.T) {
	for _, tk := range (ticker{log: true}).Ticks(math.Log10(0.01), math.Log10(0.6)) {
		if tk.Label == "" {
			continue
		}
		v, _ := strconv.ParseFloat(tk.Label, 64)
		if math.Abs(math.Log10(v)-tk.Value) > 1e-12 {
			t.Errorf("label %q at %v, want %v", tk.Label, tk.Value, math.Log10(v))
		}
	}
}
