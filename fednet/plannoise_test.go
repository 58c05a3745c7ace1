package fednet

import (
	"context"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// planNoise builds (calibrates) the plan p and returns its privacy record
// and a ServerOptions.Noise that streams its factorization's noise at the
// record's std for models of dim entries: the set-up the tests of plans
// and records share.
func planNoise(t *testing.T, p *plan.Plan, dim int) (*fedopt.Privacy, func(int, [32]byte) (mechanism.Mechanism, error)) {
	t.Helper()
	f, err := p.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pr, err := fedopt.PrivacyOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return pr, func(start int, key [32]byte) (mechanism.Mechanism, error) {
		return mechanism.New(f, dim, pr.NoiseStd, mechanism.WithKey(key), mechanism.WithStartRound(start))
	}
}
