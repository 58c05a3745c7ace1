package accountant

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/dpmf/dpmf/internal/ddfloat"
	"github.com/dpmf/dpmf/internal/par"
	"gonum.org/v1/gonum/dsp/fourier"
)

// This file composes discretised loss distributions by FFT.

// unitRound is the unit roundoff of float64.
const unitRound = 0x1p-53

// fftErrorConst returns c with every coefficient of a real FFT of length n
// in error by at most c ||x||_1: 16 log2(n) u. A radix-2 stage adds at most
// (1 + sqrt 2 gamma_2 + mu) u-sized errors per butterfly (mu the twiddle
// factors' accuracy; Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., section 24.1); 16 per stage covers gonum's
// mixed-radix FFTPACK port and its real-to-complex post-processing.
func fftErrorConst(n int) float64 {
	return 16 * math.Ceil(math.Log2(float64(n)+1)) * unitRound
}

// bigFFT serialises, on a 32-bit platform, the self-compositions whose
// transforms have at least bigFFTLen points: a PLD composes its four
// distributions concurrently (PLD.each), and four transforms of 2^24 points
// with their spectra, powers and outputs, about 1 GB each, exceed a 32-bit
// process's 4 GiB address space (SampledGaussian(0.01, 1, 10^9, r) ran out
// of memory at 3.97 GB). One at a time they fit; smaller ones, and every
// one on a 64-bit platform, run concurrently.
var bigFFT sync.Mutex

// bigFFTLen is the transform length from which bigFFT serialises.
const bigFFTLen = 1 << 22

// is32bit reports whether int (and the address space) has 32 bits.
const is32bit = math.MaxInt == math.MaxInt32

// holdBig takes bigFFT for a transform of n points where it serialises
// them, and returns the function that releases it.
func holdBig(n int) (release func()) {
	if !is32bit || n < bigFFTLen {
		return func() {}
	}
	bigFFT.Lock()
	return bigFFT.Unlock
}

// fastLen returns the least 2^a 3^b 5^c >= n that gonum's FFT accepts:
// its FFTPACK port factors a length into 4s, then 2, 3 and 5, and has room
// for at most 12 factors (a length such as 3^13 makes it panic).
func fastLen(n int) int {
	best := math.MaxInt
	for p5, c := 1, 0; p5 < 2*n; p5, c = p5*5, c+1 {
		for p3, b := p5, 0; p3 < 2*n; p3, b = p3*3, b+1 {
			p, a := p3, 0
			for p < n {
				p *= 2
				a++
			}
			if a/2+a%2+b+c <= 12 && p < best {
				best = p
			}
		}
	}
	return best
}

// spectrumSums returns the sum over all n frequencies of |c_j| and
// sqrt(sum of |c_j|^2) from the n/2+1 coefficients c of a real sequence of
// length n.
func spectrumSums(c []complex128, n int) (l1, l2 float64) {
	vs := make([]float64, len(c))
	par.Range(len(c), chunk, costHypot, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			vs[j] = math.Hypot(real(c[j]), imag(c[j]))
		}
	})
	return weightedSums(vs, n)
}

// weightedSums returns the sum over all n frequencies of v_j and
// sqrt(sum of v_j^2) from the values v at the n/2+1 coefficients of a real
// sequence of length n (see specWeight).
func weightedSums(v []float64, n int) (l1, l2 float64) {
	for j, x := range v {
		w := specWeight(j, n)
		l1 += w * x
		l2 += w * x * x
	}
	return l1, math.Sqrt(l2)
}

// specWeight returns how many of the n frequencies coefficient j of a real
// sequence's n/2+1 stands for: 1 for j = 0 and j = n/2 (n even), else 2.
func specWeight(j, n int) float64 {
	if j == 0 || (n%2 == 0 && j == n/2) {
		return 1
	}
	return 2
}

// tiltTarget is the tail probability the exponential tilt of a composition
// is tuned for: the tilt makes the rounding error of the masses whose
// losses lie that far out small relative to those masses, and it stays
// small relative to delta from about 1e-2 to 1e-15 (at 10^6 compositions;
// a wider range for fewer), production federated learning's 1e-10
// included.
const tiltTarget = 1e-5

// logAdd returns log(e^a + e^b): +Inf if either is +Inf (an absent
// bound; a + log1p(e^(b - a)) is NaN when both are, and selfConvolve's
// test for an absent bound at a tilt below its input's missed that NaN).
func logAdd(a, b float64) float64 {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return math.Inf(1)
	}
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// errFrom returns the bound on the l1 error of d's masses at absolute grid
// indices j and above: e^(logErr - tau max(j, errLo)) (j where errLo is
// not recorded), plus the smallest of the bounds
// of prop, the propagated part. j is a float64: an index of an epsilon far
// beyond the grid may exceed an int (on a 32-bit platform).
func (d *lossDist) errFrom(j float64) float64 {
	e := 0.0
	if !math.IsInf(d.logErr, -1) {
		// Below errLo the tail sum of the part other than prop is the
		// one at errLo: no such error lies below it.
		jm := j
		if d.hasErrLo && jm < float64(d.errLo) {
			jm = float64(d.errLo)
		}
		e = math.Exp(d.logErr - d.tau*jm)
	}
	if len(d.prop) > 0 {
		p := math.Inf(1)
		for _, b := range d.prop {
			if b.capped && j > float64(b.top) {
				p = 0 // no error of this part at j or above
				break
			}
			p = math.Min(p, math.Exp(b.logErr-b.tau*j))
		}
		e += p
	}
	return e
}

// hasErr reports whether d has an additive error.
func (d *lossDist) hasErr() bool { return !math.IsInf(d.logErr, -1) || len(d.prop) > 0 }

// hiIndex returns d's last stored absolute index, as a float64.
func (d *lossDist) hiIndex() float64 { return float64(d.lo + len(d.mass) - 1) }

// logErrAt returns the log of a bound on d's error's tail sums at the
// tilt t: S(j) = sum_{i >= j} |e_i| <= e^(logErrAt(t) - t j) for every
// absolute index j. No error lies above d's last index hi (see lossDist;
// errors below its first one are allowed), so a bound at tau <= t carries
// over as
//
//	j <= hi: S(j) <= e^(logErr - tau j) = e^(logErr + (t - tau) j - t j)
//	                <= e^(logErr + (t - tau) hi - t j)   ((t - tau)(hi - j) >= 0)
//	j >  hi: S(j) = 0
//
// An error above hi, at hi + D, would need (t - tau)(hi + D) in place of
// (t - tau) hi: self-compositions once left the part of their input's
// error propagated above their window there, and a composition at a
// higher tilt undercounted it by e^(-(t - tau) D)
// (TestSelfComposeCutThenHigherTilt).
// With perIdx (|e_i| <= P e^(-tau i) for i <= hi, plus a part of weighted
// l1 norm at most C at tau), for t > 0, it takes the smaller of that and
//
//	S(j) <= C e^((t - tau) hi - t j) + P sum_{j <= i <= hi} e^(-t i) e^((t - tau) i)
//	     <= e^((t - tau) hi - t j) (C + P / (1 - e^-t))
//
// (e^(-tau i) = e^(-t i + (t - tau) i) <= e^(-t j + (t - tau) hi) for
// j <= i <= hi), and, with g = t - tau > 0 and y = hi - j >= 0,
//
//	P sum_{j <= i <= hi} e^(-tau i) <= P e^(-tau j) (y + 1)
//	     <= P e^(-tau j) e^(g y) e^(g - 1) / g = P e^(g hi - t j) e^(g - 1) / g
//
// ((y + 1) e^(-g y) is largest at y = 1/g - 1; the factor is about 1/e
// of 1 / (1 - e^-t) for small tilts). The propagated part prop adds the smallest of its
// bounds carried to t the same way (those at tilts up to t).
// A lower tilt would need the lowest index an error can occupy, which d
// does not record (as j falls, e^(-tau j) outgrows e^(-t j)): below a
// tilt it returns +Inf (no bound). convolve composes at the larger of its
// inputs' tilts, selfConvolve at d's own, or at a positive one where d's
// is 0, and carries d's error to tilts at which this is finite.
func (d *lossDist) logErrAt(t float64) float64 {
	m := d.mainErrAt(t, false)
	if len(d.prop) == 0 {
		return m
	}
	return logAdd(m, d.propAt(t, false))
}

// mainErrAt returns the log of the bound at the tilt t on the tail sums
// (weighted l1 norm if w) of d's error other than prop (see logErrAt and
// logErrWAt): -Inf if it has none, +Inf for t < d.tau.
func (d *lossDist) mainErrAt(t float64, w bool) float64 {
	if math.IsInf(d.logErr, -1) {
		return d.logErr
	}
	if t < d.tau {
		if !d.hasErrLo {
			return math.Inf(1)
		}
		// Every error at i >= L = errLo: sum_{i >= j} |e_i| <=
		// e^(logErr - tau max(j, L)) <= e^(logErr - (tau - t) L - t j),
		// and e^(t i) <= e^(tau i) e^(-(tau - t) L) in the weighted norm.
		l := d.logErr - (d.tau-t)*float64(d.errLo)
		if w {
			l += d.logGapW
		}
		return l
	}
	hi := d.hiIndex()
	l := d.logErr + (t-d.tau)*hi
	if w {
		l += d.logGapW
	}
	// The per-index form: the tail sums take K = min(1 / (1 - e^-t),
	// e^(g - 1) / g) with g = t - tau, the weighted norm
	// sum_{i <= hi} e^(g i) <= e^(g hi) / (1 - e^-g).
	if g := t - d.tau; d.perIdx && t > 0 {
		lk := math.Inf(1)
		if w {
			if g > 0 {
				lk = -math.Log(-math.Expm1(-g))
			}
		} else {
			lk = -math.Log(-math.Expm1(-t))
			if g > 0 {
				lk = math.Min(lk, g-1-math.Log(g))
			}
		}
		if !math.IsInf(lk, 1) {
			l = math.Min(l, logAdd(d.logC, d.logPer+lk)+g*hi)
		}
	}
	return l
}

// perIdxAt returns the per-index form of d's error bound carried to the
// tilt t >= d.tau (see lossDist.perIdx): for i <= hi, |e_i| <= P e^(-tau i)
// <= P e^((t - tau) hi) e^(-t i), and a weighted norm C at tau is at most
// C e^((t - tau) hi) at t; both -Inf where d has no error. ok is false
// where d's error has no such form (prop, or a tail-sum bound only) or
// t < tau.
func (d *lossDist) perIdxAt(t float64) (logP, logC float64, ok bool) {
	if !d.hasErr() {
		return math.Inf(-1), math.Inf(-1), true
	}
	if !d.perIdx || len(d.prop) > 0 || t < d.tau {
		return 0, 0, false
	}
	g := (t - d.tau) * d.hiIndex()
	return d.logPer + g, d.logC + g, true
}

// propAt returns the log of the smallest of prop's bounds on the tail sums
// (weighted l1 norm if w) carried to the tilt t as in logErrAt: +Inf if
// every one has a tilt above t, -Inf if prop is empty.
func (d *lossDist) propAt(t float64, w bool) float64 {
	if len(d.prop) == 0 {
		return math.Inf(-1)
	}
	hi := d.hiIndex()
	l := math.Inf(1)
	for _, b := range d.prop {
		if b.tau <= t {
			top := hi
			if b.capped {
				top = math.Min(top, float64(b.top))
			}
			v := b.logErr + (t-b.tau)*top
			if w {
				v += b.logGapW
			}
			l = math.Min(l, v)
		}
	}
	return l
}

// logErrWAt returns the log of a bound on d's error in the weighted l1
// norm at the tilt t >= d.tau, sum_i |e_i| e^(t i): e^(logErr + logGapW)
// bounds it at d.tau, and the weights grow by at most e^((t - tau) hi)
// over the indices i <= hi where errors lie (for perIdx and prop, see
// mainErrAt and propAt). A tail-sum bound alone does not bound this norm
// (the errors at the indices below j may make up all of it); only a
// product of two errors needs it.
func (d *lossDist) logErrWAt(t float64) float64 {
	m := d.mainErrAt(t, true)
	if len(d.prop) == 0 {
		return m
	}
	return logAdd(m, d.propAt(t, true))
}

// support returns the first and last index with positive mass (0, -1 if none).
func (d *lossDist) support() (first, last int) {
	first, last = 0, len(d.mass)-1
	for first <= last && d.mass[first] == 0 {
		first++
	}
	for last >= first && d.mass[last] == 0 {
		last--
	}
	if first > last {
		return 0, -1
	}
	return first, last
}

// logMGF returns log sum_i m_i e^(s i) (i the offset in d.mass), stably:
// summed from the end of the support where the exponent is largest, with
// the factor e^(-|s|) applied by one multiplication per point (a relative
// error of at most n u, covered by the 1e-9 added) until it falls below
// 1e-300. first and last are d's support; it is -Inf for a distribution
// without finite mass (first > last).
func (d *lossDist) logMGF(s float64, first, last int) float64 {
	if first > last {
		return math.Inf(-1)
	}
	top, step := first, 1 // where the exponent is largest, and away from it
	if s > 0 {
		top, step = last, -1
	}
	r := math.Exp(-math.Abs(s))
	sum, f := 0.0, 1.0
	for i := top; i >= first && i <= last && f > 1e-300; i += step {
		sum += d.mass[i] * f
		f *= r
	}
	return logf(sum) + 1e-9 + s*float64(top)
}

// scanMin returns the argument and value of the least f(guess 2^j) over
// the octaves j = -24..8, found from every fourth octave, then the octaves
// around the best, then quarter octaves around the best of those. The
// functions scanned (Chernoff exponents) are unimodal in log s, so this
// finds the least octave of the full scan with 21 evaluations instead of
// 33, and refines it; any s gives a valid bound.
//
// The evaluations of each of the three rounds run on all cores (f must be
// safe for concurrent use; cost is the work of one evaluation in units of
// par.Grain's), and are compared in the order of j, the first of equal
// values kept, as one at a time would.
func scanMin(f func(float64) float64, guess, cost float64) (arg, val float64) {
	best, bv := 0.0, math.Inf(1)
	var js, vs []float64
	round := func() {
		vs = slices.Grow(vs[:0], len(js))[:len(js)]
		par.For(len(js), cost*float64(len(js)), func(i int) { vs[i] = f(guess * math.Exp2(js[i])) })
		for i, v := range vs {
			if v < bv {
				best, bv = js[i], v
			}
		}
		js = js[:0]
	}
	for j := -24.0; j <= 8; j += 4 {
		js = append(js, j)
	}
	round()
	c := best
	for j := math.Max(c-3, -24); j <= math.Min(c+3, 8); j++ {
		if j != c {
			js = append(js, j)
		}
	}
	round()
	c = best
	for j := c - 0.75; j <= c+0.75; j += 0.25 {
		if j != c {
			js = append(js, j)
		}
	}
	round()
	return guess * math.Exp2(best), bv
}

// mgfCost is the work of one logMGF over a support of n points (and of
// a scanMin evaluation that calls it once), in units of par.Grain's.
func mgfCost(n int) float64 { return 2 * float64(n) }

// inverseBound returns the inverse transform w of the length-n spectrum
// c (its n/2+1 coefficients), and a bound on each entry's error
// ([indexBound]).
func inverseBound(tr *fourier.FFT, c []complex128, in, outAbs []float64, n int) (w []float64, perIndex float64) {
	perIndex = indexBound(in, outAbs, n)
	w = tr.Sequence(nil, c)
	scale(w, 1/float64(n))
	return w, perIndex
}

// indexBound returns the bound on the error of each entry of the inverse
// transform (times 1/n) of a length-n spectrum whose n/2+1 coefficients
// err by at most in[j] (outAbs[j] bounds their moduli): the inverse
// spreads those errors over the entries by at most the smaller of their
// l1 norm / n and l2 norm / sqrt(n), and adds its own rounding,
// fftErrorConst(n) times the coefficients' l1 norm with their errors, / n.
func indexBound(in, outAbs []float64, n int) float64 {
	nf := float64(n)
	F1, F2 := weightedSums(in, n)
	out1, _ := weightedSums(outAbs, n)
	return math.Min(F1/nf, F2/math.Sqrt(nf)) + fftErrorConst(n)*(out1+F1)/nf
}

// lowerTilt returns the tilt t lowered by factors of 0.8 (at most 12
// times, to 0.07 of it) while the upper Chernoff end, at tail mass fold,
// of the k-fold composition tilted at t (step log MGF mgf) lies further
// above the untilted composition's window [-negA, b0] than that window's
// length: a mixture's rare large losses, tilted up, can stretch the
// window, and the FFT, tenfold.
func lowerTilt(t, kf float64, mgf func(float64) float64, negA, b0, fold, guess, cost float64) float64 {
	for range 12 {
		mt := mgf(t)
		_, b1 := scanMin(func(s float64) float64 { return (kf*(mgf(t+s)-mt) - logf(fold)) / s }, guess, cost)
		if !(b1-b0 > 2*(b0+negA)) {
			break
		}
		t *= 0.8
	}
	return t
}

// chernoffWindow returns the window sA..sB of a composition's offsets
// 0..full-1: from its lower Chernoff end -negA to the larger of the upper
// ends of the composition (b0) and of its tilted version (b1), clamped to
// the offsets (NaN ends leave the window at its full extent).
// The offsets are int64s: on a 32-bit platform they may exceed an int
// (maxFull).
func chernoffWindow(negA, b0, b1 float64, full int64) (sA, sB int64) {
	sA, sB = 0, full-1
	if a := math.Floor(-negA); a > 0 && !math.IsNaN(a) {
		sA = int64(math.Min(a, float64(full-1)))
	}
	if b := math.Ceil(math.Max(b0, b1)); b < float64(full-1) && !math.IsNaN(b) {
		sB = max(int64(b), sA)
	}
	return sA, sB
}

// windowTails returns Chernoff bounds on the masses that the window of
// offsets sA..sB leaves out of a k-fold composition over offsets
// 0..full-1 whose step has the log MGF mgf (logMt: that of the step tilted
// at the composition's tilt, normalised): above, the composition's mass
// above sB (0 if sB is the last offset), which a pessimistic distribution
// adds to its infinite mass; and fold, the error the window makes in the
// tilted composition: its tilted mass above sB, which the cyclic
// transform folds into the window, and twice its tilted mass below sA,
// which the transform folds into the window and which is also missing
// below it (an error on both sides of sA; see pairPower).
func windowTails(kf float64, mgf, logMt func(float64) float64, sA, sB, full int64, guess, cost float64) (above, fold float64) {
	if sB < full-1 {
		_, up := scanMin(func(s float64) float64 { return kf*mgf(s) - s*float64(sB+1) }, guess, cost)
		_, upT := scanMin(func(s float64) float64 { return kf*logMt(s) - s*float64(sB+1) }, guess, cost)
		above = math.Exp(up)
		fold += math.Exp(upT)
	}
	if sA > 0 {
		_, dnT := scanMin(func(s float64) float64 { return kf*logMt(-s) + s*float64(sA-1) }, guess, cost)
		fold += 2 * math.Exp(dnT)
	}
	return above, fold
}

// spreadGuess returns sqrt(2 log(1/tail) / (k var)), var the variance of
// d's offsets under its normalised masses: the Chernoff parameter of a
// Gaussian of the composed variance. It is 0 for a point mass.
func spreadGuess(d *lossDist, k int, tail float64) float64 {
	m := sum(d.mass)
	if !(m > 0) {
		return 0
	}
	var mean, sq float64
	for i, v := range d.mass {
		mean += v * float64(i)
	}
	mean /= m
	for i, v := range d.mass {
		sq += v * (float64(i) - mean) * (float64(i) - mean)
	}
	if !(sq > 0) {
		return 0
	}
	return math.Sqrt(-2 * logf(tail) / (float64(k) * sq / m))
}

// tilted returns d's masses times e^(t (i - last)) / Z (last the top of the
// support, Z making their sum 1), wrapped into a sequence of length n, with
// log Z and a bound on their relative rounding error. A mass whose tilted
// value underflows (before the division by Z) is lost; the loss is at most
// n 2^-1074 / Z in the tilted l1 norm (Z <= 1; tiny where the top mass
// is), which the caller adds to its error ([lostBound]).
func (d *lossDist) tilted(t float64, n int) (seq []float64, logZ, rel float64) {
	_, last := d.support()
	// The tilted masses go straight into seq when they fit, else into w
	// and are wrapped into seq.
	seq = make([]float64, n)
	w := seq[:min(len(d.mass), n)]
	if len(d.mass) > n {
		w = make([]float64, len(d.mass))
	}
	par.Range(len(d.mass), chunk, costExp, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			// A zero mass above the support stays 0: at a large tilt
			// its weight e^(t (i - last)) overflows, and 0 * Inf is NaN.
			if d.mass[i] != 0 {
				w[i] = d.mass[i] * math.Exp(t*float64(i-last))
			}
		}
	})
	z := sum(w)
	if z < 0x1p-900 {
		// A subnormal or tiny Z: 1/Z would overflow (masses +Inf, NaN).
		// Scaling by a power of two is exact here.
		scale(w, 0x1p600)
		z = sum(w)
		defer func() { logZ -= 600 * math.Ln2 }()
	}
	inv := 1 / z
	if len(d.mass) > n {
		// Wrapped: the sums into seq stay in order.
		for i, x := range w {
			seq[i%n] += x * inv
		}
	} else {
		scale(w, inv)
	}
	// The exponent t (i - last) is rounded by u |t (i - last)|; exp, the
	// product, the division and the wrapping add a few u each. The
	// rounding of the sum z does not count: every caller untilts with the
	// same computed log z, so it cancels.
	rel = 8 * unitRound * (2 + t*float64(len(d.mass)) + float64(len(d.mass)/n))
	return seq, logf(z), rel
}

// lostBound returns 16 n 2^-1074 / Z, Z = e^logZ: a bound, with room for
// rounding, on the tilted l1 norm of the masses tilted lost to underflow
// (+Inf where it overflows: no bound).
func lostBound(n int, logZ float64) float64 {
	return math.Exp(logf(float64(n)) - 1070*math.Ln2 - logZ)
}

// logWeight returns log sum_i m_i e^(t (lo+i)) from tilted's log Z.
func (d *lossDist) logWeight(t, logZ float64) float64 {
	_, last := d.support()
	// logZ is the log of a computed sum of len(d.mass) terms: up to
	// len(d.mass) u below the exact one.
	return logZ + t*float64(d.lo+last) + 2*unitRound*float64(len(d.mass))
}

// fftErrorParts returns the terms of the error bound of a circular
// convolution computed as the inverse transform of the product of the
// transforms ca and cb of sequences of l1 norms ma and mb (see convolve),
// min(e1, e2) + inv + prod in l1: bounds e1 on the l1 norm
// and e2 on the l2 norm of the error of the product spectrum (each an l1
// bound of the error it makes in the inverse transform divided by n; at
// each index it makes at most min(e1 / n, e2 / sqrt(n))), the l1 bound inv
// of the inverse transform's own rounding (at most inv / n at each index),
// and the rounding prod of the products' sum, in l1.
func fftErrorParts(ca, cb, c []complex128, n int, ma, mb float64) (e1, e2, inv, prod float64) {
	fe := fftErrorConst(n)
	ea, eb := fe*ma, fe*mb
	nf := float64(n)
	sa, na := spectrumSums(ca, n)
	sb, nb := spectrumSums(cb, n)
	sc, nc := spectrumSums(c, n)
	// A complex float64 product errs by at most sqrt5 u relatively.
	e1 = ea*sb + eb*sa + nf*ea*eb + math.Sqrt(5)*unitRound*sc
	e2 = ea*nb + eb*na + math.Sqrt(nf)*ea*eb + math.Sqrt(5)*unitRound*nc
	return e1, e2, fe * (sc + e1), 2 * unitRound * ma * mb
}

// convolve returns a composed with b: the linear convolution of the finite
// masses, with infinite mass 1 - (1 - a.inf)(1 - b.inf) bounded above by
// a.inf + b.inf. Both are tilted by e^(t l) before the FFT (t the larger of
// their tilts; 0 for two single events) and untilted after it (see
// selfConvolve). At tilt 0 the composition's rounding is about u times
// the largest mass at every index up to its last; its per-index form
// (lossDist.perIdx) keeps a later self-composition, which carries it to
// its own tilt, from counting it as all lying at the last index. Where
// one input's tilt is below t, its error's term is bounded at tilts from
// its own up (splitLow); an error carried to t by the largest change of
// the weights over its indices is loose at the losses below those t was
// tuned for.
func convolve(a, b *lossDist) (*lossDist, error) {
	if a == noOpt || b == noOpt {
		return noOpt, nil
	}
	return convolveAt(a, b, composeTilt(a, b))
}

// composeTilt returns the tilt convolve composes a and b at: the larger
// of their tilts, or, where one carries an error that logErrAt can carry
// below its tilt (hasErrLo) and the other an error that it cannot, the
// other's: the input at the higher tilt then has its error carried down
// (at most e^2 of the bound, see pairTilt) rather than the other's masses,
// whose rounding noise at high losses a higher tilt weights up, and its
// error, carried up.
func composeTilt(a, b *lossDist) float64 {
	fixed := func(d *lossDist) bool { return d.hasErr() && !d.hasErrLo }
	switch {
	case a.hasErrLo && fixed(b):
		return b.tau
	case b.hasErrLo && fixed(a):
		return a.tau
	}
	return math.Max(a.tau, b.tau)
}

// maxFull bounds the whole range of a self-composition's grid indices,
// k (|lo| + n - 1) for k compositions of a grid of n points from index lo:
// 2^52 on every platform, so that they, their sums and their offsets are
// int64s that float64 holds exactly. The composition computes them as
// int64s; only the window it stores (at most 2^24 points) must have int
// indices (maxSpan).
const maxFull = 1 << 52

// maxSpan bounds the absolute grid indices a distribution stores, so that
// they and their sums stay ints: 2^52, or 2^30 - 1 on a 32-bit platform.
// On a 32-bit platform a self-composition's whole range of indices may
// exceed it (10^9 sampled steps: about 10^12) while its window, the part
// stored, lies far inside it (about 10^8): only the window is checked
// (windowLo).
const maxSpan = min(maxFull, math.MaxInt>>1)

// windowLo returns the first absolute index lo of a composition's stored
// window of n points as an int, or a grid error if lo .. lo + n - 1 reach
// beyond maxSpan (only on a 32-bit platform, with the composition's losses
// beyond about 2^30 grid intervals from 0; a larger interval h helps).
func windowLo(lo int64, n int, h float64) (int, error) {
	if max(-lo, lo+int64(n)-1) > maxSpan {
		return 0, errGrid("the composition's stored loss grid reaches index "+strconv.FormatInt(max(-lo, lo+int64(n)-1), 10)+
			" at interval "+ftoa(h)+", beyond this platform's limit 2^30-1", h)
	}
	return int(lo), nil
}

// convolveAt is convolve at the tilt t.
func convolveAt(a, b *lossDist, t float64) (*lossDist, error) {
	return convolveBound(a, b, t, nil)
}

// tailSpans, given to convolveBound, makes it bound the FFT's error per
// output index (as selfConvolve does) rather than in l1; lowB is an
// absolute grid index at or above which every error of b's masses lies
// (b's own lo before any trim: k lo for k compositions of a step from lo).
type tailSpans struct{ lowB int }

// convolveBound is convolveAt, with the FFT's error bounded per index if
// spans is not nil. The error of the masses is then bounded by its tail
// sums only (sum_{i >= j} |e_i| <= e^(logErr - t j), the property the
// queries use), which needs no l1 norm of the FFT's error: the inverse
// transform divided by n errs by at most min(e1 / n, e2 / sqrt(n)) plus
// its own inv / n at every index (fftErrorParts), and over the indices
// s >= j the untilting weights e^(t (top - s)) sum to at most
// e^(t (top - j)) times terms = min(1 / (1 - e^-t), the output's length):
// about n t times less than the l1 bound where t is small. The inputs'
// errors propagate through their tail sums too: with b >= 0, the tail
// sum at j of e^a * b is at most sum_m b_m S^a(j - m) <= e^(la - t j) W_b
// (W_b = sum_m b_m e^(t m)), and that of e^a * e^b at most e^(la - t j)
// times the weighted l1 norm of e^b, which Abel summation bounds by
// e^(lb) (1 + span_b (1 - e^-t)), span_b the number of indices e^b can
// occupy. Both inputs must have the tilt t (their tail-sum bounds are
// not carried to another tilt).
//
// Without spans (convolveAt, Compose) the inputs may have any tilts up to
// t and their errors are bounded as logErrAt and logErrWAt say: tail sums
// S^a(j) = sum_{i >= j} |e^a_i| <= e^(la - t j), weighted l1 norms
// ||e^a||_t = sum_i |e^a_i| e^(t i) <= e^(laW), and likewise for b. The
// composition's error is e^a * b + a * e^b + e^a * e^b (a, b >= 0 the
// computed masses), whose tail sum at j is at most
//
//	sum_m b_m S^a(j - m) + sum_m a_m S^b(j - m) + sum_m |e^b_m| S^a(j - m)
//	<= e^(-t j) (e^la W_b + e^lb W_a + e^la ||e^b||_t)
//
// and symmetrically with e^lb ||e^a||_t in the last term: the product
// term needs one input's weighted l1 norm, not its tail-sum bound. A
// self-composition bounds its FFT's error per index, so its tail sums are
// about (output length) t times below that norm (logGapW); taking la + lb
// for the product, as this once did, undercounted it by up to that factor.
// The weighted l1 norm of the output is bounded the same way, with
// ||x * y||_t <= ||x||_t ||y||_t in every term, and carried in logGapW.
func convolveBound(a, b *lossDist, t float64, spans *tailSpans) (*lossDist, error) {
	na, nb := len(a.mass), len(b.mass)
	if na+nb-1 > maxGrid {
		return nil, errGrid("the composed loss grid needs more than 2^24 points", 0)
	}
	// Its indices a.lo + b.lo .. + na + nb - 2 are ints (a bound reached
	// only on a 32-bit platform, after many compositions).
	if math.Abs(float64(a.lo)+float64(b.lo))+float64(na+nb) > math.MaxInt>>1 {
		return nil, &gridError{"the composed loss grid's indices exceed " + itoa(math.MaxInt>>1) + "; compose fewer PLDs"}
	}
	r := &lossDist{
		lo:        a.lo + b.lo,
		inf:       math.Min(1, a.inf+b.inf),
		infl:      (1+a.infl)*(1+b.infl) - 1,
		tau:       t,
		logErr:    math.Inf(-1),
		unbounded: a.unbounded || b.unbounded,
	}
	_, lastA := a.support()
	_, lastB := b.support()
	if lastA < 0 || lastB < 0 {
		r.mass = []float64{0}
		r.rel = (1+a.rel)*(1+b.rel) - 1
		return r, nil
	}
	n := fastLen(na + nb - 1)
	sa, logZa, relA := a.tilted(t, n)
	sb, logZb, relB := b.tilted(t, n)
	logWa, logWb := a.logWeight(t, logZa), b.logWeight(t, logZb)
	ma, mb := sum(sa), sum(sb)
	var w []float64
	// The FFT's error: in the tail-sum form, and in the weighted l1 norm;
	// in the per-index form, fftP at each tilted entry and fftC in l1.
	var fftErr, fftErrW, fftP, fftC float64
	if na == 1 || nb == 1 { // a point mass: a shift and a scale
		small, big := sa, sb
		if nb == 1 {
			small, big = sb, sa
		}
		w = make([]float64, na+nb-1)
		for i := range w {
			w[i] = big[i] * small[0]
		}
	} else {
		tr := fourier.NewFFT(n)
		ca := tr.Coefficients(nil, sa)
		cb := tr.Coefficients(nil, sb)
		c := make([]complex128, len(ca))
		par.Range(len(c), chunk, 8, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				c[j] = ca[j] * cb[j]
			}
		})
		e1, e2, inv, prod := fftErrorParts(ca, cb, c, n, ma, mb)
		nf := float64(n)
		perIndex := math.Min(e1/nf, e2/math.Sqrt(nf)) + inv/nf
		if spans == nil {
			fftErr = math.Min(e1, e2) + inv + prod
			fftErrW = fftErr
		} else {
			terms := math.Min(1/-math.Expm1(-t), float64(na+nb-1))
			fftErr = perIndex*terms + prod
			fftErrW = perIndex*float64(na+nb-1) + prod
		}
		w = tr.Sequence(nil, c)
		scale(w, 1/float64(n))
		fftErr += 2 * unitRound * sum(w)
		fftErrW += 2 * unitRound * sum(w)
		// The per-index form of the FFT's error (see lossDist.perIdx):
		// perIndex at each tilted entry, the rest in l1.
		fftP = perIndex
		fftC = prod + 2*unitRound*sum(w)
	}
	lost := lostBound(na, logZa) + lostBound(nb, logZb) // tilted masses lost to underflow
	fftC += lost
	fftErr += lost
	fftErrW += lost
	top := lastA + lastB
	r.mass = make([]float64, na+nb-1)
	expMax := untiltAll(r.mass, func(s int) float64 { return w[s] },
		func(s int) float64 { return logZa + logZb + t*float64(top-s) })
	relU := 8 * unitRound * (800 + expMax)
	r.rel = (1+a.rel)*(1+b.rel)*(1+relA)*(1+relB)*(1+relU) - 1
	la, lb := a.logErrAt(t), b.logErrAt(t)
	laW, lbW := a.logErrWAt(t), b.logErrWAt(t) // weighted l1 norms
	// lbP: the bound on b's weighted l1 norm the product term takes.
	lbP := lbW
	if spans != nil {
		if (a.tau != t && !math.IsInf(la, -1)) || (b.tau != t && !math.IsInf(lb, -1)) {
			return nil, errPLD("internal: convolveBound's inputs are not at its tilt")
		}
		span := float64(b.lo+nb-1) - float64(spans.lowB)
		lbP = lb + math.Log1p(math.Max(span, 0)*-math.Expm1(-t))
	}
	// The product term takes one input's tail sums and the other's
	// weighted norm: a's norm where that is smaller (never where both
	// gaps are 0, so that such results stay as they were).
	prop := logAdd(la+logAdd(logWb, lbP), lb+logWa)
	if spans == nil && laW+lb < la+lbW {
		prop = logAdd(lb+logAdd(logWa, laW), la+logWb)
	}
	propW := logAdd(laW+logWb, logAdd(laW+math.Min(lbW, lbP), lbW+logWa))
	// One input at a tilt below t with an error and the other at t
	// (Compose of PLDs of different tilts), where the result takes no
	// per-index form: that input's term e^low * other is a part of its
	// own (prop), bounded at tilts from low's up to t, the least taken
	// (the one at t is the term as above), and the rest, e^other * (low +
	// e^low), stays at t: tail sums at most e^(lO - t j) (W_low +
	// ||e^low||_t), weighted norm e^lOW times the same.
	_, _, okA := a.perIdxAt(t)
	_, _, okB := b.perIdxAt(t)
	if low, other := lowInput(a, b, t, spans); low != nil && !(okA && okB) {
		lO, lOW, wLow, lowW := lb, lbW, logWa, laW
		if low == b {
			lO, lOW, wLow, lowW = la, laW, logWb, lbW
		}
		prop = lO + logAdd(wLow, lowW)
		propW = lOW + logAdd(wLow, lowW)
		r.prop = splitLow(low, other, t)
	}
	r.logErr = logAdd(prop, logf(fftErr)+logZa+logZb+t*float64(a.lo+b.lo+top))
	// The per-index form, where each input has no error or one in that
	// form only (no prop): with e^a = p + c (|p_i| <= P_a e^(-t i), c of
	// weighted norm C_a at t), |(p * (b + e^b))_s| <= sum_m (b_m + |e^b_m|)
	// P_a e^(-t (s - m)) = P_a e^(-t s) (W_b + ||e^b||_t), and
	// ||c * (b + e^b)||_t <= C_a (W_b + ||e^b||_t); likewise a * e^b with
	// W_a. The FFT's own error is untilted by e^(U - t i), U = logZa +
	// logZb + t (a.lo + b.lo + top), at absolute index i.
	if pa, cA, okA := a.perIdxAt(t); okA {
		if pb, cB, okB := b.perIdxAt(t); okB {
			u := logZa + logZb + t*float64(a.lo+b.lo+top)
			wb := logAdd(logWb, lbW)
			r.perIdx = true
			r.logPer = logAdd(logf(fftP)+u, logAdd(pa+wb, pb+logWa))
			r.logC = logAdd(logf(fftC)+u, logAdd(cA+wb, cB+logWa))
		}
	}
	if logW := logAdd(propW, logf(fftErrW)+logZa+logZb+t*float64(a.lo+b.lo+top)); !math.IsInf(r.logErr, 0) {
		r.logGapW = math.Max(logW-r.logErr, 0)
	}
	if lowA, okA := a.errFloor(); okA && t > 0 && spans == nil {
		if lowB, okB := b.errFloor(); okB {
			// The FFT's errors (and the tilted masses lost to underflow)
			// lie at the output's indices, from a.lo + b.lo up, the
			// inputs' errors convolved with the other's masses and errors
			// from the sums of their floors up; trim only moves the
			// first index up.
			r.errLo, r.hasErrLo = lowA+lowB, true
		}
	}
	r.trim()
	return r, nil
}

// errFloor returns an absolute index at or above which d's every error
// lies: its first index for a distribution without error, errLo where
// recorded; ok is false otherwise (prop, or errors below a
// self-composition's window or trim's cut).
func (d *lossDist) errFloor() (int, bool) {
	switch {
	case !d.hasErr():
		return d.lo, true
	case d.hasErrLo && len(d.prop) == 0:
		return min(d.errLo, d.lo), true
	}
	return 0, false
}

// composeDists composes a and b for Compose: two distributions without
// error at tilt 0 (single events) at pairTilt's tilt where that is
// positive (convolve would run at tilt 0, whose rounding bound, about u
// times the largest mass at each index up to the last, a later
// composition weights by e^(t i)); where it is not and unbounded (the
// pessimistic distributions of this direction both unbounded above:
// Gaussians), at tilt 0 and at the Chernoff tilt, spliced (see splice);
// a spliced input (splice's) at the composition's Chernoff tilt and at
// tilt 0, spliced again; else by convolve.
func composeDists(a, b *lossDist, unbounded bool) (*lossDist, error) {
	if a == noOpt || b == noOpt {
		return noOpt, nil
	}
	if !a.hasErr() && !b.hasErr() && a.tau == 0 && b.tau == 0 {
		if t := pairTilt(a, b); t > 0 {
			return convolveAt(a, b, t)
		}
		// pairTilt's tilt would cost too much carried down to tilt 0
		// (the Gaussian's low first index): compose at tilt 0 and at the
		// Chernoff tilt, and splice the two (see splice), so that the
		// deltas at high losses do not carry tilt 0's floor. Only where
		// unbounded, the pessimistic distributions of this direction both
		// unbounded above (Gaussians, the sampled remove direction): the sampled add
		// direction (bounded above), spliced, self-composed and then
		// queried at delta 1e-12, was floored (TestRevComposedSelfComposeCarry);
		// it stays untilted, as before.
		if t := chernoffTilt(a, b); t > 0 && unbounded {
			low, err := convolveAt(a, b, 0)
			if err != nil {
				return nil, err
			}
			high, err := convolveAt(a, b, t)
			if err != nil {
				return nil, err
			}
			if r, ok := splice(low, high); ok {
				return r, nil
			}
			return low, nil
		}
	}
	if a.spliced || b.spliced {
		// At the composition's own tilt where that is below the one
		// convolve takes and both inputs' errors have a bound there (see
		// splice): the spliced input's error carried down from its errLo.
		// And at tilt 0, where both have a bound there, spliced below the
		// tilted result, so that the composition is as accurate at its
		// low losses as an untilted one and can be composed again so.
		// composeTilt takes the other's tilt where that one's error
		// cannot be carried below it: where that is 0 (an untilted
		// composition with error, the add direction of S.Compose(S')),
		// a tilt-0 composition would carry its floor near 1e-11 into
		// every delta; the larger tilt, with the other's error bounded
		// from its own tilt up (splitLow), does not
		// (S.SelfCompose(14).Compose(S.Compose(S')), q = 0.01, sigma
		// = 1, interval 1e-3: the add direction's eps(1e-12) was +Inf
		// at tilt 0, [0.1314, 0.1331] at 0.142).
		t := composeTilt(a, b)
		if !(t > 0) {
			t = math.Max(a.tau, b.tau)
		}
		if tc := chernoffTilt(a, b); tc > 0 && tc < t &&
			!math.IsInf(a.logErrAt(tc), 1) && !math.IsInf(b.logErrAt(tc), 1) {
			t = tc
		}
		// A spliced input's bound carried above its own tilt grows by
		// e^((t - tau) hi) (logErrAt), far more than the other's carried
		// down from its errLo: compose at the spliced input's tilt where
		// that is lower and both have a bound there. The Chernoff tilt
		// above, with a self-composition of 14 steps spliced (q = 0.01,
		// sigma = 1, its tilt 0.0055 per index, 11000 indices) and
		// S.Compose(S') (0.0096), was 0.0081, where the spliced
		// input's bound was e^28 times its own: eps(1e-10) in [1.7774,
		// 1.9314] (TestComposeSingleEventsTilted).
		for _, d := range []*lossDist{a, b} {
			if d.spliced && d.tau > 0 && d.tau < t &&
				!math.IsInf(a.logErrAt(d.tau), 1) && !math.IsInf(b.logErrAt(d.tau), 1) {
				t = d.tau
			}
		}
		high, err := convolveAt(a, b, t)
		if err != nil || !(t > 0) || math.IsInf(a.logErrAt(0), 1) || math.IsInf(b.logErrAt(0), 1) {
			return high, err
		}
		low, err := convolveAt(a, b, 0)
		if err != nil {
			return nil, err
		}
		if r, ok := splice(low, high); ok {
			return r, nil
		}
		return high, nil
	}
	return convolve(a, b)
}

// pairTilt returns the tilt at which composeDists composes a and b: the
// Chernoff parameter of their sum's upper tail at tiltTarget (at most 1.5
// times a Gaussian's of the same variance, as kTilt), or 0 where that
// would cost more than e^2 to carry down to tilt 0 (a later
// self-composition's lower tilts, see logErrAt): where the first index
// L = a.lo + b.lo is below -2 / t (the Gaussian, about -5400 at sigma
// = 1 and interval 1e-3, and the sampled add direction; the sampled
// remove direction's is about -22), and for point masses.
func pairTilt(a, b *lossDist) float64 {
	t := chernoffTilt(a, b)
	if L := float64(a.lo + b.lo); !(t > 0) || t*math.Max(0, -L) > 2 {
		return 0
	}
	return t
}

// lowInput returns, for convolveBound without spans at the tilt t, the
// input whose tilt is below t and that carries an error, and the other
// input, whose tilt must be t; nil where there is none such (equal tilts,
// or both below t).
func lowInput(a, b *lossDist, t float64, spans *tailSpans) (low, other *lossDist) {
	if spans != nil {
		return nil, nil
	}
	switch {
	case a.tau < t && b.tau == t && a.hasErr():
		return a, b
	case b.tau < t && a.tau == t && b.hasErr():
		return b, a
	}
	return nil, nil
}

// splitLow returns bounds on the part e^low * other of a composition's
// error (e^low low's error, other the other input's computed masses), at
// tilts s = tau + (t - tau) m / 8, m = 0..8, from low's own tilt tau to
// the composition's, t, where low's error has a bound (logErrAt): with
// tail sums S(j) <= e^(l_s - s j) and weighted norm A_s at s, the part's
// tail sums are at most sum_m |other_m| S(j - m) <= e^(l_s - s j) W_s and
// its weighted norm A_s W_s, W_s = sum_m |other_m| e^(s m) over absolute
// indices m. Each bounds the same part; the queries take the least. The
// bound at t alone, low's error carried up by e^((t - tau) hi), is loose
// at the losses below those t was tuned for (sigma = 3:
// G.SelfCompose(8).Compose(G'.SelfCompose(4)) had eps(1e-5) in [5.0231,
// 5.2260] and Delta(1) = 1).
func splitLow(low, other *lossDist, t float64) []errBound {
	var bs []errBound
	for m := range 9 {
		s := low.tau + (t-low.tau)*float64(m)/8
		if m == 8 {
			s = t
		}
		l := low.logErrAt(s)
		if math.IsInf(l, 1) || math.IsNaN(l) {
			continue
		}
		w := other.logAbsWeight(s)
		bs = append(bs, errBound{tau: s, logErr: l + w, logGapW: low.logErrWAt(s) - l})
	}
	return bs
}

// logAbsWeight returns log sum_i |m_i| e^(s (lo+i)) over d's masses,
// rounded up: the terms are formed relative to the largest, whose
// exponents err by a few u times their size, and the sum by n u.
func (d *lossDist) logAbsWeight(s float64) float64 {
	mx, big := math.Inf(-1), 0.0
	for i, v := range d.mass {
		if v != 0 {
			x := logf(math.Abs(v)) + s*float64(d.lo+i)
			mx = math.Max(mx, x)
			big = math.Max(big, math.Abs(x))
		}
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	sum := 0.0
	for i, v := range d.mass {
		if v != 0 {
			sum += math.Exp(logf(math.Abs(v)) + s*float64(d.lo+i) - mx)
		}
	}
	return mx + logf(sum) + 1e-12 + 16*unitRound*(float64(len(d.mass))+800+4*big)
}

// kTilt returns the tilt of a k-fold composition of d: the Chernoff
// parameter of its upper tail at tiltTarget, at most 1.5 times that of a
// Gaussian of the same variance (a bounded loss, the add direction, may
// have no tail there, and a larger tilt only loses the accuracy of the
// bulk). guess is spreadGuess(d, k, e^logTail).
func kTilt(d *lossDist, k int, guess, logTail float64) float64 {
	g := guess * math.Sqrt(logf(tiltTarget)/logTail)
	first, last := d.support()
	t, _ := scanMin(func(s float64) float64 { return (float64(k)*d.logMGF(s, first, last) - logf(tiltTarget)) / s }, g, mgfCost(last-first+1))
	return math.Min(t, 1.5*g)
}

// sum returns the sum of x.
func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// selfConvolve returns k compositions of d with itself: the finite masses
// are tilted, transformed once, raised to the k-th power, transformed back
// and untilted. pes says whether d is a pessimistic distribution, whose
// cut upper tail counts as infinite loss.
//
// Tilting: the masses m_i at offsets i are replaced by m_i e^(t (i - top)) / Z,
// which sum to 1; the k-fold composition of the tilted masses is that of
// the masses times e^(t (s - k top)) / Z^k, so the FFT's error, bounded in
// the tilted l1 norm by E, is an error of at most E Z^k e^(t (k top - s))
// in the mass at offset s: e^(logErr - t j) bounds the error of all masses
// at absolute index j and above. t is the Chernoff parameter of the
// composition's upper tail at probability tiltTarget, so near the losses
// where delta is about 1e-10 the tilted masses are not small and the error
// is small relative to them (without the tilt, the error of every mass is
// about k u times the largest one, 7e-11 at 1000 steps).
//
// Window: the composed losses lie in [k l_lo, k l_hi], but most of that
// range holds no mass worth keeping. A Chernoff bound on the sum S of k
// independent losses, P(S >= B) <= e^(-s B) M(s)^k with M(s) = sum_i m_i
// e^(s i) for any s > 0 (and likewise below), gives a window [A, B] that
// holds all but the tail mass of the composition and all but fold of its
// tilted version (fold = tail for SelfCompose; a calibration's search takes
// a larger one, which only adds to E, as below). The transform has the window's length N, so the convolution is
// circular: mass outside the window is folded into it by a multiple of N.
// Mass folded down from above B is lost from the upper tail, so for a
// pessimistic distribution its Chernoff bound is added to the infinite
// mass; mass folded up from below A only raises delta. After untilting, a
// folded mass is off by the factor e^(+-t N), but its tilted mass is at
// most the tilted tail's Chernoff bound, which is added to E, so the
// optimistic side stays a lower bound.
//
// The window's top: the exact composition of d's exact masses (computed
// masses m plus errors e at or below d's last index) is m^*k plus an
// error whose terms reach k (d.lo + n1 - 1), above a window cut below
// that. Its tail sum there is bounded like the rest of the input's error
// (below), and a pessimistic distribution adds it to inf, beside the
// Chernoff bound of m^*k's own mass there; an optimistic one drops it,
// with that mass.
// Either way no error lies above the stored window, as logErrAt needs.
// Likewise for a point mass with zero masses above it, stored at one
// index.
//
// Rounding: kthPower bounds the error of each entry of the tilted
// composition (the forward FFT's error amplified by the power, the power's
// and the inverse FFT's own rounding), and recomputes the coefficients
// that dominate that bound in double-words where the bound matters at
// delta = widthDelta (roundingMatters). The weighted l1 norm of the
// output's error counts the FFT's error at perIndex at each of the
// window's N entries (N / terms times its tail-sum form, about N t);
// logGapW carries the ratio.
//
// The input's error is a second part of the output's (prop), bounded at
// each tilt s of propTilts(t) at which logErrAt bounds it, the least of
// those bounds taken by every query: an input error with tail sums
// e^(a_s - s j) and weighted l1 norm A_s (at the tilt s) adds an error
// with tail sums e^(-s j) k e^(a_s) (W_s + A_s)^(k-1), W_s the weighted
// mass sum_i m_i e^(s i): the terms of (m + e)^*k - m^*k with r factors e
// have tail sums at most e^(a_s - s j) A_s^(r-1) W_s^(k-r) (see
// convolveBound), and sum_{r >= 1} C(k, r) A_s^(r-1) W_s^(k-r) <=
// k (W_s + A_s)^(k-1); its weighted l1 norm at s is at most
// k A_s (W_s + A_s)^(k-1). Each s gives a bound on the same error, so the
// least is one too. A single tilt, t, once bounded it: an untilted input
// error (Compose of single events: about u times the largest mass at
// each of its indices up to hi) carried to t by e^(t hi) and through the
// other k - 1 factors by W_t^(k-1) is a Chernoff bound at the wrong
// tilt for the losses in between, and G.Compose(G).SelfCompose(8)
// reported Delta(1) = 1 for a true 0.254.
func selfConvolve(ctx context.Context, d *lossDist, k int, h, tail, fold float64, pes bool) (*lossDist, error) {
	return selfConvolveTilt(ctx, d, k, h, tail, fold, pes, false)
}

// selfConvolveTilt is selfConvolve, at tilt 0 if untilted (the untilted
// computation that spliceSelf joins below a self-composition's tilted
// masses); an untilted composition of an input whose error has no bound at
// tilt 0 is an error. ctx, if not nil, is checked between the transforms
// and while refineSpectrum sums (10^9 steps: 17 to 40 s in all, no phase
// between checks above about a second), and ctx.Err() returned once it
// is done.
func selfConvolveTilt(ctx context.Context, d *lossDist, k int, h, tail, fold float64, pes, untilted bool) (*lossDist, error) {
	if d == noOpt {
		return noOpt, nil
	}
	n1 := len(d.mass)
	// The composed grid's first index k lo and its offsets 0 .. k(n1-1) are
	// int64s: a k that would take them beyond maxFull (huge compositions)
	// is refused, as is every window above 2^24 points, and a window whose
	// absolute indices are not ints (windowLo; 32-bit platforms only).
	if float64(k)*(float64(n1-1)+math.Abs(float64(d.lo))) > maxFull {
		return nil, &gridError{itoa(k) + " compositions of a loss grid of " + itoa(n1) +
			" points at interval " + ftoa(h) + " span more than 2^52 grid points; use fewer compositions"}
	}
	k64, lo64 := int64(k), int64(k)*int64(d.lo) // lo64: the composed grid's first index
	kf := float64(k)
	r := &lossDist{
		inf:       -math.Expm1(kf * math.Log1p(-math.Min(d.inf, 1))),
		rel:       math.Expm1(kf * math.Log1p(d.rel)),
		infl:      math.Expm1(kf * math.Log1p(d.infl)),
		logErr:    math.Inf(-1),
		unbounded: d.unbounded,
	}
	first, last := d.support()
	if first > last {
		lo, err := windowLo(lo64, 1, h)
		if err != nil {
			return nil, err
		}
		r.lo, r.mass = lo, []float64{0}
		return r, nil
	}
	if first == last {
		lo, err := windowLo(lo64+k64*int64(first), 1, h)
		if err != nil {
			return nil, err
		}
		r.lo = lo
		r.mass = []float64{math.Pow(d.mass[first], kf)}
		r.rel = (1+r.rel)*(1+4*kf*unitRound) - 1
		r.tau = d.tau
		if d.hasErr() {
			// At d's own tilt (a lower one needs the lowest index of
			// d's errors, see logErrAt): the error of (m + e)^*k, m the
			// point mass at index f, has tail sums at most
			// sum_r C(k, r) (m e^(t f))^(k-r) S^(e^*r) <= e^(la - t j) k
			// (m e^(t f) + ||e||_t)^(k-1), as in build below.
			t := d.tau
			la, laW := d.logErrAt(t), d.logErrWAt(t)
			lw := logf(d.mass[first]) + t*float64(d.lo+first)
			grow := (kf - 1) * logAdd(lw, laW)
			r.logErr = logf(kf) + la + grow
			r.logGapW = laW - la
			// That error reaches k (d.lo + n1 - 1), above the one stored
			// index where d has zero masses above first: its tail there
			// is moved to the infinite mass (see selfConvolve).
			if pes && first < n1-1 {
				r.inf = math.Min(1, r.inf+math.Exp(r.logErr-t*float64(r.lo+1)))
			}
		}
		return r, nil
	}
	full := k64*int64(n1-1) + 1 // composed offsets 0 .. k(n1-1), relative to k lo
	logTail := logf(tail)
	mgf := func(s float64) float64 { return d.logMGF(s, first, last) }
	guess := spreadGuess(d, k, tail)
	cost := mgfCost(last - first + 1)
	// The window: the lower Chernoff bound of the composition, the upper
	// ones of the composition and (b1, below) of its tilted version.
	_, negA := scanMin(func(s float64) float64 { return (kf*mgf(-s) - logTail) / s }, guess, cost)
	_, b0 := scanMin(func(s float64) float64 { return (kf*mgf(s) - logTail) / s }, guess, cost)
	// The tilt: d's own if d was tilted for this composition (see
	// sampledGaussian), else kTilt's (also for a composition whose error
	// logErrAt carries below its tilt, hasErrLo: its tilt is the 2-fold's), lowered by factors of 0.8
	// (at most 12 times, to 0.07 of it; steps that fine keep it within 20%
	// of the largest tilt that fits) while the tilted composition's upper
	// Chernoff end at tail mass fold lies further above the composition's
	// own window than that window's length: a mixture's rare large losses,
	// tilted up, can stretch the window, and the FFT, tenfold. Any tilt is
	// valid; a smaller one bounds the rounding less tightly only far out in
	// the tail (at half the Chernoff tilt of a Gaussian tail delta, the
	// bound there is delta^(3/4) times the rounding of the tilted masses).
	t := d.tau
	if untilted {
		// Every bound on the input's error must reach tilt 0 (prop's
		// tilts are then all 0, and one without a bound there would be
		// left out).
		if d.hasErr() && math.IsInf(d.logErrAt(0), 1) {
			return nil, errPLD("internal: an untilted self-composition of an input without an error bound at tilt 0")
		}
		t = 0
	} else if t == 0 || d.hasErrLo {
		t = lowerTilt(kTilt(d, k, guess, logTail), kf, mgf, negA, b0, fold, guess, cost)
	}
	mt := mgf(t)
	logMt := func(s float64) float64 { return mgf(t+s) - mt }
	_, b1 := scanMin(func(s float64) float64 { return (kf*logMt(s) - logf(fold)) / s }, guess, cost)
	sA, sB := chernoffWindow(negA, b0, b1, full)
	if sB-sA+1 > maxGrid {
		return nil, errGrid("the composed loss grid needs "+strconv.FormatInt(sB-sA+1, 10)+
			" > 2^24 points at interval "+ftoa(h), h)
	}
	wLen := int(sB - sA + 1) // the window's length, at most 2^24
	wLo, err := windowLo(lo64+sA, wLen, h)
	if err != nil {
		return nil, err
	}
	above, foldErr := windowTails(kf, mgf, logMt, sA, sB, full, guess, cost)
	if pes && sB < full-1 {
		r.inf = math.Min(1, r.inf+above)
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	n := fastLen(wLen)
	if sA == 0 && sB == full-1 {
		n = fastLen(int(full)) // no wrap at all
	}
	defer holdBig(n)()
	seq, logZ, relT := d.tilted(t, n)
	m := sum(seq)
	terms := math.Min(1/-math.Expm1(-t), float64(wLen))
	top := k64 * int64(last)
	// The window's offsets i + sA, taken mod n, and top - (i + sA) in int
	// (the window's entries: top - sA - i lies in 0 .. k (last - first)).
	wrap, topA := int(sA%int64(n)), top-sA
	base := *r
	// build returns the composition from the inverse transform w (times
	// 1/n) and the bound perIndex on the error of each of its entries:
	// over the indices s >= j the untilting weights e^(t (top - s)) sum to
	// at most e^(t (top - j)) / (1 - e^-t) (and there are at most the
	// window's length of them), which the bound at j counts in place of
	// the whole l1 error: about n t times less.
	build := func(w []float64, perIndex float64) *lossDist {
		r := base
		E := perIndex*terms + 2*unitRound*math.Pow(m, kf) + foldErr +
			kf*lostBound(n1, logZ)*math.Pow(m+1e-300, kf-1)
		r.lo = wLo
		r.mass = make([]float64, wLen)
		expMax := untiltAll(r.mass, func(i int) float64 { return w[(i+wrap)%n] },
			func(i int) float64 { return kf*logZ + t*float64(topA-int64(i)) })
		relU := 8 * unitRound * (800 + expMax)
		r.rel = (1+r.rel)*math.Exp(kf*math.Log1p(relT))*(1+relU) - 1
		r.tau = t
		// Weighted at t with absolute indices j = k lo + s. The
		// weighted l1 norm of the error counts each of the window's
		// entries at perIndex, not terms of them.
		EW := perIndex*float64(wLen) + 2*unitRound*math.Pow(m, kf) + foldErr +
			kf*lostBound(n1, logZ)*math.Pow(m+1e-300, kf-1)
		r.logErr = logf(E) + kf*logZ + t*float64(lo64+top)
		logW := logf(EW) + kf*logZ + t*float64(lo64+top)
		r.logGapW = math.Max(logW-r.logErr, 0)
		// The input's error, propagated: a second part of the error
		// (prop), bounded at each of propTilts(t) at which d's error has
		// a bound (see selfConvolve).
		r.prop = nil
		if d.hasErr() {
			mTot := sum(d.mass)
			for _, s := range propTilts(t) {
				la := d.logErrAt(s)
				if math.IsInf(la, 1) {
					continue
				}
				laW := d.logErrWAt(s)
				// log sum_i m_i e^(s (lo+i)), rounded up: logMGF stops
				// where the weights fall 1e-300 below the top's, which
				// leaves out at most 1e-300 sum_i m_i e^(s last).
				lw := logAdd(mgf(s), logf(2*mTot*1e-300)+s*float64(last)) + s*float64(d.lo)
				if s == t {
					lw = d.logWeight(t, logZ)
				}
				grow := (kf - 1) * logAdd(lw, laW)
				r.prop = append(r.prop, errBound{tau: s, logErr: logf(kf) + la + grow, logGapW: laW - la})
			}
			// The input's error reaches the composition's top, k d.lo +
			// full - 1: above a window cut below it, its tail (at most
			// the least of prop's bounds at j = k d.lo + sB + 1)
			// goes to the infinite mass of a pessimistic distribution,
			// like the composition's own mass there, and is dropped from
			// an optimistic one, so that no error lies above the last
			// stored index (logErrAt).
			if pes && sB < full-1 {
				above := math.Inf(1)
				for _, b := range r.prop {
					above = math.Min(above, math.Exp(b.logErr-b.tau*float64(lo64+sB+1)))
				}
				r.inf = math.Min(1, r.inf+above)
			}
		}
		r.trim()
		return &r
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	tr := fourier.NewFFT(n)
	spec := tr.Coefficients(nil, seq)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	w, perIndex := kthPower(ctx, tr, seq, spec, k, false)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	r = build(w, perIndex)
	if roundingMatters(r, h, pes) {
		w, perIndex = kthPower(ctx, tr, seq, spec, k, true)
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		r = build(w, perIndex)
	}
	return r, nil
}

// ctxErr is ctx.Err(), nil for a nil ctx.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// propTilts returns the tilts at which selfConvolve bounds its input's
// propagated error: t m / 8 for m = 0..8. The bound at t, the
// composition's tilt, is tight far out in the upper tail; a composed
// input's error, untilted (about u times its largest mass at every index,
// up to its last), carried to t by e^(t hi) and through the k - 1 other
// factors by their tilted weight, is far above the truth at the losses
// between (G.Compose(G).SelfCompose(8): 1.2e-11 at eps = 9, where delta
// is 1e-10), and the lower tilts bound it there.
func propTilts(t float64) []float64 {
	ts := make([]float64, 9)
	for m := range ts {
		ts[m] = t * float64(m) / 8
	}
	return ts
}

// roundingMatters reports whether the rounding bound of d is above 1e-4
// of delta at the eps where d's delta (without it) is widthDelta: there
// it moves each side's log delta by 1e-4, and eps by 1e-4 / (eps |d log
// delta / d eps|) relatively, a few 1e-5 where rare large losses make delta
// (q = 1e-4, sigma = 1, T = 1000: eps 0.048, slope about 74).
func roundingMatters(d *lossDist, h float64, pes bool) bool {
	if math.IsInf(d.logErr, -1) {
		return false
	}
	d0 := *d
	d0.logErr = math.Inf(-1)
	d0.prop = nil
	eps := newCurve(&d0, h, pes).epsilon(widthDelta)
	if !(eps > 0) || math.IsInf(eps, 1) {
		return false
	}
	return d.errFrom(math.Floor(eps/h)+1) > 1e-4*widthDelta
}

// kthPower returns the inverse transform (times 1/n) of the k-th power of
// the spectrum of seq (non-negative, length n; spec its transform by tr,
// not modified): the circular k-fold convolution of seq with itself, and a
// bound on the error of each entry.
//
// Every coefficient of a length-n FFT of seq errs by at most
// e = c ||seq||_1 with c = fftErrorConst(n). Raising a coefficient z
// (|z| <= 1) to the k-th power turns that into at most
// k e (|z| + e)^(k-1), plus the power's own rounding powRound(k, sqrt5 u)
// |z|^k (a complex float64 product errs by at most sqrt5 u relatively;
// Brent, Percival & Zimmermann 2007); call the vector of those bounds F.
// The inverse transform divided by n maps an error F in the spectrum to at most min(||F||_1 / n, ||F||_2 / sqrt(n)) at
// each index, and adds its own c (||z^k||_1 + ||F||_1) / n.
//
// With refine, the coefficients whose term k e (|z| + e)^(k-1) dominates F
// (those with |z| within about 20/k of 1: a band of low frequencies, about
// n / (sqrt(k) s) of them for a step of standard deviation s grid points)
// are recomputed in double-word arithmetic, and so are their powers: seq
// is split into a bulk, the shortest run holding all but 1e-2 / k of its
// mass, whose terms hornerDFT sums directly, and the rest, whose float64
// FFT errs by at most c times its (small) mass. Such a coefficient errs by
// c times the rest's mass plus hornerDFT's bound, and its power by at most
// powRound(k, 11.5 u^2) |z|^k plus 2 u |z^k| for its rounding to float64. The float64
// forward FFT's bound, amplified k-fold by the power, is what limits the
// rounding bound otherwise (see docs/privacy.md).
//
// Once ctx (if not nil) is done, it returns soon with a meaningless
// result, which the caller discards on ctx.Err().
func kthPower(ctx context.Context, tr *fourier.FFT, seq []float64, spec []complex128, k int, refine bool) (w []float64, perIndex float64) {
	n := len(seq)
	kf, nf := float64(k), float64(n)
	m := sum(seq) * (1 + nf*unitRound)
	c := slices.Clone(spec)
	fe := fftErrorConst(n)
	einf := fe * m // error bound of every coefficient
	abs := func(z complex128) float64 { return math.Hypot(real(z), imag(z)) * (1 + 4*unitRound) }
	// in[j] is coefficient j's error bound; exact[j] its power, computed in
	// double-words, with the power's rounding bound in round[j].
	in := slices.Repeat([]float64{einf}, len(c))
	var exact map[int]complex128
	round := map[int]float64{}
	if refine {
		exact = refineSpectrum(ctx, tr, seq, c, in, k, m, fe, round)
		if ctxErr(ctx) != nil {
			return nil, 0
		}
	}
	pr := powRound(k, math.Sqrt(5)*unitRound)
	// The powers on all cores: c[j] becomes z^k, in[j] its error bound f
	// and outAbs[j] |z^k|; the sums of those below stay in the order of j.
	outAbs := make([]float64, len(c))
	par.Range(len(c), chunk, powCost(k), func(lo, hi int) {
		if ctxErr(ctx) != nil {
			return
		}
		for j := lo; j < hi; j++ {
			z := c[j]
			a, e := abs(z), in[j]
			var p complex128
			var rnd float64
			if v, ok := exact[j]; ok {
				p, rnd = v, round[j]
			} else {
				p = cpow(z, k)
				rnd = pr * math.Pow(a, kf)
			}
			in[j] = kf*e*math.Pow(a+e, kf-1) + rnd
			outAbs[j] = abs(p)
			c[j] = p
		}
	})
	if ctxErr(ctx) != nil {
		return nil, 0
	}
	return inverseBound(tr, c, in, outAbs, n)
}

// refineBudget bounds the terms refineSpectrum sums in double-words (about
// 70 ns each): about 0.7 s.
const refineBudget = 1e7

// refineSpectrum recomputes in double-words the coefficients c[j] of seq's
// spectrum whose float64 error, raised to the k-th power, dominates
// kthPower's bound (see there), lowers their error bounds in in[j], and
// returns their k-th powers (rounded to complex128) with the powers'
// rounding bounds in round. It recomputes none if that takes more than
// refineBudget terms of double-word sums (a spectrum not concentrated in a
// narrow band: few compositions, where the bound is not amplified much)
// or the bulk of seq is longer than 2^15 points. Once ctx (if not nil) is
// done it stops within one coefficient a core and returns nil.
func refineSpectrum(ctx context.Context, tr *fourier.FFT, seq []float64, c []complex128, in []float64, k int, m, fe float64, round map[int]float64) map[int]complex128 {
	n := len(seq)
	kf := float64(k)
	// The bulk: all but rho/2 of the mass on either side.
	rho := m * 1e-2 / kf
	s0, acc := 0, 0.0
	for s0 < n && acc+seq[s0] <= rho/2 {
		acc += seq[s0]
		s0++
	}
	s1, acc := n-1, 0.0
	for s1 > s0 && acc+seq[s1] <= rho/2 {
		acc += seq[s1]
		s1--
	}
	bulk := s1 - s0 + 1
	if bulk > 1<<15 || bulk < 1 {
		return nil
	}
	// The candidates, by their share of F: k e (|z| + e)^(k-1).
	type cand struct {
		j int
		g float64
	}
	g := make([]float64, len(c))
	pw := make([]float64, len(c)) // |z|^k, summed in order below
	par.Range(len(c), chunk, 2*costPow, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			z := c[j]
			a := math.Hypot(real(z), imag(z)) * (1 + 4*unitRound)
			g[j] = kf * in[j] * math.Pow(a+in[j], kf-1)
			pw[j] = math.Pow(a, kf)
		}
	})
	total, out := sum(g), sum(pw)
	// Aim for a remainder of F below 2e-2 of the inverse transform's own
	// rounding, fe ||z^k||_1: the terms below target / len(c) sum to at
	// most target (1e-2 of it), and only the others are candidates, taken
	// largest first until the rest sum to at most 2 target.
	target := 1e-2 * fe * out
	var cands []cand
	for j, v := range g {
		if v > target/float64(len(c)) {
			cands = append(cands, cand{j, v})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(b.g, a.g) })
	count := 0
	for count < len(cands) && total > 2*target {
		total -= cands[count].g
		count++
	}
	if count == 0 || float64(count)*float64(bulk) > refineBudget || ctxErr(ctx) != nil {
		return nil
	}
	tail := slices.Clone(seq)
	clear(tail[s0 : s1+1])
	mb := sum(seq[s0:s1+1]) * (1 + float64(n)*unitRound)
	mt := sum(tail) * (1 + float64(n)*unitRound)
	ct := tr.Coefficients(nil, tail)
	if ctxErr(ctx) != nil {
		return nil
	}
	eRefined := fe*mt + hornerErrorConst(bulk)*mb
	pr := powRound(k, 11.5*unitRound*unitRound)
	// The candidates on all cores (each writes only its own in[j] and
	// c[j]), their powers and bounds into the maps after.
	chosen := cands[:count]
	pows := make([]complex128, count)
	rounds := make([]float64, count)
	par.Range(count, 1, float64(bulk)*costDD+powCost(k), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			if ctxErr(ctx) != nil {
				return
			}
			j := chosen[ci].j
			z := hornerDFT(seq[s0:s1+1], s0, j, n)
			z.rh, z.rl = ddfloat.Add(z.rh, z.rl, real(ct[j]), 0)
			z.ih, z.il = ddfloat.Add(z.ih, z.il, imag(ct[j]), 0)
			// The sums above err by 3.01 u^2 of the result each: within
			// 5 u^2 |z|, at most 5 u^2 m.
			in[j] = eRefined + 5*unitRound*unitRound*m
			p := ddcPow(z, k)
			pows[ci] = complex(p.rh, p.ih)
			a := math.Hypot(z.rh, z.ih) * (1 + 4*unitRound)
			rounds[ci] = pr*math.Pow(a, kf) + 2*unitRound*math.Hypot(p.rh, p.ih)
			c[j] = complex(z.rh, z.ih)
		}
	})
	if ctxErr(ctx) != nil {
		return nil // in and c are partly refined: the caller discards them
	}
	exact := make(map[int]complex128, count)
	for ci, cd := range chosen {
		exact[cd.j] = pows[ci]
		round[cd.j] = rounds[ci]
	}
	return exact
}

// untilt returns v e^e for v > 0: the product where e^e is a normal
// float64 (its rounding, a few u |e| from the argument's, is what
// e^(log v + e) has too), else e^(log v + e), which does not overflow or
// underflow in between.
func untilt(v, e float64) float64 {
	if f := math.Exp(e); f >= 0x1p-1022 && f <= math.MaxFloat64 {
		return v * f
	}
	return math.Exp(logf(v) + e)
}

// powRound returns a bound on the relative error of z^k computed by
// repeated squaring (cpow, ddcPow) with products of relative error at most
// eps: the rounding of a product whose result enters the power m times
// counts m times, and those counts sum to at most 2k + log2(k) + 1.
func powRound(k int, eps float64) float64 {
	return math.Expm1((2*float64(k) + math.Log2(float64(k)) + 1) * math.Log1p(eps))
}

// cpow returns z^k by repeated squaring.
func cpow(z complex128, k int) complex128 {
	p := complex(1, 0)
	for k > 0 {
		if k&1 == 1 {
			p *= z
		}
		z *= z
		k >>= 1
	}
	return p
}

// trim zeroes the masses at the bottom of d whose tilted weight is within
// the error bound, and drops them: their computed values are rounding noise
// magnified by the untilting. Setting masses m_j to 0 for j < J adds at most
// sum_{j<J} m_j e^(tau j) to the weighted error, and J is the largest index
// at which that sum is at most the bound itself (the part other than
// prop: prop's may be far larger at tau, see selfConvolve), so that bound
// at most doubles. The sum is an l1 error at tau, added to logC too in
// the per-index form.
//
// Then (whether or not it drops any) it sets every mass above 2 to 2. No
// exact mass exceeds 1, nor 2 after the factor 1 + rel, so that moves no
// computed mass further from the exact one, and the error bound holds as
// it is. Such masses are rounding noise of the tilted masses untilted by
// up to e^(tau (hi - lo)): at a large tilt (the add direction of a sampled
// Gaussian, self-composed 3 times: tau 0.33 per index over 3600 indices)
// that overflows to +Inf, which stops the loop below at its first mass,
// and a later composition's tilted sum of +Inf masses came out NaN (Delta
// NaN). They are set after the loop so that the masses it drops, and every
// result that is not composed again, stay as they were, bit for bit.
func (d *lossDist) trim() {
	defer func() {
		for i, v := range d.mass {
			if v > 2 {
				d.mass[i] = 2
			}
		}
	}()
	if d.tau == 0 || math.IsInf(d.logErr, -1) {
		return
	}
	// The bound of the part other than prop: what the masses dropped add
	// to it at most doubles it (not to be lifted to prop's, which may be
	// far above it at tau).
	// In logs: the weights m_i e^(tau i) and the bound e^logErr may be
	// far below the float64 range (a large tilt at a very negative
	// index), where products underflowed to 0 and masses of any size
	// were dropped and counted as 0. 1e-9 covers the rounding of the logs.
	ls, cut := math.Inf(-1), 0
	for i, v := range d.mass {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			break
		}
		l := logAdd(ls, logf(math.Abs(v))+d.tau*float64(d.lo+i)+1e-9)
		if l > d.logErr || math.IsNaN(l) {
			break
		}
		ls = l
		cut = i + 1
	}
	if cut == 0 || cut >= len(d.mass) {
		return
	}
	d.mass = d.mass[cut:]
	d.lo += cut
	logW := logAdd(d.logErr+d.logGapW, ls)
	d.logErr = logAdd(d.logErr, ls)
	d.logGapW = math.Max(logW-d.logErr, 0)
	if d.perIdx {
		d.logC = logAdd(d.logC, ls) // an l1 error at tau
	}
}
