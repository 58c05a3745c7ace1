package factorize

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// denseRowNorms returns the row norms of M = A^{-1} B from f's dense
// factors, with M solved from A M = B by gonum's LU: a computation that
// shares nothing with the operators' structures.
func denseRowNorms(t *testing.T, f *Factorization) []float64 {
	t.Helper()
	b, _, err := f.Factors()
	if err != nil {
		t.Fatal(err)
	}
	var a, m mat.Dense
	a.CloneFrom(f.Workload.Matrix())
	if err := m.Solve(&a, b); err != nil {
		t.Fatal(err)
	}
	r, _ := m.Dims()
	out := make([]float64, r)
	for i := range out {
		out[i] = mat.Norm(m.RowView(i), 2)
	}
	return out
}

// foreignOp hides an operator's type, so that the row norms take the
// path of an operator of another package (streamed on unit noise rows).
type foreignOp struct{ Operator }

// TestOperatorRowNormsDense: for every operator kind (identity, tree,
// banded, banded inverse, BLT, quasiseparable, Toeplitz, dense) at small R,
// on the prefix-sum and a momentum workload, OperatorRowNorms and
// OperatorRowNorm agree with the row norms of M = A^{-1} B solved from the
// dense factors to a relative 1e-9, and so does the streamed path of an
// operator of another package.
func TestOperatorRowNormsDense(t *testing.T) {
	ctx := context.Background()
	prefix, err := Prefix(12)
	if err != nil {
		t.Fatal(err)
	}
	momentum, err := Momentum(12, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec string
		w    *Workload
		p    Participation
	}{
		{"identity", prefix, SingleParticipation()},
		{"tree", prefix, SingleParticipation()},
		{"sqrt", prefix, SingleParticipation()},
		{"sqrt-normalized", prefix, SingleParticipation()},
		{"banded:bands=4", prefix, SingleParticipation()},
		{"banded", prefix, SingleParticipation()},
		{"bsr:bands=3", prefix, SingleParticipation()},
		{"banded-toeplitz:bands=3", momentum, SingleParticipation()},
		{"bisr:bands=3", prefix, SingleParticipation()},
		{"bandinv:bands=3", prefix, SingleParticipation()},
		{"blt:buffers=2", prefix, SingleParticipation()},
		{"blt:buffers=3", momentum, SingleParticipation()},
		{"semiseparable:buffers=3", prefix, SingleParticipation()},
		{"optimal", prefix, SingleParticipation()},
		{"optimal", prefix, FixedEpochs(2)},
	}
	kinds := map[string]bool{}
	for _, c := range cases {
		s, err := ParseStrategy(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		f, err := s.Factorize(ctx, c.w, c.p)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		kind, _, _ := strings.Cut(f.Operator.String(), "(")
		kinds[kind] = true
		want := denseRowNorms(t, f)
		for _, op := range []Operator{f.Operator, foreignOp{f.Operator}} {
			got, err := OperatorRowNorms(op)
			if err != nil {
				t.Fatalf("%s (%s): %v", c.spec, op, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s (%s): %d norms, want %d", c.spec, op, len(got), len(want))
			}
			for r := range want {
				if math.Abs(got[r]-want[r]) > 1e-9*want[r] {
					t.Errorf("%s under %s (%T): row %d norm %.15g, dense factors %.15g", c.spec, c.p, op, r, got[r], want[r])
				}
			}
		}
		for _, r := range []int{0, 5, 11} {
			got, err := OperatorRowNorm(f.Operator, r)
			if err != nil || math.Abs(got-want[r]) > 1e-9*want[r] {
				t.Errorf("%s: OperatorRowNorm(%d) = %v (%v), dense factors %v", c.spec, r, got, err, want[r])
			}
		}
	}
	for _, k := range []string{"independent", "tree", "banded", "banded-inverse", "blt", "semiseparable", "toeplitz", "dense"} {
		if !kinds[k] {
			t.Errorf("no case streams with the %s operator (got %v)", k, kinds)
		}
	}
}

// TestOperatorRowNormsClosedForms: the tree's rows at R = 8 are
// sqrt(1 + trailing zeros of r+1), 1, sqrt 2, 1, sqrt 3, 1, sqrt 2, 1,
// sqrt 4 (by hand from [TreeStrategy]'s nodes), and the square root's
// row r has squared norm sum_{k<=r} u_k^2 with u the published
// coefficients of C^{-1} = A^{-1/2}: 1, -1/2, -1/8, -1/16, -5/128.
func TestOperatorRowNormsClosedForms(t *testing.T) {
	ctx := context.Background()
	w, _ := Prefix(8)
	f, err := TreeStrategy{}.Factorize(ctx, w, SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	got, err := OperatorRowNorms(f.Operator)
	if err != nil {
		t.Fatal(err)
	}
	for r, sq := range []float64{1, 2, 1, 3, 1, 2, 1, 4} {
		if math.Abs(got[r]-math.Sqrt(sq)) > 1e-15 {
			t.Errorf("tree row %d: norm %v, want sqrt(%v)", r, got[r], sq)
		}
	}
	w, _ = Prefix(5)
	s, _ := ParseStrategy("sqrt")
	f, err = s.Factorize(ctx, w, SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}
	got, err = OperatorRowNorms(f.Operator)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for r, u := range []float64{1, -0.5, -0.125, -0.0625, -5.0 / 128} {
		sum += u * u
		if math.Abs(got[r]-math.Sqrt(sum)) > 1e-14 {
			t.Errorf("sqrt row %d: norm %.16g, want %.16g", r, got[r], math.Sqrt(sum))
		}
	}
}

// TestOperatorRowNormsErrors: a nil operator, a round out of range and
// BLT parameters of inconsistent lengths are errors naming the argument,
// never a panic.
func TestOperatorRowNormsErrors(t *testing.T) {
	var pe *ParamError
	if _, err := OperatorRowNorms(nil); !errors.As(err, &pe) || pe.Param != "operator" {
		t.Errorf("nil operator: %v", err)
	}
	w, _ := Prefix(4)
	f, _ := IdentityStrategy{}.Factorize(context.Background(), w, SingleParticipation())
	for _, r := range []int{-1, 4} {
		if _, err := OperatorRowNorm(f.Operator, r); !errors.As(err, &pe) || pe.Param != "round" {
			t.Errorf("round %d: %v", r, err)
		}
	}
	bad := &BLTParams{Weights: []float64{1, 2}, Lambdas: []float64{0.5}, Scale: []float64{1, 1, 1}}
	if _, err := OperatorRowNorms(bad); !errors.As(err, &pe) || pe.Param != "operator" {
		t.Errorf("inconsistent BLT: %v", err)
	}
	over := &BLTParams{Weights: []float64{1e300}, Lambdas: []float64{0.5}, Scale: []float64{1, 1e10, 1}}
	if _, err := OperatorRowNorms(over); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Errorf("overflowing BLT: %v", err)
	}
}

// TestOperatorRowNormsNilBLT: nil BLT parameters (an Operator that is a
// nil *BLTParams, which mechanism.New refuses as "nil BLT parameters")
// are an error naming the operator, as a nil operator is; they panicked
// (a nil dereference in Rounds, before the nil check).
func TestOperatorRowNormsNilBLT(t *testing.T) {
	var p *BLTParams
	var pe *ParamError
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("OperatorRowNorms of nil BLT parameters panicked: %v", r)
			}
		}()
		if _, err := OperatorRowNorms(p); !errors.As(err, &pe) || pe.Param != "operator" {
			t.Errorf("OperatorRowNorms of nil BLT parameters: %v", err)
		}
	}()
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("OperatorRowNorm of nil BLT parameters panicked: %v", r)
			}
		}()
		if _, err := OperatorRowNorm(p, 0); !errors.As(err, &pe) || pe.Param != "operator" {
			t.Errorf("OperatorRowNorm of nil BLT parameters: %v", err)
		}
	}()
}

// TestOperatorRowNormsLarger: the recursions keep their accuracy over
// longer streams: at R = 400 the banded (16 bands), quasiseparable
// (the optimum, and K = 4) and BLT operators agree with the dense factors'
// row norms to a relative 1e-9 in every round.
func TestOperatorRowNormsLarger(t *testing.T) {
	w, err := Prefix(400)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"banded:bands=16", "optimal", "semiseparable:buffers=4", "blt"} {
		s, err := ParseStrategy(spec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(context.Background(), w, SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		got, err := OperatorRowNorms(f.Operator)
		if err != nil {
			t.Fatal(err)
		}
		want := denseRowNorms(t, f)
		worst := 0.0
		for r := range want {
			worst = max(worst, math.Abs(got[r]-want[r])/want[r])
		}
		if worst > 1e-9 {
			t.Errorf("%s (%s): largest relative difference from the dense factors' row norms %.3g", spec, f.Operator, worst)
		}
	}
}
