package factorize

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/testutil"
)

// denseNormLoss returns ||A N T_d||_F^2 for prefix sums by dense products:
// T_d from d, C = T_d^{-1} by gonum's inverse, N its column norms.
func denseNormLoss(t *testing.T, p *BLTParams, r int) float64 {
	t.Helper()
	d := p.Coefficients(r)
	td := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := 0; j <= i; j++ {
			td.Set(i, j, d[i-j])
		}
	}
	var c mat.Dense
	if err := c.Inverse(td); err != nil {
		t.Fatal(err)
	}
	m := mat.NewDense(r, r, nil) // N T_d
	for j := 0; j < r; j++ {
		col := mat.Col(nil, j, &c)
		n := 0.0
		for _, v := range col {
			n += v * v
		}
		n = math.Sqrt(n)
		for i := 0; i < r; i++ {
			m.Set(j, i, n*td.At(j, i))
		}
	}
	w, _ := Prefix(r)
	var b mat.Dense
	b.Mul(w.Matrix(), m)
	f := mat.Norm(&b, 2)
	return f * f
}

// The O(R k) loss of the normalised BLT against the dense product, and its
// adjoint gradient against central differences of the O(R k) loss.
func TestBLTNormLoss(t *testing.T) {
	for _, tc := range []struct {
		w, lam []float64
		r      int
	}{
		{nil, nil, 7},
		{[]float64{-0.3}, []float64{0.6}, 9},
		{[]float64{-0.4, -0.05, -0.003}, []float64{0.3, 0.9, 0.995}, 40},
		{[]float64{-0.2, 0.1}, []float64{0.5, 0.7}, 25},
	} {
		tw, _ := toeplitzOf(StrategyBLT, prefix(t, tc.r))
		o := &bltObjective{tw: tw}
		k := len(tc.w)
		gw, gl := make([]float64, k), make([]float64, k)
		got := o.loss(tc.w, tc.lam, gw, gl)
		want := denseNormLoss(t, &BLTParams{Weights: tc.w, Lambdas: tc.lam}, tc.r)
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("R = %d, w %v: loss %.15g, dense %.15g", tc.r, tc.w, got, want)
		}
		for i := 0; i < 2*k; i++ {
			w, lam := append([]float64(nil), tc.w...), append([]float64(nil), tc.lam...)
			v := w
			if i >= k {
				v = lam
			}
			x := v[i%k]
			h := 1e-6 * math.Max(1e-3, math.Abs(x))
			v[i%k] = x + h
			fp := o.loss(w, lam, nil, nil)
			v[i%k] = x - h
			fm := o.loss(w, lam, nil, nil)
			fd := (fp - fm) / (2 * h)
			g := gw[i%k]
			if i >= k {
				g = gl[i%k]
			}
			if math.Abs(g-fd) > 1e-6*(math.Abs(fd)+want) {
				t.Errorf("R = %d, parameter %d: gradient %.10g, central difference %.10g", tc.r, i, g, fd)
			}
		}
	}
}

// The min-separation objective: its O(R) value against
// minSepMajorantSq (O(R k), the same rule on the non-increasing
// majorant of |c|) and its gradient against central differences, for a
// non-negative non-increasing column (exact sensitivity) and for one of
// alternating sign (a bound).
func TestBLTMinSepLoss(t *testing.T) {
	const r = 60
	tw, _ := toeplitzOf(StrategyBLT, prefix(t, r))
	for _, sep := range []struct{ b, k int }{{5, 3}, {7, 20}, {60, 1}} {
		o := &bltObjective{tw: tw, minSep: true, b: sep.b, kk: sep.k}
		w, lam := []float64{-0.4, -0.01}, []float64{0.4, 0.95}
		gw, gl := make([]float64, 2), make([]float64, 2)
		got := o.loss(w, lam, gw, gl)
		p := &BLTParams{Weights: w, Lambdas: lam}
		want := minSepMajorantSq(bltInverse(p, r), sep.b, sep.k) * tw.frobB(p.Coefficients(r))
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("b = %d, k = %d: loss %.15g, want %.15g", sep.b, sep.k, got, want)
		}
		if c := bltInverse(p, r); c[r-1] < 0 || c[r-1] > c[r-2] {
			t.Fatalf("the test's column is not non-negative and non-increasing")
		}
		for i := 0; i < 4; i++ {
			v := w
			if i >= 2 {
				v = lam
			}
			x := v[i%2]
			h := 1e-6 * math.Abs(x)
			v[i%2] = x + h
			fp := o.loss(w, lam, nil, nil)
			v[i%2] = x - h
			fm := o.loss(w, lam, nil, nil)
			v[i%2] = x
			fd := (fp - fm) / (2 * h)
			g := gw[i%2]
			if i >= 2 {
				g = gl[i%2]
			}
			if math.Abs(g-fd) > 1e-6*(math.Abs(fd)+want) {
				t.Errorf("b = %d, parameter %d: gradient %.10g, central difference %.10g", sep.b, i, g, fd)
			}
		}
	}
	o := &bltObjective{tw: tw, minSep: true, b: 5, kk: 3}
	p := &BLTParams{Weights: []float64{0.3}, Lambdas: []float64{0.5}}
	if c := bltInverse(p, r); c[1] >= 0 {
		t.Fatalf("the test's second column has no negative entry")
	}
	gw, gl := make([]float64, 1), make([]float64, 1)
	got := o.loss(p.Weights, p.Lambdas, gw, gl)
	want := minSepMajorantSq(bltInverse(p, r), 5, 3) * tw.frobB(p.Coefficients(r))
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("alternating column: loss %.15g, want %.15g", got, want)
	}
	for i, g := range []float64{gw[0], gl[0]} {
		v := p.Weights
		if i == 1 {
			v = p.Lambdas
		}
		x := v[0]
		h := 1e-6 * math.Abs(x)
		v[0] = x + h
		fp := o.loss(p.Weights, p.Lambdas, nil, nil)
		v[0] = x - h
		fm := o.loss(p.Weights, p.Lambdas, nil, nil)
		v[0] = x
		if fd := (fp - fm) / (2 * h); math.Abs(g-fd) > 1e-6*(math.Abs(fd)+want) {
			t.Errorf("alternating column, parameter %d: gradient %.10g, central difference %.10g", i, g, fd)
		}
	}
}

// bltMinSepReported (O(R^2 k) from running sums) against SensitivityOf of
// the dense C (Gram matrix by a dense product) times ||A T_d||_F^2, for a
// monotone column (exact rule) and alternating ones (the bound).
func TestBLTMinSepReported(t *testing.T) {
	const r, b, kk = 30, 4, 8
	tw, _ := toeplitzOf(StrategyBLT, prefix(t, r))
	for _, p := range []*BLTParams{
		{Weights: []float64{-0.4, -0.01}, Lambdas: []float64{0.4, 0.95}},
		{Weights: []float64{0.3}, Lambdas: []float64{0.5}},
		{Weights: []float64{-0.9, 0.5}, Lambdas: []float64{0.3, 0.8}},
	} {
		c := bltInverse(p, r)
		cm := mat.NewDense(r, r, nil)
		for i := 0; i < r; i++ {
			for j := 0; j <= i; j++ {
				cm.Set(i, j, c[i-j])
			}
		}
		s, err := SensitivityOf(cm, MinSeparation(b, kk))
		if err != nil {
			t.Fatal(err)
		}
		want := s.Value * s.Value * tw.frobB(p.Coefficients(r))
		if got, _ := bltMinSepReported(tw, p, b, kk, math.Inf(1), nil); math.Abs(got-want) > 1e-10*want {
			t.Errorf("%v: loss %.15g, SensitivityOf gives %.15g (%v)", p.Weights, got, want, s)
		}
		// Its shortcut (+Inf: certainly not below above) never skips a
		// loss below above.
		if got, _ := bltMinSepReported(tw, p, b, kk, want*(1+1e-9), nil); math.Abs(got-want) > 1e-10*want {
			t.Errorf("%v, above the loss: %.15g, want %.15g", p.Weights, got, want)
		}
	}
}

// sqrtNormalizedLoss returns the loss of the column-normalised square root
// for prefix sums from the closed-form coefficients in O(R^2): column j of
// B = A N T_u (u the coefficients of (1 - x)^{1/2}, N the column norms of
// the Toeplitz C of (1 - x)^{-1/2}) has entries sum_{l=j}^{i} n_l u_{l-j}.
func sqrtNormalizedLoss(r int) float64 {
	coef, u := SqrtCoefficients(r), InverseSqrtCoefficients(r)
	n := make([]float64, r)
	cum := 0.0
	for t := 0; t < r; t++ {
		cum += coef[t] * coef[t]
		n[r-1-t] = math.Sqrt(cum)
	}
	loss := 0.0
	for j := 0; j < r; j++ {
		b := 0.0
		for i := j; i < r; i++ {
			b += n[i] * u[i-j]
			loss += b * b
		}
	}
	return loss
}

// BLT's loss never increases with the number of buffers (continuation in
// the number of buffers), and from 6 buffers on it is at most 0.1% above
// the column-normalised square root (measured: below it from 4 buffers at
// R = 1000). The loss of 8 buffers is checked against the dense product:
// sens^2 ||A C^{-1}||_F^2 with C^{-1} by gonum's inverse of C and sens the
// largest column norm of C. The factorizations with 1 to 7 buffers are
// built as [BLT] builds them from levels 1 to 7 of one fit of 8 levels
// (BLT with j buffers is level j of any longer fit:
// TestBLTLevelsIndependentOfBuffers, and here BLT with 8 buffers is level
// 8), which costs 8 levels where fitting each number of buffers apart cost
// 36.
func TestBLTMonotoneInBuffers(t *testing.T) {
	testutil.SkipOn386Short(t, "BLT's loss monotone in buffers at R = 1000: float64 fits, far from int's bounds")
	const r = 1000
	w := prefix(t, r)
	sqn, err := newSqrtNormalized(w)
	if err != nil {
		t.Fatal(err)
	}
	if ref := sqrtNormalizedLoss(r); math.Abs(ref-sqn.Metrics.Loss) > 1e-10*ref {
		t.Fatalf("sqrt-normalized loss %.12g, O(R^2) sum %.12g", sqn.Metrics.Loss, ref)
	}
	tw, err := toeplitzOf(StrategyBLT, w)
	if err != nil {
		t.Fatal(err)
	}
	levels, err := fitBLTLevels(context.Background(), &bltObjective{tw: tw}, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := BLT(context.Background(), w, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Operator.(*BLTParams), bltParamsOf(levels[7]); !slices.Equal(got.Weights, want.Weights) || !slices.Equal(got.Lambdas, want.Lambdas) {
		t.Fatalf("BLT with 8 buffers %v %v, level 8 of the fit %v %v", got.Weights, got.Lambdas, want.Weights, want.Lambdas)
	}
	prev := math.Inf(1)
	for k := 1; k <= 8; k++ {
		l := f.Metrics.Loss
		if k < 8 {
			p := bltParamsOf(levels[k-1])
			g, _ := toeplitzFactorization(StrategyBLT, w, tw, bltInverse(p, r), p.Coefficients(r))
			l = g.Metrics.Loss
		}
		if l > prev*(1+1e-12) {
			t.Errorf("%d buffers: loss %.12g above %.12g with %d", k, l, prev, k-1)
		}
		if k >= 6 && l > 1.001*sqn.Metrics.Loss {
			t.Errorf("%d buffers: loss %.12g more than 0.1%% above sqrt-normalized %.12g", k, l, sqn.Metrics.Loss)
		}
		prev = l
	}
	var ci, b mat.Dense
	if err := ci.Inverse(f.C); err != nil {
		t.Fatal(err)
	}
	b.Mul(w.Matrix(), &ci)
	sens2 := 0.0
	for j := 0; j < r; j++ {
		col := mat.Col(nil, j, f.C)
		s := 0.0
		for _, v := range col {
			s += v * v
		}
		sens2 = math.Max(sens2, s)
	}
	fb := mat.Norm(&b, 2)
	if dense := sens2 * fb * fb; math.Abs(dense-f.Metrics.Loss) > 1e-9*dense {
		t.Errorf("8 buffers: loss %.12g, dense sens^2 ||A C^-1||^2 = %.12g", f.Metrics.Loss, dense)
	}
}

// At R = 10^4 (not with -short): 6 and 8 buffers at most 0.1% above the
// column-normalised square root (measured: 0.06% below), by the O(R k) loss
// that TestBLTNormLoss checks against the dense product. The fits with 6
// and 8 buffers are levels 6 and 8 of one fit of 8 levels (the fit with j
// buffers does not depend on how many levels follow it:
// TestBLTLevelsIndependentOfBuffers), which costs 8 levels where fitting 6
// and 8 apart cost 14.
func TestBLTAgainstSqrtNormalizedLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("R = 10^4: several seconds")
	}
	const r = 10000
	tw, _ := toeplitzOf(StrategyBLT, prefix(t, r))
	ref := sqrtNormalizedLoss(r)
	o := &bltObjective{tw: tw}
	levels, err := fitBLTLevels(context.Background(), o, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{6, 8} {
		p := bltParamsOf(levels[k-1])
		if l := o.loss(p.Weights, p.Lambdas, nil, nil); l > 1.001*ref {
			t.Errorf("%d buffers: loss %.12g more than 0.1%% above sqrt-normalized %.12g", k, l, ref)
		}
	}
}

// TestBLTLevelsIndependentOfBuffers pins what the tests that read several
// numbers of buffers off one fit rely on: [BLT] with j buffers has the
// parameters, bit for bit, of level j of one fit of more levels
// (fitBLTLevels), for j = 1 and 3 of 5 levels at R = 64, prefix sums and
// momentum (the fit's path below R = 20000, as at R = 10^4).
func TestBLTLevelsIndependentOfBuffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mom, err := Momentum(64, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Workload{prefix(t, 64), mom} {
		tw, err := toeplitzOf(StrategyBLT, w)
		if err != nil {
			t.Fatal(err)
		}
		const k = 5
		levels, err := fitBLTLevels(ctx, &bltObjective{tw: tw}, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range []int{1, 3} {
			f, err := BLT(ctx, w, j)
			if err != nil {
				t.Fatal(err)
			}
			got, want := f.Operator.(*BLTParams), bltParamsOf(levels[j-1])
			if !slices.Equal(got.Weights, want.Weights) || !slices.Equal(got.Lambdas, want.Lambdas) {
				t.Errorf("%s R=%d: BLT with %d buffers %v %v, level %d of %d %v %v", w.Name(), w.R(), j, got.Weights, got.Lambdas, j, k, want.Weights, want.Lambdas)
			}
		}
	}
}

// Under b-min-separation BLT's loss never increases with the number of
// buffers K, is below that of the banded square root with the same
// streaming memory (K + 1 bands: K past rows of the forward substitution),
// whose sensitivity under the separation is exactly sqrt(k'), and is at
// most the loss of the fit before issue #20 (oldLoss: BLTMinSep at commit
// 1b2f0fa, main before the merge of branch blt; a regression bound, not a
// reference): R = 120, b = 8, 15 participations, K = 1..4 with -short;
// R = 300, b = 16, 19 participations, K = 1..8 without.
func TestBLTMinSepMonotone(t *testing.T) {
	r, b := 300, 16
	oldLoss := []float64{95522.81618, 94107.45417, 94066.48115, 94066.48115, 94066.48115, 94066.48115, 94066.48115, 94066.48115}
	if testing.Short() {
		r, b = 120, 8
		oldLoss = []float64{22796.88686, 22595.51053, 22538.24417, 22536.19738}
	}
	w := prefix(t, r)
	kk := (r + b - 1) / b
	part := MinSeparation(b, kk)
	prev := math.Inf(1)
	for k := 1; k <= len(oldLoss); k++ {
		f, err := BLTMinSep(context.Background(), w, k, b, kk)
		if err != nil {
			t.Fatal(err)
		}
		g, err := BandedSqrt(w, k+1, kk)
		if err != nil {
			t.Fatal(err)
		}
		if g, err = g.WithParticipation(part); err != nil {
			t.Fatal(err)
		}
		l := f.Metrics.Loss
		if l > prev*(1+1e-12) {
			t.Errorf("%d buffers: loss %.12g above %.12g with %d", k, l, prev, k-1)
		}
		if l > oldLoss[k-1]*(1+1e-9) {
			t.Errorf("%d buffers: loss %.12g above the previous fit's %.12g", k, l, oldLoss[k-1])
		}
		if l > g.Metrics.Loss {
			t.Errorf("%d buffers: loss %.12g above bsr with %d bands (%.12g)", k, l, k+1, g.Metrics.Loss)
		}
		prev = l
	}
}

// TestBLTTable prints, for the sizes in DPMF_BLT_SIZES (for example
// "1000,10000,100000"), the loss of BLT with 1 to 8 buffers (the O(R k)
// loss of the fit, which TestBLTNormLoss checks against the dense
// product), its ratio to sqrt-normalized (O(R^2) closed form) and the
// fit's wall time, with the median of 3 fits for 8 buffers: the numbers in
// docs/strategies.md. Run with
//
//	DPMF_BLT_SIZES=1000,10000,100000 go test ./factorize -run TestBLTTable -v -timeout 0
func TestBLTTable(t *testing.T) {
	env := os.Getenv("DPMF_BLT_SIZES")
	if env == "" {
		t.Skip("set DPMF_BLT_SIZES")
	}
	for _, f := range strings.Split(env, ",") {
		r, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		ref := sqrtNormalizedLoss(r)
		tw, _ := toeplitzOf(StrategyBLT, prefix(t, r))
		fmt.Printf("R = %d: sqrt-normalized %.10g\n| K | loss | loss / sqrt-normalized - 1 | fit time |\n|---:|---:|---:|---:|\n", r, ref)
		for k := 1; k <= 8; k++ {
			reps := 1
			if k == 8 {
				reps = 3
			}
			var times []time.Duration
			var l float64
			for range reps {
				o := &bltObjective{tw: tw}
				t0 := time.Now()
				p, err := fittedBLT(context.Background(), o, k)
				if err != nil {
					t.Fatal(err)
				}
				times = append(times, time.Since(t0))
				l = o.loss(p.Weights, p.Lambdas, nil, nil)
			}
			slices.Sort(times)
			note := ""
			if reps > 1 {
				note = fmt.Sprintf(" (median of %d: %v)", reps, times)
			}
			fmt.Printf("| %d | %.10g | %+.3e | %.2f s%s |\n", k, l, l/ref-1, times[len(times)/2].Seconds(), note)
		}
	}
}
