package factorize

import (
	"math"
	"testing"
)

// TestFormPartsCannotChangeTheOperator: the slices FormParts yields are
// not the operator's own coefficients, so a caller that writes to them
// (FormParts is exported; the coefficients of the banded, semiseparable,
// Toeplitz and banded-inverse operators are reachable through nothing
// else) cannot change the noise an operator streams after its digest
// was recorded. For one operator of each kind with coefficients, built
// from a form with known coefficients, every yielded entry is
// overwritten with NaN; FormOf's coefficients afterwards must still be
// the ones the operator was built from, bit for bit, and the yielded
// slices, concatenated, must have been those too.
func TestFormPartsCannotChangeTheOperator(t *testing.T) {
	const r = 3000 // more coefficients than one chunk of any size below 3000
	for _, form := range []OperatorForm{
		{Kind: "semiseparable", Ints: []int{r, 2}},
		{Kind: "banded", Ints: []int{r, 3}},
		{Kind: "blt", Ints: []int{r, 2}},
		{Kind: "toeplitz", Ints: []int{r}},
		{Kind: "banded-inverse", Ints: []int{r, 3}},
	} {
		n, err := form.FloatCount()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, n)
		for i := range want {
			want[i] = 1 + float64(i%11)/64 // finite, nonzero, no two neighbours alike
		}
		form.Floats = append([]float64(nil), want...)
		op, err := form.Operator(r)
		if err != nil {
			t.Fatalf("%s: %v", form.Kind, err)
		}
		kind, _, parts, ok := FormParts(op)
		if !ok || kind != form.Kind {
			t.Fatalf("%s: FormParts gives %q, %v", form.Kind, kind, ok)
		}
		var got []float64
		for p := range parts {
			got = append(got, p...)
			for i := range p {
				p[i] = math.NaN()
			}
		}
		if len(got) != n {
			t.Errorf("%s: FormParts yields %d coefficients, want %d", form.Kind, len(got), n)
		}
		after, _ := FormOf(op)
		for i := range want {
			if i < len(got) && math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s: yielded coefficient %d is %v, want %v", form.Kind, i, got[i], want[i])
				break
			}
			if math.Float64bits(after.Floats[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s: after a caller wrote NaN to FormParts' slices, coefficient %d of the operator is %v, want %v", form.Kind, i, after.Floats[i], want[i])
				break
			}
		}
	}
}

// TestFormOfNilBLT: nil BLT parameters (a *BLTParams a caller assembled
// and left nil, in an Operator) have no form: HasForm, FormOf and
// FormParts say so (false) instead of panicking on the nil pointer.
// HasForm answered true before it became FormParts's answer; FormOf and
// FormParts dereferenced it.
func TestFormOfNilBLT(t *testing.T) {
	var op Operator = (*BLTParams)(nil)
	check := func(name string, f func() bool) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s of nil BLT parameters panicked: %v", name, r)
			}
		}()
		if f() {
			t.Errorf("%s of nil BLT parameters: a form, want none", name)
		}
	}
	check("HasForm", func() bool { return HasForm(op) })
	check("FormOf", func() bool { _, ok := FormOf(op); return ok })
	check("FormParts", func() bool { _, _, _, ok := FormParts(op); return ok })
}
