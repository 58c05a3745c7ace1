package factorize

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// longTests reports whether the slow tests are enabled (DPMF_LONG=1).
func longTests() bool { return os.Getenv("DPMF_LONG") != "" }

// requireParamError checks that err is a *ParamError about param.
func requireParamError(t *testing.T, err error, param string) {
	t.Helper()
	var pe *ParamError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, param, pe.Param, "error %q", err)
}

// compute factorizes w by the named strategy with default options under
// single participation.
func compute(ctx context.Context, name string, w *Workload) (*Factorization, error) {
	s, err := ParseStrategy(name)
	if err != nil {
		return nil, err
	}
	return s.Factorize(ctx, w, Participation{})
}

// identityOf returns newIdentity(w), failing the test on an error.
func identityOf(t *testing.T, w *Workload) *Factorization {
	t.Helper()
	f, err := newIdentity(w)
	require.NoError(t, err)
	return f
}

// residual returns max |A - B C| over all entries ([Factorization.Factors]),
// a check that f reproduces its workload. It panics for loss-only results.
func residual(f *Factorization) float64 {
	b, c, err := f.Factors()
	if err != nil {
		panic("factorize: Residual of a loss-only factorization")
	}
	var bc mat.Dense
	bc.Mul(b, c)
	a := f.Workload.Matrix()
	r := f.Workload.R()
	worst := 0.0
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			worst = math.Max(worst, math.Abs(bc.At(i, j)-a.At(i, j)))
		}
	}
	return worst
}

// testVector returns a fixed vector of n entries in [-1, 1) from a
// linear congruential sequence: the same for every run, unrelated to any
// factorization's structure.
func testVector(n int) []float64 {
	x := make([]float64, n)
	s := uint64(0x9e3779b97f4a7c15)
	for i := range x {
		s = s*6364136223846793005 + 1442695040888963407
		x[i] = float64(s>>11)/(1<<53)*2 - 1
	}
	return x
}
