package mechanism

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/factorize"
)

// TestRoundStdsDense: for every mechanism of the suite (each operator
// kind, structured and dense, keep and regenerate), RoundStds and RoundStd
// are std times the row norms of M = A^{-1} B formed from the dense
// factors (explicitOperator), to a relative 1e-9, also through a wrapper
// with Unwrap and for a stream started at a later round (rounds are
// counted from the operator's round 0).
func TestRoundStdsDense(t *testing.T) {
	const (
		r   = 8
		std = 0.7
	)
	for _, tc := range cases(t, r) {
		m, err := New(tc.f, 3, std, append(tc.opts, WithSeed(1))...)
		if err != nil {
			t.Fatal(err)
		}
		op := explicitOperator(t, tc.f)
		late, err := New(tc.f, 3, std, append(tc.opts, WithSeed(1), WithStartRound(5))...)
		if err != nil {
			t.Fatal(err)
		}
		for _, mm := range []Mechanism{m, wrapped{m}, late} {
			got, err := RoundStds(mm)
			if err != nil || len(got) != r {
				t.Fatalf("%s: RoundStds: %d values, %v", tc.name, len(got), err)
			}
			for i := range r {
				want := std * mat.Norm(op.RowView(i), 2)
				if math.Abs(got[i]-want) > 1e-9*want {
					t.Errorf("%s: RoundStds[%d] = %.15g, want %.15g", tc.name, i, got[i], want)
				}
				if one, err := RoundStd(mm, i); err != nil || math.Abs(one-want) > 1e-9*want {
					t.Errorf("%s: RoundStd(%d) = %v (%v), want %v", tc.name, i, one, err, want)
				}
			}
		}
		if m.Round() != 0 {
			t.Errorf("%s: RoundStds advanced the stream to round %d", tc.name, m.Round())
		}
	}
}

// TestRoundStdEmpirical checks RoundStd against the noise the mechanism
// actually draws: round a's entries over dim coordinates are independent
// N(0, s^2) with s the claimed RoundStd, so X = sum_i y_i^2 / s^2 is
// chi-square(dim). By Laurent and Massart (2000, Lemma 1),
// dim - 2 sqrt(dim x) <= X <= dim + 2 sqrt(dim x) + 2x except with
// probability 2 e^{-x}; x is chosen so that the union over the cases fails
// falsely with probability at most 1e-6 (for exactly Gaussian, independent
// draws), and at dim = 2 10^5 the band is about +-1.7% of dim: a std off
// by 1% in variance terms is not resolved, one off by a factor (a missing
// scale, a norm of the wrong row) is.
func TestRoundStdEmpirical(t *testing.T) {
	const (
		r     = 8
		round = 5
		dim   = 200000
		std   = 1.3
	)
	cs := cases(t, r)
	x := math.Log(2 * float64(len(cs)) / 1e-6)
	lo, hi := dim-2*math.Sqrt(dim*x), dim+2*math.Sqrt(dim*x)+2*x
	y := make([]float64, dim)
	for _, tc := range cs {
		m, err := New(tc.f, dim, std, append(tc.opts, WithStartRound(round))...) // key from crypto/rand
		if err != nil {
			t.Fatal(err)
		}
		s, err := RoundStd(m, round)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Next(y); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, v := range y {
			sum += v * v
		}
		if q := sum / (s * s); q < lo || q > hi {
			t.Errorf("%s: round %d: sum of squares / RoundStd^2 = %.1f, want in [%.1f, %.1f] (chi-square(%d)); empirical std %.6g, RoundStd %.6g",
				tc.name, round, q, lo, hi, dim, math.Sqrt(sum/dim), s)
		}
	}
}

// TestRoundStdErrors: a Mechanism not made by New, and a round out of
// range, are ParamErrors naming the argument; nothing panics.
func TestRoundStdErrors(t *testing.T) {
	var pe *ParamError
	if _, err := RoundStd(nil, 0); !errors.As(err, &pe) || pe.Param != "mechanism" {
		t.Errorf("nil mechanism: %v", err)
	}
	if _, err := RoundStds(wrapped{}); !errors.As(err, &pe) || pe.Param != "mechanism" {
		t.Errorf("a wrapper of nothing: %v", err)
	}
	var nilStream *stream
	if _, err := RoundStds(nilStream); !errors.As(err, &pe) || pe.Param != "mechanism" {
		t.Errorf("a nil stream: %v", err)
	}
	tc := cases(t, 4)[0]
	m, err := New(tc.f, 2, 1, WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{-1, 4} {
		if _, err := RoundStd(m, r); !errors.As(err, &pe) || pe.Param != "round" {
			t.Errorf("round %d: %v", r, err)
		}
	}
}

// TestRoundStdScaledOperators: an operator whose coefficients are those
// of a strategy's operator times 2^700 or 2^-700 (a form assembled by
// hand, factorize.OperatorForm, or hand-made factors streamed by
// WithDense) streams M' = 2^s M, and with std 0.7 2^-s its rounds have
// the noise std of the unscaled operator at std 0.7: RoundStd must report
// 0.7 times the row norms of M formed densely from the strategy's own
// factors (explicitOperator), to a relative 1e-9. Before, the squared row
// norms under- or overflowed: a row of norm 2^-700 (squares 2^-1400) was
// reported as 0 std, although its noise has std 0.7, and one of norm
// 2^700 as an error (norm +Inf). A norm beyond the float64 range is still
// an error, on one line.
func TestRoundStdScaledOperators(t *testing.T) {
	const (
		r   = 8
		std = 0.7
	)
	for _, tc := range cases(t, r) {
		if len(tc.opts) > 0 {
			continue // the same operators, streamed densely or kept
		}
		form, ok := factorize.FormOf(tc.f.Operator)
		if !ok || len(form.Floats) == 0 {
			continue // identity and tree: no coefficients
		}
		m0 := explicitOperator(t, tc.f)
		for _, k := range []int{700, -700} {
			fl := append([]float64(nil), form.Floats...)
			scale := func(lo, hi int) {
				for i := lo; i < hi; i++ {
					fl[i] = math.Ldexp(fl[i], k)
				}
			}
			var s int // M' = 2^s M
			switch n, kk := len(fl), 0; form.Kind {
			case "banded": // C's entries: C' = 2^k C
				scale(0, n)
				s = -k
			case "semiseparable": // P and C's diagonal: C' = 2^k C
				kk = form.Ints[1]
				scale(0, r*kk)
				scale(n-r, n)
				s = -k
			case "blt": // the scales of C^{-1}'s rows
				scale(n-r, n)
				s = k
			case "banded-inverse": // C^{-1}'s coefficients
				scale(0, n)
				s = k
			case "toeplitz": // C's diagonal s: C^{-1} = diag(1/s) T_u
				scale(n-r, n)
				s = -k
			default:
				t.Fatalf("%s: form %q not scaled by the test", tc.name, form.Kind)
			}
			op, err := factorize.OperatorForm{Kind: form.Kind, Ints: form.Ints, Floats: fl}.Operator(r)
			if err != nil {
				t.Fatalf("%s, 2^%d: %v", tc.name, k, err)
			}
			f := &factorize.Factorization{Strategy: tc.f.Strategy, Workload: tc.f.Workload, Operator: op}
			checkScaledRoundStds(t, tc.name, k, f, math.Ldexp(std, -s), std, m0)
		}
	}
	// Factors assembled by hand, streamed by the dense operator: B = 2^k A
	// and C = 2^-k I, so that M = A^{-1} B = 2^k I, whose rows have norm 2^k.
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	id := mat.NewDense(r, r, nil)
	for i := range r {
		id.Set(i, i, 1)
	}
	for _, k := range []int{700, -700} {
		var b, c mat.Dense
		b.Scale(math.Ldexp(1, k), w.Matrix())
		c.Scale(math.Ldexp(1, -k), id)
		f := &factorize.Factorization{Strategy: "hand", Workload: w, B: &b, C: &c, Available: make([]int, r)}
		for j := range f.Available {
			f.Available[j] = j
		}
		checkScaledRoundStds(t, "dense/hand", k, f, math.Ldexp(std, -k), std, id, WithDense())
	}
	// Beyond the range: scales 2^1023 with d_1 = 3, so every row's norm
	// exceeds 3 2^1023 > MaxFloat64 (the std's product would not).
	blt := &factorize.BLTParams{Weights: []float64{3}, Lambdas: []float64{0.5}, Scale: make([]float64, r)}
	for i := range blt.Scale {
		blt.Scale[i] = 0x1p1023
	}
	m, err := New(&factorize.Factorization{Strategy: "blt", Workload: w, Operator: blt}, 3, 0x1p-1000, WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []error{func() error { _, err := RoundStds(m); return err }(), func() error { _, err := RoundStd(m, 1); return err }()} {
		if got == nil || strings.Contains(got.Error(), "\n") {
			t.Errorf("a row norm beyond the float64 range: %v, want a one-line error", got)
		}
	}
}

// checkScaledRoundStds checks RoundStds and RoundStd of f's stream at
// std mstd against want times the row norms of m0.
func checkScaledRoundStds(t *testing.T, name string, k int, f *factorize.Factorization, mstd, want float64, m0 *mat.Dense, opts ...Option) {
	t.Helper()
	m, err := New(f, 3, mstd, append(opts, WithSeed(1))...)
	if err != nil {
		t.Fatalf("%s, 2^%d: %v", name, k, err)
	}
	got, err := RoundStds(m)
	if err != nil {
		t.Errorf("%s, coefficients times 2^%d: RoundStds: %v", name, k, err)
		return
	}
	for i, g := range got {
		w := want * mat.Norm(m0.RowView(i), 2)
		if !(math.Abs(g-w) <= 1e-9*w) {
			t.Errorf("%s, coefficients times 2^%d: RoundStds[%d] = %.15g, want %.15g", name, k, i, g, w)
		}
		if one, err := RoundStd(m, i); err != nil || !(math.Abs(one-w) <= 1e-9*w) {
			t.Errorf("%s, coefficients times 2^%d: RoundStd(%d) = %v (%v), want %.15g", name, k, i, one, err, w)
		}
	}
}
