package bench_test

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/bench"
	"github.com/dpmf/dpmf/factorize"
)

// prefix returns the r x r prefix-sum matrix, built here rather than taken
// from package factorize.
func prefix(r int) *mat.TriDense {
	a := mat.NewTriDense(r, mat.Lower, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			a.SetTri(i, j, 1)
		}
	}
	return a
}

func relDiff(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }

func TestPlainDenseSmallExact(t *testing.T) {
	ctx := context.Background()
	phi := (1 + math.Sqrt(5)) / 2
	for _, tc := range []struct {
		name  string
		a     mat.Matrix
		want  float64
		relTo float64 // precision of want
		v     []float64
	}{
		// R = 1: C = B = 1.
		{name: "prefix R=1", a: prefix(1), want: 1, relTo: 1e-15},
		// R = 2: the optimum is the golden ratio squared (closed form).
		{name: "prefix R=2", a: prefix(2), want: phi * phi, relTo: 1e-15},
		// R = 3: 4.607861648 with multipliers [2.651863, 1.257352, 0.698646]
		// (notes.md section 3, an independent computation), given to 10
		// significant digits.
		{name: "prefix R=3", a: prefix(3), want: 4.607861648, relTo: 1.1e-10, v: []float64{2.651863, 1.257352, 0.698646}},
		// The identity workload: S = I, X = I is optimal with loss R.
		{name: "identity R=5", a: mat.NewDiagDense(5, []float64{1, 1, 1, 1, 1}), want: 5, relTo: 1e-15},
		// A diagonal workload diag(d): S = diag(d^2), diag(X) = 1 forces
		// X = I as the optimum (tr(S X^{-1}) >= sum_i S_ii / X_ii by
		// Cauchy-Schwarz on each diagonal entry), loss sum d_i^2 = 1+4+9.
		{name: "diag(1,2,3)", a: mat.NewDiagDense(3, []float64{1, 2, 3}), want: 14, relTo: 1e-15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const tol = 1e-12
			res, err := bench.PlainDense(ctx, tc.a, tol, 10000)
			if err != nil {
				t.Fatal(err)
			}
			if res.Gap > tol {
				t.Errorf("gap %g > %g", res.Gap, tol)
			}
			// The certified interval must contain the known optimum (up to
			// the precision of the known value and rounding).
			slack := (tc.relTo + 1e-13) * tc.want
			if res.Lower > tc.want+slack || res.Loss < tc.want-slack {
				t.Errorf("certified interval [%.12g, %.12g] does not contain %.12g", res.Lower, res.Loss, tc.want)
			}
			if d := relDiff(res.Loss, tc.want); d > tc.relTo+2*tol {
				t.Errorf("loss %.12g, want %.12g (relative difference %.2g)", res.Loss, tc.want, d)
			}
			for i, w := range tc.v {
				if math.Abs(res.V[i]-w) > 1e-6 {
					t.Errorf("v[%d] = %.7f, want %.6f", i, res.V[i], w)
				}
			}
		})
	}
}

// TestPlainDenseAgreesWithOptimal compares the plain fixed point with the
// accelerated, structured solver of package factorize: two algorithms with
// certified gaps of 1e-11 must agree to well within 1e-9 relative.
func TestPlainDenseAgreesWithOptimal(t *testing.T) {
	ctx := context.Background()
	const r, tol = 50, 1e-11
	weights := make([]float64, r)
	for i := range weights {
		weights[i] = 1 / math.Sqrt(1+float64(i)/10) // a decaying learning rate
	}
	weighted := mat.NewTriDense(r, mat.Lower, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			weighted.SetTri(i, j, weights[j])
		}
	}
	wPrefix, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	wWeighted, err := factorize.WeightedPrefix(weights)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		a    mat.Matrix
		w    *factorize.Workload
	}{
		{"prefix", prefix(r), wPrefix},
		{"weighted prefix", weighted, wWeighted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, err := bench.PlainDense(ctx, tc.a, tol, 10000)
			if err != nil {
				t.Fatal(err)
			}
			opt, err := factorize.Optimal(ctx, tc.w, factorize.Options{Tol: tol, LossOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := relDiff(plain.Loss, opt.Metrics.Loss); d > 1e-9 {
				t.Errorf("plain loss %.12g, factorize.Optimal %.12g: relative difference %.2g > 1e-9", plain.Loss, opt.Metrics.Loss, d)
			}
			t.Logf("loss %.12g: plain %d iterations (gap %.2g), accelerated %d (gap %.2g)", plain.Loss, plain.Iterations, plain.Gap, opt.Iterations, opt.Gap)
			// The plain iteration is linear and slow: it needs more
			// iterations than the accelerated solver.
			if plain.Iterations <= opt.Iterations {
				t.Errorf("plain iterations %d <= accelerated %d", plain.Iterations, opt.Iterations)
			}
		})
	}
}

func TestPlainDenseErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		a       mat.Matrix
		tol     float64
		maxIter int
	}{
		{"not square", mat.NewDense(2, 3, nil), 1e-10, 10},
		{"zero tol", prefix(3), 0, 10},
		{"NaN tol", prefix(3), math.NaN(), 10},
		{"no iterations", prefix(3), 1e-10, 0},
		{"too few iterations", prefix(20), 1e-12, 2},
	} {
		if _, err := bench.PlainDense(ctx, tc.a, tc.tol, tc.maxIter); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := bench.PlainDense(cancelled, prefix(3), 1e-10, 10); err != context.Canceled {
		t.Errorf("cancelled context: error %v, want context.Canceled", err)
	}
}
