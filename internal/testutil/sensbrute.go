package testutil

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// This file is a brute-force reference for the sensitivity of a factor C
// under a participation pattern, written from the definitions of
// docs/participation.md and the project's field notes on sensitivity and
// participation (kept outside the repository) alone, for the tests of factorize, plan and mechanism: it uses none of
// the code it checks.
//
// One sample takes part in the rounds of a pattern S; in each of them its
// row of G changes by a vector g_j in R^d with ||g_j|| <= 1 (the unit of
// the per-round bound; the others do not change), so the squared
// sensitivity is max_S max_g sum_{a,b in S} X_ab <g_a, g_b> with
// X = C^T C. A zero g_j is allowed, so only the maximal patterns matter.

// SensPatterns returns the maximal participation patterns over n rounds of
// the pattern kind: "single" (each round alone), "epochs" (k epochs of
// period n/k: the residue classes {r, r + n/k, ...}; k must divide n) or
// "minsep" (sets of rounds pairwise at least b apart with at most k of
// them, k = 0 for no limit, to which no round can be added). It returns
// nil for a kind it does not know or counts out of range.
func SensPatterns(kind string, n, b, k int) [][]int {
	var out [][]int
	switch kind {
	case "single":
		for i := 0; i < n; i++ {
			out = append(out, []int{i})
		}
		return out
	case "epochs":
		if k < 1 || n%k != 0 {
			return nil
		}
		per := n / k
		for r := 0; r < per; r++ {
			var s []int
			for i := r; i < n; i += per {
				s = append(s, i)
			}
			out = append(out, s)
		}
		return out
	case "minsep":
	default:
		return nil
	}
	if b < 1 || k < 0 {
		return nil
	}
	limit := k
	if limit == 0 || limit > n {
		limit = n
	}
	fits := func(s []int, i int) bool {
		for _, j := range s {
			if d := i - j; d < b && d > -b {
				return false
			}
		}
		return true
	}
	var rec func(next int, s []int)
	rec = func(next int, s []int) {
		maximal := true
		if len(s) < limit {
			for i := 0; i < n && maximal; i++ {
				maximal = !fits(s, i)
			}
		}
		if maximal && len(s) > 0 {
			out = append(out, append([]int(nil), s...))
		}
		if len(s) == limit {
			return
		}
		for i := next; i < n; i++ {
			rec(i+b, append(s, i))
		}
	}
	rec(0, nil)
	return out
}

// SensBracket returns lo <= sens <= hi for the factor c (m x n, one column
// per round) over the patterns: lo is the largest ||C u|| over every
// pattern and every vector u of signs +-1 on it (contributions in one
// dimension; every sign vector only for patterns of at most 14 rounds,
// else the all-ones u), hi the square root of the largest sum of |X_ab|
// over a pattern (|<g_a, g_b>| <= 1). Where X >= 0 on every pattern's
// block the two are equal: the exact sensitivity.
func SensBracket(c mat.Matrix, patterns [][]int) (lo, hi float64) {
	m, n := c.Dims()
	col := make([][]float64, n)
	for j := range col {
		col[j] = make([]float64, m)
		for i := range col[j] {
			col[j][i] = c.At(i, j)
		}
	}
	x := func(a, b int) float64 {
		s := 0.0
		for i := range m {
			s += col[a][i] * col[b][i]
		}
		return s
	}
	lo2, hi2 := 0.0, 0.0
	v := make([]float64, m)
	for _, s := range patterns {
		abs := 0.0
		for _, a := range s {
			for _, b := range s {
				abs += math.Abs(x(a, b))
			}
		}
		hi2 = math.Max(hi2, abs)
		signs := 1
		if len(s) <= 14 {
			signs = 1 << max(0, len(s)-1) // u and -u give the same norm
		}
		for sg := 0; sg < signs; sg++ {
			clear(v)
			for t, j := range s {
				f := 1.0
				if (sg>>t)&1 == 1 {
					f = -1
				}
				for i := range m {
					v[i] += f * col[j][i]
				}
			}
			q := 0.0
			for _, e := range v {
				q += e * e
			}
			lo2 = math.Max(lo2, q)
		}
	}
	return math.Sqrt(lo2), math.Sqrt(hi2)
}
