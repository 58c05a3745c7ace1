package factorize

import (
	"context"
	"math"
	"math/big"
	"testing"

	"github.com/dpmf/dpmf/linalg"
	"gonum.org/v1/gonum/mat"
)

// sqrtOneMinusX returns the first n coefficients of (1 - x)^{1/2} as exact
// rationals: binom(1/2, k) (-1)^k = -binom(2k, k) / ((2k - 1) 4^k).
func sqrtOneMinusX(n int) []*big.Rat {
	out := make([]*big.Rat, n)
	for k := 0; k < n; k++ {
		num := new(big.Int).Binomial(int64(2*k), int64(k))
		den := new(big.Int).Lsh(big.NewInt(int64(2*k-1)), uint(2*k)) // (2k-1) 4^k
		q := new(big.Rat).SetFrac(num, den)
		out[k] = q.Neg(q)
	}
	return out
}

// denseInverse returns C^{-1} by gonum's LU inverse.
func denseInverse(t *testing.T, c *mat.Dense) *mat.Dense {
	t.Helper()
	var inv mat.Dense
	if err := inv.Inverse(c); err != nil {
		t.Fatal(err)
	}
	return &inv
}

// TestBISRCoefficients checks that C^{-1} of bisr, inverted densely by LU,
// is the banded Toeplitz matrix of the closed-form coefficients of
// (1 - x)^{1/2} truncated at p (math/big), with zeros beyond the band, and
// that the operator streams with them.
func TestBISRCoefficients(t *testing.T) {
	const r = 14
	w := prefix(t, r)
	exact := sqrtOneMinusX(r)
	if f, _ := exact[4].Float64(); f != -5.0/128 {
		t.Fatalf("closed form: coefficient 4 = %v, want -5/128", f)
	}
	for _, p := range []int{1, 2, 3, 5, 8} {
		f, err := BISRStrategy{Bands: p}.Factorize(context.Background(), w, SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		inv := denseInverse(t, f.C)
		for i := 0; i < r; i++ {
			for j := 0; j < r; j++ {
				want := 0.0
				if i >= j && i-j < p {
					want, _ = exact[i-j].Float64()
				}
				if got := inv.At(i, j); math.Abs(got-want) > 1e-12 {
					t.Fatalf("p=%d: C^{-1}[%d][%d] = %.15g, closed form %.15g", p, i, j, got, want)
				}
			}
		}
		u := f.Operator.(bandInverseOp).u
		if len(u) != p {
			t.Errorf("p=%d: the operator has %d coefficients", p, len(u))
		}
		for k, v := range u {
			if want, _ := exact[k].Float64(); math.Abs(v-want) > 1e-13 {
				t.Errorf("p=%d: u[%d] = %v, want %v", p, k, v, want)
			}
		}
	}
	// p = R: C = A^{1/2}, the sqrt strategy (binomial coefficients).
	f, err := BISRStrategy{Bands: r}.Factorize(context.Background(), w, SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < r; k++ {
		if got, want := f.C.At(k, 0), binomRatio(k); math.Abs(got-want) > 1e-13 {
			t.Errorf("p=R: C[%d][0] = %v, want binom(2k,k)/4^k = %v", k, got, want)
		}
	}
}

// TestBandedInverseDense checks the three strategies on prefix sums and on
// momentum against the dense product B = A C^{-1} (LU inverse): A = B C,
// causality and single-participation metrics (checkFactorization), and that
// the structured objective loss (O(R)) equals the loss of the dense factors
// under single participation and min-separation.
func TestBandedInverseDense(t *testing.T) {
	ctx := context.Background()
	const r = 30
	mom, err := Momentum(r, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Workload{prefix(t, r), mom} {
		tw, err := toeplitzOf("test", w)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []Participation{SingleParticipation(), MinSeparation(7, 0), MinSeparation(5, 3)} {
			for _, s := range []Strategy{BISRStrategy{Bands: 5}, BandInvStrategy{Bands: 5}, BandedToeplitzStrategy{Bands: 5}} {
				f, err := s.Factorize(ctx, w, part)
				if err != nil {
					t.Fatal(err)
				}
				single, err := f.WithParticipation(SingleParticipation())
				if err != nil {
					t.Fatal(err)
				}
				checkFactorization(t, single)
				dense, err := ComputeMetrics(f.B, f.C, part)
				if err != nil {
					t.Fatal(err)
				}
				var structured float64
				switch s.(type) {
				case BandedToeplitzStrategy:
					c := make([]float64, 5)
					for k := range c {
						c[k] = f.C.At(k, 0)
					}
					if math.Abs(columnNormSq(c)-1) > 1e-12 {
						t.Errorf("%s: ||c||^2 = %v, want 1", s.Name(), columnNormSq(c))
					}
					structured = bandedToeplitzSens2(c, r, part) * tw.frobB(linalg.SeriesInverse(c, r))
				default:
					structured = bandInvLoss(tw, f.Operator.(bandInverseOp).u, part)
				}
				if math.Abs(structured-dense.Loss) > 1e-9*dense.Loss {
					t.Errorf("%s %s %v: structured loss %.12g, dense %.12g", w.Name(), s.Name(), part, structured, dense.Loss)
				}
				if part.Kind == KindMinSep && !f.Metrics.UnitSensitivity.Exact {
					t.Errorf("%s %s %v: sensitivity not exact (%v)", w.Name(), s.Name(), part, f.Metrics.UnitSensitivity)
				}
			}
		}
	}
}

// TestBandedInverseSensitivityBruteForce checks the sensitivity of every
// min-separation pattern at R = 12 against brute force over every
// participation pattern (and sign vector): the exact value where the
// strategy claims it, never below the brute-force lower bound.
func TestBandedInverseSensitivityBruteForce(t *testing.T) {
	ctx := context.Background()
	const r = 12
	w := prefix(t, r)
	for _, part := range patterns(r) {
		if part.Kind != KindMinSep {
			continue
		}
		for _, s := range []Strategy{BISRStrategy{Bands: 4}, BandInvStrategy{Bands: 3}, BandedToeplitzStrategy{Bands: 3}} {
			f, err := s.Factorize(ctx, w, part)
			if err != nil {
				t.Fatal(err)
			}
			lower, upper := bruteForce(f.C, part, true)
			got := f.Metrics.UnitSensitivity
			v2 := got.Value * got.Value
			if v2 < lower*(1-1e-12) {
				t.Errorf("%s %v: sensitivity^2 %.12g below brute force %.12g", s.Name(), part, v2, lower)
			}
			if got.Exact && math.Abs(v2-lower) > 1e-10*lower {
				t.Errorf("%s %v: exact sensitivity^2 %.12g, brute force %.12g (sum |X| %.12g)", s.Name(), part, v2, lower, upper)
			}
			if _, isBISR := s.(BISRStrategy); isBISR && !got.Exact {
				t.Errorf("bisr %v: sensitivity %v not exact", part, got)
			}
		}
	}
}

// TestBandInvImproves checks that the optimised strategies are no worse
// than their closed-form starts under the participation they optimise
// for: bandinv against bisr, banded-toeplitz against the unit-norm banded
// Toeplitz square root (built here from the binomial coefficients, B by a
// dense LU inverse).
func TestBandInvImproves(t *testing.T) {
	ctx := context.Background()
	const r, p = 64, 6
	w := prefix(t, r)
	for _, part := range []Participation{SingleParticipation(), MinSeparation(8, 0)} {
		bisr, err := BISRStrategy{Bands: p}.Factorize(ctx, w, part)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := BandInvStrategy{Bands: p}.Factorize(ctx, w, part)
		if err != nil {
			t.Fatal(err)
		}
		if inv.Metrics.Loss > bisr.Metrics.Loss*(1+1e-12) {
			t.Errorf("%v: bandinv loss %v above bisr %v", part, inv.Metrics.Loss, bisr.Metrics.Loss)
		}
		bt, err := BandedToeplitzStrategy{Bands: p}.Factorize(ctx, w, part)
		if err != nil {
			t.Fatal(err)
		}
		c := make([]float64, r)
		n := 0.0
		for k := 0; k < p; k++ {
			c[k] = binomRatio(k)
			n += c[k] * c[k]
		}
		cm := mat.NewDense(r, r, nil)
		for i := 0; i < r; i++ {
			for j := 0; j <= i; j++ {
				cm.Set(i, j, c[i-j]/math.Sqrt(n))
			}
		}
		var b mat.Dense
		b.Mul(w.Matrix(), denseInverse(t, cm))
		start, err := ComputeMetrics(&b, cm, part)
		if err != nil {
			t.Fatal(err)
		}
		if bt.Metrics.Loss > start.Loss*(1+1e-12) {
			t.Errorf("%v: banded-toeplitz loss %v above its start %v", part, bt.Metrics.Loss, start.Loss)
		}
		t.Logf("%v: bisr %.6g bandinv %.6g banded-toeplitz %.6g (start %.6g)", part, bisr.Metrics.Loss, inv.Metrics.Loss, bt.Metrics.Loss, start.Loss)
	}
}

// TestBandedInverseErrors checks the one-line errors for bad input.
func TestBandedInverseErrors(t *testing.T) {
	ctx := context.Background()
	w := prefix(t, 8)
	for _, s := range []Strategy{BISRStrategy{Bands: -1}, BandInvStrategy{Bands: -1}, BandedToeplitzStrategy{Bands: -1}} {
		_, err := s.Factorize(ctx, w, SingleParticipation())
		requireParamError(t, err, "bands")
	}
	a := mat.NewDense(3, 3, []float64{1, 0, 0, 1, 2, 0, 1, 1, 1})
	gen, err := NewWorkload(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{StrategyBISR, StrategyBandInv, StrategyBandedToeplitz} {
		s, err := ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Factorize(ctx, gen, SingleParticipation()); err == nil {
			t.Errorf("%s on a non-Toeplitz workload: no error", name)
		}
	}
}

// TestBandedInverseLossOnly checks the loss-only results (O(R) formulas)
// against the metrics of the dense factors of the same strategies
// (ComputeMetrics: SensitivityOf on C and the norms of B), on prefix sums
// and momentum, under single participation and min-separation.
func TestBandedInverseLossOnly(t *testing.T) {
	ctx := context.Background()
	const r = 40
	mom, err := Momentum(r, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Workload{prefix(t, r), mom} {
		for _, part := range []Participation{SingleParticipation(), MinSeparation(6, 0), MinSeparation(13, 2)} {
			pairs := [][2]Strategy{
				{BISRStrategy{Bands: 6}, BISRStrategy{Bands: 6, LossOnly: true}},
				{BandInvStrategy{Bands: 4}, BandInvStrategy{Bands: 4, LossOnly: true}},
				{BandedToeplitzStrategy{}, BandedToeplitzStrategy{LossOnly: true}},
			}
			for _, pair := range pairs {
				full, err := pair[0].Factorize(ctx, w, part)
				if err != nil {
					t.Fatal(err)
				}
				lean, err := pair[1].Factorize(ctx, w, part)
				if err != nil {
					t.Fatal(err)
				}
				if lean.B != nil || lean.C != nil {
					t.Errorf("%s: loss-only result with factors", CacheKey(pair[1]))
				}
				want, err := ComputeMetrics(full.B, full.C, part)
				if err != nil {
					t.Fatal(err)
				}
				got := lean.Metrics
				for _, m := range []struct {
					name      string
					got, want float64
				}{
					{"gamma", got.Gamma, want.Gamma},
					{"sensitivity", got.UnitSensitivity.Value, want.UnitSensitivity.Value},
					{"||B||_F^2", got.FrobBSq, want.FrobBSq},
					{"max row", got.MaxRowBSq, want.MaxRowBSq},
					{"loss", got.Loss, want.Loss},
				} {
					if math.Abs(m.got-m.want) > 1e-9*math.Abs(m.want) {
						t.Errorf("%s %s %v: %s loss-only %.12g, dense %.12g", w.Name(), CacheKey(pair[1]), part, m.name, m.got, m.want)
					}
				}
				if got.UnitSensitivity.Exact != want.UnitSensitivity.Exact {
					t.Errorf("%s %v: exact %v, dense %v", CacheKey(pair[1]), part, got.UnitSensitivity.Exact, want.UnitSensitivity.Exact)
				}
			}
		}
	}
	_, err = BISRStrategy{LossOnly: true}.Factorize(ctx, prefix(t, 8), FixedEpochs(2))
	requireParamError(t, err, "participation")
}
