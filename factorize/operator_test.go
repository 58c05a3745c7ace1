package factorize

import (
	"context"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every structured operator survives its form: the operator read back
// streams C^{-1} with the same bits (M (C x) for a fixed x), and bad forms
// are errors naming the form, never panics.
func TestOperatorFormRoundTrip(t *testing.T) {
	ctx := context.Background()
	const r = 21
	w := prefix(t, r)
	for _, name := range Strategies() {
		s, err := ParseStrategy(name)
		require.NoError(t, err)
		f, err := s.Factorize(ctx, w, SingleParticipation())
		require.NoError(t, err)
		form, ok := FormOf(f.Operator)
		assert.Equal(t, ok, HasForm(f.Operator), "%s: HasForm against FormOf", name)
		if name == StrategyOptimal {
			require.True(t, ok, "optimal streams its quasiseparable factor")
		}
		if !ok {
			continue
		}
		n, err := form.FloatCount()
		require.NoError(t, err, name)
		assert.Len(t, form.Floats, n, name)
		back, err := form.Operator(r)
		require.NoError(t, err, name)
		_, c := factorsOf(t, f)
		x := testVector(r)
		assert.Equal(t, math.Float64bits(operatorError(f.Operator, c, x)), math.Float64bits(operatorError(back, c, x)), name)
		assert.Equal(t, f.Operator.String(), back.String(), name)
		assert.Equal(t, f.Operator.Memory(), back.Memory(), name)

		_, err = form.Operator(r + 1)
		assert.ErrorContains(t, err, "rounds", name)
		if len(form.Floats) > 0 {
			bad := form
			bad.Floats = form.Floats[1:]
			_, err = bad.Operator(r)
			assert.ErrorContains(t, err, "coefficients", name)
			bad.Floats = append([]float64{math.NaN()}, form.Floats[1:]...)
			_, err = bad.Operator(r)
			assert.ErrorContains(t, err, "coefficient NaN", name)
		}
	}
	for _, bad := range []OperatorForm{
		{Kind: "magic", Ints: []int{3}},
		{Kind: "tree", Ints: []int{0}},
		{Kind: "tree", Ints: []int{3, 1}},
		{Kind: "banded", Ints: []int{3, 4}},
		{Kind: "semiseparable", Ints: []int{3, 0}},
		{Kind: "blt", Ints: []int{3, 1 << 20}},
	} {
		_, err := bad.FloatCount()
		require.Error(t, err, "%+v", bad)
		assert.True(t, strings.HasPrefix(err.Error(), "factorize: operator form "), err.Error())
	}
	// A zero diagonal (C singular) is refused.
	_, err := OperatorForm{Kind: "banded", Ints: []int{2, 1}, Floats: []float64{1, 0}}.Operator(2)
	assert.ErrorContains(t, err, "diagonal[1] = 0")
}

// The tree operator numbers the noise rows as Tree numbers C's rows.
func TestTreeOperatorRows(t *testing.T) {
	for _, r := range []int{1, 2, 5, 8, 37} {
		f, err := newTree(prefix(t, r))
		require.NoError(t, err)
		op := f.Operator.(treeOp)
		_, m := f.B.Dims()
		assert.Equal(t, m, op.NoiseRows())
		for l, rows := range op.row {
			for q, j := range rows {
				// Row j of C is the dyadic interval [2q 2^l, (2q+1) 2^l).
				for c := 0; c < r; c++ {
					want := 0.0
					if c >= 2*q<<l && c < (2*q+1)<<l {
						want = 1
					}
					require.Equal(t, want, f.C.At(j, c), "R=%d level %d node %d row %d", r, l, q, j)
				}
			}
		}
	}
}

// TestTreeRowsCount: TreeRows(r) is the number of dyadic intervals
// [k 2^l, (k+1) 2^l) inside [0, r), counted one by one, for r up to 1100
// (0 for r < 1), and at R = MaxRounds it is 2R - popcount(R) without
// overflow.
func TestTreeRowsCount(t *testing.T) {
	for r := -2; r <= 1100; r++ {
		n := 0
		for l := 0; 1<<l <= r; l++ {
			for k := 0; (k+1)<<l <= r; k++ {
				n++
			}
		}
		if got := TreeRows(r); got != n {
			t.Fatalf("TreeRows(%d) = %d, want %d intervals", r, got, n)
		}
	}
	r := MaxRounds
	if got, want := float64(TreeRows(r)), 2*float64(r)-float64(bits.OnesCount(uint(r))); got != want || got <= 0 {
		t.Errorf("TreeRows(MaxRounds = %d) = %v, want %v", r, got, want)
	}
}

// TestHasFormDense: the dense operator (the optimal solver's dense path)
// and no operator have no form, as FormOf says.
func TestHasFormDense(t *testing.T) {
	w := prefix(t, 12)
	f, err := OptimalStrategy{Options: Options{Method: Dense}}.Factorize(context.Background(), w, SingleParticipation())
	require.NoError(t, err)
	_, ok := FormOf(f.Operator)
	assert.False(t, ok)
	assert.False(t, HasForm(f.Operator))
	assert.False(t, HasForm(nil))
}
