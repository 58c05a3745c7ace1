package mechanism

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
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
