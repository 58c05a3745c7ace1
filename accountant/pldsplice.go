package accountant

import "math"

// This file joins two computations of one discretised distribution, one
// untilted and one tilted, into one whose error bound is small at every
// tilt between, so that a composition with a PLD of another tilt carries
// a rigorous tilted bound (see splice and composeDists).
//
// The bound, on paper. For a tilt lambda >= 0 and computed masses p~ of
// exact masses p (absolute grid indices l), write the tilted error mass
// e_lambda(p~) = sum_l e^(lambda l) |p_l - p~_l| and the tilted total
// mass W_lambda(p~) = sum_l e^(lambda l) |p~_l|. The weight is
// multiplicative, e^(lambda (l + m)) = e^(lambda l) e^(lambda m), so
// sum_l e^(lambda l) |(x * y)_l| <= (sum e^(lambda l) |x_l|)(sum
// e^(lambda m) |y_m|) for any sequences. The exact convolution is
// p * q = (p~ + d_p) * (q~ + d_q) with d = exact - computed, and the
// computed one p~ * q~ + f (f the FFT's rounding), so the convolution's
// error is d_p * q~ + p~ * d_q + d_p * d_q - f and
//
//	e_lambda(r~) <= e_lambda(p~) W_lambda(q~) + W_lambda(p~) e_lambda(q~)
//	               + e_lambda(p~) e_lambda(q~) + e_lambda(f)
//
// at every lambda at which both factors have a bound. Every tail sum
// follows from it: sum_{l >= j} |r_l - r~_l| <= e^(-lambda j) e_lambda(r~)
// (e^(lambda (l - j)) >= 1 for l >= j), so a delta query at the index j
// may take the least over the lambdas held. A factor whose error is held
// at one tilt tau only is bounded at another lambda from the indices its
// error can occupy: at most e^((lambda - tau) hi) times as much above tau
// (no error above its last index hi), e^(-(tau - lambda) L) below it when
// every error lies at or above L (lossDist.errLo, logErrAt).
//
// The FFT is run at one tilt t_c, and e_lambda(f) is small relative to
// the masses only near the losses t_c is tuned for: composed untilted
// (t_c = 0) it is about u times the largest mass at every index, a floor
// near 1e-11 under every delta; composed at a tilt tuned for one factor's
// far tail, it is e^(t_c (top - l)) times larger at the low losses where
// the other factor's bulk makes delta. A factor computed twice, at tilt 0
// (masses p0, error mass C0 = e_0(p0), any index) and at tilt t (masses
// pt, tail sums at most e^(Lt - t j)), is joined at the index k where the
// tilted bound falls to C0, e^(Lt - t k) <= C0: masses p0 below k and pt
// from k up. Its error is then the tilted one's restricted to l >= k
// (part A) plus the untilted one's restricted to l < k (part B), so at
// every lambda in [0, t]
//
//	e_lambda <= e^(Lt - (t - lambda) k) e^gap + C0 e^(lambda (k - 1))
//
// (part A: e^(lambda l) <= e^(t l) e^(-(t - lambda) k) for l >= k; part
// B: e^(lambda l) <= e^(lambda (k - 1)) for l < k), both about
// C0 e^(lambda k): as if the whole error sat near index k, the point
// where the untilted computation stops being the better one. Its tail
// sums are 0 for part B above k - 1, so no delta at losses above k h
// carries the untilted floor. composeDists composes such a factor at a
// tilt fitted to the composition (the Chernoff parameter of the sum's
// upper tail at tiltTarget), not at the factor's own tilt, which was
// tuned for the factor's tail alone: a heavier tail of the other factor
// weighted by that tilt made the error mass of the product enormous
// (SampledGaussianPLD(0.01, 1, ReplaceOne) composed with the add/remove
// PLD of the same q, sigma: Delta(0.5) in [1.4e-11, 1]).

// splice returns the distribution that takes low's masses below the index
// k at which high's tilted tail-sum bound e^(Lt - t k) falls to low's
// untilted l1 error bound C0, and high's from k up (see above): low and
// high are two computations of one discrete distribution (the same exact
// masses and infinite mass), low at tilt 0 with a finite bound at tilt 0,
// high at a positive tilt. ok is false where they do not qualify; the
// optimistic side's noOpt is returned as it is.
func splice(low, high *lossDist) (r *lossDist, ok bool) {
	if low == noOpt || high == noOpt {
		return noOpt, true
	}
	t := high.tau
	if low.tau != 0 || !(t > 0) || !high.hasErr() {
		return nil, false
	}
	logC0 := low.logErrAt(0)
	lt := high.logErrAt(t)
	if math.IsInf(logC0, 1) || math.IsNaN(logC0) || math.IsInf(lt, 1) || math.IsNaN(lt) {
		return nil, false
	}
	lowHi, highHi := int(low.hiIndex()), int(high.hiIndex())
	// k: the least index with e^(lt - t k) <= C0 (the tilted bound is the
	// better one from there up), at most low's last index + 1 (above it
	// low holds no masses: a window may have cut its upper tail into inf)
	// and at most high's (the joined inf is high's, which holds high's
	// masses above its window: low's masses there would be counted twice,
	// TestSpliceTiltedWindowCutBelowJoin), and at least low's first index.
	// Any k is valid for the bound below; this one only makes it tight.
	kf := math.Ceil((lt - math.Max(logC0, -745)) / t)
	k := int(math.Max(float64(low.lo), math.Min(kf, float64(min(lowHi, highHi)+1))))
	lo := min(low.lo, high.lo)
	hi := max(highHi, k-1)
	r = &lossDist{
		lo:        lo,
		mass:      make([]float64, hi-lo+1),
		inf:       high.inf,
		rel:       math.Max(low.rel, high.rel),
		infl:      math.Max(low.infl, high.infl),
		tau:       t,
		logErr:    lt,
		logGapW:   gapOf(high.logErrWAt(t), lt),
		errLo:     k,
		hasErrLo:  true,
		unbounded: low.unbounded || high.unbounded,
	}
	for i := low.lo; i < k; i++ {
		r.mass[i-lo] = low.mass[i-low.lo]
	}
	for i := max(k, high.lo); i <= highHi; i++ {
		r.mass[i-lo] = high.mass[i-high.lo]
	}
	// Part B: low's error at the indices below k, at most C0 in l1 (its
	// weighted norm at tilt 0), none above k - 1.
	r.prop = []errBound{{tau: 0, logErr: logC0, logGapW: gapOf(low.logErrWAt(0), logC0), top: k - 1, capped: true}}
	r.spliced = true
	return r, true
}

// gapOf returns max(logW - logErr, 0), the logGapW of a bound e^logErr
// whose weighted l1 norm is at most e^logW: 0 where there is no error
// (logErr = -Inf, where the difference would be NaN).
func gapOf(logW, logErr float64) float64 {
	if math.IsInf(logErr, -1) {
		return 0
	}
	return math.Max(logW-logErr, 0)
}

// splicePLD returns p's masses spliced below with its base's (p is a
// composeBase PLD: its tilted one step, base the same step composed at
// tilt 0), or p's base where a direction does not qualify.
func (p *PLD) splicePLD() *PLD {
	b := p.base
	r := &PLD{h: p.h, tail: p.tail}
	out := make([]*lossDist, 4)
	for i := range 4 {
		if i%2 == 1 && p.symmetric() && b.symmetric() {
			out[i] = out[i-1]
			continue
		}
		d, ok := splice(b.dist(i), p.dist(i))
		if !ok {
			return b
		}
		out[i] = d
	}
	r.remove, r.add, r.removeOpt, r.addOpt = out[0], out[1], out[2], out[3]
	return r
}

// spliceSelf returns p, base.SelfCompose(count) computed at a tilt tuned
// for its own upper tail, joined below with the same composition computed
// at tilt 0 (see splice), direction by direction; a direction that does
// not qualify (no positive tilt, an input error without a bound at tilt
// 0) keeps p's masses, and p is returned where the untilted composition
// fails. Composed as it is, p's error bound, held at its own tilt only
// (no lowest error index), is carried to the composition's tilt and
// weighted there by the other input's masses at the losses where that
// one's delta is made: GaussianPLD(2).SelfCompose(2) composed with
// GaussianPLD(0.5) at interval 1e-3 had eps(1e-6) in [0, 13.115] against
// the mu-GDP truth 11.81116.
func (p *PLD) spliceSelf() *PLD {
	b := p.base
	low, err := b.selfComposeUntilted(p.count, b.tail)
	if err != nil {
		return p
	}
	r := &PLD{h: p.h, tail: p.tail}
	out := make([]*lossDist, 4)
	for i := range 4 {
		if i%2 == 1 && p.symmetric() && low.symmetric() {
			out[i] = out[i-1]
			continue
		}
		if d, ok := splice(low.dist(i), p.dist(i)); ok {
			out[i] = d
		} else {
			out[i] = p.dist(i)
		}
	}
	r.remove, r.add, r.removeOpt, r.addOpt = out[0], out[1], out[2], out[3]
	return r
}

// chernoffTilt returns the Chernoff parameter, per grid index, of the
// upper tail at tiltTarget of the sum of a loss from a and one from b
// (their computed masses; any tilt is valid, this one only decides where
// the rounding bound is tight), at most 1.5 times a Gaussian's of the
// same variance; 0 where it is not defined (a point mass). pairTilt takes
// it where carrying it down to tilt 0 is cheap.
func chernoffTilt(a, b *lossDist) float64 {
	fa, la := a.support()
	fb, lb := b.support()
	if fa >= la || fb >= lb {
		return 0
	}
	ga, gb := spreadGuess(a, 1, tiltTarget), spreadGuess(b, 1, tiltTarget)
	if !(ga > 0 && gb > 0) {
		return 0
	}
	g := 1 / math.Sqrt(1/(ga*ga)+1/(gb*gb))
	t, _ := scanMin(func(s float64) float64 {
		return (a.logMGF(s, fa, la) + b.logMGF(s, fb, lb) - logf(tiltTarget)) / s
	}, g, mgfCost(la-fa+lb-fb+2))
	return math.Min(t, 1.5*g)
}
