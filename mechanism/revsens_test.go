package mechanism

import (
	"fmt"
	"testing"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/testutil"
	"gonum.org/v1/gonum/mat"
)

// streamedC returns the C whose noise the mechanism of f streams, from
// its output alone: with dimension R and std 1 the noise matrix is M Z
// for the R x R matrix Z of the source's rows (regenerated here from the
// seed), so M = (M Z) Z^{-1} and C = M^{-1} = Z (M Z)^{-1}. Nil for a
// factorization whose noise has more rows than rounds (the tree).
func streamedC(t *testing.T, f *factorize.Factorization, seed uint64) *mat.Dense {
	t.Helper()
	r := f.Workload.R()
	if f.Operator == nil || f.Operator.NoiseRows() != r {
		return nil
	}
	m, err := New(f, r, 1, WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	out, err := NoiseMatrix(m)
	if err != nil {
		t.Fatal(err)
	}
	g := newGen(&source{key: SeedKey(seed)})
	z := mat.NewDense(r, r, nil)
	for j := 0; j < r; j++ {
		g.Fill(j, 0, z.RawRowView(j))
	}
	var inv, c mat.Dense
	if err := inv.Inverse(out); err != nil {
		t.Fatal(err)
	}
	c.Mul(z, &inv)
	return &c
}

// TestRevsensStreamedSensitivity checks, for every registered strategy
// (and the loss-only paths that stream) under single participation, fixed
// epochs and min-separations, that the sensitivity the factorization
// reports, which the calibration multiplies the noise by, is not below the
// brute-force sensitivity (internal/testutil) of the C recovered from the
// noise the mechanism actually draws, and where it claims to be exact, not
// above its upper bound: what reaches the noise is the operator, not the
// factors the metrics were computed from.
func TestRevsensStreamedSensitivity(t *testing.T) {
	const r = 8
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	parts := []struct {
		p    factorize.Participation
		kind string
		b, k int
	}{
		{factorize.SingleParticipation(), "single", 0, 0},
		{factorize.FixedEpochs(2), "epochs", 0, 2},
		{factorize.FixedEpochs(4), "epochs", 0, 4},
		{factorize.MinSeparation(2, 0), "minsep", 2, 0},
		{factorize.MinSeparation(3, 2), "minsep", 3, 2},
		{factorize.MinSeparation(1, 0), "minsep", 1, 0},
	}
	for _, name := range factorize.Strategies() {
		info, _ := factorize.Lookup(name)
		s, err := factorize.ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, lossOnly := range []bool{false, true} {
			if lossOnly && !info.HasLossOnly() {
				continue
			}
			st, err := factorize.WithLossOnly(s, lossOnly)
			if err != nil {
				t.Fatal(err)
			}
			for i, pc := range parts {
				f, err := st.Factorize(t.Context(), w, pc.p)
				if err != nil || f.Operator == nil {
					continue // refused, or no operator (loss-only optimal)
				}
				c := streamedC(t, f, uint64(100+i))
				if c == nil {
					continue
				}
				lo, hi := testutil.SensBracket(c, testutil.SensPatterns(pc.kind, r, pc.b, pc.k))
				got := f.Metrics.UnitSensitivity
				what := fmt.Sprintf("%s (loss-only %v) under %v", name, lossOnly, pc.p)
				// C comes from two solves with random Z (condition
				// numbers of a few hundred at most here): 1e-9.
				if got.Value < lo*(1-1e-9) {
					t.Errorf("%s: PRIVACY: reported %v, the streamed C has at least %.12g", what, got, lo)
				}
				if got.Exact && got.Value > hi*(1+1e-9) {
					t.Errorf("%s: reported %v exact, the streamed C has at most %.12g", what, got, hi)
				}
			}
		}
	}
}
