package accountant

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/dpmf/dpmf/internal/par"
)

// This file holds what the PLD accountant's loops need to run on all cores
// with the same bits as on one: each element's value is computed by the
// same operations whatever goroutine computes it, into a buffer, and every
// sum over the elements stays a sequential pass in index order. Maxima of
// non-negative values are the exception: max is exact, so the maximum of
// the chunks' maxima is the same number as the running maximum.

// chunk is the number of grid points, cells or coefficients in one chunk
// of a parallel loop ([par.Range]).
const chunk = 1 << 11

// The work of one element of the loops, in par.Grain's units (about one
// multiply-add): an exp or log; a hypot; a math.Pow; a double-word
// complex multiply-add (hornerDFT's step); a discretisation cell's
// inverse loss; its quadrature (2 nodes, each a density, a loss and an
// expm1); an optimistic cell's three quadratures; a point of a curve of
// the queries (its recurrence and, for an optimistic epsilon, a scan of
// the cells).
const (
	costExp   = 20
	costHypot = 10
	costPow   = 40
	costDD    = 60
	costInv   = 40
	costCell  = 150
	costOpt   = 400
	costCurve = 40
)

// powCost returns the work of cpow(z, k) and the math.Pow calls that go
// with it: 2 log2(k) complex products and two powers.
func powCost(k int) float64 { return 12*math.Log2(float64(k)+1) + 2*costPow }

// scale multiplies x by f on all cores.
func scale(x []float64, f float64) {
	par.Range(len(x), chunk, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] *= f
		}
	})
}

// untiltAll sets out[i] = untilt(v, e(i)) for every i whose v = w(i) is
// positive, on all cores, and returns the largest |e(i)| over those i (0
// if none; out must not be empty). w and e must be safe for concurrent use.
func untiltAll(out []float64, w, e func(i int) float64) float64 {
	maxes := make([]float64, (len(out)+chunk-1)/chunk)
	par.Range(len(out), chunk, costExp, func(lo, hi int) {
		m := 0.0
		for i := lo; i < hi; i++ {
			if v := w(i); v > 0 {
				x := e(i)
				m = math.Max(m, math.Abs(x))
				out[i] = untilt(v, x)
			}
		}
		maxes[lo/chunk] = m
	})
	return slices.Max(maxes)
}

// cells runs cell(i) on all cores for every i in [from, n), each cell
// costing about cost units, and checks ctx (if not nil) before every
// cancelEvery-th cell: a chunk stops at the first check that fails, and
// cells returns the first such error in the order of the chunks.
func cells(ctx context.Context, from, n int, cost float64, cell func(i int)) error {
	if n <= from {
		return nil
	}
	errs := make([]error, (n-from+chunk-1)/chunk)
	par.Range(n-from, chunk, cost, func(lo, hi int) {
		for i := from + lo; i < from+hi; i++ {
			if ctx != nil && i%cancelEvery == 0 {
				if errs[lo/chunk] = ctx.Err(); errs[lo/chunk] != nil {
					return
				}
			}
			cell(i)
		}
	})
	return cmp.Or(errs...)
}

// lastWhere returns the largest j in [0, n) with ok(j), or -1 if there is
// none. It tries blocks of 16 chunks from the top down, each block's
// chunks on all cores (ok must be safe for concurrent use), so that it
// evaluates ok at most a block below the answer.
func lastWhere(n int, cost float64, ok func(j int) bool) int {
	const block = 16 * chunk
	found := make([]int, block/chunk)
	for top := n; top > 0; top -= block {
		bot := max(0, top-block)
		chunks := (top - bot + chunk - 1) / chunk
		par.For(chunks, float64(top-bot)*cost, func(c int) {
			// Chunk c holds [max(bot, top-(c+1) chunk), top-c chunk).
			found[c] = -1
			for j := top - c*chunk - 1; j >= max(bot, top-(c+1)*chunk); j-- {
				if ok(j) {
					found[c] = j
					return
				}
			}
		})
		for _, j := range found[:chunks] {
			if j >= 0 {
				return j
			}
		}
	}
	return -1
}
