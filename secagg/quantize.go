package secagg

import (
	"fmt"
	"math"
	"math/big"
)

// RingBits is the width of the ring Z_{2^RingBits} in which masked updates are summed:
// uint64 arithmetic.
const RingBits = 64

// headroomBits: the quantized sum of n honest updates of norm at most tau clip
// stays within [-2^62, 2^62] (NewQuantizer's choice of the scale bits), and
// with the relative margin of 1e-9 that fedopt.UpdateBound allows an update within
// 2^62 (1 + 1e-9) + n/2 < 2^63, so its int64 reading never wraps (the ring
// holds [-2^63, 2^63)).
const headroomBits = 62

// Scale bits are kept where 2^-k and 2^k stay normal float64 numbers.
const (
	minScaleBits = -1022
	maxScaleBits = 1022
)

// Quantizer maps a float64 update to the ring Z_{2^64}: coordinate k becomes
// q_k = round(u_k 2^ScaleBits), stored as an int64 in two's complement, and a ring
// sum S is read back as float64(int64(S)) 2^-ScaleBits. The zero value (ScaleBits
// 0) rounds to integers; NewQuantizer chooses ScaleBits so that the sum of n
// updates never wraps.
type Quantizer struct {
	// ScaleBits is k: the fixed-point scale 2^k.
	ScaleBits int
}

// NewQuantizer returns the quantizer for n learners whose updates have L2 norm at
// most tau*clip (tau local steps, each clipped to clip): ScaleBits is the largest
// integer k with n (tau clip 2^k + 1/2) <= 2^62, so the signed sum of n quantized
// updates (each coordinate at most tau clip 2^k + 1/2 in magnitude, and one more
// half for rounding) never wraps in Z_{2^64}. The condition is evaluated exactly.
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
	// Start from the float estimate and step to the exact answer.
	_, en := math.Frexp(float64(n))
	_, et := math.Frexp(float64(tau))
	_, ec := math.Frexp(clip) // n tau clip < 2^(en+et+ec)
	k := min(max(headroomBits-en-et-ec, minScaleBits-2), maxScaleBits+2)
	for k > minScaleBits-2 && !fits(n, tau, clip, k) {
		k--
	}
	for k < maxScaleBits+2 && fits(n, tau, clip, k+1) {
		k++
	}
	if !fits(n, tau, clip, k) || k < minScaleBits {
		return Quantizer{}, fmt.Errorf("secagg: n tau clip = %d*%d*%v is too large for the ring Z_2^64 (no scale bits k >= %d fit)", n, tau, clip, minScaleBits)
	}
	if k > maxScaleBits {
		return Quantizer{}, fmt.Errorf("secagg: n tau clip = %d*%d*%v is too small: scale bits k = %d, want k <= %d", n, tau, clip, k, maxScaleBits)
	}
	return Quantizer{ScaleBits: k}, nil
}

// fits reports exactly whether n (tau clip 2^k + 1/2) <= 2^62.
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

// limit returns the largest float64 t <= min(bound 2^k + 1/2, 2^62): for a float64
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
