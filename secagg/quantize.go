package secagg

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// RingBits is the width of the ring Z_{2^RingBits} in which masked updates are summed:
// uint64 arithmetic.
const RingBits = 64

// headroomBits: the quantized sum of n honest updates of norm at most tau clip
// stays within [-2^53, 2^53] (NewQuantizer's choice of the scale bits), where
// every integer is a float64: the sum's read-back is exact (see Dequantize). An
// entry beyond MaxExactSum (a malicious learner's input or a forged share in
// the sum) is folded into range by its reader (fedopt.Server.ReleaseRingSum),
// and since 2^53 < 2^63 the int64 reading of an honest sum never wraps (the
// ring holds [-2^63, 2^63)).
const headroomBits = 53

// MaxExactSum is 2^53, the largest magnitude of a ring sum (read as a signed
// integer) that Dequantize reads back exactly: every integer of magnitude at most
// 2^53 is a float64. NewQuantizer chooses the scale so that n honest updates sum
// within it; a reader of a sum computed elsewhere folds an entry beyond it
// into range first (fedopt.Server.ReleaseRingSum).
const MaxExactSum = 1 << headroomBits

// Scale bits k are kept where the read-back S 2^-k of every integer S with
// 1 <= |S| <= 2^53 is a normal float64 (2^-k >= 2^-1022 and 2^(53-k) < 2^1024),
// and, for n learners with tau local steps, where S 2^-k / (n tau) is normal
// too (NewQuantizer: k <= 1022 - bits.Len(n tau)), so that the server's
// division of the sum by n tau, or by n, rounds with a relative error of at
// most 2^-53 and never underflows.
const (
	minScaleBits = MinScaleBits
	maxScaleBits = 1022
)

// MinScaleBits is -970, the least scale bits k of an exact read-back: the
// read-back of a sum of magnitude 2^53 is 2^(53-k) <= 2^1023, finite.
const MinScaleBits = headroomBits - 1023

// Quantizer maps a float64 update to the ring Z_{2^64}: coordinate k becomes
// q_k = round(u_k 2^ScaleBits), stored as an int64 in two's complement, and a ring
// sum S is read back as float64(int64(S)) 2^-ScaleBits, exactly when
// |int64(S)| <= MaxExactSum (Dequantize). The zero value (ScaleBits 0) rounds to
// integers; NewQuantizer chooses ScaleBits so that the sum of n updates stays
// within MaxExactSum.
type Quantizer struct {
	// ScaleBits is k: the fixed-point scale 2^k.
	ScaleBits int
}

// NewQuantizer returns the quantizer for n learners whose updates have L2 norm at
// most tau*clip (tau local steps, each clipped to clip): ScaleBits is the largest
// integer k with n (tau clip 2^k + 1/2) <= 2^53, so the signed sum of n quantized
// updates (each coordinate at most tau clip 2^k in magnitude, and one more half
// for rounding) is an integer of magnitude at most 2^53: it never wraps in
// Z_{2^64} and its float64 read-back is exact (Dequantize). The condition is
// evaluated exactly. It refuses n tau > 2^53 (the server's 1/(n tau) would
// round n tau first) and a k outside [-970, 1022 - bits.Len(n tau)] (a clip so
// large that 2^53 2^-k overflows, or so small that a sum's read-back divided by
// n tau is subnormal and loses its relative precision).
func NewQuantizer(n, tau int, clip float64) (Quantizer, error) {
	switch {
	case n < 1:
		return Quantizer{}, fmt.Errorf("secagg: learners n = %d, want n >= 1", n)
	case int64(n) >= 1<<headroomBits:
		return Quantizer{}, fmt.Errorf("secagg: learners n = %d, want n < 2^%d", n, headroomBits)
	case tau < 1:
		return Quantizer{}, fmt.Errorf("secagg: local steps tau = %d, want tau >= 1", tau)
	case math.IsNaN(clip) || math.IsInf(clip, 0) || clip <= 0:
		return Quantizer{}, fmt.Errorf("secagg: clip = %v, want a finite clip > 0", clip)
	}
	hi, nt := bits.Mul64(uint64(n), uint64(tau))
	if hi != 0 || nt > MaxExactSum {
		return Quantizer{}, fmt.Errorf("secagg: n tau = %d*%d, want at most 2^%d (the server divides the sum by n tau, which must be an exact float64)", n, tau, headroomBits)
	}
	// fl(1/(n tau)) >= 2^-L (L = bits.Len(n tau), n tau < 2^L), so for k <= 1022 - L
	// and |S| >= 1, fl(1/(n tau)) S 2^-k >= 2^-1022: normal.
	maxK := maxScaleBits - bits.Len64(nt)
	// Start from the float estimate and step to the exact answer.
	_, en := math.Frexp(float64(n))
	_, et := math.Frexp(float64(tau))
	_, ec := math.Frexp(clip) // n tau clip < 2^(en+et+ec)
	k := min(max(headroomBits-en-et-ec, minScaleBits-2), maxK+2)
	for k > minScaleBits-2 && !fits(n, tau, clip, k) {
		k--
	}
	for k < maxK+2 && fits(n, tau, clip, k+1) {
		k++
	}
	if !fits(n, tau, clip, k) || k < minScaleBits {
		return Quantizer{}, fmt.Errorf("secagg: n tau clip = %d*%d*%v is too large for an exact read-back (no scale bits k >= %d fit)", n, tau, clip, minScaleBits)
	}
	if k > maxK {
		return Quantizer{}, fmt.Errorf("secagg: n tau clip = %d*%d*%v is too small: scale bits k = %d, want k <= %d (1022 - bits.Len(n tau))", n, tau, clip, k, maxK)
	}
	return Quantizer{ScaleBits: k}, nil
}

// fits reports exactly whether n (tau clip 2^k + 1/2) <= 2^53.
func fits(n, tau int, clip float64, k int) bool {
	const prec = 1200 // enough for every product and sum here to be exact
	x := new(big.Float).SetPrec(prec).SetFloat64(clip)
	x.SetMantExp(x, k)
	x.Mul(x, new(big.Float).SetPrec(prec).SetInt64(int64(tau)))
	x.Add(x, big.NewFloat(0.5))
	x.Mul(x, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
	lim := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), headroomBits)
	return x.Cmp(lim) <= 0
}

// Quantize writes q_k = round(u_k 2^ScaleBits) into dst as int64 two's complement.
// bound is the largest norm an update may have (tau clip); an entry with
// |u_k| 2^k > bound 2^k + 1/2, NaN or an infinity is refused with an error naming
// the entry, and dst is then left unspecified. len(dst) must equal len(u).
func (q Quantizer) Quantize(dst []uint64, u []float64, bound float64) error {
	if len(dst) != len(u) {
		return fmt.Errorf("secagg: quantize: len(dst) = %d, want len(u) = %d", len(dst), len(u))
	}
	if math.IsNaN(bound) || math.IsInf(bound, 0) || bound < 0 {
		return fmt.Errorf("secagg: quantize: bound = %v, want a finite bound >= 0", bound)
	}
	lim := q.limit(bound)
	for i, v := range u {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("secagg: quantize: u[%d] = %v, want a finite number", i, v)
		}
		x := math.Ldexp(v, q.ScaleBits)
		if math.Abs(x) > lim {
			return fmt.Errorf("secagg: quantize: u[%d] = %v is out of range: |u| 2^%d > bound 2^%d + 1/2 (bound %v)", i, v, q.ScaleBits, q.ScaleBits, bound)
		}
		dst[i] = uint64(int64(math.Round(x)))
	}
	return nil
}

// limit returns the largest float64 t <= min(bound 2^k + 1/2, 2^53): for a float64
// x, |x| > t exactly when |x| exceeds that real number.
func (q Quantizer) limit(bound float64) float64 {
	b := new(big.Float).SetPrec(1200).SetFloat64(bound)
	b.SetMantExp(b, q.ScaleBits)
	b.Add(b, big.NewFloat(0.5))
	t := new(big.Float).SetPrec(53).SetMode(big.ToNegativeInf).Set(b)
	f, _ := t.Float64()
	return math.Min(f, math.Ldexp(1, headroomBits))
}

// Dequantize writes float64(int64(sum_k)) 2^-ScaleBits into dst: the ring sum read
// as a signed integer and scaled back. len(dst) must equal len(sum); it panics
// otherwise (a programming error, not input).
//
// The read-back is exact, dst_k = S_k 2^-k as a real number, for every entry
// with |S_k| <= MaxExactSum (S_k = int64(sum_k)) and ScaleBits k in
// [-970, 1022], which NewQuantizer's k always is: (1) S_k is an integer of
// magnitude at most 2^53, so it has at most 53 significant bits (2^53 itself
// has one) and float64(S_k) is S_k; (2) multiplying by 2^-k only changes the
// exponent, which is exact while the result is a normal float64 or zero: for
// S_k != 0, 2^-k <= |S_k| 2^-k <= 2^(53-k), and with -970 <= k <= 1022 that is
// within [2^-1022, 2^1023], the normal range. So the read-backs of two sums
// differ by exactly 2^-k times the integers' difference. An entry beyond
// MaxExactSum is rounded to 53 bits (and one beyond 2^63 wraps): readers of a
// sum computed elsewhere fold such entries into range first
// (fedopt.Server.ReleaseRingSum).
func (q Quantizer) Dequantize(dst []float64, sum []uint64) {
	if len(dst) != len(sum) {
		panic(fmt.Sprintf("secagg: dequantize: len(dst) = %d, want len(sum) = %d", len(dst), len(sum)))
	}
	for i, s := range sum {
		dst[i] = math.Ldexp(float64(int64(s)), -q.ScaleBits)
	}
}

// Term returns sqrt(dim) 2^{-k-1}, rounded up: the bound on ||Q(u) 2^-k - u||_2 for
// an update u of dim coordinates, each moved by at most 2^{-k-1} by rounding to
// nearest. It is the quantization term of the calibration.
func (q Quantizer) Term(dim int) float64 {
	d := float64(dim)
	s := math.Sqrt(d)
	if math.FMA(s, s, -d) < 0 { // round sqrt(d) up
		s = math.Nextafter(s, math.Inf(1))
	}
	return math.Ldexp(s, -q.ScaleBits-1)
}

// AddRing sets dst[i] += x[i] in Z_{2^64} (wrapping uint64 addition).
func AddRing(dst, x []uint64) { addRing("AddRing", dst, x, 1) }

// SubRing sets dst[i] -= x[i] in Z_{2^64} (wrapping uint64 subtraction).
func SubRing(dst, x []uint64) { addRing("SubRing", dst, x, math.MaxUint64) }

// addRing sets dst[i] += sign x[i] in Z_{2^64}: sign 1 adds, sign
// 2^64 - 1 (-1) subtracts. A length mismatch is a programming error and
// panics, naming the caller.
func addRing(name string, dst, x []uint64, sign uint64) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("secagg: %s: len(dst) = %d, len(x) = %d", name, len(dst), len(x)))
	}
	for i, v := range x {
		dst[i] += sign * v
	}
}
