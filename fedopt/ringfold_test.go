package fedopt_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpmf/dpmf/fedopt"
)

// Under secure aggregation the server sees only the ring sum of the
// quantized updates, and a malicious learner may put any value of the
// ring in it. Whether and what the server releases must then depend on
// the honest learners' updates only as much as the calibration allows:
// for two neighbouring honest sums S and S' (one honest learner's update
// changed within the clipping bound) and any malicious input m, the
// released models differ by at most step/(n tau) ||S - S'|| 2^-k (the
// noise is the same), and both are released. ReleaseRingSum refused an
// entry beyond what present clipped updates can give: with m at that edge
// (or next to the ring's wrap point) the round was released for S and
// refused for S' (checked: it failed so before the fold), so a malicious
// learner learned, free of noise, whether an honest entry lay above a
// threshold of its choice, round after round. The bound here is the
// closed form of the sensitivity (the fold is 1-Lipschitz in the ring's
// circular distance), the difference measured exactly.
func TestRingSumReleaseIndependentOfEdge(t *testing.T) {
	const n, tau, dim = 3, 2, 4
	cfg, shape, newServer := secureRun(t, n, 1, tau, dim)
	q := *cfg.Quantizer
	bound := float64(tau) * cfg.Clip
	quantize := func(u []float64) []uint64 {
		t.Helper()
		out := make([]uint64, dim)
		if err := fedopt.QuantizeUpdate(q, out, u, cfg.Clip, tau); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Honest learners 0 and 1; learner 1's update is u or its neighbour
	// u', both of norm tau B_g.
	u0 := quantize([]float64{0.3 * bound, -0.2 * bound, 0.1 * bound, 0})
	u1 := quantize([]float64{bound, 0, 0, 0})
	u1n := quantize([]float64{0, bound, 0, 0})
	honest := func(a, b []uint64) []uint64 {
		s := make([]uint64, dim)
		for j := range s {
			s[j] = a[j] + b[j]
		}
		return s
	}
	S, Sn := honest(u0, u1), honest(u0, u1n)
	var delta2 float64
	for j := range S {
		d := float64(int64(S[j]) - int64(Sn[j]))
		delta2 += d * d
	}
	sens := cfg.ServerStep(tau) / float64(n*tau) * math.Ldexp(math.Sqrt(delta2), -q.ScaleBits)
	// What present = 3 clipped updates can give, as ReleaseRingSum bounds it.
	most := uint64(float64(n) * (math.Ldexp(fedopt.UpdateBound(cfg.Clip, tau), q.ScaleBits) + 1))
	for _, m := range []struct {
		name string
		in   func(j int) uint64 // learner 2's input at entry j, given S
	}{
		{"at the top edge of the range", func(j int) uint64 { return most - S[j] }},
		{"at the bottom edge of the range", func(j int) uint64 { return -most - S[j] }},
		{"next to the wrap point", func(j int) uint64 { return 1<<63 - 1 - S[j] }},
		{"just past the wrap point", func(j int) uint64 { return 1<<63 - S[j] }},
		{"nothing", func(int) uint64 { return 0 }},
	} {
		xs := make([][]float64, 2)
		for c, s := range [][]uint64{S, Sn} {
			sum := make([]uint64, dim)
			for j := range sum {
				sum[j] = s[j] + m.in(j)
			}
			srv := newServer()
			if err := srv.ReleaseRingSum(sum, n); err != nil {
				t.Fatalf("learner 2's input %s, honest sum %d: %v (the outcome depends on the honest updates)", m.name, c, err)
			}
			xs[c] = srv.Model()
			for k, v := range xs[c] {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("learner 2's input %s: x[%d] = %v", m.name, k, v)
				}
			}
		}
		d2 := new(big.Float)
		for j := range dim {
			d := new(big.Float).SetFloat64(xs[0][j])
			d.Sub(d, new(big.Float).SetFloat64(xs[1][j]))
			d2.Add(d2, d.Mul(d, d))
		}
		dist, _ := d2.Float64()
		dist = math.Sqrt(dist)
		t.Logf("learner 2's input %s: ||x - x'|| = %.6g, sensitivity bound %.6g", m.name, dist, sens)
		if dist > sens*(1+1e-9) {
			t.Errorf("learner 2's input %s: ||x - x'|| = %v, beyond the sensitivity %v", m.name, dist, sens)
		}
	}
	// No update present: whatever the sum holds, the release is that of
	// a zero sum.
	zero, forged := newServer(), newServer()
	if err := zero.ReleaseRingSum(make([]uint64, dim), 0); err != nil {
		t.Fatal(err)
	}
	if err := forged.ReleaseRingSum([]uint64{1, 1 << 62, 1 << 63, math.MaxUint64}, 0); err != nil {
		t.Fatal(err)
	}
	for j := range dim {
		if zero.Model()[j] != forged.Model()[j] {
			t.Errorf("present 0: x[%d] = %v, want %v (a zero sum's)", j, forged.Model()[j], zero.Model()[j])
		}
	}
	if shape.Dim != dim {
		t.Fatal("secureRun's shape")
	}
}
