package fedopt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// equalCmp compares d v^2, the sum of squares of d entries equal to v in
// magnitude, with (tau b)^2 exactly (512 bits hold d v^2, at most 126
// bits, and (tau b)^2, at most 148): the exact comparison for vectors too
// long for squaresCmp.
func equalCmp(d int, v float64, tau int, b float64) int {
	const prec = 512
	s := new(big.Float).SetPrec(prec).SetFloat64(v)
	s.Mul(s, s)
	s.Mul(s, new(big.Float).SetPrec(prec).SetInt64(int64(d)))
	t := new(big.Float).SetPrec(prec).SetInt64(int64(tau))
	t.Mul(t, new(big.Float).SetPrec(prec).SetFloat64(b))
	return s.Cmp(t.Mul(t, t))
}

// releaseAccepts is the decision [Server.Release] takes for an update u
// that passed the check: true if u enters the aggregate as it is (the
// float64 norm measured by the check puts it clearly within tau clip, or
// the exact check does), false if it is scaled.
func releaseAccepts(u []float64, clip float64, tau int) bool {
	norm, plain := measureNorm(u)
	return clearlyWithin(norm, plain, len(u), clip, tau) || normWithin(u, clip, tau)
}

// nearBounds returns clip values within a few ulps of x/tau, the bound at
// which a vector of exact norm x ties, on either side.
func nearBounds(x float64, tau int) []float64 {
	c := x / float64(tau)
	out := []float64{c}
	up, down := c, c
	for range 3 {
		up, down = math.Nextafter(up, math.Inf(1)), math.Nextafter(down, 0)
		out = append(out, up, down)
	}
	return out
}

// TestReleaseBandEqualEntries: the server accepts an update without the
// exact pass where its float64 norm is below tau B_g by more than that
// norm's rounding error bound (clearlyWithin), and the decision must be
// the exact one for every input. Updates of d = 1, 9, 10^4 and 10^6 equal
// entries (norm sqrt(d) |v| by hand: the recursive float64 sum of many
// equal squares drifts from d v^2 by up to about d/4 ulps, the most the
// band must cover), v spread over magnitudes 1e-160 to 1e150 (squares
// subnormal, normal, near overflow), one ulp either side of v, tau in
// {1, 3, 1000, 2^20, 10^6}, and B_g within three ulps of the tie on either
// side: the decision must equal equalCmp's. Also, the band must accept an
// update far within tau B_g without any exact pass: checked by the
// decision clearlyWithin alone for norm tau B_g / 2.
func TestReleaseBandEqualEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	dims := []int{1, 9, 10_000, 1_000_000}
	taus := []int{1, 3, 1000, 1 << 20, 1_000_000}
	cases, band := 0, 0
	for _, d := range dims {
		root := math.Sqrt(float64(d)) // exact: d is a perfect square
		u := make([]float64, d)
		mags, taus := []float64{1e-160, 1e-145, 1e-3, 1, 7, 1e100, 1e150}, taus
		if d == 1_000_000 && testing.Short() {
			mags, taus = []float64{1e-150, 1}, []int{3, 1_000_000}
		}
		for _, mag := range mags {
			v0 := mag * (1 + rng.Float64())
			v0 = math.Float64frombits(math.Float64bits(v0) &^ 0x3ff) // 43 bits: sqrt(d) v0 exact
			for _, v := range []float64{v0, math.Nextafter(v0, 0), math.Nextafter(v0, math.Inf(1))} {
				for k := range u {
					u[k] = v
					if k%2 == 1 {
						u[k] = -v
					}
				}
				for _, tau := range taus {
					for _, clip := range nearBounds(root*v0, tau) {
						if clip == 0 || math.IsInf(clip, 0) {
							continue
						}
						want := equalCmp(d, v, tau, clip) <= 0
						if got := releaseAccepts(u, clip, tau); got != want {
							t.Fatalf("d = %d entries +-%v, tau = %d, B_g = %v: accepted %v, want %v (exact)", d, v, tau, clip, got, want)
						}
						cases++
					}
					clip := 2 * root * v / float64(tau)
					norm, plain := measureNorm(u)
					if plain && !clearlyWithin(norm, plain, d, clip, tau) {
						t.Fatalf("d = %d entries +-%v, tau = %d, B_g = %v: norm %v (half tau B_g) not accepted by the band", d, v, tau, clip, norm)
					}
					if plain {
						band++
					}
				}
			}
		}
	}
	if band < 100 {
		t.Fatalf("the band decided %d updates far within the bound, want >= 100", band)
	}
	t.Logf("%d near-tie decisions, %d band acceptances", cases, band)
}

// TestReleaseBandAdversarial: the same decision against squaresCmp (exact,
// 4400 bits) on updates whose norms are within a few ulps of tau B_g on
// either side: seeded random vectors (d = 2 to 300) scaled to norm tau B_g
// in 256-bit arithmetic, mixtures of entries near 1e-300 and 1e300,
// subnormal entries, entries whose squares underflow beside one that does
// not, tau from 1 to 10^6, B_g near MaxFloat64 and near the smallest
// normal float64; for each, B_g at the float64 nearest the tie and three
// ulps either side, and the bound the band would accept at most
// (norm / (1 - m), m its margin) and its neighbours.
func TestReleaseBandAdversarial(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	cases := 0
	check := func(u []float64, tau int, clip float64) {
		t.Helper()
		if clip <= 0 || math.IsInf(clip, 0) || firstNonFinite(u) >= 0 {
			return // the server refuses a nonfinite update
		}
		want := squaresCmp(u, tau, clip) <= 0
		if got := releaseAccepts(u, clip, tau); got != want {
			t.Fatalf("update %v, tau = %d, B_g = %v: accepted %v, want %v (exact)", u, tau, clip, got, want)
		}
		cases++
	}
	taus := []int{1, 2, 3, 7, 1000, 1_000_000}
	for i := range 600 {
		d := 2 + rng.IntN(299)
		var u []float64
		switch i % 5 {
		case 0, 1:
			u = withNorm(rng, d, 1, math.Pow(10, float64(rng.IntN(581)-290)))
		case 2:
			u = make([]float64, d)
			for k := range u {
				u[k] = rng.NormFloat64() * []float64{1e-300, 1e300}[rng.IntN(2)]
			}
		case 3:
			u = make([]float64, d)
			for k := range u {
				u[k] = rng.NormFloat64() * 0x1p-1060
			}
		case 4:
			u = make([]float64, d)
			u[0] = 1e-140 * (1 + rng.Float64())
			for k := 1; k < d; k++ {
				u[k] = rng.NormFloat64() * 1e-160
			}
		}
		n, _ := exactNorm(u).Float64()
		tau := taus[rng.IntN(len(taus))]
		for _, clip := range nearBounds(n, tau) {
			check(u, tau, clip)
		}
		if norm, plain := measureNorm(u); plain {
			m := (2*float64(d) + 16) * 0x1p-53
			for _, clip := range nearBounds(norm/(1-m), tau) {
				check(u, tau, clip)
			}
		}
	}
	// Bounds at the ends of the float64 range: B_g near MaxFloat64 (tau
	// B_g may overflow) and near the smallest normal.
	before := cases
	for _, clip := range []float64{math.MaxFloat64, math.MaxFloat64 / 2, math.MaxFloat64 / 3, 0x1p-1022, 3 * 0x1p-1022, 0x1p-1000} {
		for _, tau := range []int{1, 2, 3} {
			for range 20 {
				d := 1 + rng.IntN(40)
				target := min(float64(tau)*clip, math.MaxFloat64) * (1 + 1e-15*rng.NormFloat64())
				u := withNorm(rng, d, 1, target)
				check(u, tau, clip)
				for _, c := range nearBounds(target, tau) {
					check(u, tau, c)
				}
			}
		}
	}
	if cases-before < 1000 {
		t.Fatalf("%d decisions at the ends of the float64 range, want >= 1000", cases-before)
	}
	t.Logf("%d decisions, %d at the ends of the float64 range", cases, cases-before)
}

// TestReleaseBandWired: Server.Release passes every accepted update the
// band or the exact check finds within tau B_g as it is and scales every
// other to exact norm at most tau B_g, updates with decisions of both
// kinds in one release. One learner in each server, tau a power of two,
// so that the aggregate (1/tau) times the contribution is exact and the
// contribution is read back as tau times it: equal-entry updates of d =
// 10^4 at the tie and one and two ulps of B_g either side (exact by
// equalCmp), and updates of half the bound (the band's).
func TestReleaseBandWired(t *testing.T) {
	const d = 10_000
	for _, tau := range []int{1, 4} {
		for _, v := range []float64{0.1, 3, 1e-100, 1e140} {
			for i, clip := range nearBounds(100*v, tau)[:5] {
				for _, half := range []bool{false, true} {
					u := make([]float64, d)
					for k := range u {
						u[k] = v
					}
					if half {
						clip *= 2
					}
					srv, err := NewServer(Config{Algorithm: NonPrivate, Eta: 0.1, EtaG: 1, Clip: clip}, Shape{Learners: 2, Rounds: 1, Tau: tau, Dim: d}, nil)
					if err != nil {
						t.Fatal(err)
					}
					if err := srv.CheckUpdate(u); err != nil {
						t.Fatalf("case %d: %v", i, err)
					}
					if err := srv.Release([][]float64{nil, u}); err != nil {
						t.Fatal(err)
					}
					got := make([]float64, d)
					for k, x := range srv.dir {
						got[k] = x * 2 * float64(tau) // s = 1/(n tau), n = 2: exact
					}
					if equalCmp(d, v, tau, clip) <= 0 {
						if !slices.Equal(got, u) {
							t.Fatalf("tau = %d, entries %v, B_g = %v: within, entered as %v..., want unchanged", tau, v, clip, got[:3])
						}
						continue
					}
					if squaresCmp(got, tau, clip) > 0 {
						t.Fatalf("tau = %d, entries %v, B_g = %v: entered with norm %v, want at most tau B_g", tau, v, clip, exactNorm(got))
					}
				}
			}
		}
	}
}

// normAtLeast reports whether the exact norm of g is at least (1 - r)
// bound (4400-bit sums, as squaresCmp).
func normAtLeast(g []float64, bound, r float64) bool {
	lo := new(big.Float).SetPrec(squaresPrec).SetFloat64(bound)
	lo.Mul(lo, new(big.Float).SetPrec(squaresPrec).SetFloat64(1-r))
	return bigSquares(g).Cmp(lo.Mul(lo, lo)) >= 0
}

// TestClipFewUlps: where Clip scales, its result must have exact norm at
// most the bound (the guarantee) and at least (1 - 2^-50) bound: the
// factor comes from an accurate norm, so the result is at most 8 units of
// 2^-53 (about 4 ulps) below the bound, not the float64 norm's error (up
// to (2d + 16) 2^-53) below it. Exact by squaresCmp and normAtLeast; the
// lower bound is tested where the bound is at least 2^-960, above the
// range where rounding entries below the normal range (absolute, not
// relative) can take more. A vector within the bound must come back bit
// for bit. Inputs: seeded Gaussian vectors (d = 1 to 300) clipped to half
// their norm, to their exact norm rounded and one and two ulps either
// side; mixtures of entries near 1e-300 and 1e300; subnormal entries;
// entries near MaxFloat64 (norm past float64) with bounds near MaxFloat64
// and near the smallest normal; infinite entries; plain sums of squares
// just below MaxFloat64; and d = 10^4 and 10^6
// equal entries (exact by equalCmp, the result's entries checked equal)
// clipped one ulp below their norm and to a third of it.
func TestClipFewUlps(t *testing.T) {
	const r = 0x1p-50
	rng := rand.New(rand.NewPCG(45, 46))
	scaled := 0
	check := func(orig []float64, bound float64) {
		t.Helper()
		g := slices.Clone(orig)
		Clip(g, bound)
		finite := !slices.ContainsFunc(orig, func(v float64) bool { return math.IsInf(v, 0) })
		if finite && squaresCmp(orig, 1, bound) <= 0 {
			if !slices.Equal(g, orig) {
				t.Fatalf("Clip(%v, %v) = %v, want it unchanged (norm within the bound)", orig, bound, g)
			}
			return
		}
		scaled++
		if squaresCmp(g, 1, bound) > 0 {
			t.Fatalf("Clip(%v, %v) = %v of norm %v, want at most %v", orig, bound, g, exactNorm(g), bound)
		}
		if bound >= 0x1p-960 && !normAtLeast(g, bound, r) {
			t.Fatalf("Clip(%v, %v) = %v of norm %v, want at least (1 - 2^-50) %v", orig, bound, g, exactNorm(g), bound)
		}
	}
	iters := 2000
	if testing.Short() {
		iters = 200
	}
	for i := range iters {
		d := 1 + rng.IntN(300)
		g := make([]float64, d)
		scale := math.Pow(10, float64(rng.IntN(601)-300))
		for k := range g {
			switch i % 4 {
			case 1:
				g[k] = rng.NormFloat64() * []float64{1e-300, 1e300}[rng.IntN(2)]
			case 2:
				g[k] = rng.NormFloat64() * 0x1p-1050
			case 3:
				g[k] = rng.NormFloat64() * 1e307
			default:
				g[k] = rng.NormFloat64() * scale
			}
		}
		if i%9 == 4 {
			g[rng.IntN(d)] = math.Inf(1 - 2*rng.IntN(2))
			check(g, math.Abs(rng.NormFloat64())*scale)
			check(g, math.MaxFloat64)
			continue
		}
		n, _ := exactNorm(g).Float64()
		bounds := []float64{n / 2, math.Nextafter(n, 0), math.Nextafter(math.Nextafter(n, 0), 0), n,
			math.Nextafter(n, math.Inf(1)), n * rng.Float64()}
		if i%4 == 3 {
			bounds = append(bounds, math.MaxFloat64, math.MaxFloat64/3, 0x1p-1022, 5e-324)
		}
		for _, b := range bounds {
			if b > 0 && !math.IsInf(b, 0) {
				check(g, b)
			}
		}
	}
	if scaled < iters {
		t.Fatalf("%d clips scaled, want >= %d", scaled, iters)
	}
	// Plain sums of squares just below MaxFloat64: the estimate's own
	// order of additions can overflow where Clip's did not (it did, and
	// Clip panicked on a NaN entry, before scaleTo fell back to the
	// scaled sum there).
	overflowed := 0
	for range 3000 {
		d := 4 + rng.IntN(5)
		g := make([]float64, d)
		base := math.Sqrt(math.MaxFloat64 / float64(d))
		ss := 0.0
		for k := range g {
			g[k] = base * (1 + float64(rng.IntN(64)-32)*0x1p-52)
			ss += g[k] * g[k]
		}
		if math.IsInf(ss, 1) {
			continue
		}
		if s, _, _ := estimateSquares(g); math.IsInf(s, 1) || math.IsNaN(s) {
			overflowed++
		}
		check(g, 1)
		check(g, math.MaxFloat64/2)
	}
	if overflowed == 0 {
		t.Fatalf("no plain sum overflowed in estimateSquares: the case is not tested")
	}
	// Long vectors of equal entries: the float64 sum of their squares
	// drifts by up to about d/4 ulps, and the factor must not follow it.
	for _, d := range []int{10_000, 1_000_000} {
		root := math.Sqrt(float64(d))
		for _, v := range []float64{0.1, 1e-150, 1e150, 0x1p-1040} {
			norm := root * v
			for _, b := range []float64{math.Nextafter(norm, 0), norm / 3} {
				g := make([]float64, d)
				for k := range g {
					g[k] = v
				}
				Clip(g, b)
				w := g[0]
				for k := range g {
					if g[k] != w {
						t.Fatalf("d = %d entries %v clipped to %v: entry %d is %v, entry 0 %v", d, v, b, k, g[k], w)
					}
				}
				if equalCmp(d, w, 1, b) > 0 {
					t.Fatalf("d = %d entries %v clipped to %v: entries %v, norm above the bound", d, v, b, w)
				}
				if b >= 0x1p-960 && equalCmp(d, w, 1, b*(1-r)) < 0 {
					t.Fatalf("d = %d entries %v clipped to %v: entries %v, norm below (1 - 2^-50) bound", d, v, b, w)
				}
			}
		}
	}
}

// TestEstimateSquaresCompensated checks [estimateSquares]' claim that its
// pair (s, c) is within a relative gamma_d^2 (about (d u)^2, u = 2^-53)
// of the exact sum of squares, against math/big, for d = 1..64 entries
// of normal-range squares (Gaussian, and spread over 2^-400..2^400): the
// test allows 4 (d + 4)^2 u^2, far below u. Where the compiler fuses
// x*y + z (arm64, ppc64, s390x, riscv64, loong64), an unrounded square in
// TwoSum counted the square's low part twice, an error of about u: run
// with GOARCH=arm64 (under qemu) to see it.
func TestEstimateSquaresCompensated(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	const u = 0x1p-53
	for it := range 4000 {
		d := 1 + rng.IntN(64)
		g := make([]float64, d)
		for k := range g {
			if it%2 == 0 {
				g[k] = rng.NormFloat64()
			} else {
				g[k] = math.Ldexp(rng.Float64()+0.5, rng.IntN(800)-400)
			}
		}
		s, c, gmax := estimateSquares(g)
		if want := maxAbs(g); gmax != want {
			t.Fatalf("d = %d: max |g_k| %v, want %v", d, gmax, want)
		}
		exact := new(big.Float).SetPrec(2200)
		sq := new(big.Float).SetPrec(2200)
		for _, v := range g {
			sq.SetFloat64(v)
			exact.Add(exact, sq.Mul(sq, sq))
		}
		diff := new(big.Float).SetPrec(2200).SetFloat64(s)
		diff.Add(diff, new(big.Float).SetFloat64(c))
		diff.Sub(diff, exact)
		rel, _ := diff.Quo(diff, exact).Float64()
		if tol := 4 * float64((d+4)*(d+4)) * u * u; !(math.Abs(rel) <= tol) {
			t.Fatalf("d = %d: (s + c) off the exact sum of squares by a relative %.3g, want at most %.3g", d, rel, tol)
		}
	}
}
