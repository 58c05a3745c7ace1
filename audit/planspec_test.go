package audit

import (
	"context"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
)

// The audit's run plan (package plan), and so its privacy record, names
// the audited strategy with its settings: the record's strategy is the
// spec of the factorization its operator digest identifies. Before, the
// plan took the factorization's bare name ("banded" for banded:bands=2,
// "blt" for blt:buffers=2), another factorization than the one the
// record was calibrated for. The independent baseline's is the identity.
func TestSetupRecordNamesStrategySpec(t *testing.T) {
	for _, c := range []struct {
		algo fedopt.Algorithm
		s    factorize.Strategy
		want string
	}{
		{fedopt.Correlated, factorize.BandedStrategy{Bands: 2}, "banded:bands=2"},
		{fedopt.Correlated, factorize.BLTStrategy{Buffers: 2}, "blt:buffers=2"},
		{fedopt.Correlated, nil, "optimal"},
		{fedopt.Independent, factorize.BandedStrategy{Bands: 2}, "identity"},
	} {
		s, err := NewSetup(context.Background(), Plan{Algorithm: c.algo, Strategy: c.s, Learners: 2, Rounds: 8, Tau: 1, Dim: 2})
		if err != nil {
			t.Fatal(err)
		}
		if s.Privacy.Strategy != c.want {
			t.Errorf("%v %v: the record's strategy %q, want %q", c.algo, c.s, s.Privacy.Strategy, c.want)
		}
	}
}
