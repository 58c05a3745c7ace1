package factorize

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// bruteMetrics recomputes the metrics of f from its C alone: B = A C^{-1}
// by gonum's dense inverse, then gamma, ||B||_F^2 and the worst row, by
// plain loops.
func bruteMetrics(t *testing.T, f *Factorization) Metrics {
	t.Helper()
	var cinv, b mat.Dense
	if err := cinv.Inverse(f.C); err != nil {
		t.Fatal(err)
	}
	b.Mul(f.Workload.Matrix(), &cinv)
	r, _ := b.Dims()
	gamma2, frob, worst := 0.0, 0.0, 0.0
	for j := 0; j < r; j++ {
		s := 0.0
		for i := 0; i < r; i++ {
			s += f.C.At(i, j) * f.C.At(i, j)
		}
		gamma2 = math.Max(gamma2, s)
	}
	for i := 0; i < r; i++ {
		s := 0.0
		for j := 0; j < r; j++ {
			s += b.At(i, j) * b.At(i, j)
		}
		frob += s
		worst = math.Max(worst, s)
	}
	return Metrics{Gamma: math.Sqrt(gamma2), FrobBSq: frob, Loss: gamma2 * frob,
		RMSE: math.Sqrt(gamma2 * frob / float64(r)), MaxSE: gamma2 * worst}
}

// checkFactorization checks A = B C, causality, and the metrics against
// a brute-force recomputation.
func checkFactorization(t *testing.T, f *Factorization) {
	t.Helper()
	if res := residual(f); res > 1e-10 {
		t.Errorf("%s: max |A - B C| = %.3g, want <= 1e-10", f.Strategy, res)
	}
	if err := f.CheckCausal(); err != nil {
		t.Errorf("%s: %v", f.Strategy, err)
	}
	want := bruteMetrics(t, f)
	for _, m := range []struct {
		name      string
		got, want float64
	}{
		{"sensitivity", f.Metrics.Gamma, want.Gamma},
		{"||B||_F^2", f.Metrics.FrobBSq, want.FrobBSq},
		{"loss", f.Metrics.Loss, want.Loss},
		{"RMSE", f.Metrics.RMSE, want.RMSE},
		{"MaxSE", f.Metrics.MaxSE, want.MaxSE},
	} {
		if math.Abs(m.got-m.want) > 1e-9*math.Abs(m.want) {
			t.Errorf("%s: %s = %.12g, brute force %.12g", f.Strategy, m.name, m.got, m.want)
		}
	}
}

func TestBanded(t *testing.T) {
	ctx := context.Background()
	prefix := func(r int) *Workload { w, _ := Prefix(r); return w }
	mom, err := Momentum(30, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	// The same momentum workload as a general matrix: Toeplitz structure
	// detected from the entries.
	momDense, err := NewWorkload(mom.Matrix())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w           *Workload
		bands, want int // want: the bands of C
	}{
		{prefix(2), 0, 2}, {prefix(7), 1, 1}, {prefix(7), 2, 2}, {prefix(20), 5, 5},
		{prefix(20), 0, DefaultBands}, {prefix(20), 20, 20}, {prefix(9), 50, 9},
		{mom, 4, 4}, {momDense, 4, 4},
	} {
		f, err := BandedStrategy{Bands: tc.bands}.Factorize(ctx, tc.w, SingleParticipation())
		if err != nil {
			t.Fatalf("%s R = %d, bands %d: %v", tc.w.Name(), tc.w.R(), tc.bands, err)
		}
		if f.Strategy != StrategyBanded {
			t.Errorf("strategy %q, want %q", f.Strategy, StrategyBanded)
		}
		checkFactorization(t, f)
		got := 1
		r := tc.w.R()
		for i := 0; i < r; i++ {
			for j := 0; j < i; j++ {
				if f.C.At(i, j) != 0 {
					got = max(got, i-j+1)
				}
			}
		}
		if got != tc.want {
			t.Errorf("%s R = %d, bands %d: C has %d bands, want %d", tc.w.Name(), r, tc.bands, got, tc.want)
		}
	}
}

// TestBandedValues checks Banded against closed forms and other strategies:
// b = 1 is the identity (loss R(R+1)/2), b = R is at least as good as
// [SqrtNormalized], and the loss does not increase with b.
func TestBandedValues(t *testing.T) {
	ctx := context.Background()
	const r = 64
	w, _ := Prefix(r)
	prev := math.Inf(1)
	for _, b := range []int{1, 2, 3, 4, 8, 16, 32, 64} {
		f, err := BandedStrategy{Bands: b}.Factorize(ctx, w, SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		if f.Metrics.Loss > prev*(1+1e-12) {
			t.Errorf("bands %d: loss %.8g above %.8g with fewer bands", b, f.Metrics.Loss, prev)
		}
		prev = f.Metrics.Loss
		if b == 1 && f.Metrics.Loss != r*(r+1)/2 {
			t.Errorf("bands 1: loss %v, want R(R+1)/2 = %d", f.Metrics.Loss, r*(r+1)/2)
		}
	}
	sqn, _ := newSqrtNormalized(w)
	if prev > sqn.Metrics.Loss*(1+1e-12) {
		t.Errorf("bands R: loss %.10g, above sqrt-normalized %.10g", prev, sqn.Metrics.Loss)
	}
}

// TestBandedTwoBands checks the optimiser for b = 2, where C = T(1, t) has
// one free parameter: Banded's loss must be at most the minimum over t of
// the unnormalised loss, found here by a grid and golden-section search on
// a dense evaluation (gonum inverse).
func TestBandedTwoBands(t *testing.T) {
	const r = 24
	w, _ := Prefix(r)
	loss := func(x float64) float64 {
		c := mat.NewDense(r, r, nil)
		for i := 0; i < r; i++ {
			c.Set(i, i, 1)
			if i > 0 {
				c.Set(i, i-1, x)
			}
		}
		var ci, b mat.Dense
		if err := ci.Inverse(c); err != nil {
			return math.Inf(1)
		}
		b.Mul(w.Matrix(), &ci)
		fb := mat.Norm(&b, 2)
		return (1 + x*x) * fb * fb
	}
	best, bx := math.Inf(1), 0.0
	for x := -0.99; x <= 0.99; x += 0.01 {
		if l := loss(x); l < best {
			best, bx = l, x
		}
	}
	lo, hi := bx-0.01, bx+0.01
	g := (math.Sqrt(5) - 1) / 2
	for hi-lo > 1e-10 {
		a, b := hi-g*(hi-lo), lo+g*(hi-lo)
		if loss(a) < loss(b) {
			hi = b
		} else {
			lo = a
		}
	}
	best = loss((lo + hi) / 2)
	f, err := BandedStrategy{Bands: 2}.Factorize(context.Background(), w, SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metrics.Loss > best*(1+1e-9) {
		t.Errorf("bands 2: loss %.12g, above the brute-force optimum %.12g", f.Metrics.Loss, best)
	}
}

func TestBandedErrors(t *testing.T) {
	w, _ := Prefix(5)
	if _, err := (BandedStrategy{Bands: -1}).Factorize(context.Background(), w, SingleParticipation()); err == nil {
		t.Error("bands -1: no error")
	}
	a := mat.NewDense(3, 3, []float64{1, 0, 0, 2, 1, 0, 1, 1, 1}) // lower triangular, not Toeplitz
	gen, err := NewWorkload(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (BandedStrategy{}).Factorize(context.Background(), gen, SingleParticipation()); err == nil {
		t.Error("non-Toeplitz workload: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, _ = Prefix(50)
	if _, err := (BandedStrategy{Bands: 8}).Factorize(ctx, w, SingleParticipation()); err == nil {
		t.Error("cancelled context: no error")
	}
}
