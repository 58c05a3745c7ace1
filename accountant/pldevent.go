package accountant

import "math"

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
	h, tail, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if !(sigma > 0) {
		return nil, &ParamError{Param: "sigma", Value: sigma, Want: "> 0"}
	}
	if math.IsInf(sigma, 1) {
		return identityPLD(h, tail), nil
	}
	d, err := discretise(gaussianModel(1/sigma), h, tail)
	if err != nil {
		return nil, err
	}
	d.unbounded = true
	return &PLD{h: h, tail: tail, remove: d, add: d}, nil
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
	h, tail, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if !(q >= 0 && q <= 1) {
		return nil, &ParamError{Param: "q", Value: q, Want: "a sampling probability in [0, 1]"}
	}
	if !(sigma > 0) {
		return nil, &ParamError{Param: "sigma", Value: sigma, Want: "> 0"}
	}
	if r != AddRemove && r != ReplaceOne {
		return nil, &ParamError{Param: "relation", Value: float64(r), Want: "AddRemove or ReplaceOne"}
	}
	if q == 0 || math.IsInf(sigma, 1) {
		return identityPLD(h, tail), nil
	}
	if q == 1 {
		return GaussianPLD(sigma, o)
	}
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
	rm, err := discretise(sampledRemoveModel(q, sigma), h, tail)
	if err != nil {
		return nil, err
	}
	rm.unbounded = true
	ad, err := discretise(sampledAddModel(q, sigma), h, tail)
	if err != nil {
		return nil, err
	}
	if r == ReplaceOne {
		both, err := convolve(rm, ad)
		if err != nil {
			return nil, err
		}
		return &PLD{h: h, tail: tail, remove: both, add: both}, nil
	}
	return &PLD{h: h, tail: tail, remove: rm, add: ad}, nil
}

// maxSampledSigma is the largest noise multiplier SampledGaussianPLD
// evaluates; a larger one is accounted as this one (an upper bound).
const maxSampledSigma = 1e8

// identityPLD is the PLD of a mechanism that reveals nothing: loss 0.
func identityPLD(h, tail float64) *PLD {
	d := &lossDist{mass: []float64{1}}
	return &PLD{h: h, tail: tail, remove: d, add: d}
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
	// xlo, xhi have P(X < xlo) and P(X > xhi) at most the tail mass.
	xlo, xhi func(tail float64) float64
}

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
		xlo:   func(t float64) float64 { return mu - normalTailZ(t) },
		xhi:   func(t float64) float64 { return mu + normalTailZ(t) },
	}
}

// logMix returns log(1 - q + q e^u) without overflow: log1p(q expm1(u))
// for u <= 0, and u + log(q) + log1p((1-q)/q e^-u) above.
func logMix(q, u float64) float64 {
	if u <= 0 {
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
		xlo:   func(t float64) float64 { return -s * normalTailZ(t) },
		xhi:   func(t float64) float64 { return 1 + s*normalTailZ(t) },
	}
}

// sampledAddModel is the add direction in the variable y = -x:
// P = N(0, s^2), Q = (1-q) N(0, s^2) + q N(-1, s^2),
// L(y) = -log(1 - q + q e^((-2y-1)/(2 s^2))), from -Inf to -log(1-q).
func sampledAddModel(q, s float64) lossModel {
	s2 := s * s
	return lossModel{
		loss: func(y float64) float64 { return -logMix(q, (-2*y-1)/(2*s2)) },
		inv: func(l float64) float64 {
			// e^-l = 1 + q (e^u - 1), u = (-2y-1)/(2 s^2)
			if -l <= math.Log1p(-q) {
				return math.Inf(1)
			}
			return -(s2*invMix(q, -l) + 0.5)
		},
		pdf:   func(y float64) float64 { return stdPDF(y/s) / s },
		cdf:   func(y float64) float64 { return stdCDF(y / s) },
		sf:    func(y float64) float64 { return stdSF(y / s) },
		scale: math.Min(s, s2),
		xlo:   func(t float64) float64 { return -s * normalTailZ(t) },
		xhi:   func(t float64) float64 { return s * normalTailZ(t) },
	}
}

// The 3- and 5-point Gauss-Legendre rules on [-1, 1].
var (
	glNodes2, glWeights2 = gaussLegendre(2)
	glNodes5, glWeights5 = gaussLegendre(5)
)

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
	xlo, xhi := m.xlo(tail), m.xhi(tail)
	llo, lhi := m.loss(xlo), m.loss(xhi)
	lo := int(math.Floor(llo / h))
	hi := int(math.Ceil(lhi / h))
	if hi < lo {
		hi = lo
	}
	if hi-lo+1 > maxGrid || math.IsInf(llo, 0) || math.IsInf(lhi, 0) {
		return nil, errGrid("the privacy losses from "+ftoa(llo)+" to "+ftoa(lhi)+
			" need more than 2^24 grid points at interval "+ftoa(h), h)
	}
	n := hi - lo + 1
	d := &lossDist{lo: lo, mass: make([]float64, n)}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = m.inv(float64(lo+i) * h)
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
	for i := 1; i < n; i++ {
		a, b := xs[i-1], xs[i]
		if !(b > a) {
			continue
		}
		lPrev := float64(lo+i-1) * h
		k := math.Ceil((b - a) / panel)
		if math.IsInf(a, 0) || math.IsInf(b, 0) || k > 64 {
			// A wide cell: round its mass up to l_i, or to +Inf if the
			// cell reaches x = +Inf while the loss has no bound there.
			var mass float64
			if m.sf(a) < 0.5 {
				mass = m.sf(a) - m.sf(b)
			} else {
				mass = m.cdf(b) - m.cdf(a)
			}
			if math.IsInf(b, 1) && supLoss > lPrev+h {
				d.inf += math.Max(mass, 0)
			} else {
				d.mass[i] += math.Max(mass, 0)
			}
			continue
		}
		// Cells narrower than scale/1000 (the usual case) need only the
		// 2-point rule: its error is below (w/scale)^4 / 4000 relative.
		nodes, weights := glNodes5, glWeights5
		if b-a < m.scale/1000 {
			nodes, weights = glNodes2, glWeights2
		}
		w := (b - a) / k
		var A, B float64
		for p := 0.0; p < k; p++ {
			c := a + (p+0.5)*w
			for j, t := range nodes {
				x := c + 0.5*w*t
				f := weights[j] * m.pdf(x)
				// em = e^(l_{i-1} - L) - 1 in [e^-h - 1, 0]; then
				// e^(l_i - L) - 1 = (e^h - 1) + e^h em, a sum of a
				// non-negative and a non-positive term whose result is
				// small only where its weight in B is.
				em := math.Expm1(math.Min(0, lPrev-m.loss(x)))
				A -= f * em
				B += f * math.Max(0, eh1+ehh*em)
			}
		}
		A *= 0.5 * w
		B *= 0.5 * w
		d.mass[i] += A * upper
		d.mass[i-1] += B * lower
	}
	// Relative error of the masses: the quadrature and the rounding of
	// L(x) - l, a few ulps of |l| against a cell of width h.
	lmax := math.Max(math.Abs(float64(lo)*h), math.Abs(float64(hi)*h))
	d.rel = 1e-12 + 64*0x1p-53*(1+lmax)/h
	return d, nil
}
