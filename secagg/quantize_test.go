package secagg

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNewQuantizerHand checks the scale bits against cases solved by hand:
// the largest k with n (tau clip 2^k + 1/2) <= 2^53.
func TestNewQuantizerHand(t *testing.T) {
	for _, c := range []struct {
		n, tau int
		clip   float64
		k      int
	}{
		// 2^k + 1/2 <= 2^53: k = 52 (k = 53 overshoots by 1/2).
		{1, 1, 1, 52},
		// 4 (2^k + 1/2) <= 2^53, 2^k <= 2^51 - 1/2: k = 50.
		{4, 2, 0.5, 50},
		// 3 (2^k + 1/2) <= 2^53: 3 2^51 = 6.8e15 fits, 3 2^52 = 1.35e16 > 2^53 = 9.0e15.
		{3, 1, 1, 51},
		// 10 * 5 * 0.1 = 5 (and 2.8e-16): 5 * 2^k + 5 <= 2^53, k = 50 (5 * 2^50 = 5.6e15 <= 9.0e15 - 5; 5 * 2^51 = 1.1e16 is not).
		{10, 5, 0.1, 50},
		// 2^53 / 1 with clip 2^-100: k = 152.
		{1, 1, 0x1p-100, 152},
		// clip 2^62: 2^62 2^k + 1/2 <= 2^53 needs k <= -10 (2^52 + 1/2 fits).
		{1, 1, 0x1p62, -10},
		// clip 2^53: k = -1 (2^52 + 1/2 fits, 2^53 + 1/2 does not).
		{1, 1, 0x1p53, -1},
		// The ends of the range of k for n tau = 1: -970 (2^53 2^970 =
		// 2^1023 is finite) and 1022 - bits.Len(1) = 1021 (2^(1021-969) = 2^52).
		{1, 1, 0x1p1022, -970},
		{1, 1, 0x1p-969, 1021},
		// n tau = 12 (bits.Len 4): k <= 1018, and 12 (2^(k-969) + 1/2) <= 2^53
		// holds for k - 969 <= 49 (2^53 / 12 = 2^49.4).
		{3, 4, 0x1p-969, 1018},
		{3, 4, 0x1p-965, 1014},
	} {
		q, err := NewQuantizer(c.n, c.tau, c.clip)
		if err != nil {
			t.Fatalf("NewQuantizer(%d, %d, %v): %v", c.n, c.tau, c.clip, err)
		}
		if q.ScaleBits != c.k {
			t.Errorf("NewQuantizer(%d, %d, %v).ScaleBits = %d, want %d", c.n, c.tau, c.clip, q.ScaleBits, c.k)
		}
	}
}

// TestNewQuantizerMaximal checks the defining property with big.Int
// arithmetic on random settings: k fits and k + 1 does not.
func TestNewQuantizerMaximal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lim := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 53))
	ok := func(n, tau int, clip float64, k int) bool {
		x := new(big.Rat).SetFloat64(clip)
		p := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(max(k, -k))))
		if k >= 0 {
			x.Mul(x, p)
		} else {
			x.Quo(x, p)
		}
		x.Mul(x, big.NewRat(int64(tau), 1))
		x.Add(x, big.NewRat(1, 2))
		x.Mul(x, big.NewRat(int64(n), 1))
		return x.Cmp(lim) <= 0
	}
	for i := 0; i < 500; i++ {
		n, tau := 1+rng.IntN(1000), 1+rng.IntN(100)
		clip := math.Ldexp(rng.Float64()+0.5, rng.IntN(80)-40)
		if i%50 == 0 { // powers of two, where k and k+1 sit on the boundary
			clip = math.Ldexp(1, rng.IntN(40)-20)
		}
		q, err := NewQuantizer(n, tau, clip)
		if err != nil {
			t.Fatal(err)
		}
		if !ok(n, tau, clip, q.ScaleBits) || ok(n, tau, clip, q.ScaleBits+1) {
			t.Fatalf("n = %d, tau = %d, clip = %v: k = %d is not the largest fitting k", n, tau, clip, q.ScaleBits)
		}
	}
}

func TestNewQuantizerErrors(t *testing.T) {
	for _, c := range []struct {
		n    int64 // beyond math.MaxInt only on a 64-bit platform
		tau  int
		clip float64
		want string
	}{
		{0, 1, 1, "learners n = 0"},
		{1, 0, 1, "local steps tau = 0"},
		{1, 1, 0, "clip = 0"},
		{1, 1, -1, "clip = -1"},
		{1, 1, math.NaN(), "clip = NaN"},
		{1, 1, math.Inf(1), "clip = +Inf"},
		{1, 1, 1e-300, "too small"},
		{1, 1, 0x1p-970, "too small: scale bits k = 1022, want k <= 1021"},
		{3, 4, 0x1p-970, "too small: scale bits k = 1019, want k <= 1018"},
		{1, 1, 0x1p1023, "too large"},
		{1, 1, math.MaxFloat64, "too large"},
		{1 << 20, 1, math.MaxFloat64 / 4, "too large"},
		{1 << 40, 1 << 20, math.MaxFloat64, "n tau = 1099511627776*1048576, want at most 2^53"},
		{1 << 30, 1 << 30, 1, "want at most 2^53"},
		{1 << 27, 1<<26 + 1, 1, "want at most 2^53"},
	} {
		if c.n > math.MaxInt {
			continue
		}
		_, err := NewQuantizer(int(c.n), c.tau, c.clip)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("NewQuantizer(%d, %d, %v) = %v, want a one-line error with %q", c.n, c.tau, c.clip, err, c.want)
		}
	}
}

// TestQuantizeHand checks hand-computed fixed-point values.
func TestQuantizeHand(t *testing.T) {
	q := Quantizer{ScaleBits: 2} // units of 1/4
	u := []float64{0, 0.25, -0.25, 0.3, -0.3, 0.125, -0.375, 1.1}
	want := []int64{0, 1, -1, 1, -1, 1, -2, 4} // round(4u), halves away from zero
	dst := make([]uint64, len(u))
	if err := q.Quantize(dst, u, 1.1); err != nil {
		t.Fatal(err)
	}
	for i := range u {
		if int64(dst[i]) != want[i] {
			t.Errorf("Q(%v) = %d, want %d", u[i], int64(dst[i]), want[i])
		}
	}
	if dst[2] != math.MaxUint64 { // -1 in two's complement
		t.Errorf("Q(-0.25) = %#x, want 0xffffffffffffffff", dst[2])
	}
	back := make([]float64, len(u))
	q.Dequantize(back, dst)
	for i, w := range []float64{0, 0.25, -0.25, 0.25, -0.25, 0.25, -0.5, 1} {
		if back[i] != w {
			t.Errorf("Dequantize(Q(%v)) = %v, want %v", u[i], back[i], w)
		}
	}
	// Term: sqrt(9) 2^-3 = 0.375 exactly; sqrt(2) is rounded up.
	if got := q.Term(9); got != 0.375 {
		t.Errorf("Term(9) = %v, want 0.375", got)
	}
	if got := q.Term(2); !(got >= math.Sqrt2/8) || got > math.Nextafter(math.Sqrt2, 2)/8 {
		t.Errorf("Term(2) = %v, want sqrt(2)/8 rounded up", got)
	}
	// Ring arithmetic wraps: 1 - 2 = -1, max + 1 = 0.
	a, b := []uint64{1, math.MaxUint64}, []uint64{2, 1}
	SubRing(a, b)
	if int64(a[0]) != -1 || a[1] != math.MaxUint64-1 {
		t.Errorf("SubRing = %v, want [-1, 2^64-2]", a)
	}
	AddRing(a, b)
	AddRing(a, []uint64{0, 1})
	if a[0] != 1 || a[1] != 0 {
		t.Errorf("AddRing = %v, want [1 0]", a)
	}
}

// TestQuantizeRefuses checks the range check at its boundary and the
// refusal of non-finite entries.
func TestQuantizeRefuses(t *testing.T) {
	q := Quantizer{ScaleBits: 2}
	dst := make([]uint64, 1)
	// bound 1: |u| 4 <= 4 + 1/2, |u| <= 1.125 accepted, the next float above refused.
	if err := q.Quantize(dst, []float64{-1.125}, 1); err != nil || int64(dst[0]) != -5 {
		t.Errorf("Quantize(-1.125) = %d, %v, want -5 accepted", int64(dst[0]), err)
	}
	for _, v := range []float64{math.Nextafter(1.125, 2), -1.25, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64} {
		err := q.Quantize(make([]uint64, 3), []float64{0, 0, v}, 1)
		if err == nil || !strings.Contains(err.Error(), "u[2]") {
			t.Errorf("Quantize(%v) = %v, want an error naming u[2]", v, err)
		}
	}
	// Boundary at a large scale, where bound 2^k + 1/2 is not a float64:
	// k = 52, bound 1: the largest accepted |x| is 2^52 (the next float is 2^52 + 1).
	q = Quantizer{ScaleBits: 52}
	if err := q.Quantize(dst, []float64{1}, 1); err != nil {
		t.Errorf("Quantize(1) at k = 52: %v", err)
	}
	if err := q.Quantize(dst, []float64{math.Nextafter(1, 2)}, 1); err == nil {
		t.Error("Quantize(1 + ulp) at k = 52 accepted, want refused")
	}
	for _, b := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := q.Quantize(dst, []float64{0}, b); err == nil || !strings.Contains(err.Error(), "bound") {
			t.Errorf("Quantize with bound %v = %v, want an error naming the bound", b, err)
		}
	}
	if err := q.Quantize(make([]uint64, 2), []float64{0}, 1); err == nil {
		t.Error("Quantize with len(dst) != len(u) accepted")
	}
}

// TestNoWrap: n updates at the extreme of the accepted range, all with the
// same sign on a coordinate (the adversarial pattern) or alternating, sum in
// the ring to the exact integer sum (big.Int) read as int64: nothing wraps.
func TestNoWrap(t *testing.T) {
	for _, c := range []struct {
		n, tau int
		clip   float64
	}{{1, 1, 1}, {3, 1, 1}, {10, 5, 0.1}, {7, 3, 1e-6}, {1000, 1, 1e3}, {2, 1, 0x1p-30}} {
		q, err := NewQuantizer(c.n, c.tau, c.clip)
		if err != nil {
			t.Fatal(err)
		}
		bound := float64(c.tau) * c.clip
		// The largest accepted |u|: the largest float64 with |u| 2^k <= bound 2^k + 1/2.
		top := bound
		for {
			next := math.Nextafter(top, math.Inf(1))
			if q.Quantize(make([]uint64, 1), []float64{next}, bound) != nil {
				break
			}
			top = next
		}
		for _, pattern := range []string{"+", "-", "alt"} {
			sum := make([]uint64, 1)
			exact := new(big.Int)
			qu := make([]uint64, 1)
			for i := 0; i < c.n; i++ {
				v := top
				if pattern == "-" || (pattern == "alt" && i%2 == 1) {
					v = -top
				}
				if err := q.Quantize(qu, []float64{v}, bound); err != nil {
					t.Fatal(err)
				}
				AddRing(sum, qu)
				// Independent value: round(v 2^k) from big.Float.
				x := new(big.Float).SetPrec(2000).SetFloat64(v)
				x.SetMantExp(x, q.ScaleBits)
				half := big.NewFloat(0.5)
				if v < 0 {
					x.Sub(x, half)
				} else {
					x.Add(x, half)
				}
				r, _ := x.Int(nil) // truncation toward zero of |x| + 1/2: round half away
				exact.Add(exact, r)
			}
			if !exact.IsInt64() || int64(sum[0]) != exact.Int64() {
				t.Errorf("n = %d, tau = %d, clip = %v, %s: ring sum reads %d, exact sum %v", c.n, c.tau, c.clip, pattern, int64(sum[0]), exact)
			}
			lim := new(big.Int).Lsh(big.NewInt(1), 62)
			if new(big.Int).Abs(exact).Cmp(lim) > 0 {
				t.Errorf("n = %d, %s: |sum| = %v > 2^62", c.n, pattern, exact)
			}
		}
	}
}

// TestTermBound: ||Dequantize(Quantize(u)) - u|| never exceeds Term(d), over
// random updates of norm at most the bound (a bound check, not a
// statistical one), measured with big.Float.
func TestTermBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		d := 1 + rng.IntN(50)
		n, tau := 1+rng.IntN(20), 1+rng.IntN(10)
		clip := math.Ldexp(rng.Float64()+0.5, rng.IntN(20)-10)
		q, err := NewQuantizer(n, tau, clip)
		if err != nil {
			t.Fatal(err)
		}
		if trial%3 == 0 { // coarse scales, where the rounding error is visible
			q.ScaleBits = rng.IntN(8)
		}
		bound := float64(tau) * clip
		u := make([]float64, d)
		ss := 0.0
		for k := range u {
			u[k] = rng.NormFloat64()
			ss += u[k] * u[k]
		}
		s := bound * rng.Float64() / math.Sqrt(ss)
		for k := range u {
			u[k] *= s
		}
		qu := make([]uint64, d)
		if err := q.Quantize(qu, u, bound); err != nil {
			t.Fatal(err)
		}
		back := make([]float64, d)
		q.Dequantize(back, qu)
		e := new(big.Float).SetPrec(300)
		for k := range u {
			diff := new(big.Float).SetPrec(300).SetFloat64(back[k])
			diff.Sub(diff, new(big.Float).SetFloat64(u[k]))
			e.Add(e, diff.Mul(diff, diff))
		}
		term := new(big.Float).SetPrec(300).SetFloat64(q.Term(d))
		if e.Cmp(term.Mul(term, term)) > 0 {
			t.Fatalf("d = %d, k = %d: ||deq(Q(u)) - u||^2 = %v > Term^2 = %v", d, q.ScaleBits, e, q.Term(d)*q.Term(d))
		}
	}
}

// readBackExact checks that Dequantize of the ring element s equals
// int64(s) 2^-k as a real number (math/big).
func readBackExact(t *testing.T, q Quantizer, s uint64) {
	t.Helper()
	got := make([]float64, 1)
	q.Dequantize(got, []uint64{s})
	want := new(big.Float).SetPrec(200).SetInt64(int64(s))
	want.SetMantExp(want, -q.ScaleBits)
	if g := new(big.Float).SetPrec(200).SetFloat64(got[0]); g.Cmp(want) != 0 {
		t.Errorf("k = %d: Dequantize(%d) = %v, want %s exactly (off by %s)", q.ScaleBits, int64(s), got[0], want.Text('g', 25), new(big.Float).Sub(g, want).Text('g', 5))
	}
}

// TestDequantizeExactBig checks that the read-back of every ring sum a
// NewQuantizer quantizer admits is exact, against math/big: for quantizers
// at the ends of the range of k (-970, 1022 - bits.Len(n tau)) and in the
// middle, the sum of n updates at the extreme of their range (every
// coordinate tau clip, rounded to nearest as Quantize does), both signs (a
// negative sum wraps in Z_2^64), the integers at and next to +-2^53, odd
// integers needing all 53 bits, and random sums of n quantized entries.
// (With the scale chosen for 2^62 the extreme sums needed up to 62 bits and
// were read back rounded.)
func TestDequantizeExactBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n, tau int
		clip   float64
	}{
		{10, 1, 1}, {10, 5, 0.1}, {3, 1, 1}, {255, 7, 1.7}, {2, 1000, 3e-5},
		{1, 1, 0x1p1022}, {1, 1, 0x1p-969}, {3, 4, 0x1p-969}, {255, 1 << 20, 0x1p-900},
	} {
		q, err := NewQuantizer(c.n, c.tau, c.clip)
		if err != nil {
			t.Fatalf("NewQuantizer(%d, %d, %v): %v", c.n, c.tau, c.clip, err)
		}
		// v: the largest float64 at most tau clip (a coordinate of an
		// update of norm tau clip).
		exact := new(big.Float).SetPrec(200).SetFloat64(c.clip)
		exact.Mul(exact, new(big.Float).SetInt64(int64(c.tau)))
		v, _ := new(big.Float).SetPrec(53).SetMode(big.ToNegativeInf).Set(exact).Float64()
		one := make([]uint64, 2)
		if err := q.Quantize(one, []float64{v, -v}, v); err != nil {
			t.Fatal(err)
		}
		sum := make([]uint64, 2)
		for range c.n {
			AddRing(sum, one)
		}
		for _, s := range sum {
			if m := int64(s); m > MaxExactSum || m < -MaxExactSum {
				t.Errorf("n = %d, tau = %d, clip = %v: the extreme sum %d exceeds 2^53", c.n, c.tau, c.clip, m)
			}
			readBackExact(t, q, s)
		}
		for _, m := range []int64{0, 1, -1, MaxExactSum, -MaxExactSum, MaxExactSum - 1, -(MaxExactSum - 1),
			1<<52 + 1, -(1<<52 + 1), MaxExactSum - 3, 0x1234567890abcd, -0x1fedcba9876543} {
			readBackExact(t, q, uint64(m))
		}
		// Random sums of n entries of magnitude at most top = round(v 2^k),
		// the extreme quantized entry (n top <= n (tau clip 2^k + 1/2) <= 2^53).
		top := int64(one[0])
		for range 200 {
			var s uint64
			for range c.n {
				s += uint64(rng.Int64N(2*top+1) - top)
			}
			readBackExact(t, q, s)
		}
	}
}
