package secagg

import (
	"crypto/ecdh"
	"math"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/internal/testutil"
)

// TestServerViewUncorrelated records everything the aggregator receives,
// reconstructs what it can (b_u of the survivors, s_v^SK of the learner that
// dropped before its masked input), removes every mask it can from each
// y_u, and checks that nothing correlates with any single learner's input,
// while the released sum does.
//
// Under the null (a vector independent of x), the sample correlation over
// d = 4096 entries is close to N(0, 1/d), so |r| >= 6/sqrt(d) has
// probability about 2e-9 per comparison (two-sided normal tail at 6 sigma);
// the test makes fewer than 100 comparisons, a false failure about once in
// 5e6 runs. The power check: the sum of 4 independent inputs of equal
// variance correlates with each at r = 1/2, far past the threshold.
func TestServerViewUncorrelated(t *testing.T) {
	const n, th, d = 5, 3, 4096
	ctx := testContext(n, th, d)
	rng := testRand(99)
	in := make([][]uint64, n)
	for u := range in {
		in[u] = make([]uint64, d)
		for i := range in[u] {
			in[u][i] = uint64(int64(rng.Uint64()%(1<<21)) - 1<<20)
		}
	}
	// Learner 4 drops before its masked input (its s_4^SK is revealed),
	// learner 3 after it (counted, its b_3 reconstructed).
	drop := DropPlan{4: PhaseMasked, 3: PhaseConsistency}
	var advs [n]Advertise
	ys := map[int][]uint64{}
	var unmasks []Unmask
	hook := func(e Event) {
		switch m := e.Message.(type) {
		case Advertise:
			advs[e.From] = m
		case []uint64:
			ys[e.From] = slices.Clone(m)
		case Unmask:
			unmasks = append(unmasks, m)
		}
	}
	sum, u3, err := Run(ctx, in, drop, rng, hook)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u3, []int{0, 1, 2, 3}) || len(ys) != 4 || len(unmasks) != 3 {
		t.Fatalf("U3 %v, %d masked inputs, %d unmasks: want U3 = 0..3, 4, 3", u3, len(ys), len(unmasks))
	}

	// What the server reconstructs from the phase-4 shares it received.
	secretOf := func(v int, self bool) []byte {
		var xs []byte
		var shares [][]byte
		for _, m := range unmasks {
			list := m.Secret
			if self {
				list = m.Self
			}
			for _, k := range list {
				if k.Of == v {
					xs, shares = append(xs, byte(m.From+1)), append(shares, k.Share)
				}
			}
		}
		s, err := combine(xs, shares)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	enc := encodeContext(ctx)
	s4, err := ecdh.X25519().NewPrivateKey(secretOf(4, false))
	if err != nil {
		t.Fatal(err)
	}
	views := map[string][]uint64{}
	for _, u := range u3 {
		y := ys[u]
		views["y_"+string(rune('0'+u))] = y
		z := slices.Clone(y)
		addMask(z, selfKey(secretOf(u, true), enc, u), true)
		views["y_"+string(rune('0'+u))+" - PRG(b)"] = slices.Clone(z)
		k, err := maskKey(s4, advs[u].SPub, enc, u, 4)
		if err != nil {
			t.Fatal(err)
		}
		addMask(z, k, 4 > u)
		views["y_"+string(rune('0'+u))+" - PRG(b) - PRG(s_u4)"] = z
	}
	// The views are what the server can compute: with every removable mask
	// gone, the masks left among U3 cancel in the sum of the views.
	total := make([]uint64, d)
	for _, u := range u3 {
		for i, v := range views["y_"+string(rune('0'+u))+" - PRG(b) - PRG(s_u4)"] {
			total[i] += v
		}
	}
	if !slices.Equal(total, plainSum(in, u3)) {
		t.Fatal("the views with the removable masks gone do not add up to the sum: the test removes the wrong masks")
	}
	bound := 6 / math.Sqrt(d)
	for name, v := range views {
		for x := range in {
			if r := testutil.RingPearson(v, in[x]); math.Abs(r) >= bound {
				t.Errorf("the server's %s correlates with x_%d: r = %.4f, bound %.4f", name, x, r, bound)
			}
		}
	}
	if !slices.Equal(sum, plainSum(in, u3)) {
		t.Fatal("the sum differs from the plain sum")
	}
	for _, u := range u3 {
		if r := testutil.RingPearson(sum, in[u]); r < bound {
			t.Errorf("power: the sum correlates with x_%d at only r = %.4f, want >= %.4f", u, r, bound)
		}
	}
}
