package factorize

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/internal/testutil"
)

// lossOnlyAgrees checks the loss-only path of spec against its dense
// factors (a second algorithm: the metrics of the formed B and C, by
// [ComputeMetrics]) on w under p: loss, sensitivity, MaxSE and gamma to
// 1e-12 relative, and the same exactness of the sensitivity.
func lossOnlyAgrees(t *testing.T, spec string, w *Workload, p Participation) {
	t.Helper()
	s, err := ParseStrategy(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dense, err := s.Factorize(ctx, w, p)
	if err != nil {
		t.Fatalf("%s R=%d %v dense: %v", spec, w.R(), p, err)
	}
	lo, err := WithLossOnly(s, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lo.Factorize(ctx, w, p)
	if err != nil {
		t.Fatalf("%s R=%d %v loss-only: %v", spec, w.R(), p, err)
	}
	if got.B != nil || got.C != nil {
		t.Errorf("%s R=%d %v: loss-only result has factors", spec, w.R(), p)
	}
	d, g := dense.Metrics, got.Metrics
	for _, c := range []struct {
		name      string
		want, got float64
	}{
		{"loss", d.Loss, g.Loss},
		{"sensitivity", d.UnitSensitivity.Value, g.UnitSensitivity.Value},
		{"MaxSE", d.MaxSE, g.MaxSE},
		{"gamma", d.Gamma, g.Gamma},
		{"||B||_F^2", d.FrobBSq, g.FrobBSq},
	} {
		if math.Abs(c.got-c.want) > 1e-12*math.Abs(c.want) {
			t.Errorf("%s R=%d %v: loss-only %s %.17g, dense %.17g", spec, w.R(), p, c.name, c.got, c.want)
		}
	}
	if d.UnitSensitivity.Exact != g.UnitSensitivity.Exact || d.Participation != g.Participation {
		t.Errorf("%s R=%d %v: loss-only sensitivity %v under %v, dense %v under %v", spec, w.R(), p,
			g.UnitSensitivity, g.Participation, d.UnitSensitivity, d.Participation)
	}
	if len(got.Available) != len(dense.Available) {
		t.Errorf("%s R=%d %v: %d noise rows, dense %d", spec, w.R(), p, len(got.Available), len(dense.Available))
	}
}

// The tree's loss-only metrics match its dense factors' at small R, under
// single participation and min-separation (where the dense path runs the
// O(R^2 k) dynamic program of MinSepBound over X = C^T C, exact when X is
// banded within b: R = 8, b = 8).
func TestTreeLossOnly(t *testing.T) {
	testutil.SkipOn386Short(t, "loss-only against dense metrics at R <= 1000: the same Go code; linalg's tests on 386 check the kernels' Go fallbacks")
	for _, r := range []int{1, 2, 3, 8, 13, 64, 100, 257} {
		w, _ := Prefix(r)
		for _, p := range []Participation{SingleParticipation(), MinSeparation(1, 0), MinSeparation(3, 0), MinSeparation(4, 2), MinSeparation(8, 0), MinSeparation(16, 3), MinSeparation(64, 0)} {
			lossOnlyAgrees(t, "tree", w, p)
		}
	}
	w, _ := Prefix(1000)
	for _, p := range []Participation{SingleParticipation(), MinSeparation(16, 0), MinSeparation(64, 0)} {
		lossOnlyAgrees(t, "tree", w, p)
	}
}

// sqrt and sqrt-normalized: the loss-only metrics match the dense
// factors'; sqrt-normalized under min-separation goes through the lattice
// shortcut of minSepBoundRows, the dense path through MinSepBound's
// dynamic program on every row.
func TestSqrtLossOnly(t *testing.T) {
	testutil.SkipOn386Short(t, "loss-only against dense metrics at R <= 2000: the same Go code; linalg's tests on 386 check the kernels' Go fallbacks")
	ps := []Participation{SingleParticipation(), MinSeparation(1, 0), MinSeparation(3, 0), MinSeparation(4, 2), MinSeparation(16, 0), MinSeparation(64, 0)}
	for _, r := range []int{1, 2, 7, 64, 300} {
		w, _ := Prefix(r)
		for _, p := range ps {
			lossOnlyAgrees(t, "sqrt", w, p)
			lossOnlyAgrees(t, "sqrt-normalized", w, p)
		}
	}
	for _, r := range []int{1000, 2000} {
		w, _ := Prefix(r)
		for _, p := range []Participation{SingleParticipation(), MinSeparation(64, 0)} {
			lossOnlyAgrees(t, "sqrt", w, p)
			lossOnlyAgrees(t, "sqrt-normalized", w, p)
		}
	}
}

// minSepBoundRows equals MinSepBound's dynamic program on Gram matrices of
// random C (rows with and without the lattice property, signed entries)
// and of a C whose rows decrease away from the diagonal.
func TestMinSepBoundRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 40; trial++ {
		n := 1 + rng.IntN(40)
		c := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				v := rng.NormFloat64()
				if trial%2 == 1 { // decaying, non-negative: lattice rows
					v = math.Exp(-float64(i-j) / 4)
				}
				c.Set(i, j, v)
			}
		}
		x := mat.NewSymDense(n, nil)
		x.SymOuterK(1, c.T())
		for _, b := range []int{1, 2, 3, 5, 50} {
			for _, k := range []int{1, 2, 4, 100} {
				bb := min(b, n)
				kk := min(k, (n-1)/bb+1)
				want, err := MinSepBound(x, bb, kk)
				if err != nil {
					t.Fatal(err)
				}
				got := minSepBoundRows(n, bb, kk, func(visit func(int, []float64)) {
					row := make([]float64, n)
					for i := 0; i < n; i++ {
						for j := range row {
							row[j] = x.At(i, j)
						}
						visit(i, row)
					}
				})
				if math.Abs(got-want) > 1e-12*want {
					t.Errorf("trial %d n=%d b=%d k=%d: %v, MinSepBound %v", trial, n, bb, kk, got, want)
				}
			}
		}
	}
}

// bsr: the loss-only metrics match the dense factors' (BandedSqrt), with
// bands at most the separation (the banded rule) and more (the bound).
func TestBSRLossOnly(t *testing.T) {
	testutil.SkipOn386Short(t, "loss-only against dense metrics at R <= 2000: the same Go code; linalg's tests on 386 check the kernels' Go fallbacks")
	ps := []Participation{SingleParticipation(), MinSeparation(1, 0), MinSeparation(3, 0), MinSeparation(4, 2), MinSeparation(16, 0), MinSeparation(64, 0)}
	for _, r := range []int{1, 2, 7, 64, 300} {
		w, _ := Prefix(r)
		for _, p := range ps {
			for _, spec := range []string{"bsr", "bsr:bands=1", "bsr:bands=4", "bsr:bands=20"} {
				lossOnlyAgrees(t, spec, w, p)
			}
		}
	}
	w, _ := Prefix(2000)
	for _, p := range []Participation{SingleParticipation(), MinSeparation(64, 0)} {
		lossOnlyAgrees(t, "bsr", w, p)
	}
}

// banded (its single-participation fit) and bsr on prefix sums and on a
// momentum workload: the loss-only metrics match the dense factors'.
func TestBandedLossOnly(t *testing.T) {
	testutil.SkipOn386Short(t, "loss-only against dense metrics at R <= 2000: the same Go code; linalg's tests on 386 check the kernels' Go fallbacks")
	for _, r := range []int{1, 2, 7, 64, 300, 2000} {
		w, _ := Prefix(r)
		lossOnlyAgrees(t, "banded", w, SingleParticipation())
		lossOnlyAgrees(t, "banded:bands=3", w, SingleParticipation())
	}
	m, _ := Momentum(200, 0.9)
	lossOnlyAgrees(t, "banded", m, SingleParticipation())
	for _, p := range []Participation{SingleParticipation(), MinSeparation(16, 0), MinSeparation(5, 0)} {
		lossOnlyAgrees(t, "bsr", m, p)
	}
}

// banded under min-separation: the loss-only path (OptimalBanded's) under
// a separation wider than its bands reports sqrt(k) for the k
// participations that fit (unit columns, X banded within the bands), as
// the dense factors do; more bands than the separation is an error.
func TestBandedLossOnlyMinSep(t *testing.T) {
	w, _ := Prefix(200)
	s, _ := ParseStrategy("banded:bands=4")
	s, _ = WithLossOnly(s, true)
	for _, p := range []Participation{MinSeparation(4, 0), MinSeparation(16, 0), MinSeparation(16, 3)} {
		f, err := s.Factorize(context.Background(), w, p)
		if err != nil {
			t.Fatal(err)
		}
		k := float64(p.Participations(200))
		if m := f.Metrics; m.Participation != p || math.Abs(m.UnitSensitivity.Value-math.Sqrt(k)) > 1e-15*k || !m.UnitSensitivity.Exact ||
			math.Abs(m.Loss-k*m.FrobBSq) > 1e-12*m.Loss {
			t.Errorf("%v: %+v, want sensitivity sqrt(%v) and loss k ||B||_F^2", p, m, k)
		}
	}
	if _, err := s.Factorize(context.Background(), w, MinSeparation(2, 0)); err == nil || !strings.Contains(err.Error(), "at most 2 bands") {
		t.Errorf("4 bands under minsep:2: %v, want an error naming at most 2 bands", err)
	}
}

// blt under single participation and min-separation (BLTMinSep's fits
// and choice): the loss-only metrics match the dense factors'; fixed
// epochs are refused.
func TestBLTLossOnly(t *testing.T) {
	testutil.SkipOn386Short(t, "loss-only against dense metrics at R <= 2000: the same Go code; linalg's tests on 386 check the kernels' Go fallbacks")
	for _, r := range []int{1, 2, 7, 64, 500, 2000} {
		w, _ := Prefix(r)
		lossOnlyAgrees(t, "blt", w, SingleParticipation())
	}
	// One and two buffers: decays near 1, so every column of C has its
	// own norm and normsB takes normsExpo's recursion for all the rows.
	for _, spec := range []string{"blt:buffers=1", "blt:buffers=2"} {
		for _, r := range []int{3, 64, 1500} {
			w, _ := Prefix(r)
			lossOnlyAgrees(t, spec, w, SingleParticipation())
		}
	}
	for _, r := range []int{7, 64, 300} {
		w, _ := Prefix(r)
		// Not minsep:1, where every candidate's C is the identity up to
		// rounding and which one is chosen (with an exact or a bound
		// sensitivity of the same value) is a tie broken by rounding.
		for _, p := range []Participation{MinSeparation(2, 0), MinSeparation(4, 3), MinSeparation(16, 0), MinSeparation(64, 0)} {
			lossOnlyAgrees(t, "blt", w, p)
		}
	}
	w, _ := Prefix(64)
	s, _ := ParseStrategy("blt")
	s, _ = WithLossOnly(s, true)
	if _, err := s.Factorize(context.Background(), w, FixedEpochs(4)); err == nil {
		t.Error("loss-only blt under epochs:4: no error")
	}
}

// The sensitivity under min-separation of a quasiseparable C (the
// structured optimal and semiseparable factorizations), from its
// generators, matches the dense C's (MinSepBound on X formed densely).
func TestQuasiSepMinSep(t *testing.T) {
	ctx := context.Background()
	for _, r := range []int{5, 64, 400} {
		w, _ := Prefix(r)
		for _, spec := range []string{"optimal", "semiseparable"} {
			s, _ := ParseStrategy(spec)
			f, err := s.Factorize(ctx, w, SingleParticipation())
			if err != nil {
				t.Fatal(err)
			}
			q, ok := f.Operator.(quasiSepOp)
			if !ok {
				t.Fatalf("%s R=%d: operator %T, want quasiseparable", spec, r, f.Operator)
			}
			structured := &Factorization{Strategy: f.Strategy, Operator: q, Workload: w, Available: f.Available, Metrics: f.Metrics}
			_, c, err := f.Factors()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []Participation{MinSeparation(1, 0), MinSeparation(4, 3), MinSeparation(16, 0), MinSeparation(r, 0)} {
				want, err := SensitivityOf(c, p)
				if err != nil {
					t.Fatal(err)
				}
				g, err := structured.WithParticipation(p)
				if err != nil {
					t.Fatal(err)
				}
				got := g.Metrics.UnitSensitivity
				if math.Abs(got.Value-want.Value) > 1e-12*want.Value || got.Exact != want.Exact {
					t.Errorf("%s R=%d %v: structured %v, dense %v", spec, r, p, got, want)
				}
				if g.Metrics.Participation != p || math.Abs(g.Metrics.Loss-got.Value*got.Value*f.Metrics.FrobBSq) > 1e-12*g.Metrics.Loss {
					t.Errorf("%s R=%d %v: metrics %+v", spec, r, p, g.Metrics)
				}
			}
		}
	}
}

// normsExpo's O(R K) recursion against the column-by-column recurrence of
// normsB (a second algorithm, O(R^2)) for prefix sums, with random BLT
// parameters (weights of both signs, decays in (0, 1)) and random column
// scales, including scales equal for a first stretch of rows.
func TestNormsExpoAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, r := range []int{1, 2, 5, 300, 2500} {
		for k := 1; k <= 5; k++ {
			p := &BLTParams{Weights: make([]float64, k), Lambdas: make([]float64, k)}
			for m := range k {
				p.Weights[m] = 2*rng.Float64() - 1
				p.Lambdas[m] = 1 - math.Pow(10, -4*rng.Float64())
			}
			w, _ := Prefix(r)
			tw, err := toeplitzOf(StrategyBLT, w)
			if err != nil {
				t.Fatal(err)
			}
			scale := make([]float64, r)
			t0 := rng.IntN(r + 1)
			for i := range scale {
				scale[i] = 0.5
				if i >= t0 {
					scale[i] = 0.2 + rng.Float64()
				}
			}
			u := p.Coefficients(r)
			slow := &scaledToeplitz{tw: tw, c: bltInverse(p, r), u: u, scale: scale}
			fast := &scaledToeplitz{tw: tw, c: slow.c, u: u, scale: scale, expo: p}
			f0, m0, err0 := slow.normsB()
			f1, m1, err1 := fast.normsB()
			if err0 != nil || err1 != nil {
				t.Fatalf("R=%d K=%d: %v, %v", r, k, err0, err1)
			}
			if math.Abs(f1-f0) > 1e-11*f0 || math.Abs(m1-m0) > 1e-11*m0 {
				t.Errorf("R=%d K=%d t0=%d: normsExpo %.17g, %.17g; recurrence %.17g, %.17g", r, k, t0, f1, m1, f0, m0)
			}
		}
	}
}
