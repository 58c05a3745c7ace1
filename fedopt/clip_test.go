package fedopt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		g     []float64
		bound float64
		want  []float64
	}{
		{[]float64{3, 4}, 1, []float64{0.6, 0.8}},
		{[]float64{3, 4}, 5, []float64{3, 4}},
		{[]float64{3, 4}, 10, []float64{3, 4}},
		{[]float64{0, 0}, 1, []float64{0, 0}},
		{[]float64{3e300, 4e300}, 1, []float64{0.6, 0.8}}, // sum of squares overflows
	} {
		g := append([]float64(nil), c.g...)
		norm := Clip(g, c.bound)
		if want := math.Hypot(c.g[0], c.g[1]); math.Abs(norm-want) > 1e-15*want {
			t.Errorf("Clip(%v) returned norm %v, want %v", c.g, norm, want)
		}
		for k := range g {
			if math.Abs(g[k]-c.want[k]) > 1e-15 {
				t.Errorf("Clip(%v, %v) = %v, want %v", c.g, c.bound, g, c.want)
				break
			}
		}
	}
}

// Clip never returns a vector longer than the bound and never reverses it:
// infinite entries give the direction of their signs, NaN gives zero, and a
// negative bound is refused with a panic (see Clip's doc).
func TestClipEdges(t *testing.T) {
	inf := math.Inf(1)
	s2 := 1 / math.Sqrt2
	for _, c := range []struct {
		g     []float64
		bound float64
		norm  float64
		want  []float64
	}{
		{[]float64{3, inf}, 1, inf, []float64{0, 1}},
		{[]float64{inf, -inf, 5}, 2, inf, []float64{2 * s2, -2 * s2, 0}},
		{[]float64{-inf}, 0.5, inf, []float64{-0.5}},
		{[]float64{1, math.NaN()}, 1, math.NaN(), []float64{0, 0}},
		{[]float64{3, 4}, 0, 5, []float64{0, 0}},
		{[]float64{3, 4}, inf, 5, []float64{3, 4}},
		{[]float64{3e-170, 4e-170}, 1e-170, 5e-170, []float64{0.6e-170, 0.8e-170}}, // squares underflow
		{[]float64{1e308, 1e308}, 1, 1e308 * math.Sqrt2, []float64{s2, s2}},
	} {
		g := append([]float64(nil), c.g...)
		norm := Clip(g, c.bound)
		if !(norm == c.norm || math.Abs(norm-c.norm) <= 1e-15*c.norm || math.IsNaN(norm) && math.IsNaN(c.norm)) {
			t.Errorf("Clip(%v, %v) returned norm %v, want %v", c.g, c.bound, norm, c.norm)
		}
		for k := range g {
			if !(g[k] == c.want[k] || math.Abs(g[k]-c.want[k]) <= 1e-15*math.Abs(c.want[k])) {
				t.Errorf("Clip(%v, %v) = %v, want %v", c.g, c.bound, g, c.want)
				break
			}
		}
	}
	for _, b := range []float64{-1, math.NaN()} {
		g := []float64{3, 4}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Clip with bound %v did not panic", b)
				}
			}()
			Clip(g, b)
		}()
		if g[0] != 3 || g[1] != 4 {
			t.Errorf("Clip with bound %v changed g to %v", b, g)
		}
	}
}

// An update whose finite entries have squares that overflow is judged by
// its true norm (math.Hypot, an independent computation), not by +Inf: with
// B_g = 1e300 and tau = 2, (1e300, 1e300) has norm sqrt(2) 1e300 <= 2e300
// and is accepted, (3e300, 4e300) has norm 5e300 and is refused with that
// finite norm in the message.
func TestCheckUpdateHugeClip(t *testing.T) {
	cfg := Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1e300}
	srv, err := NewServer(cfg, Shape{Learners: 2, Rounds: 1, Tau: 2, Dim: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CheckUpdate([]float64{1e300, 1e300}); err != nil {
		t.Errorf("update of norm %v: %v, want accepted (bound 2e300)", math.Hypot(1e300, 1e300), err)
	}
	err = srv.CheckUpdate([]float64{3e300, 4e300})
	if want := "norm 5e+300"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("update (3e300, 4e300): %v, want an error with %q", err, want)
	}
}

// TestClipNormWithinRounding: the clipped vector's norm, computed in
// 256-bit arithmetic, exceeds the bound by at most a relative
// (d + 6) 2^-53 (the rounding of the norm, of bound/norm and of the
// products; a forward error bound by hand), for d = 1 to 64 entries of
// magnitudes from 1e-300 to 1e300, so through the overflow and underflow
// paths of the norm; and a vector within the bound is returned unchanged.
func TestClipNormWithinRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		d := 1 + rng.IntN(64)
		g := make([]float64, d)
		scale := math.Pow(10, float64(rng.IntN(601)-300))
		for k := range g {
			g[k] = rng.NormFloat64() * scale
		}
		orig := append([]float64(nil), g...)
		bound := rng.Float64() * 2 * scale * math.Sqrt(float64(d))
		Clip(g, bound)
		norm, before := exactNorm(g), exactNorm(orig)
		limit := new(big.Float).SetPrec(256).Mul(big.NewFloat(bound), big.NewFloat(1+float64(d+6)*0x1p-53))
		if norm.Cmp(limit) > 0 {
			t.Fatalf("Clip(%v, %v): norm %v, want at most %v", orig, bound, norm, limit)
		}
		if before.Cmp(new(big.Float).SetFloat64(bound)) < 0 && !slices.Equal(g, orig) {
			t.Fatalf("Clip(%v, %v) = %v, want it unchanged (norm %v)", orig, bound, g, before)
		}
	}
}

// TestClipExtremeRatio: a tiny bound and a huge gradient, whose ratio
// bound/norm is subnormal. With B_g = 6.3e-16 and g = (1.7e308) the ratio
// 3.7e-324 rounded to the subnormal 4.9e-324, and Clip returned 8.4e-16, a
// third above the bound; with B_g = 1e-300 it rounded to 0 and the
// gradient lost its direction. The result must be bound g / ||g|| to
// within (d + 6) 2^-53 of the bound (the direction kept), the norm in
// 256-bit arithmetic.
func TestClipExtremeRatio(t *testing.T) {
	for _, c := range []struct {
		g     []float64
		bound float64
	}{
		{[]float64{1.7e308}, 6.3e-16},
		{[]float64{1.7e308}, 1e-15},
		{[]float64{-1.7e308}, 1e-300},
		{[]float64{1e308, -1e308, 3e307}, 0x1p-1022},
		{[]float64{1e308, 1e-300, -5e-324}, 1e-17},
	} {
		g := append([]float64(nil), c.g...)
		Clip(g, c.bound)
		d := len(g)
		norm := exactNorm(g)
		limit := new(big.Float).SetPrec(256).Mul(big.NewFloat(c.bound), big.NewFloat(1+float64(d+6)*0x1p-53))
		low := new(big.Float).SetPrec(256).Mul(big.NewFloat(c.bound), big.NewFloat(1-float64(d+6)*0x1p-53))
		if norm.Cmp(limit) > 0 || norm.Cmp(low) < 0 {
			t.Errorf("Clip(%v, %v) = %v of norm %v, want norm %v to within a relative %g", c.g, c.bound, g, norm, c.bound, float64(d+6)*0x1p-53)
		}
		for k := range g {
			if math.Signbit(g[k]) != math.Signbit(c.g[k]) {
				t.Errorf("Clip(%v, %v) = %v: entry %d changed sign", c.g, c.bound, g, k)
			}
		}
	}
}

// TestCheckUpdateTinyClip: with a clipping bound near 1e-170 the squares
// of an update's entries underflow, and the server's norm used to be
// sqrt(0) = 0: (1e-163, 1e-163, 1e-163, 1e-163), of norm 2e-163 (by hand),
// ten million times tau B_g, was accepted, so a learner that does not clip
// raised the sensitivity without bound. The server's decision must be the
// exact norm's (256-bit arithmetic) against tau B_g, for seeded random
// updates of magnitudes 1e-320 to 1e300 and bounds near their norms,
// except within the margin of rounding at the bound.
func TestCheckUpdateTinyClip(t *testing.T) {
	cfg := Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1e-170}
	srv, err := NewServer(cfg, Shape{Learners: 2, Rounds: 1, Tau: 1, Dim: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CheckUpdate([]float64{1e-163, 1e-163, 1e-163, 1e-163}); err == nil {
		t.Errorf("update of norm 2e-163 with tau B_g = 1e-170: accepted, want refused")
	}
	if err := srv.CheckUpdate([]float64{3e-171, 4e-171, 0, 0}); err != nil {
		t.Errorf("update of norm 5e-171 with tau B_g = 1e-170: %v, want accepted", err)
	}

	rng := rand.New(rand.NewPCG(11, 12))
	for range 5000 {
		d := 1 + rng.IntN(64)
		tau := 1 + rng.IntN(4)
		u := make([]float64, d)
		scale := math.Pow(10, float64(rng.IntN(621)-320))
		for k := range u {
			u[k] = rng.NormFloat64() * scale
		}
		exact := exactNorm(u)
		en, _ := exact.Float64()
		clip := en / float64(tau) * math.Exp(rng.Float64()*0.2-0.1)
		if !(clip > 0) || math.IsInf(clip, 0) {
			continue
		}
		cfg.Clip = clip
		srv, err := NewServer(cfg, Shape{Learners: 1, Rounds: 1, Tau: tau, Dim: d}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Within this band of tau B_g the decision may go either way.
		tb := new(big.Float).SetPrec(256).Mul(big.NewFloat(float64(tau)), big.NewFloat(clip))
		lo := new(big.Float).SetPrec(256).Mul(tb, big.NewFloat(1-1e-12))
		hi := new(big.Float).SetPrec(256).Mul(tb, big.NewFloat((1+1e-9)*(1+1e-12)))
		err = srv.CheckUpdate(u)
		switch {
		case exact.Cmp(lo) < 0 && err != nil:
			t.Fatalf("update %v of norm %v, tau B_g = %d*%v: %v, want accepted", u, exact, tau, clip, err)
		case exact.Cmp(hi) > 0 && err == nil:
			t.Fatalf("update %v of norm %v, tau B_g = %d*%v: accepted, want refused", u, exact, tau, clip)
		}
	}
}

// TestCheckUpdateBoundOverflow: where tau B_g overflows float64 (B_g =
// 1e300, tau = 2^30: 1.07e309), UpdateBound was +Inf and the server
// accepted an update whose norm overflows too: 1000 entries of 1.7e308,
// norm sqrt(1000) 1.7e308 = 5.4e309 (by hand), five times tau B_g. An
// update of finite norm is within tau B_g and still accepted.
func TestCheckUpdateBoundOverflow(t *testing.T) {
	cfg := Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1e300}
	const d = 1000
	srv, err := NewServer(cfg, Shape{Learners: 2, Rounds: 1, Tau: 1 << 30, Dim: d}, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := make([]float64, d)
	for k := range u {
		u[k] = 1.7e308
	}
	if err := srv.CheckUpdate(u); err == nil {
		t.Errorf("update of norm 5.4e309 with tau B_g = 1.07e309: accepted, want refused")
	} else if want := "1073741824 x 1e+300"; !strings.Contains(err.Error(), want) {
		t.Errorf("update of norm 5.4e309 with tau B_g = 1.07e309: %v, want the bound as %q", err, want)
	}
	clear(u)
	u[0], u[1] = 1e308, -1e308
	if err := srv.CheckUpdate(u); err != nil {
		t.Errorf("update of norm 1.41e308 with tau B_g = 1.07e309: %v, want accepted", err)
	}
	if b := UpdateBound(1e300, 1<<30); math.IsInf(b, 0) {
		t.Errorf("UpdateBound(1e300, 2^30) = %v, want finite", b)
	}
}

// TestClipExactBound: Clip's result has norm at most the bound in exact
// arithmetic (squaresCmp, 4400-bit sums independent of the package's norm
// checks), and an input already within the bound exactly comes back bit
// for bit. Before Clip checked its result, (1, 1, 1) clipped to 1 became
// three entries of fl(1/fl(sqrt 3)) = 0.5773502691896258, of norm
// 1 + 1.3e-16 (and (+Inf, -Inf, +Inf, 2) the same up to signs). Seeded adversarial inputs: random Gaussian vectors of
// 1 to 64 entries with magnitudes 1e-300 to 1e300 (and mixed 1e-300..1e300
// within one vector), single nonzero entries among zeros, d = 10^3 and
// 10^5, bounds at the rounded norm and +-1 and 2 ulps of it, at the
// norm's half (always scaled) and at random; infinite entries, and bounds
// whose ratio to the norm is subnormal.
func TestClipExactBound(t *testing.T) {
	check := func(orig []float64, bound float64) {
		t.Helper()
		g := slices.Clone(orig)
		Clip(g, bound)
		finite := !slices.ContainsFunc(orig, func(v float64) bool { return math.IsInf(v, 0) })
		if finite && squaresCmp(orig, 1, bound) <= 0 {
			for k := range g {
				if math.Float64bits(g[k]) != math.Float64bits(orig[k]) {
					t.Fatalf("Clip(%v, %v) = %v, want it unchanged (norm within the bound)", orig, bound, g)
				}
			}
			return
		}
		if squaresCmp(g, 1, bound) > 0 {
			t.Fatalf("Clip(%v, %v) = %v of norm %v, want at most %v", orig, bound, g, exactNorm(g), bound)
		}
		for k := range g {
			if g[k] != 0 && math.Signbit(g[k]) != math.Signbit(orig[k]) {
				t.Fatalf("Clip(%v, %v) = %v: entry %d changed sign", orig, bound, g, k)
			}
		}
	}
	check([]float64{1, 1, 1}, 1)
	check([]float64{math.Inf(1), math.Inf(-1), math.Inf(1), 2}, 1)
	check([]float64{0, 0, -3, 0}, 2)
	check([]float64{0, 3, 0}, 3)
	check([]float64{1.7e308, -1.7e308, 1e300}, 1e-300)
	rng := rand.New(rand.NewPCG(31, 32))
	bounds := func(g []float64) []float64 {
		n, _ := exactNorm(g).Float64()
		return []float64{n, math.Nextafter(n, 0), math.Nextafter(n, math.Inf(1)),
			math.Nextafter(math.Nextafter(n, 0), 0), math.Nextafter(math.Nextafter(n, math.Inf(1)), math.Inf(1)),
			n / 2, n * rng.Float64() * 2, n * 0x1p-1040}
	}
	for i := range 3000 {
		d := 1 + rng.IntN(64)
		g := make([]float64, d)
		scale := math.Pow(10, float64(rng.IntN(601)-300))
		for k := range g {
			switch {
			case i%5 == 1:
				g[k] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(601)-300))
			case i%5 == 2 && k != d/2:
				g[k] = 0
			default:
				g[k] = rng.NormFloat64() * scale
			}
		}
		if i%7 == 3 {
			g[rng.IntN(d)] = math.Inf(1 - 2*rng.IntN(2))
			check(g, math.Abs(rng.NormFloat64())*scale)
			continue
		}
		for _, b := range bounds(g) {
			if b > 0 && !math.IsInf(b, 0) {
				check(g, b)
			}
		}
	}
	n := 3
	if testing.Short() {
		n = 1
	}
	for _, d := range []int{1000, 100000} {
		for range n {
			g := make([]float64, d)
			for k := range g {
				g[k] = rng.NormFloat64()
			}
			for _, b := range bounds(g)[:6] {
				check(g, b)
			}
		}
	}
}

// TestClipNormOverflow: finite entries whose norm exceeds MaxFloat64,
// (1.7e308, -1.7e308) of norm sqrt(2) 1.7e308 = 2.4e308 (by hand): the
// norm rounded to +Inf and Clip divided by it, zeroing the gradient
// instead of clipping it along its direction. The result must be
// bound (1, -1)/sqrt(2) to within a relative 2^-50 entry by entry (by
// hand), of exact norm at most the bound (squaresCmp), and Clip returns
// +Inf, the norm rounded.
func TestClipNormOverflow(t *testing.T) {
	for _, c := range []struct {
		g     []float64
		bound float64
		want  []float64
	}{
		{[]float64{1.7e308, -1.7e308}, 1, []float64{1 / math.Sqrt2, -1 / math.Sqrt2}},
		{[]float64{1.7e308, -1.7e308, 0}, 1e-300, []float64{1e-300 / math.Sqrt2, -1e-300 / math.Sqrt2, 0}},
		{[]float64{1e308, 1e308, 1e308, 1e308}, 3, []float64{1.5, 1.5, 1.5, 1.5}},
	} {
		g := slices.Clone(c.g)
		if norm := Clip(g, c.bound); !math.IsInf(norm, 1) {
			t.Errorf("Clip(%v, %v) returned norm %v, want +Inf", c.g, c.bound, norm)
		}
		for k := range g {
			if math.Abs(g[k]-c.want[k]) > 0x1p-50*math.Abs(c.want[k]) {
				t.Errorf("Clip(%v, %v) = %v, want %v", c.g, c.bound, g, c.want)
				break
			}
		}
		if squaresCmp(g, 1, c.bound) > 0 {
			t.Errorf("Clip(%v, %v) = %v of norm %v, want at most %v", c.g, c.bound, g, exactNorm(g), c.bound)
		}
	}
}
