package accountant

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

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
func pairPower(ctx context.Context, a, b *lossDist, k int, h, tail, fold float64, pes bool) (*lossDist, error) {
	if a == noOpt || b == noOpt {
		return noOpt, nil
	}
	if !math.IsInf(a.logErr, -1) || !math.IsInf(b.logErr, -1) {
		return nil, errPLD("internal: pairPower's inputs carry an additive error")
	}
	na, nb := len(a.mass), len(b.mass)
	n1 := na + nb - 1 // the step's grid, from a.lo + b.lo
	lo1 := a.lo + b.lo
	// As in selfConvolve: the composed grid's indices are int64s, within
	// maxFull; only the stored window's must be ints (windowLo).
	if float64(k)*(float64(n1-1)+math.Abs(float64(a.lo))+math.Abs(float64(b.lo))) > maxFull {
		return nil, &gridError{itoa(k) + " compositions of a loss grid of " + itoa(n1) +
			" points at interval " + ftoa(h) + " span more than 2^52 grid points; use fewer compositions"}
	}
	k64 := int64(k)
	klo := k64 * int64(lo1) // the composed grid's first index
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
	full := k64*int64(n1-1) + 1 // composed offsets 0 .. k(n1-1), relative to k lo1
	logTail := logf(tail)
	// The step's log MGF in its offsets (those of a plus those of b).
	// Memoised: the Chernoff scans below (the window's ends, the tilt,
	// the tails the window leaves out, chernoffIndex) evaluate it at many
	// of the same points, each a pass over both distributions (q = 1e-4,
	// sigma = 0.5, T = 10^6: 10^6 points per pass).
	mgf := memoMGF(func(s float64) float64 { return a.logMGF(s, fa, la) + b.logMGF(s, fb, lb) })
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
	// The window's lower end: the tilted composition's lower Chernoff end
	// at 1e-3 fold where that lies above the composition's own at tail
	// (the tilt moves the mass up: q = 1e-4, sigma = 0.5, T = 10^6, 3.5e5
	// of 3.33e6 points, a transform of 3,000,000 instead of 3,375,000). Below it the composition's tilted mass is at most
	// below, which the transform folds into the window and which is also
	// missing below it: an error below the window, whose tail sums from
	// any j below it are at most e^(t (top - j)) Z^k below, so windowTails
	// adds below to the fold error twice. Its untilted mass may be larger than
	// tail, but it lies below the window, where the bound counts it. (At
	// fold itself the two copies of below would add twice the fold above
	// to E: a calibration's search, whose fold is large, then moved its
	// answer up by 6e-8.)
	_, a1 := scanMin(func(s float64) float64 { return (kf*logMt(-s) - logf(1e-3*fold)) / s }, guess, cost)
	if !(a1 < negA) {
		a1 = negA
	}
	sA, sB := chernoffWindow(a1, b0, b1, full)
	if sB-sA+1 > maxGrid {
		return nil, errGrid("the composed loss grid needs "+strconv.FormatInt(sB-sA+1, 10)+" > 2^24 points at interval "+ftoa(h), h)
	}
	wLen := int(sB - sA + 1) // the window's length, at most 2^24
	wLo, err := windowLo(klo+sA, wLen, h)
	if err != nil {
		return nil, err
	}
	above, foldErr := windowTails(kf, mgf, logMt, sA, sB, full, guess, cost)
	if pes && sB < full-1 {
		r.inf = math.Min(1, r.inf+above)
	}
	n := fastLen(wLen)
	if sA == 0 && sB == full-1 {
		n = fastLen(int(full))
	}
	defer holdBig(n)()
	seqA, logZa, relA := a.tilted(t, n)
	seqB, logZb, relB := b.tilted(t, n)
	ma, mb := sum(seqA), sum(seqB)
	terms := math.Min(1/-math.Expm1(-t), float64(wLen))
	top := k64 * int64(la+lb)
	// The window's offsets i + sA, taken mod n, and top - (i + sA) in int64
	// (see selfConvolve).
	wrap, topA := int(sA%int64(n)), top-sA
	logZ := logZa + logZb
	base := *r
	// logErrOf returns the output's logErr, and the log of its weighted
	// l1 bound, from the bound perIndex on each entry's error.
	logErrOf := func(perIndex float64) (logE, logW float64) {
		lost := 2 * kf * (lostBound(na, logZa) + lostBound(nb, logZb)) * math.Pow(math.Max(ma, mb)+1e-300, 2*kf-1)
		mk := math.Pow(ma, kf) * math.Pow(mb, kf)
		E := perIndex*terms + 2*unitRound*mk + foldErr + lost
		EW := perIndex*float64(wLen) + 2*unitRound*mk + foldErr + lost
		return logf(E) + kf*logZ + t*float64(klo+top), logf(EW) + kf*logZ + t*float64(klo+top)
	}
	build := func(w []float64, perIndex float64) *lossDist {
		r := base
		r.lo = wLo
		r.mass = make([]float64, wLen)
		expMax := untiltAll(r.mass, func(i int) float64 { return w[(i+wrap)%n] },
			func(i int) float64 { return kf*logZ + t*float64(topA-int64(i)) })
		relU := 8 * unitRound * (800 + expMax)
		r.rel = (1+r.rel)*math.Exp(kf*(math.Log1p(relA)+math.Log1p(relB)))*(1+relU) - 1
		var logW float64
		r.logErr, logW = logErrOf(perIndex)
		if !math.IsInf(r.logErr, 0) {
			r.logGapW = math.Max(logW-r.logErr, 0)
		}
		r.trim()
		return &r
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	tr := fourier.NewFFT(n)
	specA := tr.Coefficients(nil, seqA)
	specB := tr.Coefficients(nil, seqB)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	pa, _ := newSpecPower(ctx, tr, seqA, specA, k, nil)
	pb, _ := newSpecPower(ctx, tr, seqB, specB, k, nil)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	c, in, outAbs := pairProduct(pa, pb)
	// The unrefined powers' result decides whether to refine them
	// (roundingMatters), unless their error bound, known before the
	// inverse transform, already exceeds 1e-4 of widthDelta at a Chernoff
	// bound on the index above which the composition's delta, as a curve
	// reports it, is at most widthDelta (chernoffIndex): the eps that
	// roundingMatters finds lies below it, where the error bound is
	// larger, so it would say yes, and the inverse transform and the
	// untilting of the unrefined result are skipped (q = 1e-4,
	// sigma = 0.5, T = 10^6: one transform of 3e6 points on each side).
	// They are skipped too where the error bound exceeds e^2 times that
	// threshold at an estimate of that eps (epsGuess): roundingMatters
	// would almost surely say yes. The estimate decides only whether the
	// unrefined result is looked at; where it misleads, the result is the
	// refined one, whose bound is the smaller. (The Chernoff bound is
	// loose where a step's rare large losses dominate: q = 1e-4,
	// sigma = 0.5, T = 10^6: 3.76 against an eps of 2.21, the error bound
	// e^7.8 below the threshold there and e^2.8 above it at the estimate
	// 2.17.)
	logE, _ := logErrOf(indexBound(in, outAbs, n))
	thr := logf(1e-4 * widthDelta)
	certain := logE-t*(math.Floor(chernoffIndex(kf, mgf, float64(klo), r.inf, guess, cost))+1) > thr
	likely := false
	if g := epsGuess(a, b, kf, h); g > 0 && !math.IsInf(g, 1) && !pairNoGuess {
		likely = logE-t*(math.Floor(g/h)+1) > thr+2
	}
	if !certain && !likely {
		pairLooks.Add(1)
		r = build(inverseBound(tr, c, in, outAbs, n))
		if !roundingMatters(r, h, pes) {
			return r, nil
		}
	} else {
		r = nil
	}
	// (The refinement changes pa, pb, specA and specB in place; c, in and
	// outAbs are the unrefined product's own.)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	ra, refA := newSpecPower(ctx, tr, seqA, specA, k, pa)
	rb, refB := newSpecPower(ctx, tr, seqB, specB, k, pb)
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if refA || refB {
		r = build(pairInverse(tr, ra, rb, n))
	} else if r == nil {
		r = build(inverseBound(tr, c, in, outAbs, n))
	}
	return r, nil
}

// memoMGF returns f remembering its values (safe for concurrent calls: a
// value computed twice at once is the same value).
func memoMGF(f func(float64) float64) func(float64) float64 {
	var mu sync.Mutex
	seen := map[float64]float64{}
	return func(s float64) float64 {
		mu.Lock()
		v, ok := seen[s]
		mu.Unlock()
		if ok {
			return v
		}
		v = f(s)
		mu.Lock()
		seen[s] = v
		mu.Unlock()
		return v
	}
}

// pairLooks counts pairPower's inverse transforms of unrefined powers,
// and pairNoGuess makes it decide without epsGuess (as before it had
// one); both for tests.
var (
	pairLooks   atomic.Int64
	pairNoGuess bool
)

// chernoffIndex returns a grid index above which a k-fold composition
// whose step has the log MGF mgf (in offsets from lo / k, its first index
// lo) and which holds inf at +Inf has a delta of at most widthDelta, as
// newCurve reports it: the least Chernoff bound on where its mass above,
// with inf, falls to widthDelta / 2 (room for the curve's factor 1 + rel);
// +Inf where inf leaves no room.
func chernoffIndex(kf float64, mgf func(float64) float64, lo, inf, guess, cost float64) float64 {
	room := widthDelta/2 - inf
	if !(room > 0) {
		return math.Inf(1)
	}
	_, j := scanMin(func(s float64) float64 { return (kf*mgf(s) - logf(room)) / s }, guess, cost)
	return lo + j
}

// epsGuess returns an estimate of the eps at widthDelta of k compositions
// of the composition of a and b (losses on the grid of interval h): the
// larger of mu-GDP's at the composed variance (the bulk) and the larger of
// a's and b's own eps at widthDelta / k (a single rare step of large
// loss), as predictWidth estimates from below. Over the 60 points of
// docs/privacy.md's width grid it lay between 0.75 and 1.09 times the
// eps of pairPower's unrefined result (0.75 at q = 0.01, sigma = 0.5,
// T = 1000, where rare large losses matter); it is not a bound.
func epsGuess(a, b *lossDist, kf, h float64) float64 {
	_, _, va := lossMoments(a, h)
	_, _, vb := lossMoments(b, h)
	e := 0.0
	if v := kf * (va + vb); v > 0 {
		e = exactEpsilon(math.Sqrt(v), widthDelta)
	}
	for _, d := range []*lossDist{a, b} {
		e = math.Max(e, newCurve(d, h, true).epsilon(widthDelta/kf))
	}
	return e
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
// (non-negative, length n; seq not modified) with their error bounds.
// With refine, the coefficients that dominate the bound are recomputed in
// double-words (refineSpectrum) and only those powers are taken again:
// they replace those of the unrefined powers, plain, and those of spec, in
// place (no copies of 3 * 10^6-point spectra), and refined says whether
// any was; otherwise plain is returned as it is.
func newSpecPower(ctx context.Context, tr *fourier.FFT, seq []float64, spec []complex128, k int, plain *specPower) (sp *specPower, refined bool) {
	n := len(seq)
	kf, nf := float64(k), float64(n)
	fe := fftErrorConst(n)
	m := sum(seq) * (1 + nf*unitRound)
	if plain != nil {
		c := spec
		in := make([]float64, len(c))
		for j := range in {
			in[j] = fe * m
		}
		round := map[int]float64{}
		exact := refineSpectrum(ctx, tr, seq, c, in, k, m, fe, round)
		if exact == nil {
			return plain, false
		}
		for j, v := range exact {
			a, e := pairAbs(c[j]), in[j]
			plain.p[j], plain.f[j] = v, kf*e*math.Pow(a+e, kf-1)+round[j]
		}
		return plain, true
	}
	pr := powRound(k, math.Sqrt(5)*unitRound)
	r := &specPower{p: make([]complex128, len(spec)), f: make([]float64, len(spec))}
	e := fe * m
	par.Range(len(spec), chunk, powCost(k), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			a := pairAbs(spec[j])
			if (kf-1)*math.Log(a+e) < -800 {
				// The exact power's modulus is at most (a + e)^k <
				// e^-800: the power is 0, within the least positive
				// float64 (most of a spectrum raised to a large k: no
				// repeated squaring, no pow, for them).
				r.p[j], r.f[j] = 0, math.SmallestNonzeroFloat64
				continue
			}
			r.p[j] = cpow(spec[j], k)
			r.f[j] = kf*e*math.Pow(a+e, kf-1) + pr*math.Pow(a, kf)
		}
	})
	return r, false
}

// pairAbs is |z| rounded up (as kthPower takes it).
func pairAbs(z complex128) float64 { return math.Hypot(real(z), imag(z)) * (1 + 4*unitRound) }

// pairInverse returns the inverse transform (times 1/n) of the product of
// the powers a and b, and a bound on the error of each entry
// ([pairProduct], [inverseBound]).
func pairInverse(tr *fourier.FFT, a, b *specPower, n int) (w []float64, perIndex float64) {
	c, in, outAbs := pairProduct(a, b)
	return inverseBound(tr, c, in, outAbs, n)
}

// pairProduct returns the product c of the powers a and b, a bound in on
// the error of each coefficient and a bound outAbs on its modulus: with
// P_a and P_b the exact powers, |p_a p_b - P_a P_b| <= f_a |p_b| + (|p_a|
// + f_a) f_b, plus sqrt5 u |p_a| |p_b| for the product's rounding.
func pairProduct(a, b *specPower) (c []complex128, in, outAbs []float64) {
	c = make([]complex128, len(a.p))
	in = make([]float64, len(a.p))
	outAbs = make([]float64, len(a.p))
	par.Range(len(c), chunk, 16, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			pa, pb := pairAbs(a.p[j]), pairAbs(b.p[j])
			c[j] = a.p[j] * b.p[j]
			in[j] = a.f[j]*pb + (pa+a.f[j])*b.f[j] + math.Sqrt(5)*unitRound*pa*pb
			outAbs[j] = pairAbs(c[j])
		}
	})
	return c, in, outAbs
}
