package factorize

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// Every exported function given a nil or zero-value workload, matrix or
// factorization returns a *ParamError naming it, as the package doc
// promises, and never panics.
func TestMissingArgumentsAreParamErrors(t *testing.T) {
	ctx := context.Background()
	for name, w := range map[string]*Workload{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			for _, s := range Strategies() {
				_, err := compute(ctx, s, w)
				requireParamError(t, err, "workload")
			}
			_, err := newIdentity(w)
			requireParamError(t, err, "workload")
			_, err = newTree(w)
			requireParamError(t, err, "workload")
			_, err = newSqrt(w)
			requireParamError(t, err, "workload")
			_, err = newSqrtNormalized(w)
			requireParamError(t, err, "workload")
			_, err = Optimal(ctx, w, Options{})
			requireParamError(t, err, "workload")
			_, err = OptimalEpochs(ctx, w, 2, Options{})
			requireParamError(t, err, "workload")
			_, err = BandedStrategy{}.Factorize(ctx, w, SingleParticipation())
			requireParamError(t, err, "workload")
			_, err = BLT(ctx, w, 0)
			requireParamError(t, err, "workload")
			_, err = CheckRequest(OptimalStrategy{}, w, Participation{})
			requireParamError(t, err, "workload")
			var f *Factorization
			_, err = f.WithParticipation(Participation{})
			requireParamError(t, err, "factorization")
		})
	}
	var nilDense *mat.Dense
	for _, a := range []mat.Matrix{nil, nilDense, &mat.Dense{}} {
		_, err := NewWorkload(a)
		requireParamError(t, err, "workload")
	}
	_, err := ComputeMetrics(nil, mat.NewDense(1, 1, nil), Participation{})
	requireParamError(t, err, "B")
	_, err = ComputeMetrics(mat.NewDense(1, 1, nil), nilDense, Participation{})
	requireParamError(t, err, "C")
	_, err = ComputeMetrics(mat.NewDense(2, 3, nil), mat.NewDense(2, 2, nil), Participation{})
	requireParamError(t, err, "C")
	_, err = SensitivityOf(nil, Participation{})
	requireParamError(t, err, "C")
	_, err = CheckRequest(nil, prefix(t, 3), Participation{})
	requireParamError(t, err, "strategy")
	var nf *Factorization
	requireParamError(t, nf.CheckCausal(), "factorization")
	requireParamError(t, (&Factorization{}).CheckCausal(), "factorization")
	_, err = Prefix(0)
	requireParamError(t, err, "R")
	_, err = Momentum(3, 1)
	requireParamError(t, err, "beta")
	_, err = Optimal(ctx, prefix(t, 3), Options{MaxIter: -1})
	requireParamError(t, err, "max-iter")
	_, err = Optimal(ctx, prefix(t, 3), Options{Method: Method(7)})
	requireParamError(t, err, "method")
}

// A loss-only result has no factors: CheckCausal says so with an error.
func TestCheckCausalLossOnly(t *testing.T) {
	f, err := Optimal(context.Background(), prefix(t, 8), Options{LossOnly: true})
	require.NoError(t, err)
	requireParamError(t, f.CheckCausal(), "factorization")
}

// Negative sizes are programmer errors: they panic with a package-prefixed
// message (not a runtime error from make), as the package doc says.
func TestNegativeCountsPanic(t *testing.T) {
	require.PanicsWithValue(t, "factorize: SqrtCoefficients(-1): negative number of coefficients", func() { SqrtCoefficients(-1) })
	require.PanicsWithValue(t, "factorize: InverseSqrtCoefficients(-2): negative number of coefficients", func() { InverseSqrtCoefficients(-2) })
	require.PanicsWithValue(t, "factorize: BLTParams.Coefficients(-1): negative number of coefficients", func() { (&BLTParams{}).Coefficients(-1) })
	require.Empty(t, SqrtCoefficients(0))
}
