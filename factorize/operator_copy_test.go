package factorize

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// streamedM returns the rows of the noise operator M that op streams (unit
// noise rows, dimension m).
func streamedM(op Operator) *mat.Dense {
	r, m := op.Rounds(), op.NoiseRows()
	st := op.NewState(m)
	out := mat.NewDense(r, m, nil)
	for i := 0; i < r; i++ {
		st.Prepare(i)
		st.Block(unitNoise{}, i, 0, out.RawRowView(i))
	}
	return out
}

// TestCopyOperatorOwnsItsCoefficients builds every strategy's operator from
// a form (which keeps the form's coefficients), copies it, then overwrites
// the form's coefficients: the copy must still stream the operator's M
// bit for bit, and the original (which shares them) must not, which shows
// the change reached the coefficients.
func TestCopyOperatorOwnsItsCoefficients(t *testing.T) {
	const r = 12
	w, err := Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, name := range Strategies() {
		s, err := ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		if s, err = WithLossOnly(s, false); err != nil {
			continue
		}
		f, err := s.Factorize(context.Background(), w, SingleParticipation())
		if err != nil || f.Operator == nil {
			continue
		}
		form, ok := FormOf(f.Operator)
		if !ok || len(form.Floats) == 0 {
			continue
		}
		op, err := form.Operator(r)
		if err != nil {
			t.Fatal(err)
		}
		want := streamedM(op)
		cp, ok := CopyOperator(op)
		if !ok {
			t.Fatalf("%s: %v not copied", name, op)
		}
		for i := range form.Floats {
			form.Floats[i] = form.Floats[i]*1.5 + 0.25
		}
		got := streamedM(cp)
		same := func(a, b *mat.Dense) bool {
			ra, ca := a.Dims()
			for i := 0; i < ra; i++ {
				for j := 0; j < ca; j++ {
					if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i, j)) {
						return false
					}
				}
			}
			return true
		}
		if !same(got, want) {
			t.Errorf("%s (%v): the copy changed with the form's coefficients", name, op)
		}
		if same(streamedM(op), want) {
			t.Errorf("%s (%v): the change of the form did not reach the original: the test checks nothing", name, op)
		}
		copied++
	}
	// A banded Toeplitz C's rows share one column: copied once.
	o := bandedToeplitzOp([]float64{1, 0.5, 0.25}, 6)
	cp, _ := CopyOperator(o)
	c := cp.(bandedOp)
	if &c.sub[5][0] != &c.sub[4][0] || &c.sub[5][0] == &o.sub[5][0] {
		t.Error("the banded Toeplitz rows are not one shared copy")
	}
	if copied < 5 {
		t.Fatalf("only %d operators copied", copied)
	}
}
