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
	b := new(big.Float).SetPrec(squaresPrec).SetInt64(int64(tau))
	b.Mul(b, new(big.Float).SetPrec(squaresPrec).SetFloat64(clip))
	return bigSquares(u).Cmp(b.Mul(b, b))
}

// squaresPrec is the precision of bigSquares: exact for every sum it
// makes (see squaresCmp).
const squaresPrec = 4400

// bigSquares returns sum_k u_k^2, exactly.
func bigSquares(u []float64) *big.Float {
	ss := new(big.Float).SetPrec(squaresPrec)
	for _, v := range u {
		x := new(big.Float).SetPrec(squaresPrec).SetFloat64(v)
		ss.Add(ss, x.Mul(x, x))
	}
	return ss
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

// checkFast compares fastWithin and normWithin on u with the exact
// comparison (squaresCmp) and reports whether fastWithin decided.
func checkFast(t *testing.T, u []float64, clip float64, tau int) bool {
	t.Helper()
	want := squaresCmp(u, tau, clip) <= 0
	within, ok := fastWithin(u, clip, tau)
	if ok && within != want {
		t.Fatalf("fastWithin(%v, %v, %d) = %v, decided; exact: %v", u, clip, tau, within, want)
	}
	if got := normWithin(u, clip, tau); got != want {
		t.Fatalf("normWithin(%v, %v, %d) = %v, want %v", u, clip, tau, got, want)
	}
	return ok
}

// TestFastWithinNearTies: the compensated sum's band is a relative
// (8d + 64) 2^-106; its decisions must be right just outside it and
// math/big must decide inside it. u = (w, delta): w holds d - 1 Gaussian
// entries (d = 2 to 300) whose exact sum of squares is W; tau B_g = T is
// the float64 just above sqrt(W) (tau = 1, or tau = 3 with B_g = T/3
// rounded), and delta is sqrt(T^2 - W) rounded to float64 (below about
// 2^-26 T, so that one ulp of it moves the sum of squares by a relative
// 2^-105 or less) and then moved by 0 to 2^13 of its ulps: sum u_k^2 -
// (tau B_g)^2 falls at a relative 2^-115 to 2^-88 of either sign, or 0.
// The vector is spread by a random power of two from 2^-1000 to 2^1000.
// Both kinds of decision must occur.
func TestFastWithinNearTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	fast, slow := 0, 0
	for i := range 4000 {
		d := 2 + rng.IntN(299)
		u := make([]float64, d)
		W := new(big.Float).SetPrec(4400)
		for k := range d - 1 {
			u[k] = rng.NormFloat64()
			x := new(big.Float).SetPrec(4400).SetFloat64(u[k])
			W.Add(W, x.Mul(x, x))
		}
		T, _ := new(big.Float).SetPrec(4400).Sqrt(W).Float64()
		T = math.Nextafter(T, math.Inf(1))
		tau, clip := 1, T
		if i%4 == 3 {
			tau, clip = 3, T/3
		}
		gap := new(big.Float).SetPrec(4400).SetInt64(int64(tau))
		gap.Mul(gap, new(big.Float).SetFloat64(clip))
		gap.Mul(gap, gap).Sub(gap, W)
		if gap.Sign() <= 0 {
			continue
		}
		delta, _ := new(big.Float).SetPrec(4400).Sqrt(gap).Float64()
		ulp := math.Nextafter(delta, 1) - delta
		delta += float64(rng.IntN(1<<rng.IntN(14))*(2*rng.IntN(2)-1)) * ulp
		u[d-1] = delta
		rng.Shuffle(d, func(j, k int) { u[j], u[k] = u[k], u[j] })
		sh := rng.IntN(2001) - 1000
		for k := range u {
			u[k] = math.Ldexp(u[k], sh)
		}
		if c := math.Ldexp(clip, sh); c > 0 && !math.IsInf(c, 0) {
			if checkFast(t, u, c, tau) {
				fast++
			} else {
				slow++
			}
		}
	}
	if fast < 1000 || slow < 100 {
		t.Errorf("%d near-ties decided by the compensated sum and %d by math/big, want at least 1000 and 100", fast, slow)
	}
}

// TestFastWithinWide: vectors of entries of independent magnitudes
// 10^-320 to 10^300 (subnormals among them), all-subnormal vectors, and
// vectors of d up to 10^5, against tau B_g at the vector's own norm
// rounded and 1 ulp either side of it: every decision right (squaresCmp).
func TestFastWithinWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	n := 3000
	if testing.Short() {
		n = 1000
	}
	for i := range n {
		d := 1 + rng.IntN(30)
		if i%100 == 0 {
			d = 1 + rng.IntN(100000)
		}
		tau := 1 + rng.IntN(4)
		u := make([]float64, d)
		for k := range u {
			switch {
			case i%3 == 0:
				u[k] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(621)-320))
			case i%3 == 1:
				u[k] = math.Ldexp(rng.NormFloat64(), -1030-rng.IntN(40)) // subnormal
			default:
				u[k] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(21)-10))
			}
		}
		en, _ := exactNorm(u).Float64()
		if !(en > 0) || math.IsInf(en, 0) {
			continue
		}
		clip := en / float64(tau)
		for _, c := range []float64{clip, math.Nextafter(clip, 0), math.Nextafter(clip, math.Inf(1))} {
			if c > 0 && !math.IsInf(c, 0) {
				checkFast(t, u, c, tau)
			}
		}
	}
}

// TestFastWithinHonest: honest learners' clipped updates (Clip to B_g,
// tau = 1: norm B_g up to a relative (d + 6) 2^-53 of rounding) are
// decided by the compensated sum, not math/big, but where the update is
// an exact tie. A Gaussian vector's clipped sum of squares misses (B_g)^2
// by a rounding spread over about 2^-53 (B_g)^2, so it falls within the
// band, a relative (8d + 64) 2^-106, with probability about
// (8d + 64) 2^-53 < 1e-10 at d = 10^5: the test fails falsely with
// probability below 1e-7 over its cases. d = 1 is an exact tie (the clipped
// entry is B_g) and goes to math/big, decided right.
func TestFastWithinHonest(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	slow, cases := 0, 0
	for i := range 2000 {
		d := 2 + rng.IntN(200)
		if i%200 == 0 {
			d = 100000
		}
		clip := math.Pow(10, float64(rng.IntN(41)-20)) * (1 + rng.Float64())
		u := make([]float64, d)
		for k := range u {
			u[k] = rng.NormFloat64() * clip
		}
		Clip(u, clip)
		cases++
		if !checkFast(t, u, clip, 1) {
			slow++
		}
	}
	if slow > 0 {
		t.Errorf("%d of %d honest clipped updates needed math/big, want 0", slow, cases)
	}
	if checkFast(t, []float64{-0.7}, 0.7, 1) {
		t.Errorf("fastWithin decided the exact tie (0.7) against 0.7, want math/big")
	}
}

// TestNormWithinSingleEntry: a vector with one nonzero entry v (d = 1, or
// zeros around it) is decided by float64 comparisons ([singleWithin]) or,
// out of their range, math/big; either way the decision must be the exact
// comparison of v^2 with (tau clip)^2 (squaresCmp). v is fl(tau clip) and
// its neighbours, so that the rounding error of tau clip decides, for
// random clips of magnitudes 1e-320 to 1e308 and tau up to 2^40.
func TestNormWithinSingleEntry(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for range 20000 {
		tau := 1 + rng.IntN(1000)
		if rng.IntN(4) == 0 {
			// Up to 2^40 where int holds it (on 386 int(2^40 draw)
			// wrapped to a negative tau, no valid input), below
			// MaxInt on a 32-bit platform; the same draws on amd64.
			tau = 1 + int(rng.Int64N(min(1<<40, math.MaxInt-1)))
		}
		clip := math.Abs(rng.NormFloat64()) * math.Pow(10, float64(rng.IntN(629)-320))
		p := float64(tau) * clip
		if !(clip > 0) || math.IsInf(p, 0) || p == 0 {
			continue
		}
		d := 1 + rng.IntN(3)*rng.IntN(5)
		for _, v := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), -p} {
			u := make([]float64, d)
			u[rng.IntN(d)] = v
			if got, want := normWithin(u, clip, tau), squaresCmp(u, tau, clip) <= 0; got != want {
				t.Fatalf("normWithin(%v, %v, %d) = %v, want %v", u, clip, tau, got, want)
			}
			if got, want := exactWithin(u, clip, tau), squaresCmp(u, tau, clip) <= 0; got != want {
				t.Fatalf("exactWithin(%v, %v, %d) = %v, want %v", u, clip, tau, got, want)
			}
		}
	}
}
