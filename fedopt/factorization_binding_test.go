package fedopt

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/cache"
	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

// columnNormMax returns the largest column norm of c, by a loop of its
// own: the sensitivity of C under single participation (one sample
// changes one column's row of G), computed without package factorize.
func columnNormMax(c *mat.Dense) float64 {
	r, m := c.Dims()
	best := 0.0
	for j := 0; j < m; j++ {
		s := 0.0
		for i := 0; i < r; i++ {
			s += c.At(i, j) * c.At(i, j)
		}
		best = math.Max(best, math.Sqrt(s))
	}
	return best
}

// TestServerRefusesAnotherFactorization: the server checked a mechanism's
// std and rounds against the privacy record, not its factorization, so a
// mechanism of strategy Y with the std calibrated for strategy X was
// accepted, and the record's sensitivity is X's C's while the released
// noise is Y's. For every pair of registry strategies at R = 8, a record
// of X with a mechanism of Y must be refused, naming both, and a
// mechanism of X (fresh, forced dense, or from the cache) accepted. The
// refused pairs really differ: their dense C differ, and for some of them
// the largest column norm of the mechanism's C, computed here by hand,
// is not the record's sensitivity of C (the tree's 2 at R = 8 against
// the identity's 1, and the square root's against the optimum's), so the
// record's (eps, delta) would not hold for the release.
func TestServerRefusesAnotherFactorization(t *testing.T) {
	const R, n, dim = 8, 2, 3
	ctx := context.Background()
	// Every strategy, with settings that make the banded ones differ (at
	// their default 16 bands, R = 8 gives the full band: banded, bsr and
	// sqrt-normalized then have the same C, and bisr that of sqrt).
	spec := map[string]string{"banded": "banded:bands=2", "bsr": "bsr:bands=3", "banded-toeplitz": "banded-toeplitz:bands=4", "bisr": "bisr:bands=2", "bandinv": "bandinv:bands=3"}
	var names []string
	for _, s := range factorize.Strategies() {
		names = append(names, cmp.Or(spec[s], s))
	}
	plans := map[string]*plan.Plan{}
	facts := map[string]*factorize.Factorization{}
	dense := map[string]*mat.Dense{}
	for _, s := range names {
		p := buildPlan(t, s, R, 1, n)
		f, err := p.Factorize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, c, err := f.Factors()
		if err != nil {
			t.Fatal(err)
		}
		plans[s], facts[s], dense[s] = p, f, c
	}
	server := func(pr *Privacy, m mechanism.Mechanism) error {
		cfg := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}
		_, err := NewServer(cfg, Shape{Learners: n, Rounds: R, Tau: 1, Dim: dim}, m)
		return err
	}
	falseClaims := 0
	for _, x := range names {
		pr, err := PrivacyOf(plans[x])
		if err != nil {
			t.Fatal(err)
		}
		if pr.OperatorSHA256 == "" {
			t.Fatalf("%s: the record names no factorization", x)
		}
		for _, y := range names {
			m, err := mechanism.New(facts[y], dim, pr.NoiseStd, mechanism.WithSeed(1))
			if err != nil {
				t.Fatal(err)
			}
			err = server(pr, m)
			if x == y {
				if err != nil {
					t.Errorf("record of %s, mechanism of %s: %v, want accepted", x, y, err)
				}
				continue
			}
			// The record names its spec, the mechanism its
			// factorization's strategy (the name: a Factorization holds
			// no settings), and both their digests.
			yName, _, _ := strings.Cut(y, ":")
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", x)) || !strings.Contains(err.Error(), fmt.Sprintf("%q", yName)) {
				t.Errorf("record of %s, mechanism of %s: error %v, want a refusal naming both", x, y, err)
			}
			if mat.EqualApprox(dense[x], dense[y], 1e-9) {
				t.Errorf("%s and %s refused, but their C agree within 1e-9", x, y)
			}
			if sy := columnNormMax(dense[y]); math.Abs(sy-pr.UnitSensitivity.Value) > 1e-9*sy {
				falseClaims++ // the record's sensitivity of C is not the mechanism's
			}
		}
	}
	if falseClaims == 0 {
		t.Error("no pair of strategies has C of different sensitivities at R = 8: the test shows nothing")
	}
	// The tree at R = 8 has 4 levels (sensitivity 2 by hand), the
	// identity 1: a record of the identity would claim half the
	// sensitivity of the tree's noise.
	if got := columnNormMax(dense["tree"]); math.Abs(got-2) > 1e-12 {
		t.Errorf("tree at R = 8: largest column norm %v, want 2 (4 levels)", got)
	}

	// The same factorization, another way: computed again, streamed
	// densely, or read back from the cache (bit for bit a fresh one).
	c := &cache.Cache{Dir: t.TempDir()}
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range names {
		pr, _ := PrivacyOf(plans[x])
		again, err := plans[x].Factorize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := factorize.ParseStrategy(x)
		if err != nil {
			t.Fatal(err)
		}
		var cached *factorize.Factorization
		for i := range 2 {
			var hit bool
			if cached, hit, err = c.Compute(ctx, s, w, factorize.SingleParticipation(), nil); err != nil {
				t.Fatal(err)
			}
			if hit != (i == 1) {
				t.Fatalf("%s: compute %d from the cache: %v", x, i, hit)
			}
		}
		for _, v := range []struct {
			name string
			f    *factorize.Factorization
			opts []mechanism.Option
		}{{"again", again, nil}, {"dense", facts[x], []mechanism.Option{mechanism.WithDense()}}, {"cached", cached, nil}} {
			m, err := mechanism.New(v.f, dim, pr.NoiseStd, append(v.opts, mechanism.WithSeed(2))...)
			if err != nil {
				t.Fatal(err)
			}
			if err := server(pr, m); err != nil {
				t.Errorf("record of %s, its factorization %s: %v, want accepted", x, v.name, err)
			}
		}
	}
}

// TestServerBindsHandBuiltFactors: factors assembled by hand (streamed
// with mechanism.WithDense) are named by their dense B and C. With
// A = B C the prefix sums, C = I (sensitivity 1) and C = 2 I, B = A / 2
// (sensitivity 2, by hand) stream noise of the same std; a record
// calibrated for the first must refuse a mechanism of the second and
// accept one of the first. A record without a digest (made by hand) and a
// mechanism not made by mechanism.New are refused: neither can be checked.
func TestServerBindsHandBuiltFactors(t *testing.T) {
	const R, n, dim = 4, 2, 2
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	hand := func(name string, scale float64) *factorize.Factorization { return handFactors(w, name, scale) }
	one, two := hand("hand-1", 1), hand("hand-2", 2)
	if s1, s2 := columnNormMax(one.C), columnNormMax(two.C); s1 != 1 || s2 != 2 {
		t.Fatalf("hand-built sensitivities %v and %v, want 1 and 2", s1, s2)
	}
	d, err := plan.OperatorDigest(one)
	if err != nil {
		t.Fatal(err)
	}
	pr := handRecord(n, R, "hand-1", d)
	cfg := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}
	shape := Shape{Learners: n, Rounds: R, Tau: 1, Dim: dim}
	for _, c := range []struct {
		f  *factorize.Factorization
		ok bool
	}{{one, true}, {two, false}} {
		m, err := mechanism.New(c.f, dim, 1, mechanism.WithDense(), mechanism.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewServer(cfg, shape, m)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "hand-2") {
			t.Errorf("record of hand-1, mechanism of %s: error %v, want accepted %v (a refusal naming it)", c.f.Strategy, err, c.ok)
		}
	}
	m, _ := mechanism.New(one, dim, 1, mechanism.WithDense(), mechanism.WithSeed(1))
	bare := *pr
	bare.OperatorSHA256 = ""
	cfg.Privacy = &bare
	if _, err := NewServer(cfg, shape, m); err == nil || !strings.Contains(err.Error(), "names no factorization") {
		t.Errorf("a record without a digest: error %v, want a refusal", err)
	}
	cfg.Privacy = pr
	if _, err := NewServer(cfg, shape, &fixedNoise{v: make([]float64, dim), rounds: R}); err == nil || !strings.Contains(err.Error(), "does not report") {
		t.Errorf("a mechanism not made by mechanism.New: error %v, want a refusal", err)
	}
}

// TestEpochsNeedTheirParticipation: data replayed k times
// (dataset.Dataset.Epochs) makes each client take part in k rounds, but a
// record of single participation calibrates the noise for one: for the
// identity, C's sensitivity is 1 under single participation and sqrt(2)
// under epochs:2 (two unit columns, by hand), so the record would claim
// sqrt(2) times less sensitivity than the release has. NewLearner (given
// the record) and Simulate (whose server holds it) must refuse k = 2 under
// single participation, and accept k = 1, and k = 2 under epochs:2 or
// under a min-separation the data's period satisfies.
func TestEpochsNeedTheirParticipation(t *testing.T) {
	const R, n, tau, features = 8, 2, 1, 3
	ctx := context.Background()
	record := func(part string) *plan.Plan {
		p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Strategy: "identity", Participation: part, Rounds: R, Learners: n, Tau: tau, Clip: 1, Target: &plan.Target{Eps: 1, Delta: 1e-5}}
		if _, err := p.Build(ctx); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if s1, s2 := record("single").Privacy.UnitSensitivity, record("epochs:2").Privacy.UnitSensitivity; s1 != 1 || math.Abs(s2-math.Sqrt2) > 1e-12 {
		t.Fatalf("identity's C: sensitivity %v single, %v epochs:2, want 1 and sqrt(2)", s1, s2)
	}
	for _, c := range []struct {
		part   string
		epochs int
		ok     bool
	}{{"single", 1, true}, {"single", 2, false}, {"epochs:2", 2, true}, {"minsep:4", 2, true}, {"minsep:5", 2, false}, {"minsep:4,1", 2, false}, {"epochs:2", 1, true}} {
		name := fmt.Sprintf("%s, %d epochs", c.part, c.epochs)
		p := record(c.part)
		pr, err := PrivacyOf(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Factorize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		base, err := dataset.Synthetic{Alpha: 0.1, Beta: 0.1, Dim: features}.Dataset(n, R/c.epochs, tau, 1)
		if err != nil {
			t.Fatal(err)
		}
		data, err := base.Epochs(c.epochs)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Algorithm: Correlated, Eta: 0.1, EtaG: 1, Clip: 1, Privacy: pr}
		m := model.Logistic{}
		// NewLearner with the record.
		_, err = NewLearner(m, data.Stream(0), cfg, tau, features)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "epochs:2") {
			t.Errorf("%s: NewLearner error %v, want accepted %v (a refusal naming epochs:2)", name, err, c.ok)
		}
		// Learners made without it: Simulate checks them against the
		// server's record.
		plain := cfg
		plain.Privacy = nil
		learners := make([]*Learner, n)
		for i := range learners {
			if learners[i], err = NewLearner(m, data.Stream(i), plain, tau, features); err != nil {
				t.Fatal(err)
			}
		}
		noise, err := mechanism.New(f, features, pr.NoiseStd, mechanism.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(cfg, Shape{Learners: n, Rounds: R, Tau: tau, Dim: features}, noise)
		if err != nil {
			t.Fatal(err)
		}
		err = Simulate(ctx, srv, learners, SimOptions{})
		if (err == nil) != c.ok || !c.ok && srv.Round() != 0 {
			t.Errorf("%s: Simulate error %v at round %d, want accepted %v (refused before round 0)", name, err, srv.Round(), c.ok)
		}
	}
}

// TestServerBindsDenseOfAnother: mechanism.WithDense streams the dense
// factors of a factorization, but the digest names its structured
// operator when it has one. A factorization keeping the calibrated
// strategy's operator with the hand-built factors B = A / 2, C = 2 I
// (sensitivity 2, by hand, where the record's C has 1: the noise M Z is
// half the identity's) must not pass for the calibrated one: before the
// fix, the server accepted it.
func TestServerBindsDenseOfAnother(t *testing.T) {
	const R, n, dim = 4, 2, 2
	p := buildPlan(t, "identity", R, 1, n)
	f, err := p.Factorize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pr, err := PrivacyOf(p)
	if err != nil {
		t.Fatal(err)
	}
	b := mat.NewDense(R, R, nil)
	c := mat.NewDense(R, R, nil)
	for i := range R {
		for j := 0; j <= i; j++ {
			b.Set(i, j, 0.5)
		}
		c.Set(i, i, 2)
	}
	if s := columnNormMax(c); s != 2 {
		t.Fatalf("hand-built C's sensitivity %v, want 2", s)
	}
	g := *f
	g.B, g.C = b, c
	cfg := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}
	shape := Shape{Learners: n, Rounds: R, Tau: 1, Dim: dim}
	m, err := mechanism.New(&g, dim, pr.NoiseStd, mechanism.WithDense(), mechanism.WithSeed(1))
	if err == nil {
		_, err = NewServer(cfg, shape, m)
	}
	if err == nil {
		t.Error("identity's operator with the dense factors of C = 2 I, WithDense: accepted for the identity's record")
	}
	// The identity's own dense factors are accepted.
	h := *f
	h.B, h.C = nil, nil
	if h.B, h.C, err = f.Factors(); err != nil {
		t.Fatal(err)
	}
	m, err = mechanism.New(&h, dim, pr.NoiseStd, mechanism.WithDense(), mechanism.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(cfg, shape, m); err != nil {
		t.Errorf("the identity's own dense factors: %v, want accepted", err)
	}
}

// TestServerBindsDenseOperatorOfAnother: a factorization without a
// structured form (the optimal solvers' dense operator) is named by its
// dense B and C, and streamed by its operator. The factors B = A, C = I
// (sensitivity 1) with the dense operator of B = A / 2, C = 2 I (noise
// Z / 2, by hand) must not pass for the first: before the fix the server
// accepted it. The first's own dense operator is accepted.
func TestServerBindsDenseOperatorOfAnother(t *testing.T) {
	const R, n, dim = 4, 2, 2
	w, err := factorize.Prefix(R)
	if err != nil {
		t.Fatal(err)
	}
	hand := func(name string, scale float64) *factorize.Factorization { return handFactors(w, name, scale) }
	one, two := hand("hand-1", 1), hand("hand-2", 2)
	d, err := plan.OperatorDigest(one)
	if err != nil {
		t.Fatal(err)
	}
	pr := handRecord(n, R, "hand-1", d)
	cfg := Config{Algorithm: Correlated, Eta: 1, EtaG: 1, Clip: 1, Privacy: pr}
	shape := Shape{Learners: n, Rounds: R, Tau: 1, Dim: dim}
	for _, c := range []struct {
		name string
		of   *factorize.Factorization
		ok   bool
	}{{"its own", one, true}, {"hand-2's", two, false}} {
		g := *one
		if g.Operator, err = factorize.DenseOperator(c.of); err != nil {
			t.Fatal(err)
		}
		m, err := mechanism.New(&g, dim, 1, mechanism.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewServer(cfg, shape, m); (err == nil) != c.ok {
			t.Errorf("hand-1's factors with %s dense operator: error %v, want accepted %v", c.name, err, c.ok)
		}
	}
}

// handRecord returns the record of hand-1 (C = I, sensitivity 1 by hand)
// for n = 2 learners with B_g = 1: release sensitivity 2 B_g / n = 1 and
// noise std 1, which gives (5, 1e-3)-DP (the published sigma at (5, 1e-3)
// is 0.68984233, below 1), so that NewServer's check of the record's
// fields (checkRecord) passes and the digest decides.
func handRecord(n, R int, strategy, digest string) *Privacy {
	pr := &Privacy{Algorithm: Correlated, Learners: n, Clip: 1, Rounds: R, Strategy: strategy, OperatorSHA256: digest,
		UnitSensitivity: factorize.Sensitivity{Value: 1, Exact: true}, Gamma: 1}
	pr.Eps, pr.Delta, pr.Method, pr.Sensitivity, pr.NoiseStd, pr.Participation = 5, 1e-3, accountant.Exact, 1, 1, accountant.SingleParticipation
	return pr
}

// handFactors returns the factorization of w's prefix sums A = B C with
// C = scale I and B = A / scale, built by hand (sensitivity scale: C's
// largest column norm), every round available.
func handFactors(w *factorize.Workload, name string, scale float64) *factorize.Factorization {
	r := w.R()
	b := mat.NewDense(r, r, nil)
	c := mat.NewDense(r, r, nil)
	avail := make([]int, r)
	for i := range r {
		for j := 0; j <= i; j++ {
			b.Set(i, j, 1/scale)
		}
		c.Set(i, i, scale)
		avail[i] = i
	}
	return &factorize.Factorization{Strategy: name, Workload: w, B: b, C: c, Available: avail}
}
