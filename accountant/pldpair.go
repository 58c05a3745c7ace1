package accountant

import (
	"math"

	"github.com/dpmf/dpmf/internal/par"
	"gonum.org/v1/gonum/dsp/fourier"
)

// pairPower returns k compositions of the composition of a and b, two
// discretised events (no additive error) on the same grid, each with at
// least two points of positive mass: the masses of each are tilted,
// transformed once, each spectrum raised to the k-th power, the two
// powers multiplied and transformed back once, then untilted. It is the
// distribution that selfConvolve of a and of b followed by convolveBound
// computes, with one inverse transform instead of three and no forward
// transform of a composed distribution: their rounding bounds, about
// equal, made the width of the replace-one accounting (docs/privacy.md,
// "How the replace-one steps are composed").
// pes says whether a and b are pessimistic (the upper tail cut from the
// window counts as infinite loss).
//
// The window is the Chernoff window of the composition of k copies of the
// step a * b, whose log moment generating function is the sum of a's and
// b's (see selfConvolve for the window, the folded tails and the tilt).
// The error of every coefficient of the product spectrum is bounded from
// those of the two powers (kthPower's bounds, after the same double-word
// refinement of each spectrum where the rounding matters; see
// pairInverse), and the inverse transform errs at each index as in
// kthPower.
func pairPower(a, b *lossDist, k int, h, tail, fold float64, pes bool) (*lossDist, error) {
	if a == noOpt || b == noOpt {
		return noOpt, nil
	}
	if !math.IsInf(a.logErr, -1) || !math.IsInf(b.logErr, -1) {
		return nil, errPLD("internal: pairPower's inputs carry an additive error")
	}
	na, nb := len(a.mass), len(b.mass)
	n1 := na + nb - 1 // the step's grid, from a.lo + b.lo
	lo1 := a.lo + b.lo
	if float64(k)*(float64(n1-1)+math.Abs(float64(a.lo))+math.Abs(float64(b.lo))) > maxSpan {
		return nil, &gridError{itoa(k) + " compositions of a loss grid of " + itoa(n1) +
			" points at interval " + ftoa(h) + " span more than " + maxSpanText() + " grid points; use fewer compositions"}
	}
	kf := float64(k)
	fa, la := a.support()
	fb, lb := b.support()
	if !(fa < la && fb < lb) {
		return nil, errPLD("internal: pairPower's inputs are point masses")
	}
	r := &lossDist{
		inf:       -math.Expm1(kf * (math.Log1p(-math.Min(a.inf, 1)) + math.Log1p(-math.Min(b.inf, 1)))),
		rel:       math.Expm1(kf * (math.Log1p(a.rel) + math.Log1p(b.rel))),
		infl:      math.Expm1(kf * (math.Log1p(a.infl) + math.Log1p(b.infl))),
		logErr:    math.Inf(-1),
		unbounded: a.unbounded || b.unbounded,
	}
	full := k*(n1-1) + 1 // composed offsets 0 .. k(n1-1), relative to k lo1
	logTail := logf(tail)
	// The step's log MGF in its offsets (those of a plus those of b).
	mgf := func(s float64) float64 { return a.logMGF(s, fa, la) + b.logMGF(s, fb, lb) }
	guess := pairSpreadGuess(a, b, k, tail)
	cost := mgfCost(la - fa + lb - fb + 2)
	_, negA := scanMin(func(s float64) float64 { return (kf*mgf(-s) - logTail) / s }, guess, cost)
	_, b0 := scanMin(func(s float64) float64 { return (kf*mgf(s) - logTail) / s }, guess, cost)
	// The tilt: kTilt's for the step (the Chernoff parameter of the
	// composition's upper tail at tiltTarget, at most 1.5 times a
	// Gaussian's), lowered by factors of 0.8 as selfConvolve lowers it
	// while the tilted composition's window would stretch beyond the
	// composition's own. The replace-one accounting before this took
	// kTilt of the step composed by an untilted FFT, whose moment
	// generating function that FFT's rounding noise inflated at large s
	// (q = 1e-4, sigma = 0.656, T = 1000: a tilt 0.6 times this one).
	g := guess * math.Sqrt(logf(tiltTarget)/logTail)
	t, _ := scanMin(func(s float64) float64 { return (kf*mgf(s) - logf(tiltTarget)) / s }, g, cost)
	t = math.Min(t, 1.5*g)
	t = lowerTilt(t, kf, mgf, negA, b0, fold, guess, cost)
	r.tau = t
	mt := mgf(t)
	logMt := func(s float64) float64 { return mgf(t+s) - mt }
	_, b1 := scanMin(func(s float64) float64 { return (kf*logMt(s) - logf(fold)) / s }, guess, cost)
	sA, sB := chernoffWindow(negA, b0, b1, full)
	if sB-sA+1 > maxGrid {
		return nil, errGrid("the composed loss grid needs "+itoa(sB-sA+1)+" > 2^24 points at interval "+ftoa(h), h)
	}
	above, foldErr := windowTails(kf, mgf, logMt, sA, sB, full, guess, cost)
	if pes && sB < full-1 {
		r.inf = math.Min(1, r.inf+above)
	}
	n := fastLen(sB - sA + 1)
	if sA == 0 && sB == full-1 {
		n = fastLen(full)
	}
	seqA, logZa, relA := a.tilted(t, n)
	seqB, logZb, relB := b.tilted(t, n)
	ma, mb := sum(seqA), sum(seqB)
	terms := math.Min(1/-math.Expm1(-t), float64(sB-sA+1))
	top := k * (la + lb)
	logZ := logZa + logZb
	base := *r
	build := func(w []float64, perIndex float64) *lossDist {
		r := base
		lost := 2 * kf * (lostBound(na, logZa) + lostBound(nb, logZb)) * math.Pow(math.Max(ma, mb)+1e-300, 2*kf-1)
		mk := math.Pow(ma, kf) * math.Pow(mb, kf)
		E := perIndex*terms + 2*unitRound*mk + foldErr + lost
		EW := perIndex*float64(sB-sA+1) + 2*unitRound*mk + foldErr + lost
		r.lo = k*lo1 + sA
		r.mass = make([]float64, sB-sA+1)
		expMax := untiltAll(r.mass, func(i int) float64 { return w[(i+sA)%n] },
			func(i int) float64 { s := i + sA; return kf*logZ + t*float64(top-s) })
		relU := 8 * unitRound * (800 + expMax)
		r.rel = (1+r.rel)*math.Exp(kf*(math.Log1p(relA)+math.Log1p(relB)))*(1+relU) - 1
		r.logErr = logf(E) + kf*logZ + t*float64(k*lo1+top)
		logW := logf(EW) + kf*logZ + t*float64(k*lo1+top)
		if !math.IsInf(r.logErr, 0) {
			r.logGapW = math.Max(logW-r.logErr, 0)
		}
		r.trim()
		return &r
	}
	tr := fourier.NewFFT(n)
	specA := tr.Coefficients(nil, seqA)
	specB := tr.Coefficients(nil, seqB)
	pa := newSpecPower(tr, seqA, specA, k, nil)
	pb := newSpecPower(tr, seqB, specB, k, nil)
	r = build(pairInverse(tr, pa, pb, n))
	if roundingMatters(r, h, pes) {
		ra := newSpecPower(tr, seqA, specA, k, pa)
		rb := newSpecPower(tr, seqB, specB, k, pb)
		if ra != pa || rb != pb {
			r = build(pairInverse(tr, ra, rb, n))
		}
	}
	return r, nil
}

// pairSpreadGuess is spreadGuess of the composition of a and b: the
// variance of a sum of independent losses is the sum of their variances.
func pairSpreadGuess(a, b *lossDist, k int, tail float64) float64 {
	v := 0.0
	for _, d := range []*lossDist{a, b} {
		if g := spreadGuess(d, 1, tail); g > 0 {
			v += -2 * logf(tail) / (g * g)
		}
	}
	if !(v > 0) {
		return 0
	}
	return math.Sqrt(-2 * logf(tail) / (float64(k) * v))
}

// specPower is a spectrum raised to the k-th power: the powers p and the
// bound f on the error of each (see kthPower).
type specPower struct {
	p []complex128
	f []float64
}

// newSpecPower returns the k-th powers of the spectrum spec of seq
// (non-negative, length n; neither modified) with their error bounds.
// With refine, the coefficients that dominate the bound are recomputed in
// double-words (refineSpectrum) and only those powers are taken again
// (from the unrefined powers, plain).
func newSpecPower(tr *fourier.FFT, seq []float64, spec []complex128, k int, plain *specPower) *specPower {
	n := len(seq)
	kf, nf := float64(k), float64(n)
	fe := fftErrorConst(n)
	m := sum(seq) * (1 + nf*unitRound)
	if plain != nil {
		c := append([]complex128(nil), spec...)
		in := make([]float64, len(c))
		for j := range in {
			in[j] = fe * m
		}
		round := map[int]float64{}
		exact := refineSpectrum(tr, seq, c, in, k, m, fe, round)
		if exact == nil {
			return plain
		}
		r := &specPower{p: append([]complex128(nil), plain.p...), f: append([]float64(nil), plain.f...)}
		for j, v := range exact {
			a, e := pairAbs(c[j]), in[j]
			r.p[j], r.f[j] = v, kf*e*math.Pow(a+e, kf-1)+round[j]
		}
		return r
	}
	pr := powRound(k, math.Sqrt(5)*unitRound)
	r := &specPower{p: make([]complex128, len(spec)), f: make([]float64, len(spec))}
	e := fe * m
	par.Range(len(spec), chunk, powCost(k), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			a := pairAbs(spec[j])
			r.p[j] = cpow(spec[j], k)
			r.f[j] = kf*e*math.Pow(a+e, kf-1) + pr*math.Pow(a, kf)
		}
	})
	return r
}

// pairAbs is |z| rounded up (as kthPower takes it).
func pairAbs(z complex128) float64 { return math.Hypot(real(z), imag(z)) * (1 + 4*unitRound) }

// pairInverse returns the inverse transform (times 1/n) of the product of
// the powers a and b, and a bound on the error of each entry: with P_a
// and P_b the exact powers, |p_a p_b - P_a P_b| <= f_a |p_b| + (|p_a| +
// f_a) f_b, plus sqrt5 u |p_a| |p_b| for the product's rounding, and the
// inverse transform as in kthPower ([inverseBound]).
func pairInverse(tr *fourier.FFT, a, b *specPower, n int) (w []float64, perIndex float64) {
	c := make([]complex128, len(a.p))
	in := make([]float64, len(a.p))
	outAbs := make([]float64, len(a.p))
	par.Range(len(c), chunk, 16, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			pa, pb := pairAbs(a.p[j]), pairAbs(b.p[j])
			c[j] = a.p[j] * b.p[j]
			in[j] = a.f[j]*pb + (pa+a.f[j])*b.f[j] + math.Sqrt(5)*unitRound*pa*pb
			outAbs[j] = pairAbs(c[j])
		}
	})
	return inverseBound(tr, c, in, outAbs, n)
}
