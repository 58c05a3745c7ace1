package fedopt_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/dataset"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
	"github.com/dpmf/dpmf/secagg"
)

// secureRun returns the calibrated secure plan of a small correlated run,
// its config (Quantizer and Privacy set) and a function making a fresh
// server with the plan's noise.
func secureRun(t *testing.T, n, rounds, tau, dim int) (fedopt.Config, fedopt.Shape, func() *fedopt.Server) {
	t.Helper()
	sa, err := plan.NewSecureAggregation(n, tau, 0.5, dim, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Algorithm: plan.AlgoCorrelated, Rounds: rounds, Learners: n, Tau: tau, Clip: 0.5, SecureAggregation: sa,
		Target: &plan.Target{Eps: 4, Delta: 1e-5}}
	f, err := p.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pr, err := fedopt.PrivacyOf(p)
	if err != nil {
		t.Fatal(err)
	}
	q := sa.Quantizer()
	cfg := fedopt.Config{Algorithm: fedopt.Correlated, Eta: 0.3, EtaG: 1, Clip: p.Clip, Privacy: pr, Quantizer: &q}
	shape := fedopt.Shape{Learners: n, Rounds: rounds, Tau: tau, Dim: dim}
	return cfg, shape, func() *fedopt.Server {
		noise, err := mechanism.New(f, dim, pr.NoiseStd, mechanism.WithSeed(3))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := fedopt.NewServer(cfg, shape, noise)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
}

// The ring sum computed elsewhere, as secure aggregation computes it (each
// learner's quantized update plus pairwise masks that cancel, summed in
// another order), releases the same models bit for bit as Release from the
// updates, with dropouts.
func TestReleaseRingSumMatchesRelease(t *testing.T) {
	const n, rounds, tau, dim = 5, 6, 3, 4
	cfg, shape, newServer := secureRun(t, n, rounds, tau, dim)
	data, err := dataset.Synthetic{Alpha: 0.5, Beta: 0.5, Dim: dim}.Dataset(n, rounds, tau, 9)
	if err != nil {
		t.Fatal(err)
	}
	learners := make([]*fedopt.Learner, n)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(model.Logistic{}, data.Stream(i), cfg, tau, dim); err != nil {
			t.Fatal(err)
		}
	}
	a, b := newServer(), newServer()
	rng := rand.New(rand.NewPCG(5, 6))
	for r := 0; r < rounds; r++ {
		updates := make([][]float64, n)
		for i, l := range learners {
			if (r+i)%4 == 3 { // a dropout
				continue
			}
			updates[i] = make([]float64, dim)
			if err := l.Update(updates[i], r, a.Model()); err != nil {
				t.Fatal(err)
			}
		}
		// Masked inputs: y_i = q_i + sum_{j > i} m_ij - sum_{j < i} m_ji.
		masks := make([][][]uint64, n)
		for i := range masks {
			masks[i] = make([][]uint64, n)
			for j := range masks[i] {
				masks[i][j] = make([]uint64, dim)
				for k := range masks[i][j] {
					masks[i][j][k] = rng.Uint64()
				}
			}
		}
		sum, present := make([]uint64, dim), 0
		for i := n - 1; i >= 0; i-- {
			if updates[i] == nil {
				continue
			}
			present++
			y := make([]uint64, dim)
			if err := fedopt.QuantizeUpdate(*cfg.Quantizer, y, updates[i], cfg.Clip, tau); err != nil {
				t.Fatal(err)
			}
			for j := 0; j < n; j++ {
				if updates[j] == nil || j == i {
					continue
				}
				if j > i {
					secagg.AddRing(y, masks[i][j])
				} else {
					secagg.SubRing(y, masks[j][i])
				}
			}
			secagg.AddRing(sum, y)
		}
		if err := a.Release(updates); err != nil {
			t.Fatal(err)
		}
		if err := b.ReleaseRingSum(sum, present); err != nil {
			t.Fatal(err)
		}
		for k := range a.Model() {
			if math.Float64bits(a.Model()[k]) != math.Float64bits(b.Model()[k]) {
				t.Fatalf("round %d, entry %d: Release %v, ReleaseRingSum %v", r, k, a.Model()[k], b.Model()[k])
			}
		}
	}
	if b.Round() != rounds || shape.Rounds != rounds {
		t.Errorf("server at round %d, want %d", b.Round(), rounds)
	}
}

// One round from the same model: the quantized release differs from the
// plain one by at most step/(n tau) times the sum over present learners of
// the quantization term (the noise is the same), measured exactly.
func TestQuantizedWithinTerm(t *testing.T) {
	const n, tau, dim = 4, 2, 6
	for _, k := range []int{2, 5, 20, 0} {
		q := secagg.Quantizer{ScaleBits: k}
		base := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 0.7, EtaG: 1.3, Clip: 1}
		secure := base
		secure.Quantizer = &q
		shape := fedopt.Shape{Learners: n, Rounds: 1, Tau: tau, Dim: dim}
		rng := rand.New(rand.NewPCG(uint64(k), 1))
		updates := make([][]float64, n)
		for i := 1; i < n; i++ { // learner 0 drops out
			updates[i] = make([]float64, dim)
			for j := range updates[i] {
				updates[i][j] = 0.5 * rng.NormFloat64()
			}
			fedopt.Clip(updates[i], float64(tau)*base.Clip)
		}
		plain, err := fedopt.NewServer(base, shape, nil)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := fedopt.NewServer(secure, shape, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := plain.Release(updates); err != nil {
			t.Fatal(err)
		}
		if err := sec.Release(updates); err != nil {
			t.Fatal(err)
		}
		// ||x_sec - x_plain|| <= step (1/(n tau)) (n - 1) Term, plus float rounding.
		bound := base.ServerStep(tau) / float64(n*tau) * float64(n-1) * q.Term(dim)
		d2 := new(big.Float)
		for j := range dim {
			d := new(big.Float).SetFloat64(sec.Model()[j])
			d.Sub(d, new(big.Float).SetFloat64(plain.Model()[j]))
			d2.Add(d2, d.Mul(d, d))
		}
		dist, _ := d2.Float64()
		if math.Sqrt(dist) > bound*(1+1e-9)+1e-15 {
			t.Errorf("k = %d: ||x_sec - x_plain|| = %v > %v", k, math.Sqrt(dist), bound)
		}
		if k == 2 && !(dist > 0) {
			t.Errorf("k = 2: quantization changed nothing")
		}
	}
}

func TestSecureErrors(t *testing.T) {
	const n, rounds, tau, dim = 3, 2, 2, 3
	cfg, shape, newServer := secureRun(t, n, rounds, tau, dim)
	srv := newServer()
	// A wrong length or count: refused, nothing changes. (A sum beyond
	// what the updates can give is folded, not refused:
	// TestRingSumReleaseIndependentOfEdge.)
	for _, c := range []struct {
		sum     []uint64
		present int
		want    string
	}{
		{make([]uint64, 2), 1, "dimension 2"},
		{make([]uint64, 3), 4, "ring sum of 4 updates"},
		{make([]uint64, 3), -1, "ring sum of -1 updates"},
	} {
		err := srv.ReleaseRingSum(c.sum, c.present)
		if err == nil || !strings.Contains(err.Error(), c.want) || srv.Round() != 0 {
			t.Errorf("ReleaseRingSum(%v, %d) = %v at round %d, want %q", c.sum, c.present, err, srv.Round(), c.want)
		}
	}
	// An update out of range names its learner.
	bad := [][]float64{nil, {0, 0, math.NaN()}, nil}
	if err := srv.Release(bad); err == nil || !strings.Contains(err.Error(), "learner 1") {
		t.Errorf("Release with a NaN update: %v, want an error naming learner 1", err)
	}
	// What a learner of secure aggregation calls refuses out of range.
	if err := fedopt.QuantizeUpdate(*cfg.Quantizer, make([]uint64, 2), []float64{0, 1.01 * tau * cfg.Clip}, cfg.Clip, tau); err == nil || !strings.Contains(err.Error(), "u[1]") {
		t.Errorf("QuantizeUpdate out of range: %v, want an error naming u[1]", err)
	}
	// Without a quantizer: no ring sums.
	plainCfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 1, EtaG: 1}
	plainSrv, err := fedopt.NewServer(plainCfg, shape, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := plainSrv.ReleaseRingSum(make([]uint64, dim), 0); err == nil || !strings.Contains(err.Error(), "Quantizer") {
		t.Errorf("ReleaseRingSum without a quantizer: %v", err)
	}
	// Configurations that do not fit together.
	q := *cfg.Quantizer
	noClip := plainCfg
	noClip.Quantizer = &q
	if err := noClip.Validate(); err == nil || !strings.Contains(err.Error(), "clip") {
		t.Errorf("quantizer without clipping: %v", err)
	}
	noQ := cfg
	noQ.Quantizer = nil
	if err := noQ.Validate(); err == nil || !strings.Contains(err.Error(), "quantizer") {
		t.Errorf("secure privacy record without a quantizer: %v", err)
	}
	noTerm := cfg
	pr := *cfg.Privacy
	pr.QuantizationTerm = 0
	noTerm.Privacy = &pr
	if err := noTerm.Validate(); err == nil || !strings.Contains(err.Error(), "quantization term") {
		t.Errorf("quantizer with a plain privacy record: %v", err)
	}
	wide := cfg
	wq := secagg.Quantizer{ScaleBits: q.ScaleBits + 1}
	wide.Quantizer, wide.Privacy = &wq, nil
	wide.Algorithm = fedopt.NonPrivate
	if _, err := fedopt.NewServer(wide, shape, nil); err == nil || !strings.Contains(err.Error(), "wrap") {
		t.Errorf("quantizer with too many scale bits: %v", err)
	}
}

// TestQuantizeUpdateRefusesNormBeyondBound: QuantizeUpdate is how a learner
// of secure aggregation holds its update to norm tau B_g (the server sees
// only the sum and cannot check it), so an update whose norm exceeds
// UpdateBound is refused, even when every entry is within tau B_g on its
// own. The norms are by hand: (tau B_g, tau B_g) has norm sqrt(2) tau B_g,
// (0, -tau B_g, 0.75 tau B_g, 0) 1.25 tau B_g, (a, a, a, a) with
// a = tau B_g / 2 exactly tau B_g. Before the check the first two were
// quantized as they were, without an error.
func TestQuantizeUpdateRefusesNormBeyondBound(t *testing.T) {
	const n, tau, clip = 10, 2, 1.0
	q, err := secagg.NewQuantizer(n, tau, clip)
	if err != nil {
		t.Fatal(err)
	}
	T := tau * clip
	for _, u := range [][]float64{{T, T}, {0, -T, T * 0.75, 0}} {
		dst := make([]uint64, len(u))
		err := fedopt.QuantizeUpdate(q, dst, u, clip, tau)
		if err == nil || !strings.Contains(err.Error(), "norm") {
			t.Errorf("QuantizeUpdate(%v) with tau B_g = %v: %v, want an error naming the norm", u, T, err)
		}
	}
	// Norm tau B_g exactly: quantized as it is (each entry T/2 2^k, an
	// integer since k >= 1 here).
	u := []float64{T / 2, T / 2, -T / 2, T / 2}
	dst := make([]uint64, len(u))
	if err := fedopt.QuantizeUpdate(q, dst, u, clip, tau); err != nil {
		t.Fatalf("QuantizeUpdate(%v), norm tau B_g exactly: %v", u, err)
	}
	for k, v := range u {
		if want := int64(math.Ldexp(v, q.ScaleBits)); int64(dst[k]) != want {
			t.Errorf("entry %d quantized to %d, want %d", k, int64(dst[k]), want)
		}
	}
}

// TestReleaseRingSumExactReadBack: a ring sum is read back exactly. n = 2,
// tau = 1, B_g = 2 - 2^-52: k = 51 (2 (B_g 2^k + 1/2) = 2^53 exactly),
// n tau = 2, and two updates within UpdateBound (a relative 1e-9 above
// tau B_g) could sum past 2^53. The entries 2^53 and -(2^53 - 1) (53 bits)
// enter the aggregate as 2^53 2^-51 / 2 = 2 and -(2 - 2^-52) exactly (by
// hand), and the model moves by the server step times those. The entries
// +-(2^53 + 1), beyond an exact float64 (float64(2^53 + 1) = 2^53), and
// 2^63 - 1 are folded into [-2^53, 2^53] along the ring (slope 2^54 /
// (2^64 - 2^54) < 1, rounded down): to 2^53 and -2^53 (floor of the slope
// is 0), and 2^53 - floor((2^63 - 1 - 2^53) 2^54 / (2^64 - 2^54)) =
// 2^53 - (2^53 - 1) = 1, the wrap point's neighbour -2^63 going to 0.
// Before, the scale was chosen for sums up to 2^62 (k = 60 here) and
// 2^53 + 1 was accepted and read back as 2^53.
func TestReleaseRingSumExactReadBack(t *testing.T) {
	const n, tau, dim, clip = 2, 1, 3, 2 - 0x1p-52
	q, err := secagg.NewQuantizer(n, tau, clip)
	if err != nil {
		t.Fatal(err)
	}
	if q.ScaleBits != 51 {
		t.Fatalf("NewQuantizer(2, 1, 2 - 2^-52).ScaleBits = %d, want 51", q.ScaleBits)
	}
	cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 1, EtaG: 1, Clip: clip, Quantizer: &q}
	newServer := func() *fedopt.Server {
		srv, err := fedopt.NewServer(cfg, fedopt.Shape{Learners: n, Rounds: 2, Tau: tau, Dim: dim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	step := cfg.ServerStep(tau)
	for _, c := range []struct {
		e, folded int64
	}{
		{1<<53 + 1, 1 << 53},
		{-(1<<53 + 1), -(1 << 53)},
		{math.MaxInt64, 1},
		{math.MinInt64, 0},
	} {
		srv := newServer()
		if err := srv.ReleaseRingSum([]uint64{0, uint64(c.e), 0}, n); err != nil {
			t.Fatalf("ReleaseRingSum with entry %d: %v", c.e, err)
		}
		if got, want := srv.Model()[1], -step*math.Ldexp(float64(c.folded), -52); got != want {
			t.Errorf("ReleaseRingSum with entry %d: model entry 1 = %v, want %v (the entry folded to %d)", c.e, got, want, c.folded)
		}
	}
	srv := newServer()
	mneg := -(int64(1)<<53 - 1)
	if err := srv.ReleaseRingSum([]uint64{1 << 53, uint64(mneg), 1}, n); err != nil {
		t.Fatal(err)
	}
	want := []float64{-step * 2, step * (2 - 0x1p-52), -step * 0x1p-52}
	for k, w := range want {
		if got := srv.Model()[k]; got != w {
			t.Errorf("model entry %d = %v, want %v", k, got, w)
		}
	}
}

// TestDivisionRoundingBound checks, against math/big, the bound the
// calibration puts on the server's one rounding between the read-back sum
// and the noise (plan.Plan.EffectiveClip's 4 m term / c): the direction
// y_k = fl(fl(1/N) x_k), x_k = S_k 2^-k, N = n tau, is within 2^(1-k) / N
// of x_k / N for every accepted sum entry S_k, |S_k| <= 2^53; so over d
// coordinates within sqrt(d) 2^(1-k) / N = 4 term / N. The entries are the
// largest the server accepts (present updates at UpdateBound, or 2^53),
// +-2^53, 53-bit odd integers and random ones; n tau is not a power of two
// (1/N rounds). The step tau is a power of two and x^0 = 0, so the model
// is -tau y exactly. (A check of the newly stated bound, not of a change:
// it held before for entries up to 2^53, which were not all that was
// accepted.)
func TestDivisionRoundingBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		n, tau int
		clip   float64
	}{{3, 1, 1}, {5, 2, 0.1}, {7, 4, 3.3}, {255, 2, 1e-3}, {10, 1, 2 - 0x1p-52}} {
		q, err := secagg.NewQuantizer(c.n, c.tau, c.clip)
		if err != nil {
			t.Fatal(err)
		}
		N := int64(c.n * c.tau)
		most := new(big.Float).SetPrec(300).SetFloat64(fedopt.UpdateBound(c.clip, c.tau))
		most.SetMantExp(most, q.ScaleBits)
		most.Add(most, big.NewFloat(1))
		most.Mul(most, new(big.Float).SetInt64(int64(c.n)))
		top, _ := most.Int64()
		top = min(top, 1<<53)
		entries := []int64{top, -top, 1 << 53, -(1 << 53), 1<<53 - 1, -(1<<53 - 1), 1<<52 + 3, 1, -1, 0}
		for range 40 {
			entries = append(entries, rng.Int64N(2*top+1)-top)
		}
		var kept []int64
		for _, e := range entries {
			if e <= top && e >= -top {
				kept = append(kept, e)
			}
		}
		sum := make([]uint64, len(kept))
		for i, e := range kept {
			sum[i] = uint64(e)
		}
		cfg := fedopt.Config{Algorithm: fedopt.NonPrivate, Eta: 1, EtaG: 1, Clip: c.clip, Quantizer: &q}
		srv, err := fedopt.NewServer(cfg, fedopt.Shape{Learners: c.n, Rounds: 1, Tau: c.tau, Dim: len(kept)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.ReleaseRingSum(sum, c.n); err != nil {
			t.Fatalf("n = %d, tau = %d: %v", c.n, c.tau, err)
		}
		// Bound 2^(1-k) / N, and the error |y_k - S_k 2^-k / N|, as rationals.
		bound := new(big.Rat).SetFrac(big.NewInt(2), big.NewInt(N))
		pk := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(abs(q.ScaleBits))))
		if q.ScaleBits >= 0 {
			bound.Quo(bound, pk)
		} else {
			bound.Mul(bound, pk)
		}
		for i, e := range kept {
			y := new(big.Rat).SetFloat64(-srv.Model()[i] / float64(c.tau)) // exact: tau a power of two
			exact := new(big.Rat).SetFrac(big.NewInt(e), big.NewInt(N))
			if q.ScaleBits >= 0 {
				exact.Quo(exact, pk)
			} else {
				exact.Mul(exact, pk)
			}
			diff := new(big.Rat).Sub(y, exact)
			if diff.Abs(diff).Cmp(bound) > 0 {
				d, _ := diff.Float64()
				b, _ := bound.Float64()
				t.Errorf("n = %d, tau = %d, k = %d, S = %d: |y - S 2^-k / N| = %g > 2^(1-k) / N = %g", c.n, c.tau, q.ScaleBits, e, d, b)
			}
		}
	}
}

func abs(k int) int { return max(k, -k) }
