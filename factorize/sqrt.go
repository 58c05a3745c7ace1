package factorize

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Strategy names of [SqrtStrategy].
const (
	StrategySqrt           = "sqrt"
	StrategySqrtNormalized = "sqrt-normalized"
)

func init() {
	for _, s := range []SqrtStrategy{{}, {Normalized: true}} {
		doc, rank := "the square root of the prefix-sum matrix (Toeplitz)", 30
		if s.Normalized {
			doc, rank = "the square root of the prefix-sum matrix with unit column norms", 40
		}
		register(StrategyInfo{
			Name: s.Name(), rank: rank, Doc: doc,
			Stream:        "R (or regenerated)",
			Workloads:     servesPrefix,
			serves:        func(_ Strategy, w *Workload, _ Participation) bool { return w.IsPrefix() },
			pastRows:      func(Strategy, Participation) bool { return true },
			proto:         s,
			lossOnly:      []ParticipationKind{KindSingle, KindMinSep},
			lossOnlyPtr:   func(p any) *bool { return &p.(*SqrtStrategy).LossOnly },
			streamVectors: func(_ Strategy, r int) int { return r },
			solveBytes: func(s Strategy, r int, _ Participation, _ bool) float64 {
				if s.(SqrtStrategy).LossOnly {
					return 8 * 8 * float64(r) // coefficient vectors of length R
				}
				return factorBytes(r, r)
			},
		})
	}
}

// SqrtStrategy is the square-root factorization of the prefix-sum workload:
// B = C = A^{1/2}, the lower-triangular Toeplitz matrix of [SqrtCoefficients]
// (Henzinger, Upadhyay, Upadhyay 2023; Fichtenberger, Henzinger, Upadhyay
// 2023). Its sensitivity is the norm of the first column,
// sqrt(sum_k c_k^2) ~ sqrt(log(R) / pi).
//
// When Normalized, the columns of C are
// scaled to unit norm, C' = C N^{-1} with N = diag(||C[:, j]||), and the
// decoder recomputed as B' = A C'^{-1} = A N C^{-1}. The scaling changes the
// loss (it is not a rescaling of B). Under single participation it is never
// worse than without (checked for every R up to 400; TestLossOrdering pins
// it); under other participation it can be: under 8 fixed epochs the RMSE
// at R = 64 is 10.249 against sqrt's 10.217, at R = 128 10.938 against
// 10.932, both exact.
//
// With LossOnly, the metrics come from the coefficients without B and C:
// for sqrt in O(R) (||B||_F^2 = sum_m (R - m) c_m^2; under min-separation
// the exact Toeplitz rule, [ToeplitzMinSepSensitivity]), for
// sqrt-normalized in O(R^2) time and O(R) memory (B's columns by the
// recurrence of its prefix sums; under min-separation the
// dynamic-programming bound of [MinSepBound] over the rows of X = C^T C,
// which a recurrence gives one at a time), equal to the dense path's.
type SqrtStrategy struct {
	// Normalized scales C's columns to unit norm.
	Normalized bool
	// LossOnly skips forming B and C: the result has only its metrics
	// (single participation and min-separation only).
	LossOnly bool
}

// Name returns "sqrt" or "sqrt-normalized".
func (s SqrtStrategy) Name() string {
	if s.Normalized {
		return StrategySqrtNormalized
	}
	return StrategySqrt
}

// Spec returns "sqrt" or "sqrt-normalized".
func (s SqrtStrategy) Spec() string { return specOf(s) }

// Factorize returns the factorization with metrics under p.
func (s SqrtStrategy) Factorize(ctx context.Context, w *Workload, p Participation) (f *Factorization, err error) {
	defer keyed(s, &f, &err)
	if s.LossOnly {
		return checkedLossOnly(sqrtLossOnly(ctx, s.Name(), w, p))
	}
	if s.Normalized {
		return under(ctx, w, p, true, func() (*Factorization, error) { return newSqrtNormalized(w) })
	}
	return under(ctx, w, p, true, func() (*Factorization, error) { return newSqrt(w) })
}

// SqrtCoefficients returns the first n coefficients of the power series of
// (1 - x)^{-1/2}: c_k = binom(2k, k) / 4^k, computed by the stable recurrence
// c_k = c_{k-1} (2k - 1) / (2k). The lower-triangular Toeplitz matrix with
// these coefficients is the square root of the prefix-sum matrix.
// n = 0 gives an empty slice; a negative n is a programmer error and panics,
// as make does (see the package doc's Errors and panics).
func SqrtCoefficients(n int) []float64 { return halfSeries("SqrtCoefficients", n, 1) }

// InverseSqrtCoefficients returns the first n coefficients of the power
// series of (1 - x)^{1/2}: 1, -1/2, -1/8, -1/16, -5/128, ..., by the
// recurrence d_k = d_{k-1} (2k - 3) / (2k). They are the coefficients of the
// inverse of the Toeplitz square root. A negative n panics.
func InverseSqrtCoefficients(n int) []float64 { return halfSeries("InverseSqrtCoefficients", n, 3) }

// halfSeries returns d_0 = 1, d_k = d_{k-1} (2k - a) / (2k) for k < n: the
// series of (1 - x)^{-1/2} for a = 1 and of (1 - x)^{1/2} for a = 3.
func halfSeries(fn string, n, a int) []float64 {
	checkCount(fn, n)
	d := make([]float64, n)
	if n > 0 {
		d[0] = 1
	}
	for k := 1; k < n; k++ {
		d[k] = d[k-1] * float64(2*k-a) / float64(2*k)
	}
	return d
}

// checkCount panics with a package-prefixed message if n < 0: a negative
// number of coefficients is a programmer error, like a negative length
// given to make.
func checkCount(fn string, n int) {
	if n < 0 {
		panic(fmt.Sprintf("factorize: %s(%d): negative number of coefficients", fn, n))
	}
}

// toeplitzLower returns the n x n lower-triangular Toeplitz matrix with first
// column coef.
func toeplitzLower(coef []float64) *mat.Dense {
	n := len(coef)
	t := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		row := t.RawRowView(i)
		for j := 0; j <= i; j++ {
			row[j] = coef[i-j]
		}
	}
	return t
}

// newSqrt returns the sqrt factorization of w (see [SqrtStrategy]).
func newSqrt(w *Workload) (*Factorization, error) {
	if err := requirePrefix(StrategySqrt, w); err != nil {
		return nil, err
	}
	c := toeplitzLower(SqrtCoefficients(w.R()))
	b := mat.DenseCopyOf(c)
	return finish(StrategySqrt, toeplitzOpOf(c), w, b, c), nil
}

// newSqrtNormalized returns the sqrt-normalized factorization of w (see
// [SqrtStrategy]).
func newSqrtNormalized(w *Workload) (*Factorization, error) {
	if err := requirePrefix(StrategySqrtNormalized, w); err != nil {
		return nil, err
	}
	r := w.R()
	coef := SqrtCoefficients(r)
	norm := columnNorms(coef)
	c := toeplitzLower(coef)
	for i := 0; i < r; i++ {
		row := c.RawRowView(i)
		for j := 0; j <= i; j++ {
			row[j] /= norm[j]
		}
	}
	// B' = A N Cinv: row i of N Cinv is norm[i] * inv[i-j]; A sums rows.
	inv := InverseSqrtCoefficients(r)
	b := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		row := b.RawRowView(i)
		if i > 0 {
			copy(row, b.RawRowView(i - 1)[:i])
		}
		for j := 0; j <= i; j++ {
			row[j] += norm[i] * inv[i-j]
		}
	}
	return finish(StrategySqrtNormalized, toeplitzOpOf(c), w, b, c), nil
}

// sqrtLossOnly returns the metrics-only result of sqrt or sqrt-normalized
// (strategy) under p (see [SqrtStrategy]).
func sqrtLossOnly(ctx context.Context, strategy string, w *Workload, p Participation) (*Factorization, error) {
	if err := checkLossOnlyPrefix(ctx, strategy, w, p); err != nil {
		return nil, err
	}
	r := w.R()
	tw, err := toeplitzOf(strategy, w)
	if err != nil {
		return nil, err
	}
	c, u := SqrtCoefficients(r), InverseSqrtCoefficients(r)
	scale := ones(r)
	if strategy == StrategySqrtNormalized {
		scale = columnNorms(c)
	}
	st := &scaledToeplitz{tw: tw, c: c, u: u, scale: scale}
	if strategy == StrategySqrt {
		// B = C: its norms from c itself, as the dense path has them.
		for m, v := range c {
			st.frob += float64(r-m) * v * v
			st.maxRow += v * v
		}
		st.normed = true
	}
	m, err := st.metrics(p)
	if err != nil {
		return nil, err
	}
	diag := make([]float64, r) // C[i][i] = c_0 / scale_i
	for i, v := range scale {
		diag[i] = 1 / v
	}
	return squareResult(strategy, toeplitzOp{u: u, s: diag}, w, m), nil
}
