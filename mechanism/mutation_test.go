package mechanism

import (
	"slices"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"gonum.org/v1/gonum/mat"
)

// drawMutated returns the noise matrix of a mechanism of f (seed 11,
// dimension dim) with mutate called after New and after the first round,
// so that a change of what New was given can take effect only if New
// kept a reference to it.
func drawMutated(t *testing.T, f *factorize.Factorization, dim int, mutate func(m Mechanism), opts ...Option) *mat.Dense {
	t.Helper()
	m, err := New(f, dim, 1, append(opts, WithSeed(11))...)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Rounds()
	y := mat.NewDense(r, dim, nil)
	mutate(m)
	for i := 0; i < r; i++ {
		if err := m.Next(y.RawRowView(i)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			mutate(m)
		}
	}
	return y
}

// formFloats returns a copy of the coefficients of op's structured form.
func formFloats(t *testing.T, op factorize.Operator) []float64 {
	t.Helper()
	form, ok := factorize.FormOf(op)
	if !ok {
		t.Fatalf("%v has no form", op)
	}
	return form.Floats
}

// TestMutationAfterNew checks that the noise of a mechanism does not change
// when what New was given changes afterwards: BLT parameters (the
// factorization's, and those FactorizationOf reports), and the
// coefficients of a form an operator was built from. The reference is the
// noise drawn under the same key before any change. Before, New held the
// operator by reference: changing a weight or a scale after a server had
// checked the digest changed the noise with no check.
func TestMutationAfterNew(t *testing.T) {
	const r, dim = 24, 5
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	blt, err := factorize.BLT(ctx, w, 2)
	if err != nil {
		t.Fatal(err)
	}
	banded, err := factorize.BandedStrategy{Bands: 4}.Factorize(ctx, w, factorize.SingleParticipation())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("blt", func(t *testing.T) {
		bp := blt.Operator.(*factorize.BLTParams)
		orig := formFloats(t, bp)
		ref := drawMutated(t, blt, dim, func(Mechanism) {})
		got := drawMutated(t, blt, dim, func(m Mechanism) {
			bp.Weights[0] *= 3
			bp.Lambdas[1] = 0.1
			bp.Scale[2] = 10
		})
		// Restore the parameters for the next cases.
		copy(bp.Weights, orig[:2])
		copy(bp.Lambdas, orig[2:4])
		copy(bp.Scale, orig[4:])
		if !sameBits(ref, got) {
			t.Error("changing the BLT parameters after New changed the noise")
		}
		// The reported operator is the one streamed, and a change of it
		// changes neither the stream nor another report.
		calls := 0
		got = drawMutated(t, blt, dim, func(m Mechanism) {
			f, ok := FactorizationOf(m)
			if !ok {
				t.Fatal("no factorization reported")
			}
			rp := f.Operator.(*factorize.BLTParams)
			if calls++; rp == bp || calls == 1 && !slices.Equal(formFloats(t, rp), orig) {
				t.Fatal("the reported BLT parameters are the caller's, or not their values at New")
			}
			rp.Scale[0] = 7
		})
		if !sameBits(ref, got) {
			t.Error("changing the reported BLT parameters changed the noise")
		}
		// WithDense streams the dense factors; the operator it reports
		// (which the digest names) is a copy too.
		dense := drawMutated(t, blt, dim, func(m Mechanism) {
			f, _ := FactorizationOf(m)
			if !slices.Equal(formFloats(t, f.Operator), orig) {
				t.Fatal("the reported operator changed with the caller's")
			}
			bp.Weights[1] = -0.9
		}, WithDense())
		copy(bp.Weights, orig[:2])
		if d := maxRelDiff(ref, dense); !(d < 1e-9) {
			t.Errorf("WithDense: relative difference %.3g from the structured noise", d)
		}
	})

	t.Run("form", func(t *testing.T) {
		form, _ := factorize.FormOf(banded.Operator)
		op, err := form.Operator(r) // keeps form.Floats
		if err != nil {
			t.Fatal(err)
		}
		g := *banded
		g.Operator = op
		ref := drawMutated(t, &g, dim, func(Mechanism) {})
		got := drawMutated(t, &g, dim, func(Mechanism) {
			for i := range form.Floats {
				form.Floats[i] *= 2
			}
		})
		if !sameBits(ref, got) {
			t.Error("changing the form's coefficients after New changed the noise")
		}
	})
}
