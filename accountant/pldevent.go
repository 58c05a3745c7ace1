package accountant

import (
	"context"
	"math"
	"slices"

	"github.com/dpmf/dpmf/internal/par"
)

// This file discretises single events: the Gaussian mechanism and the
// Poisson-subsampled Gaussian mechanism.

// maxGrid bounds the number of grid points of one distribution (a 128 MiB
// slice of float64).
const maxGrid = 1 << 24

// GaussianPLD returns the PLD of the Gaussian mechanism with noise
// multiplier sigma = noise std / L2 sensitivity. Its pair (N(1, sigma^2),
// N(0, sigma^2)) is symmetric, so both directions of AddRemove, and
// ReplaceOne, share it: the relation enters only through the sensitivity
// the caller divided by. Its loss is N(mu^2/2, mu^2) with mu = 1/sigma, so
// k compositions are exactly mu-GDP with mu = sqrt(k)/sigma ([Delta]); the
// PLD is for composing it with events that are not Gaussian.
//
// Special cases are:
//
//	GaussianPLD(+Inf, o) is the PLD of no privacy loss (Delta = 0)
//	GaussianPLD(sigma, o) is an error for sigma <= 0 or NaN
//	GaussianPLD(sigma, o) is an error if the grid would exceed 2^24 points
//	    (sigma below about 16.5 / (2^24 h): 0.01 at the default interval)
func GaussianPLD(sigma float64, o PLDOptions) (*PLD, error) {
	// SampledGaussianPLD at q = 1 is this PLD, and checks the same.
	return SampledGaussianPLD(1, sigma, AddRemove, o)
}

// discretiseAll sets p's distributions to the pessimistic and optimistic
// discretisations (the latter noOpt if o.safeOnly) of the models of its
// directions, remove then add, or of one model for a symmetric pair.
func (p *PLD) discretiseAll(o PLDOptions, ms ...lossModel) error {
	return p.each(len(ms) == 1, func(i int) (*lossDist, error) {
		m := ms[i%len(ms)]
		m.ctx = o.ctx
		if i < 2 {
			return discretise(m, p.h, p.tail)
		}
		if o.safeOnly {
			return noOpt, nil
		}
		return discretiseOpt(m, p.h, p.tail)
	})
}

// SampledGaussianPLD returns the PLD of the Gaussian mechanism applied to
// a Poisson subsample that holds each record independently with
// probability q, under the neighbouring relation r. sigma is the noise
// multiplier: the noise std divided by the L2 sensitivity of one record
// under r, which is the norm bound C of a record's (clipped) contribution
// for AddRemove and 2 C for ReplaceOne (the sensitivity of the unsampled
// sum, as for [GaussianPLD] and [ReleaseSensitivity]).
//
// AddRemove: the two directions are the pairs, in units of C,
//
//	remove: ((1-q) N(0, sigma^2) + q N(1, sigma^2),  N(0, sigma^2))
//	add:    (N(0, sigma^2),  (1-q) N(0, sigma^2) + q N(1, sigma^2))
//
// which dominate the subsampled mechanism in each direction (Zhu, Dong &
// Wang 2022); compositions keep the directions apart and
// [PLD.Delta] reports the worse.
//
// ReplaceOne (0 < q < 1): an upper bound, not a tight accounting. The
// setting: every record's contribution is clipped to L2 norm at most C,
// each step draws every record independently with probability q, adds the
// drawn contributions and Gaussian noise of std 2 sigma C per coordinate,
// and neighbouring data sets have the same size and differ in the record at
// one position (which keeps its coin). Conditioned on the other records,
// the two outputs are M_a = (1-q) N(0, s^2 I) + q N(a, s^2 I) and M_b, with
// s = 2 sigma C, ||a||, ||b|| <= C. With A = [a b] / (sqrt2 C), whose
// operator norm is at most 1 (A^T A has trace (|a|^2 + |b|^2) / (2 C^2) <=
// 1), the map X -> A X + W, W ~ N(0, s^2 (I - A A^T)), sends N(m, s^2 I_2)
// to N(A m, s^2 I_d), so it sends the pair
//
//	P = (1-q) N(0, s^2 I_2) + q N(sqrt2 C e_1, s^2 I_2)
//	Q = (1-q) N(0, s^2 I_2) + q N(sqrt2 C e_2, s^2 I_2)
//
// to (M_a, M_b), and adding the other records' sum is a further common
// post-processing. By the data-processing inequality for the hockey-stick
// divergence (post-processing; Balle, Barthe & Gaboardi 2018, Zhu, Dong &
// Wang 2022), (P, Q) dominates the step for every a, b, and by Zhu, Dong &
// Wang 2022, Theorem 10, composing it dominates adaptive compositions. P
// and Q are products: P = P_1 x N(0, s^2), Q = N(0, s^2) x P_1 with
// P_1 = (1-q) N(0, s^2) + q N(sqrt2 C, s^2), so (P, Q) is the composition of
// the remove and the add pair above at noise multiplier sqrt2 sigma, and
// (Q, P) has the same loss distribution: the PLD is symmetric. The
// achievable pair a = -b (|a| = C) is dominated by (P, Q), so the true
// replace-one epsilon lies between that pair's and this PLD's; at q = 1 the
// two agree (a Gaussian of sensitivity 2 C). Koskela, Jalko & Honkela 2020
// account the replace-one Poisson-subsampled Gaussian with the pair a = -b
// itself (and the newest dp_accounting with a symmetric pair of that kind);
// dpmf does not, for lack of a published proof that it dominates every a, b
// in more than one dimension. docs/privacy.md gives the measured gap.
// The two directions are composed in one transform at the tilt of the
// step's upper tail, as [SampledGaussian] composes one replace-one step.
// Composed at tilt 0, as they were, the FFT's rounding bound put a floor
// under the safe delta (5.3e-12 at q = 0.01, sigma = 1, the default
// interval: Delta(5) was that, the truth about 1e-43, and Epsilon(1e-12)
// was +Inf). The result records that tilt-0 composition as its base:
// [PLD.SelfCompose] composes it, as it did before, since the tilted
// result's error bound, carried to the lower tilts it needs, is loose.
// [PLD.Compose] with a PLD of another base (or a copy built apart)
// composes the two joined: the base's masses at the low losses, where its
// untilted bound is the smaller, and the tilted ones above, with a bound
// at every tilt between (see splice in pldsplice.go), at a tilt fitted to
// the composition. Composed as the tilted masses alone, at their own tilt,
// with the add/remove PLD of the same q and sigma, Delta(0.5) was in
// [1.4e-11, 1]; composed as the base, the floor stayed (with
// GaussianPLD(5) at q = 0.01, sigma = 1, interval 1e-3: Epsilon(1e-12) =
// +Inf); joined, that Epsilon(1e-12) is in [1.3267429, 1.3267598], the
// truth inside (TestComposeReplaceOneStepApartNoFloor).
//
// Special cases are:
//
//	SampledGaussianPLD(0, sigma, r, o) is the PLD of no privacy loss
//	SampledGaussianPLD(1, sigma, r, o) = GaussianPLD(sigma, o)
//	SampledGaussianPLD(q, +Inf, r, o) is the PLD of no privacy loss
//	SampledGaussianPLD(q, sigma, r, o) is an error for q outside [0, 1] or NaN
//	SampledGaussianPLD(q, sigma, r, o) is an error for sigma <= 0 or NaN
//	SampledGaussianPLD(q, sigma, r, o) is an error for a relation other
//	    than AddRemove and ReplaceOne
//	SampledGaussianPLD(q, sigma, r, o) is an error if the grid would exceed
//	    2^24 points
//	SampledGaussianPLD(q, sigma, r, o) for sigma > 1e8 (and 0 < q < 1) is
//	    that of sigma = 1e8, which dominates it (more noise is a
//	    post-processing of less): its losses are far below any interval
func SampledGaussianPLD(q, sigma float64, r Relation, o PLDOptions) (*PLD, error) {
	return sampledGaussianPLD(q, sigma, r, o, true)
}

// sampledGaussianPLD is SampledGaussianPLD; under ReplaceOne (0 < q < 1)
// with tight false it returns the two directions composed at tilt 0 (the
// base that SampledGaussianPLD's result records, with its floor).
func sampledGaussianPLD(q, sigma float64, r Relation, o PLDOptions, tight bool) (*PLD, error) {
	h, tail, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkSampled(q, sigma, 1, r); err != nil {
		return nil, err
	}
	if q == 0 || math.IsInf(sigma, 1) {
		return identityPLD(h, tail), nil
	}
	var ms []lossModel
	if q == 1 { // the Gaussian mechanism, a symmetric pair
		ms = []lossModel{gaussianModel(1 / sigma)}
	} else {
		// Above maxSampledSigma the mixture's losses (about q/sigma) are far
		// below any grid interval, and evaluating them loses all precision (at
		// sigma = 1e15 half the mass came out as an infinite loss, at 1e200 as
		// NaN). Accounting sigma as maxSampledSigma is safe: more noise is a
		// post-processing of less (add independent Gaussian noise), so it can
		// only lower every delta.
		if r == ReplaceOne {
			// The remove and add pairs at sqrt2 sigma, composed (see above).
			sigma *= math.Sqrt2
		}
		sigma = math.Min(sigma, maxSampledSigma)
		ms = []lossModel{sampledRemoveModel(q, sigma), sampledAddModel(q, sigma)}
	}
	p := &PLD{h: h, tail: tail}
	if err := p.discretiseAll(o, ms...); err != nil {
		return nil, err
	}
	p.remove.unbounded = true
	if r == ReplaceOne && q < 1 {
		rp := &PLD{h: h, tail: tail}
		// The discretised directions have tilt 0: convolve composes
		// them at 0.
		if err := rp.each(true, func(i int) (*lossDist, error) { return convolve(p.dist(i), p.dist(i+1)) }); err != nil {
			return nil, err
		}
		if !tight {
			return rp, nil
		}
		// The step composed as SampledGaussian composes it (its fold
		// rule, sampledGaussian's at one step), rp its base: SelfCompose
		// of the tilted result carried its error bound to lower tilts
		// and was loose (see sampledGaussian).
		// (replaceOneSteps reads sigma only where p is nil.)
		one, err := replaceOneSteps(q, sigma/math.Sqrt2, 1, math.Max(tail, foldFloor), o, p)
		if err != nil {
			return nil, err
		}
		one.base, one.count, one.composeBase = rp, 1, true
		return one, nil
	}
	return p, nil
}

// maxSampledSigma is the largest noise multiplier SampledGaussianPLD
// evaluates; a larger one is accounted as this one (an upper bound).
const maxSampledSigma = 1e8

// identityPLD is the PLD of a mechanism that reveals nothing: loss 0.
func identityPLD(h, tail float64) *PLD {
	d := &lossDist{mass: []float64{1}, logErr: math.Inf(-1)}
	return &PLD{h: h, tail: tail, remove: d, add: d, removeOpt: d, addOpt: d}
}

// lossModel is one direction of a pair (P, Q) on the real line whose
// privacy loss L(x) = log(dP/dQ)(x) increases with x.
type lossModel struct {
	loss  func(x float64) float64 // L(x)
	inv   func(l float64) float64 // the x with L(x) = l; -Inf / +Inf below / above the range of L
	pdf   func(x float64) float64 // density of P
	cdf   func(x float64) float64 // P(X <= x)
	sf    func(x float64) float64 // P(X > x)
	scale float64                 // length on which pdf and L vary
	// lerr bounds the rounding error of L(x) on [a, b], in units of u,
	// beyond a few ulps of |L| itself: the error its arguments carry into
	// it (every model sets it).
	lerr func(a, b float64) float64
	// xlo, xhi have P(X < xlo) and P(X > xhi) at most the tail mass.
	xlo, xhi func(tail float64) float64
	// ctx, if not nil, is checked every cancelEvery cells of a
	// discretisation, which returns ctx.Err() once it is done.
	ctx context.Context
}

// cancelEvery is the stride, in grid cells, at which a discretisation
// checks its model's context: a few milliseconds of work.
const cancelEvery = 1 << 10

// normalTailZ returns z with Phi(-z) <= tail.
func normalTailZ(tail float64) float64 {
	z := 1.0
	for 0.5*math.Erfc(z/math.Sqrt2) > tail {
		z += 0.25
	}
	return z
}

func stdCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
func stdSF(x float64) float64  { return 0.5 * math.Erfc(x/math.Sqrt2) }
func stdPDF(x float64) float64 { return math.Exp(-0.5*x*x) / sqrt2Pi }

// gaussianModel is P = N(mu, 1), Q = N(0, 1): L(x) = mu x - mu^2/2.
func gaussianModel(mu float64) lossModel {
	return lossModel{
		loss:  func(x float64) float64 { return mu*x - 0.5*mu*mu },
		inv:   func(l float64) float64 { return l/mu + 0.5*mu },
		pdf:   func(x float64) float64 { return stdPDF(x - mu) },
		cdf:   func(x float64) float64 { return stdCDF(x - mu) },
		sf:    func(x float64) float64 { return stdSF(x - mu) },
		scale: 1,
		// mu x - mu^2/2: a few ulps of mu |x| and mu^2.
		lerr: func(a, b float64) float64 { return 4 * (mu*math.Max(math.Abs(a), math.Abs(b)) + mu*mu) },
		xlo:  func(t float64) float64 { return mu - normalTailZ(t) },
		xhi:  func(t float64) float64 { return mu + normalTailZ(t) },
	}
}

// logMix returns log(1 - q + q e^u) without overflow: log1p(q expm1(u))
// for u <= 700 (no cancellation: its error is a few ulps of the result and
// of u times the derivative, see mixErr), and u + log(q) +
// log1p((1-q)/q e^-u) above.
func logMix(q, u float64) float64 {
	if u <= 700 {
		return math.Log1p(q * math.Expm1(u))
	}
	return u + logf(q) + math.Log1p((1-q)/q*math.Exp(-u))
}

// invMix returns the u with logMix(q, u) = v, for v > log(1-q):
// log1p(expm1(v)/q), written as v - log(q) + log1p(-(1-q) e^-v) for v > 1
// so that it does not overflow.
func invMix(q, v float64) float64 {
	if v <= 1 {
		return math.Log1p(math.Expm1(v) / q)
	}
	return v - logf(q) + math.Log1p(-(1-q)*math.Exp(-v))
}

// sampledRemoveModel is P = (1-q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2):
// L(x) = log(1 - q + q e^((2x-1)/(2 s^2))), from log(1-q) to +Inf.
func sampledRemoveModel(q, s float64) lossModel {
	s2 := s * s
	return lossModel{
		loss: func(x float64) float64 { return logMix(q, (2*x-1)/(2*s2)) },
		inv: func(l float64) float64 {
			// e^l = 1 + q (e^u - 1), u = (2x-1)/(2 s^2)
			if l <= math.Log1p(-q) {
				return math.Inf(-1)
			}
			return s2*invMix(q, l) + 0.5
		},
		pdf: func(x float64) float64 { return ((1-q)*stdPDF(x/s) + q*stdPDF((x-1)/s)) / s },
		cdf: func(x float64) float64 { return (1-q)*stdCDF(x/s) + q*stdCDF((x-1)/s) },
		sf:  func(x float64) float64 { return (1-q)*stdSF(x/s) + q*stdSF((x-1)/s) },
		// L changes by about (x - x')/s^2 at most: its scale is s^2.
		scale: math.Min(s, s2),
		lerr: func(a, b float64) float64 {
			return mixErr(q, (2*a-1)/(2*s2), (2*b-1)/(2*s2))
		},
		xlo: func(t float64) float64 { return -s * normalTailZ(t) },
		xhi: func(t float64) float64 { return 1 + s*normalTailZ(t) },
	}
}

// mixErr bounds, in units of u, the error that logMix(q, v) for v in
// [v0, v1] takes from the rounding of v (a few ulps of |v|) and of its own
// steps beyond a few ulps of its result: the derivative
// w = q e^v / (1 - q + q e^v) <= min(1, q e^v1 / (1 - q)) times 4 (|v| + 1),
// and for v > 700, where it is v + log q + log1p(...), a few ulps of v and
// log q.
func mixErr(q, v0, v1 float64) float64 {
	vmax := math.Max(math.Abs(v0), math.Abs(v1))
	w := 1.0
	if v1 < 700 {
		w = math.Min(1, q*math.Exp(v1)/(1-q))
	}
	e := 4 * w * (vmax + 1)
	if v1 > 700 {
		e += 4 * (vmax + math.Abs(logf(q)) + 1)
	}
	return e
}

// sampledAddModel is the add direction in the variable y = -x:
// P = N(0, s^2), Q = (1-q) N(0, s^2) + q N(-1, s^2),
// L(y) = -log(1 - q + q e^((-2y-1)/(2 s^2))), from -Inf to -log(1-q): the
// remove direction's loss mirrored, L(y) = -L_remove(-y).
func sampledAddModel(q, s float64) lossModel {
	rm := sampledRemoveModel(q, s)
	return lossModel{
		loss:  func(y float64) float64 { return -rm.loss(-y) },
		inv:   func(l float64) float64 { return -rm.inv(-l) },
		pdf:   func(y float64) float64 { return stdPDF(y/s) / s },
		cdf:   func(y float64) float64 { return stdCDF(y / s) },
		sf:    func(y float64) float64 { return stdSF(y / s) },
		scale: rm.scale,
		lerr:  func(a, b float64) float64 { return rm.lerr(-b, -a) },
		xlo:   func(t float64) float64 { return -s * normalTailZ(t) },
		xhi:   func(t float64) float64 { return s * normalTailZ(t) },
	}
}

// The 2- and 5-point Gauss-Legendre rules on [-1, 1].
var (
	glNodes2, glWeights2 = gaussLegendre(2)
	glNodes5, glWeights5 = gaussLegendre(5)
)

// lossGrid returns the range [xlo, xhi] of m's outcomes that keeps all but
// tail of the mass on each side, and the grid points lo..hi at interval h
// that cover its losses; it is an error if they take more than maxGrid
// points or a loss is infinite.
func lossGrid(m lossModel, h, tail float64) (xlo, xhi float64, lo, hi int, err error) {
	xlo, xhi = m.xlo(tail), m.xhi(tail)
	llo, lhi := m.loss(xlo), m.loss(xhi)
	// Checked as floats: a float64 beyond an int's range (soon reached on
	// a 32-bit platform) has no int conversion.
	if math.IsNaN(llo) || math.IsNaN(lhi) || math.IsInf(lhi, 1) {
		// 1/sigma^2 overflows: no grid of any interval holds the losses.
		return 0, 0, 0, 0, &gridError{"the privacy losses reach beyond the float64 range: the noise is far too small for any grid"}
	}
	flo, fhi := math.Floor(llo/h), math.Ceil(lhi/h)
	fhi = math.Max(fhi, flo)
	if !(fhi-flo+1 <= maxGrid) || !(math.Max(-flo, fhi) <= math.MaxInt>>1) || math.IsInf(llo, 0) || math.IsInf(lhi, 0) {
		return 0, 0, 0, 0, errGrid("the privacy losses from "+ftoa(llo)+" to "+ftoa(lhi)+
			" need more than 2^24 grid points at interval "+ftoa(h), h)
	}
	return xlo, xhi, int(flo), int(fhi), nil
}

// discretise returns the connect-the-dots discretisation of m on the grid
// {i h}: with x_i = L^-1(i h), the P-mass of each cell (x_{i-1}, x_i] goes
// to its ends as
//
//	upper end l_i:     A e^h / (e^h - 1),  A = int_cell (1 - e^(l_{i-1} - L)) dP
//	lower end l_{i-1}: B / (e^h - 1),      B = int_cell (e^(l_i - L) - 1) dP
//
// which keep the cell's P-mass and Q-mass (Doroshenko et al. 2022), so the
// cell's discrete delta(eps) is the chord, in e^eps, of its true delta,
// which is convex: the discrete pair dominates the cell for every eps. Both
// integrands are non-negative, so the 5-point Gauss-Legendre rule on panels
// no wider than scale/20 (2 points for cells narrower than scale/1000) gives them to a small relative error. A cell too
// wide for that (far in a tail, where L is flat) puts its whole mass at its
// upper end, which dominates too. The mass below the grid goes to its lowest
// point (a larger loss), the mass above it to +Inf.
func discretise(m lossModel, h, tail float64) (*lossDist, error) {
	xlo, xhi, lo, hi, err := lossGrid(m, h, tail)
	if err != nil {
		return nil, err
	}
	n := hi - lo + 1
	d := &lossDist{lo: lo, mass: make([]float64, n), logErr: math.Inf(-1)}
	xs := make([]float64, n)
	err = cells(m.ctx, 0, n, costInv, func(i int) { xs[i] = m.inv(float64(lo+i) * h) })
	if err != nil {
		return nil, err
	}
	d.mass[0] = m.cdf(xs[0])
	if !math.IsInf(xs[n-1], 1) {
		d.inf = m.sf(xs[n-1])
	}
	supLoss := m.loss(math.Inf(1)) // +Inf, or the loss's finite bound
	eh1, ehh := math.Expm1(h), math.Exp(h)
	upper := 1 / -math.Expm1(-h) // e^h / (e^h - 1)
	lower := 1 / math.Expm1(h)
	panel := m.scale / 20
	cellRel := make([]float64, n)
	// The cells run on all cores. Cell i adds to mass[i] and cellRel[i],
	// which no cell before it touched, and keeps what it adds to
	// mass[i-1] and cellRel[i-1] in lowMass[i] and lowRel[i] (or to d.inf
	// in lowInf[i]), for the pass after the cells to add in the order of
	// i, as one cell after the other would.
	lowMass, lowRel, lowInf := make([]float64, n), make([]float64, n), make([]float64, n)
	cell := func(i int) {
		a, b := xs[i-1], xs[i]
		if !(b > a) {
			return
		}
		lPrev := float64(lo+i-1) * h
		// A cell reaching x = -Inf or +Inf with a bounded loss there
		// (the mass piled up at the infimum log(1-q) of the sampled
		// Gaussian's remove loss, or the supremum of the add loss): the
		// part beyond [xlo, xhi], at most the tail mass, is rounded up
		// to l_i, and the rest is split as any other cell, so the
		// rounding error stays second order in h there too.
		if (math.IsInf(a, -1) && b > xlo) || (math.IsInf(b, 1) && supLoss <= lPrev+h && a < xhi) {
			a2, b2 := math.Max(a, xlo), math.Min(b, xhi)
			var out float64
			if math.IsInf(a, -1) {
				out += m.cdf(a2)
			}
			if math.IsInf(b, 1) {
				out += m.sf(b2)
			}
			if math.Ceil((b2-a2)/panel) <= 1<<12 {
				d.mass[i] += out
				a, b = a2, b2
			}
		}
		var A, B float64
		hw, ok := panels(a, b, m.scale, func(x, wt float64) {
			f := wt * m.pdf(x)
			// em = e^(l_{i-1} - L) - 1 in [e^-h - 1, 0]; then
			// e^(l_i - L) - 1 = (e^h - 1) + e^h em, a sum of a
			// non-negative and a non-positive term whose result is
			// small only where its weight in B is.
			em := math.Expm1(math.Min(0, lPrev-m.loss(x)))
			A -= f * em
			B += f * math.Max(0, eh1+ehh*em)
		})
		if !ok {
			// A wide cell: round its mass up to l_i, or to +Inf if the
			// cell reaches x = +Inf while the loss has no bound there.
			mass, sum := cellMass(m, a, b)
			if math.IsInf(b, 1) && supLoss > lPrev+h {
				lowInf[i] = math.Max(mass, 0)
			} else if mass > 0 {
				// A difference of two distribution functions (each a
				// few u off): its relative error, which cancellation
				// can make large when they are close; then their sum,
				// an upper bound, stands for it.
				r := 1e-12 + 16*unitRound*sum/mass
				if r > 0.25 {
					mass, r = sum, 1e-12+16*unitRound
				}
				d.mass[i] += mass
				cellRel[i] = math.Max(cellRel[i], r)
			}
			return
		}
		A *= hw
		B *= hw
		d.mass[i] += A * upper
		// The relative error of the split: the quadrature and the
		// rounding of L(x) - l (a few ulps of |l| and the error of L on
		// the cell, m.lerr) against a cell of width h.
		r := 1e-12 + 64*0x1p-53*(math.Max(math.Abs(lPrev), math.Abs(lPrev+h))+m.lerr(a, b))/h
		cellRel[i] = math.Max(cellRel[i], r)
		lowMass[i], lowRel[i] = B*lower, r
	}
	if err := cells(m.ctx, 1, n, costCell, cell); err != nil {
		return nil, err
	}
	for i := 1; i < n; i++ {
		d.mass[i-1] += lowMass[i]
		cellRel[i-1] = math.Max(cellRel[i-1], lowRel[i])
		d.inf += lowInf[i]
	}
	// Each mass is raised by the bound on its own relative error (of the
	// cells it takes from, 1e-12 for the rest: the tail masses and the
	// wide cells, differences of distribution functions), which makes
	// every computed mass at least the exact one: the bound then enters
	// delta in proportion to the masses that make it, where a global one
	// compounded over k compositions would weigh the worst cell of the
	// range k times.
	for i, v := range d.mass {
		r := math.Max(cellRel[i], 1e-12)
		d.mass[i] = v * (1 + 4*unitRound) / (1 - r)
		d.infl = math.Max(d.infl, (1+r)*(1+4*unitRound)/(1-r)-1)
	}
	d.inf *= (1 + 4*unitRound) / (1 - 1e-12)
	d.rel = 0
	return d, nil
}

// panels calls node(x, wt) at the nodes and weights of the rule discretise
// and quad use on [a, b]: 5-point Gauss-Legendre on panels no wider than
// scale/20, 2-point for intervals narrower than scale/1000 (the usual cell:
// error below (width/scale)^4 / 4000 relative). The integral is the
// weighted sum times the factor returned; false, calling nothing, for an
// interval too wide (an infinite end, or more than 4096 panels).
func panels(a, b, scale float64, node func(x, wt float64)) (float64, bool) {
	k := math.Ceil((b - a) / (scale / 20))
	if math.IsInf(a, 0) || math.IsInf(b, 0) || k > 1<<12 {
		return 0, false
	}
	nodes, weights := glNodes5, glWeights5
	if b-a < scale/1000 {
		nodes, weights = glNodes2, glWeights2
	}
	w := (b - a) / k
	for p := 0.0; p < k; p++ {
		c := a + (p+0.5)*w
		for j, t := range nodes {
			node(c+0.5*w*t, weights[j])
		}
	}
	return 0.5 * w, true
}

// quad returns the integral of f over [a, b] by panels, or false.
func quad(f func(float64) float64, a, b, scale float64) (float64, bool) {
	if !(b > a) {
		return 0, true
	}
	s := 0.0
	hw, ok := panels(a, b, scale, func(x, wt float64) { s += wt * f(x) })
	return hw * s, ok
}

// cellMass returns the P-mass of (a, b] as a difference of the
// distribution function that is below 1/2 at a (P(X > a) or P(X <= b)),
// where it cancels least, and the sum of the two terms, which bounds its
// rounding.
func cellMass(m lossModel, a, b float64) (mass, sum float64) {
	if m.sf(a) < 0.5 {
		return m.sf(a) - m.sf(b), m.sf(a) + m.sf(b)
	}
	return m.cdf(b) - m.cdf(a), m.cdf(b) + m.cdf(a)
}

// discretiseOpt returns the optimistic discretisation of m on the grid
// {i h}: a distribution of P-masses at grid losses whose composed delta(eps)
// is at most the true one for every eps and every number of compositions.
//
// Cell i is the set of x with L(x) in (l_i - h/2, l_i + h/2]. Mapping each x
// to its cell is a post-processing, so the pair of cell masses (P_i, Q_i) is
// dominated by (P, Q); its loss, log(P_i/Q_i), lies within O(h^2) of l_i.
// Where it lies below l_i the cell also takes a fraction of the next cells'
// mass (a randomised post-processing, which keeps domination) until the
// merged loss reaches l_i; where it lies above, the loss is rounded down to
// l_i. Rounding losses down lowers delta(eps) = E_P[(1 - e^(eps - L))_+] of
// every composition (the sum of the losses decreases pointwise), so the
// result is a lower bound; the error is second order in h, as for the
// pessimistic connect-the-dots discretisation. D_i = P_i - e^(l_i) Q_i is
// integrated as the difference of two integrals of non-negative functions
// (below and above the cell's midpoint), and a cell counts as reaching l_i
// only if D_i exceeds the bound on their rounding. The mass outside
// [xlo, xhi] (at most the tail mass on each side) is dropped.
func discretiseOpt(m lossModel, h, tail float64) (*lossDist, error) {
	xlo, xhi, lo, hi, err := lossGrid(m, h, tail)
	if err != nil {
		return nil, err
	}
	n := hi - lo + 1
	lmax := math.Max(math.Abs(float64(lo)*h), math.Abs(float64(hi)*h))
	// The quadrature's relative error (as in discretise), and the rounding
	// of L(x) - l_i: a few ulps of |l_i| and the error of L (m.lerr) in
	// every node: an absolute error of D of at most lerr times the cell's
	// mass.
	rho := 1e-12 + 64*0x1p-53
	lerr := 64 * 0x1p-53 * (lmax + m.lerr(xlo, xhi))
	clamp := func(x float64) float64 { return math.Min(math.Max(x, xlo), xhi) }
	edge := func(i int) float64 { return clamp(m.inv((float64(lo+i) - 0.5) * h)) }
	P := make([]float64, n) // cell P-mass
	D := make([]float64, n) // P_i - e^(l_i) Q_i
	S := make([]float64, n) // bound on D's error
	floorAt := make([]bool, n)
	// The cells run on all cores. Cell i is (xs[i], xs[i+1]], with xs[i]
	// edge(i) (xhi for i = n) raised to the largest edge before it: the
	// edges are computed first, on all cores, then raised in order. A cell
	// whose upper end is not above its lower one is empty.
	xs := make([]float64, n+1)
	par.Range(n+1, chunk, costInv, func(from, to int) {
		for i := from; i < to; i++ {
			xs[i] = xhi
			if i < n {
				xs[i] = edge(i)
			}
		}
	})
	for i := 1; i <= n; i++ {
		xs[i] = math.Max(xs[i-1], xs[i])
	}
	err = cells(m.ctx, 0, n, costOpt, func(i int) {
		a, b := xs[i], xs[i+1]
		if !(b > a) {
			return
		}
		li := float64(lo+i) * h
		c := math.Min(math.Max(m.inv(li), a), b)
		pm, ok1 := quad(m.pdf, a, b, m.scale)
		neg, ok2 := quad(func(x float64) float64 {
			return m.pdf(x) * math.Max(0, math.Expm1(li-m.loss(x)))
		}, a, c, m.scale)
		pos, ok3 := quad(func(x float64) float64 {
			return m.pdf(x) * math.Max(0, -math.Expm1(li-m.loss(x)))
		}, c, b, m.scale)
		if !ok1 || !ok2 || !ok3 {
			// A wide cell (far in a tail): its mass at the grid
			// point at or below its least loss, which its loss
			// exceeds.
			mass, _ := cellMass(m, a, b)
			P[i] = math.Max(0, mass)
			floorAt[i] = true
			return
		}
		P[i], D[i], S[i] = pm, pos-neg, lerr*pm+1e-12*(pos+neg)
	})
	if err != nil {
		return nil, err
	}
	d := &lossDist{lo: lo, mass: make([]float64, n), rel: rho, logErr: math.Inf(-1)}
	frac := slices.Repeat([]float64{1}, n) // the fraction of each cell not yet taken
	// Cells whose loss falls short of their grid point (above the mode)
	// take fractions of the cells above, from the bottom up (up). Then
	// the cells left whose loss exceeds their grid point (below the mode)
	// take fractions of the cells below, from the top down, at most 8
	// cells (down); what cannot is rounded down to l_i (by less than h/2,
	// and second order where the density is smooth). Each taken fraction is
	// accounted at the bound of its rounding that works against the merge.
	// Short cells go first: they would otherwise lose a whole cell.
	//
	// A group is (p, dd, need): its P-mass, its D relative to the target
	// grid point and the bound on that D's error; it reaches the target
	// when dd >= need.
	//
	// The ends: a sampled Gaussian piles most of a step's mass up just
	// above its least loss log(1-q) (the remove direction) or just below
	// its greatest, -log(1-q) (add), where a cell has no neighbour on the
	// side it would merge with. Rounding it down instead costs up to h
	// times most of the mass, a first-order error in every step. So the
	// lowest cell, if above its grid point, is retargeted to the next grid
	// point up and merges with the cells above it, and a short cell that
	// finds too little above to reach l_i is retargeted to l_{i-1} (its
	// loss exceeds l_i - h/2 > l_{i-1}) and merges with the cells below it
	// in the second sweep: merging is a post-processing, and costs only a
	// second-order error.
	//
	// up returns the group's P-mass, D and slack: the true D is at most
	// D + need + 2 slack (each merged fraction was counted at its lower
	// bound, slack sums the bounds).
	up := func(t, from int, p, dd, need float64) (float64, float64, float64) {
		slack := 0.0
		for j := from; dd < need && j < n; j++ {
			if frac[j] == 0 || floorAt[j] || P[j] == 0 {
				continue
			}
			// Cell j's D relative to l_t, lowered by the rounding bound
			// of D_j and P_j.
			e := math.Exp(-float64(j-t) * h)
			dj := frac[j] * (-math.Expm1(-float64(j-t)*h)*P[j]*(1-rho) + e*(D[j]-S[j]))
			if !(dj > 0) {
				continue
			}
			alpha := math.Min(1, (need-dd)/dj*(1+1e-9))
			p += alpha * frac[j] * P[j]
			dd += alpha * dj
			slack += alpha * frac[j] * (-math.Expm1(-float64(j-t)*h)*P[j]*rho + e*S[j])
			frac[j] *= 1 - alpha
			if alpha < 1 {
				break
			}
		}
		return p, dd, slack
	}
	eh := math.Exp(h)
	// Groups merged to reach their grid point exactly (true D between 0
	// and gD + gS), placed at the end: the second sweep may take
	// fractions of them too.
	gP := make([]float64, n)
	gD := make([]float64, n)
	gS := make([]float64, n)
	defer func() {
		for i, v := range gP {
			d.mass[i] += v
		}
	}()
	// The lowest cell.
	for i := range n {
		if P[i] == 0 || floorAt[i] {
			continue
		}
		if D[i] >= S[i] && i+1 < n {
			// D relative to l_{i+1}: P - e^h (P - D), at its lower bound.
			need := eh*S[i] + (eh-1)*P[i]*rho
			p, dd, slack := up(i+1, i+1, P[i], -(eh-1)*P[i]+eh*D[i], need)
			if dd >= need {
				gP[i+1], gD[i+1], gS[i+1] = gP[i+1]+p, gD[i+1]+dd, gS[i+1]+need+2*slack
			} else {
				d.mass[i] += p // every loss in the group is above l_i
			}
			frac[i] = 0
		}
		break
	}
	// Groups retargeted to l_{i-1} by the first sweep, for the second.
	pendP := make([]float64, n)
	pendD := make([]float64, n)
	pendS := make([]float64, n)
	em := -math.Expm1(-h) // 1 - e^-h
	for i := range n {
		f := frac[i]
		if f == 0 || P[i] == 0 {
			continue
		}
		if floorAt[i] {
			// The grid point at or below the loss at the cell's lower end.
			j := int(math.Floor(m.loss(math.Max(m.inv((float64(lo+i)-0.5)*h), xlo)) / h))
			if k := j - lo; k >= 0 && k < n {
				d.mass[k] += f * P[i]
			}
			continue
		}
		if D[i] >= S[i] {
			continue // at or above l_i: the second sweep
		}
		need := f * S[i]
		p, dd, slack := up(i, i+1, f*P[i], f*D[i], need)
		frac[i] = 0
		if dd >= need {
			gP[i], gD[i], gS[i] = gP[i]+p, gD[i]+dd, gS[i]+need+2*slack
		} else if i > 0 {
			// Too little above to merge with: the group's loss exceeds
			// l_i - h/2; relative to l_{i-1} its D is (1 - e^-h) p +
			// e^-h dd, at its lower bound.
			pendP[i-1] += p
			pendD[i-1] += em*p + math.Exp(-h)*dd
			pendS[i-1] += math.Exp(-h)*need + em*p*rho
		}
	}
	var unmet []group
	for i := n - 1; i >= 0; i-- {
		f := frac[i]
		if floorAt[i] {
			f = 0
		}
		if (f == 0 || P[i] == 0) && pendP[i] == 0 {
			continue
		}
		p, dd, need := f*P[i]+pendP[i], f*D[i]+pendD[i], f*S[i]+pendS[i]
		for j := i - 1; dd > need && j >= 0 && j >= i-8; j-- {
			if frac[j] == 0 || floorAt[j] || P[j] == 0 {
				continue
			}
			// Cell j's D relative to l_i (negative), at its upper bound
			// plus the bound of D_j and P_j.
			e := math.Exp(float64(i-j) * h)
			dj := frac[j] * (-math.Expm1(float64(i-j)*h)*P[j]*(1-rho) + e*(D[j]+S[j]))
			if !(dj < 0) {
				continue
			}
			alpha := math.Min(1, (dd-need)/-dj*(1-1e-9))
			p += alpha * frac[j] * P[j]
			dd += alpha * dj
			frac[j] *= 1 - alpha
			if alpha < 1 {
				break
			}
		}
		// Then fractions of the exact groups below, likewise.
		for j := i - 1; dd > need && j >= 0 && j >= i-8; j-- {
			if gP[j] == 0 {
				continue
			}
			e := math.Exp(float64(i-j) * h)
			dj := -math.Expm1(float64(i-j)*h)*gP[j]*(1-rho) + e*(gD[j]+gS[j])
			if !(dj < 0) {
				continue
			}
			alpha := math.Min(1, (dd-need)/-dj*(1-1e-9))
			p += alpha * gP[j]
			dd += alpha * dj
			gP[j] *= 1 - alpha
			gD[j] *= 1 - alpha
			gS[j] *= 1 - alpha
			if alpha < 1 {
				break
			}
		}
		frac[i] = 0
		// A group still closer to l_{i+1} than to l_i (D above
		// (1 - e^(-h/2)) p: it found too little below, as near the
		// remove direction's pile-up at log(1-q)) waits for the third
		// pass; the rest is rounded down to l_i: the merged loss is at
		// least l_i (a retargeted group's exceeds l_{i+1} - h/2 even
		// where rounding hides it).
		if dd-need > -math.Expm1(-h/2)*p {
			unmet = append(unmet, group{i, p, dd, need})
			continue
		}
		d.mass[i] += p
	}
	// Third pass, from the bottom up: each waiting group is retargeted to
	// l_{i+1} and takes fractions of the groups already placed above it
	// (each at a loss at least its grid point, so a fraction of it adds at
	// least (1 - e^(-(j-i-1) h)) times its mass to D relative to l_{i+1});
	// if the 16 grid points above do not hold enough, it is rounded down
	// to l_i after all (taking more only raised its loss).
	for g := len(unmet) - 1; g >= 0; g-- {
		u := unmet[g]
		i, p := u.i, u.p
		dd := -(eh-1)*p + eh*u.dd
		need := eh*u.need + (eh-1)*p*rho
		for j := i + 2; dd < need && j < n && j <= i+17; j++ {
			if d.mass[j] == 0 {
				continue
			}
			dj := -math.Expm1(-float64(j-i-1)*h) * d.mass[j] * (1 - rho)
			alpha := math.Min(1, (need-dd)/dj*(1+1e-9))
			p += alpha * d.mass[j]
			dd += alpha * dj
			d.mass[j] *= 1 - alpha
		}
		if dd >= need && i+1 < n {
			d.mass[i+1] += p
		} else {
			d.mass[i] += p
		}
	}
	return d, nil
}

// group is a merged group of discretiseOpt: its grid index, P-mass, D
// relative to its grid point, and the bound on D's error.
type group struct {
	i           int
	p, dd, need float64
}
