package factorize

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
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
