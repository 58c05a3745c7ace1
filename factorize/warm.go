package factorize

import (
	"context"
	"math"

	"gonum.org/v1/gonum/mat"
)

// coarseFactor is the ratio of sizes between a workload and the coarse
// workload whose optimum starts the dense path (see denseWarmStart).
const coarseFactor = 8

// minWarmSize is the smallest order for which the dense path starts from
// a coarse solution: below it the start saves less than it costs.
const minWarmSize = 512

// denseWarmStart returns a starting point (log v) for the dense path's
// fixed-point iteration on w, or nil. It solves, loosely, the coarse
// workload A_c = R A P of order m = ceil(R / 8): P sums each block of 8
// consecutive columns, R keeps the last row of each block, so A_c is
// lower triangular and the prefix-sum workload of order R becomes 8 times
// that of order m. The coarse multipliers, interpolated linearly in log v
// over the block centres, start the fine iteration (for prefix sums at
// R = 2000, 18 iterations instead of 23 to a residual of 2e-5, at the cost
// of about 1/500 of a fine evaluation per coarse iteration). It is a start
// only: the certificate never depends on it, and the caller falls back to
// v = 1 if it is far from a fixed point.
func denseWarmStart(ctx context.Context, w *Workload) ([]float64, error) {
	if w.R() < minWarmSize {
		return nil, nil
	}
	return coarseStart(ctx, w)
}

// coarseStart is denseWarmStart without its size threshold.
func coarseStart(ctx context.Context, w *Workload) ([]float64, error) {
	n := w.R()
	f := coarseFactor
	m := (n + f - 1) / f
	ac := coarseWorkload(w.Matrix(), f)
	wc, err := NewWorkload(ac)
	if err != nil {
		return nil, nil // a singular coarse workload: start from v = 1
	}
	opt, err := Options{Tol: 1e-4, MaxIter: 200}.withDefaults()
	if err != nil {
		return nil, err
	}
	sol, err := fixedPoint(ctx, newDenseEvaluator(wc), m, opt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	xc := make([]float64, m)
	for j, v := range sol.vUpper {
		xc[j] = math.Log(v)
	}
	// A_c is about f times a workload of order m, whose multipliers are
	// 1/f^2 of A_c's (v scales with the square of the workload).
	return interpolated(n, f, xc, 2*math.Log(float64(f))), nil
}

// interpolated returns xc, given at the centres of the blocks of f
// rounds, interpolated linearly at each of n rounds (xc[0] before the
// first centre), minus shift.
func interpolated(n, f int, xc []float64, shift float64) []float64 {
	m := len(xc)
	x := make([]float64, n)
	forChunks(n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			// Position of round i on the coarse grid of block centres.
			t := (float64(i)+0.5)/float64(f) - 0.5
			j := int(math.Floor(t))
			frac := t - float64(j)
			if j < 0 {
				j, frac = 0, 0
			}
			x[i] = (1-frac)*xc[min(j, m-1)] + frac*xc[min(j+1, m-1)] - shift
		}
	})
	return x
}

// coarseWorkload returns R A P for the lower-triangular n x n matrix a: P
// sums each block of f consecutive columns (the last block may be
// shorter), R keeps the last row of each block.
func coarseWorkload(a mat.Matrix, f int) *mat.Dense {
	n, _ := a.Dims()
	m := (n + f - 1) / f
	ac := mat.NewDense(m, m, nil)
	for i := 0; i < m; i++ {
		r := min(f*i+f-1, n-1)
		for j := 0; j <= i; j++ {
			s := 0.0
			for c := f * j; c < min(f*j+f, r+1); c++ {
				s += a.At(r, c)
			}
			ac.Set(i, j, s)
		}
	}
	return ac
}

// structuredCoarse is the ratio of orders between a prefix-sum workload
// and the coarse one whose optimum starts its structured iteration (see
// structuredWarmStart), and minStructuredWarm the smallest order that
// starts that way.
const (
	structuredCoarse  = 10
	minStructuredWarm = 50000
)

// structuredWarmTol is the certified gap asked of the coarse solve of
// structuredWarmStart: its interpolation differs from the fine optimum by
// more than that anyway.
var structuredWarmTol = 1e-6

// structuredWarmStart returns a starting point (log v) for the structured
// fixed point of the prefix-sum workload of order n >= minStructuredWarm,
// or nil: the optimum of the prefix-sum workload of order
// m = ceil(n / 10) (itself started this way, so the levels are n / 10,
// n / 100, ... down to minStructuredWarm), interpolated linearly in log v
// at the fine rounds' positions on the coarse grid. The prefix-sum
// multipliers are nearly scale-free (v_i of order n is about v_{i/10} of
// order n / 10, as coarseStart's block sums show), so this is close to the
// fine optimum away from the two ends. It is a start only: the certificate
// never depends on it, and a coarse solve that fails gives nil (v = 1).
func structuredWarmStart(ctx context.Context, w *Workload) ([]float64, error) {
	n := w.R()
	if !w.IsPrefix() || n < minStructuredWarm {
		return nil, nil
	}
	f := structuredCoarse
	m := (n + f - 1) / f
	wc, err := Prefix(m)
	if err != nil {
		return nil, nil
	}
	xc, err := structuredWarmStart(ctx, wc)
	if err != nil {
		return nil, err
	}
	if xc == nil {
		xc = make([]float64, m)
	}
	opt, err := Options{Tol: structuredWarmTol}.withDefaults()
	if err != nil {
		return nil, err
	}
	sol, err := fixedPointFrom(ctx, newStructuredEvaluator(wc), xc, opt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	for i, v := range sol.vUpper {
		xc[i] = math.Log(v)
	}
	return interpolated(n, f, xc, 0), nil
}
