package fedopt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpmf/dpmf/secagg"
)

// squaresCmp compares sum_k u_k^2 with (tau clip)^2 exactly: 4400 bits
// hold every square of a float64 (exponents -2148 to 2048, 106 bits) and
// the sum of up to 2^100 of them without rounding.
func squaresCmp(u []float64, tau int, clip float64) int {
	const prec = 4400
	ss := new(big.Float).SetPrec(prec)
	for _, v := range u {
		x := new(big.Float).SetPrec(prec).SetFloat64(v)
		ss.Add(ss, x.Mul(x, x))
	}
	b := new(big.Float).SetPrec(prec).SetInt64(int64(tau))
	b.Mul(b, new(big.Float).SetPrec(prec).SetFloat64(clip))
	return ss.Cmp(b.Mul(b, b))
}

// withNorm returns a seeded random vector of d entries of magnitude near
// scale, scaled by float64 arithmetic to norm about target.
func withNorm(rng *rand.Rand, d int, scale, target float64) []float64 {
	u := make([]float64, d)
	for k := range u {
		u[k] = rng.NormFloat64() * scale
	}
	n, _ := exactNorm(u).Float64()
	for k := range u {
		u[k] = u[k] / n * target
	}
	return u
}

// TestReleaseHoldsUpdateToBound: the server accepts an update of norm up
// to tau B_g (1 + 1e-9) (UpdateBound, slack for the rounding of honest
// sums), while the calibration uses tau B_g exactly; a learner that does
// not clip used to raise the sensitivity by that relative 1e-9. An update
// of norm tau B_g (1 + 5e-10) is accepted, and its contribution to the
// aggregate must have norm at most tau B_g in exact arithmetic (squaresCmp);
// it stays within 2e-9 of the update entry by entry (a scaling, not a
// replacement), and the learner's slice is not written. Seeded random
// updates of 1 to 64 entries of magnitudes 1e-300 to 1e300 (bounds down to
// subnormal, and tau B_g past float64), tau a power of two and one learner,
// so that the aggregate (1/tau) times the contribution is exact and the
// contribution is read back as tau times it.
func TestReleaseHoldsUpdateToBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	scaled, tiny := 0, 0
	for i := range 3000 {
		d := 1 + rng.IntN(64)
		tau := 1 << rng.IntN(4)
		scale := math.Pow(10, float64(rng.IntN(601)-300))
		clip := scale * math.Sqrt(float64(d)) / float64(tau)
		if i%50 == 0 {
			// A subnormal bound: the grid of subnormal entries (2^-1074)
			// is too coarse for a norm within 1e-9 above it, so fitNorm
			// itself, from 1e-3 above it.
			clip = math.Ldexp(1+rng.Float64(), -1066)
			u := withNorm(rng, d, 1, float64(tau)*clip*1.001)
			if squaresCmp(u, tau, clip) <= 0 {
				continue
			}
			w := make([]float64, d)
			if !fitNorm(w, u, clip, tau) || squaresCmp(w, tau, clip) > 0 {
				t.Fatalf("fitNorm(%v, %v, %d) = %v, want norm at most tau B_g", u, clip, tau, w)
			}
			tiny++
			continue
		}
		T := float64(tau) * clip
		u := withNorm(rng, d, scale, T*(1+5e-10))
		if squaresCmp(u, tau, clip) <= 0 {
			continue // rounded to within the bound: nothing to hold
		}
		srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: clip}, Shape{Learners: 1, Rounds: 1, Tau: tau, Dim: d}, nil)
		if err != nil {
			t.Fatal(err)
		}
		orig := slices.Clone(u)
		if err := srv.Release([][]float64{u}); err != nil {
			t.Fatalf("update of norm %v, tau B_g = %d*%v: %v, want accepted", exactNorm(orig), tau, clip, err)
		}
		if !slices.Equal(u, orig) {
			t.Fatalf("Release wrote the learner's update")
		}
		w := make([]float64, d)
		for k, v := range srv.dir {
			w[k] = v * float64(tau)
		}
		if squaresCmp(w, tau, clip) > 0 {
			t.Fatalf("update %v of norm %v, tau B_g = %d*%v: contribution %v of norm %v, want at most tau B_g", orig, exactNorm(orig), tau, clip, w, exactNorm(w))
		}
		for k := range w {
			if math.Abs(w[k]-orig[k]) > 2e-9*math.Abs(orig[k])+0x1p-1070 {
				t.Fatalf("contribution %v of update %v: entry %d moved by more than 2e-9", w, orig, k)
			}
		}
		scaled++
	}
	if scaled < 2000 || tiny < 30 {
		t.Errorf("%d updates above tau B_g checked and %d with a subnormal bound, want at least 2000 and 30", scaled, tiny)
	}

	// tau B_g beyond float64 (B_g = 1e300, tau = 2^30): every finite update
	// is within it, and enters as it is.
	srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: 1e300}, Shape{Learners: 1, Rounds: 1, Tau: 1, Dim: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Release([][]float64{{math.MaxFloat64 / 2, math.MaxFloat64 / 2}}); err == nil {
		t.Fatalf("update of norm 1.3e308 with tau B_g = 1e300: accepted, want refused")
	}
	if fitNorm(make([]float64, 2), []float64{math.MaxFloat64 / 2, math.MaxFloat64 / 2}, 1e300, 1<<30) {
		t.Errorf("update of norm 1.3e308 with tau B_g = 1.07e309: scaled, want untouched")
	}
}

// TestReleaseKeepsHonestUpdates: updates whose exact norm is at most
// tau B_g enter the aggregate bit for bit: the server's direction equals
// the test's own sum of them in learner order, scaled by 1/(n tau). The
// updates are clipped random vectors (kept where squaresCmp says they are
// within), vectors of norm exactly tau B_g ((tau B_g, 0, ...), (3, 4) tau
// B_g / 5 with B_g = 5) and vectors well inside.
func TestReleaseKeepsHonestUpdates(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const n, tau, d = 3, 2, 5
	for c := range 500 {
		clip := math.Pow(10, float64(rng.IntN(41)-20))
		if c%2 == 0 {
			clip = 5
		}
		T := tau * clip
		updates := make([][]float64, n)
		for i := range updates {
			switch u := make([]float64, d); {
			case c%2 == 0 && i == 0:
				u[1] = T
				updates[i] = u
			case c%2 == 0 && i == 1:
				u[0], u[3] = 3*T/5, -4*T/5 // 6 and 8 (tau = 2, B_g = 5): norm 10 exactly
				updates[i] = u
			default:
				u = withNorm(rng, d, 1, T*(1+1e-15*rng.NormFloat64()))
				if squaresCmp(u, tau, clip) > 0 {
					Clip(u, T*(1-1e-15))
				}
				updates[i] = u
			}
			if squaresCmp(updates[i], tau, clip) > 0 {
				t.Fatalf("test vector %v above tau B_g", updates[i])
			}
		}
		srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: clip}, Shape{Learners: n, Rounds: 1, Tau: tau, Dim: d}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Release(updates); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, d)
		for _, u := range updates {
			for k, v := range u {
				want[k] += v
			}
		}
		for k := range want {
			want[k] *= 1.0 / (n * tau)
		}
		if !slices.Equal(srv.dir, want) {
			t.Fatalf("updates %v within tau B_g = %v: direction %v, want %v bit for bit", updates, T, srv.dir, want)
		}
	}
}

// TestQuantizeUpdateHoldsBound: secure aggregation's server sees only the
// sum, so the bound is held where each update is quantized
// (QuantizeUpdate: the learner's side, and the in-process server's). The
// calibration takes a quantized update's norm to be at most tau B_g plus
// the quantization term (plan's effective clip); an accepted update of
// norm tau B_g (1 + 5e-10) used to be quantized as it was, 5e-10 above
// that. Its dequantized quantization must have exact norm at most
// tau B_g + Term; an update within tau B_g is quantized exactly as
// Quantize does, bit for bit; the update is never written.
func TestQuantizeUpdateHoldsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for range 300 {
		n, tau, d := 2+rng.IntN(8), 1+rng.IntN(4), 1+rng.IntN(32)
		clip := math.Pow(10, float64(rng.IntN(21)-10))
		q, err := secagg.NewQuantizer(n, tau, clip)
		if err != nil {
			t.Fatal(err)
		}
		T := float64(tau) * clip
		u := withNorm(rng, d, 1, T*(1+5e-10))
		orig := slices.Clone(u)
		dst := make([]uint64, d)
		if err := QuantizeUpdate(q, dst, u, clip, tau); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(u, orig) {
			t.Fatalf("QuantizeUpdate wrote the update")
		}
		deq := make([]float64, d)
		q.Dequantize(deq, dst)
		// ||deq|| <= T + Term, squared: sum deq^2 <= (T + Term)^2 exactly.
		const prec = 4400
		ss := new(big.Float).SetPrec(prec)
		for _, v := range deq {
			x := new(big.Float).SetPrec(prec).SetFloat64(v)
			ss.Add(ss, x.Mul(x, x))
		}
		lim := new(big.Float).SetPrec(prec).SetInt64(int64(tau))
		lim.Mul(lim, new(big.Float).SetPrec(prec).SetFloat64(clip))
		lim.Add(lim, new(big.Float).SetPrec(prec).SetFloat64(q.Term(d)))
		if ss.Cmp(lim.Mul(lim, lim)) > 0 {
			t.Fatalf("n = %d, tau = %d, B_g = %v: update of norm %v quantized to norm %v, want at most tau B_g + Term = %v", n, tau, clip, exactNorm(orig), ss.Sqrt(ss), T+q.Term(d))
		}

		// Within tau B_g: as Quantize does.
		Clip(u, T*(1-1e-12))
		want := make([]uint64, d)
		if err := q.Quantize(want, u, UpdateBound(clip, tau)); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeUpdate(q, dst, u, clip, tau); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dst, want) {
			t.Fatalf("update within tau B_g: quantized %v, want %v", dst, want)
		}
	}
}

// TestNormWithinExact: normWithin decides exactly (squaresCmp) on vectors
// at the bound within a few ulps, where its float64 estimate cannot, and
// on vectors far from it, for magnitudes 1e-320 to 1e300.
func TestNormWithinExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for range 20000 {
		d := 1 + rng.IntN(40)
		tau := 1 + rng.IntN(5)
		scale := math.Pow(10, float64(rng.IntN(621)-320))
		u := make([]float64, d)
		for k := range u {
			u[k] = rng.NormFloat64() * scale
		}
		en, _ := exactNorm(u).Float64()
		if !(en > 0) || math.IsInf(en, 0) {
			continue
		}
		clip := en / float64(tau)
		switch rng.IntN(3) {
		case 0:
			clip = math.Nextafter(clip, math.Inf(1))
		case 1:
			clip = math.Nextafter(clip, 0)
		default:
			clip *= math.Exp(rng.NormFloat64())
		}
		if !(clip > 0) || math.IsInf(clip, 0) {
			continue
		}
		if got, want := normWithin(u, clip, tau), squaresCmp(u, tau, clip) <= 0; got != want {
			t.Fatalf("normWithin(%v, %v, %d) = %v, want %v", u, clip, tau, got, want)
		}
	}
}
