package figure

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// ticker marks an axis by the one tick policy (see ticks). A logarithmic
// axis is drawn as a linear axis of log10 of the values (so that gonum lays
// it out as any other), and its ticker converts.
type ticker struct{ log bool }

// Ticks implements plot.Ticker.
func (t ticker) Ticks(min, max float64) []plot.Tick {
	if !t.log {
		return ticks(min, max, false)
	}
	marks := ticks(math.Pow(10, min), math.Pow(10, max), true)
	for i := range marks {
		marks[i].Value = math.Log10(marks[i].Value)
	}
	return marks
}

// ticks is the one tick policy of every axis drawn here, over the values
// [min, max]: labels are clean decimals (m × 10^k with a short integer m,
// formatted from its digits, never from float arithmetic), an axis with a
// range of positive length gets at least two labelled ticks, and minor ticks
// are unlabelled.
//
// On a logarithmic axis the labels are the powers of ten (every second,
// third or fifth one when the axis spans many decades); where that gives
// fewer than three labels (an axis of less than about two decades), 1, 2
// and 5 times them; where that gives fewer than three, 1 to 9 times them;
// where that gives fewer than two (a small fraction of a decade), the
// linear policy.
// On a linear axis they are the multiples of a step of 1, 2 or 5 times a
// power of ten, two to seven of them.
func ticks(min, max float64, log bool) []plot.Tick {
	if math.IsNaN(min) || math.IsNaN(max) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return nil
	}
	if min > max {
		min, max = max, min
	}
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: label(round4(min))}}
	}
	if log && min > 0 {
		if marks := logTicks(min, max); marks != nil {
			return marks
		}
	}
	return linearTicks(min, max)
}

// exact returns m × 10^k as the float64 nearest to it, so that its
// shortest decimal representation is m's digits.
func exact(m int64, k int) float64 {
	v, err := strconv.ParseFloat(strconv.FormatInt(m, 10)+"e"+strconv.Itoa(k), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// round4 rounds v to 4 significant digits.
func round4(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return r
}

// label formats a tick value by its shortest representation: plain decimals
// from 1e-4 to 1e6 (0.0001, 250000), else m e k (1e-12, 2.5e8).
func label(v float64) string {
	if v == 0 {
		return "0"
	}
	if a := math.Abs(v); a >= 1e-4 && a < 1e6 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, 64), "e")
	e, _ := strconv.Atoi(exp)
	return mant + "e" + strconv.Itoa(e)
}

// inRange reports whether v lies in [min, max], up to a rounding error far
// below what a drawing resolves (of the span on a linear axis).
func inRange(v, min, max float64) bool {
	tol := 1e-12 * (max - min)
	return v >= min-tol && v <= max+tol
}

// inLogRange reports whether v lies in [min, max] (0 < min), up to a
// relative rounding error far below what a drawing resolves.
func inLogRange(v, min, max float64) bool {
	return v >= min*(1-1e-12) && v <= max*(1+1e-12)
}

// linearTicks labels the multiples of the largest step m × 10^k (m in 1, 2,
// 5) that gives at least two and at most seven labels, with unlabelled
// minor ticks between them.
func linearTicks(min, max float64) []plot.Tick {
	span := max - min
	scale := math.Max(math.Abs(min), math.Abs(max))
	if span < 1e-13*scale {
		// Below float64's resolution: the two ends, rounded.
		return []plot.Tick{{Value: min, Label: label(round4(min))}, {Value: max, Label: label(round4(max))}}
	}
	multiples := func(m int64, k int) (vals []float64) {
		step := exact(m, k)
		lo, hi := math.Ceil(min/step-1e-9), math.Floor(max/step+1e-9)
		if !(step > 0) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(hi-lo <= 1000) {
			return nil
		}
		for i := int64(lo); i <= int64(hi); i++ {
			if v := exact(i*m, k); inRange(v, min, max) {
				vals = append(vals, v)
			}
		}
		return vals
	}
	var prev []plot.Tick
	k0 := int(math.Floor(math.Log10(span)))
	for k := k0 - 2; k <= k0+1; k++ {
		for _, m := range []int64{1, 2, 5} {
			vals := multiples(m, k)
			if vals == nil && prev == nil {
				continue // too many
			}
			if len(vals) > 7 {
				prev = labelled(vals)
				continue
			}
			if len(vals) < 2 {
				if prev != nil {
					return prev
				}
				continue
			}
			ticks := labelled(vals)
			// Minor ticks: 5 per step for m = 1 and 5, 4 for m = 2.
			sub, subK := int64(2), k-1
			if m == 2 {
				sub = 5
			} else if m == 5 {
				sub, subK = 1, k
			}
			for _, v := range multiples(sub, subK) {
				labelledAt := func(w float64) bool { return math.Abs(w-v) <= 1e-9*math.Abs(v) }
				if !slices.ContainsFunc(vals, labelledAt) {
					ticks = append(ticks, plot.Tick{Value: v})
				}
			}
			return ticks
		}
	}
	if prev != nil {
		return prev
	}
	// Subnormal ranges, where steps of 10^k are not representable: the
	// two ends, rounded.
	return []plot.Tick{{Value: min, Label: label(round4(min))}, {Value: max, Label: label(round4(max))}}
}

// labelled returns one labelled tick per value.
func labelled(vals []float64) []plot.Tick {
	ticks := make([]plot.Tick, len(vals))
	for i, v := range vals {
		ticks[i] = plot.Tick{Value: v, Label: label(v)}
	}
	return ticks
}

// logTicks returns the ticks of a logarithmic axis over [min, max]
// (0 < min < max), or nil where fewer than two of 1 to 9 times a power of
// ten lie in it (then the linear policy applies).
func logTicks(min, max float64) []plot.Tick {
	kLo := int(math.Floor(math.Log10(min))) - 1
	kHi := int(math.Ceil(math.Log10(max))) + 1
	if kHi-kLo > 700 {
		return nil
	}
	decades := math.Log10(max / min)
	// On a long axis, label every few powers of ten only.
	every := 1
	for _, e := range []int{1, 2, 3, 5, 10, 20, 50, 100} {
		every = e
		if decades/float64(e) <= 8 {
			break
		}
	}
	// Mantissas of the labels and of the minor ticks, from the sparsest
	// policy to the densest; the first with three labels is taken (two for
	// the densest).
	stages := []struct{ major, minor []int64 }{
		{[]int64{1}, []int64{2, 3, 4, 5, 6, 7, 8, 9}},
		{[]int64{1, 2, 5}, []int64{3, 4, 6, 7, 8, 9}},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, nil},
	}
	var fallback []plot.Tick
	first := 0
	switch {
	case decades < 0.5:
		first = 2
	case decades < 2:
		first = 1
	}
	for i, st := range stages[first:] {
		minor := st.minor
		if decades > 12 {
			minor = nil
		}
		var ticks []plot.Tick
		n := 0
		for k := kLo; k <= kHi; k++ {
			for _, m := range st.major {
				v := exact(m, k)
				if !inLogRange(v, min, max) {
					continue
				}
				if m == 1 && k%every != 0 {
					ticks = append(ticks, plot.Tick{Value: v})
					continue
				}
				ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
				n++
			}
			for _, m := range minor {
				if v := exact(m, k); inLogRange(v, min, max) {
					ticks = append(ticks, plot.Tick{Value: v})
				}
			}
		}
		// Two labels will do on a short axis; else try for three.
		if n >= 3 || (n == 2 && first+i == len(stages)-1) {
			return ticks
		}
		if n == 2 && fallback == nil {
			fallback = ticks
		}
	}
	return fallback
}
