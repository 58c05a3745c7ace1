package accountant

import (
	"errors"
	"math"
)

// This file holds the privacy-loss-distribution (PLD) accountant: its types,
// options and the delta(eps) and eps(delta) queries. The discretisation of
// single events is in pldevent.go, composition by FFT in pldfft.go.

// Defaults of [PLDOptions].
const (
	// DefaultInterval is the spacing of the privacy-loss grid.
	DefaultInterval = 1e-4
	// DefaultTailMass bounds the probability mass cut from each tail of an
	// event's loss distribution, and of a self-composition's, before it is
	// accounted pessimistically (the upper tail as infinite loss).
	DefaultTailMass = 1e-16
)

// PLDOptions sets the discretisation of a privacy loss distribution. The
// zero value means the defaults. Neither field can make a result unsafe:
// they trade accuracy (how far above the true delta the reported one is)
// for time and memory.
type PLDOptions struct {
	// Interval is the spacing h of the grid of privacy losses; 0 means
	// DefaultInterval. Work and memory grow like 1/h. Each event's discrete
	// delta(eps) lies between the true delta(eps) and delta(eps - h), so k
	// compositions report an eps at most k h above the accountant's limit;
	// in practice the excess grows like k h^2 (see docs/privacy.md).
	Interval float64
	// TailMass is the mass cut from each tail of a loss distribution;
	// 0 means DefaultTailMass. Cut upper tails count as infinite loss.
	TailMass float64
}

func (o PLDOptions) resolve() (h, tail float64, err error) {
	h, tail = o.Interval, o.TailMass
	if h == 0 {
		h = DefaultInterval
	}
	if tail == 0 {
		tail = DefaultTailMass
	}
	if !(h >= 1e-8 && h <= 1) {
		return 0, 0, &ParamError{Param: "interval", Value: h, Want: "0 (the default) or in [1e-8, 1]"}
	}
	if !(tail >= 1e-300 && tail <= 1e-3) {
		return 0, 0, &ParamError{Param: "tail mass", Value: tail, Want: "0 (the default) or in [1e-300, 1e-3]"}
	}
	return h, tail, nil
}

// PLD is a pessimistic discretised privacy loss distribution: for each
// direction of the neighbouring relation, a distribution of privacy losses
// on the grid {i h} plus a mass at +Inf, whose hockey-stick divergence
// delta(eps) is at least that of the mechanism it describes, for every eps.
//
// Build one with [GaussianPLD] or [SampledGaussianPLD], combine with
// [PLD.Compose] and [PLD.SelfCompose], and query with [PLD.Delta] and
// [PLD.Epsilon]. A PLD is immutable and safe for concurrent use.
//
// Each event is discretised so that its discrete pair dominates the true
// pair (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the
// dots": each grid cell's mass is split between its two ends so that the
// cell's contributions to P and Q are kept, which makes the discrete
// delta(eps) the chord of the true, convex, delta as a function of e^eps);
// the mass below the grid is moved up to its lowest point and the mass above
// it to +Inf. Composition of dominating pairs dominates the composition
// (Zhu, Dong & Wang 2022, Theorem 10). Truncation in composition moves the
// cut upper tail, bounded by a Chernoff bound, to +Inf and the lower tail to
// the lowest grid point. Floating-point error in the masses and the FFT is
// bounded and added to every delta; see docs/privacy.md.
type PLD struct {
	h           float64
	tail        float64
	remove, add *lossDist // add == remove for a symmetric pair
}

// lossDist is one direction's discretised loss distribution: mass[i] at
// loss (lo+i) h, inf at +Inf. The masses computed in floating point are
// within a factor 1+rel of the exact masses of the dominating discrete pair,
// and abs bounds the l1 norm of the error left by the FFT; every delta is
// reported as (1+rel)(inf + sum + abs).
type lossDist struct {
	lo   int
	mass []float64
	inf  float64
	rel  float64
	abs  float64
	// unbounded records that the true losses have no upper bound (a
	// Gaussian, the remove direction of a sampled one), so the true delta is
	// positive at every eps even where the discrete one underflows to 0.
	unbounded bool
}

// finite returns the total finite mass.
func (d *lossDist) finite() float64 {
	s := 0.0
	for _, m := range d.mass {
		s += m
	}
	return s
}

// Floor returns the least delta the PLD reports at any eps: the mass at
// infinite loss (the cut upper tails) plus the floating-point error bound,
// the larger over the two directions. [PLD.Epsilon] is +Inf for a delta at
// or below it. Floor of a nil or zero PLD is 1 (no guarantee).
func (p *PLD) Floor() float64 {
	if !p.valid() {
		return 1
	}
	f := 0.0
	for _, d := range p.dirs() {
		f = math.Max(f, (1+d.rel)*(d.inf+d.abs))
	}
	return math.Min(f, 1)
}

// errPLD is the error of a PLD computation that cannot be done within the
// package's limits (a grid too large, a delta below what can be certified).
func errPLD(reason string) error { return errors.New("accountant: PLD: " + reason) }

// ErrPLDGrid is matched (errors.Is) by every error of a PLD whose loss grid
// would exceed the package's limits (2^24 points, or 2^52 composed grid
// points): the noise is too small, or the compositions too many, for the
// grid interval.
var ErrPLDGrid = errors.New("accountant: PLD: loss grid too large")

// gridError is an ErrPLDGrid with its reason.
type gridError struct{ reason string }

func (e *gridError) Error() string        { return "accountant: PLD: " + e.reason }
func (e *gridError) Is(target error) bool { return target == ErrPLDGrid }

// errGrid returns a grid error whose hint fits the interval h: a larger
// interval helps only below the largest one, 1.
func errGrid(reason string, h float64) error {
	if h < 1 {
		return &gridError{reason + "; use a larger interval (or more noise)"}
	}
	return &gridError{reason + " even at the largest interval, 1: more noise or fewer compositions are needed"}
}

// errNilPLD is the error of a method called on, or with, a PLD that was
// not built by this package.
var errNilPLD = &ParamError{Param: "PLD", Value: 0, Want: "a PLD from GaussianPLD, SampledGaussianPLD or a composition (not nil or a zero PLD)"}

// valid reports whether p was built by this package.
func (p *PLD) valid() bool { return p != nil && p.remove != nil && p.add != nil && p.h > 0 }

// Interval returns the spacing of the PLD's loss grid (0 for a nil PLD).
func (p *PLD) Interval() float64 {
	if p == nil {
		return 0
	}
	return p.h
}

// symmetric reports whether both directions share one distribution.
func (p *PLD) symmetric() bool { return p.add == p.remove }

func (p *PLD) dirs() []*lossDist {
	if p.symmetric() {
		return []*lossDist{p.remove}
	}
	return []*lossDist{p.remove, p.add}
}

// Delta returns a delta for which the mechanism the PLD describes is
// (eps, delta)-DP under its neighbouring relation: the larger, over the two
// directions, of the discrete hockey-stick divergence
//
//	delta(eps) = inf + sum_i mass_i (1 - e^(eps - l_i))_+
//
// plus the floating-point error bound. It is never below the mechanism's
// true delta(eps); see [PLD] for why.
//
// Special cases are:
//
//	Delta(eps) is an error for eps < 0, eps = +Inf or NaN
//	Delta(eps) = 0 for a PLD of no privacy loss (sigma = +Inf or q = 0), and
//	    where the losses are bounded below eps (the add direction of a
//	    sampled Gaussian); a positive delta below the float64 range is
//	    reported as 5e-324, never 0
//	Delta(eps) <= 1 always (a bound above 1 is reported as 1)
func (p *PLD) Delta(eps float64) (float64, error) {
	if !p.valid() {
		return 0, errNilPLD
	}
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return 0, &ParamError{Param: "eps", Value: eps, Want: "finite and >= 0"}
	}
	worst := 0.0
	for _, d := range p.dirs() {
		worst = math.Max(worst, d.delta(eps, p.h))
	}
	return math.Min(worst, 1), nil
}

// delta evaluates one direction's bound at eps.
func (d *lossDist) delta(eps, h float64) float64 {
	// Masses at losses <= eps contribute nothing; start above eps.
	start := int(math.Floor(eps/h)) - d.lo + 1
	if start < 0 {
		start = 0
	}
	s := 0.0
	for i := start; i < len(d.mass); i++ {
		l := float64(d.lo+i) * h
		if l <= eps {
			continue
		}
		s += d.mass[i] * -math.Expm1(eps-l)
	}
	r := (1 + d.rel) * (d.inf + s + d.abs)
	if r == 0 && d.unbounded {
		// The truth is positive but below the float64 range: report the
		// least positive float64 rather than 0, never below the truth.
		return math.SmallestNonzeroFloat64
	}
	return r
}

// Epsilon returns the least eps >= 0 (to a relative 1e-12, and never below
// it) at which [PLD.Delta] is at most delta: the mechanism is (eps, delta)-DP.
//
// Special cases are:
//
//	Epsilon(delta) is an error unless 0 < delta < 1
//	Epsilon(delta) = +Inf if delta is at most the mass at infinite loss plus
//	    the error bound (no finite eps reaches it)
//	Epsilon(delta) = 0 if Delta(0) <= delta
func (p *PLD) Epsilon(delta float64) (float64, error) {
	if !p.valid() {
		return 0, errNilPLD
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	worst := 0.0
	for _, d := range p.dirs() {
		worst = math.Max(worst, d.epsilon(delta, p.h))
	}
	return worst, nil
}

// epsilon returns one direction's least eps with delta(eps) <= target.
// delta(eps) = (1+rel)(inf + abs + sum_{l_i > eps} m_i (1 - e^(eps-l_i))) is
// continuous and decreasing. With S_j = sum_{i >= j} m_i and
// D_j = sum_{i > j} m_i (1 - e^(l_j - l_i)) (so delta(l_j) is (1+rel)(inf +
// abs + D_j)), the scan from the top finds the cell (l_{j-1}, l_j] holding
// the root, where for a = e^(eps - l_j) in [e^-h, 1]
//
//	sum = (1 - a) S_j + a D_j,
//
// linear in a: both terms are sums of non-negative numbers, so nothing
// cancels. D_{j-1} = (1 - e^-h) S_j + e^-h D_j.
func (d *lossDist) epsilon(delta, h float64) float64 {
	target := delta/(1+d.rel) - d.inf - d.abs
	if !(target > 0) {
		return math.Inf(1)
	}
	if d.delta(0, h) <= delta {
		return 0
	}
	e := math.Exp(-h)
	em := -math.Expm1(-h)
	S, D := 0.0, 0.0 // S_{j+1} and D_{j+1}; nothing lies above the top
	l1 := float64(d.lo) * h
	for j := len(d.mass) - 1; j >= 0; j-- {
		Dj := em*S + e*D
		lj := float64(d.lo+j) * h
		if Dj > target || lj <= 0 {
			l1 = lj + h // the root is in (l_j, l_{j+1}]
			break
		}
		S, D = S+d.mass[j], Dj
	}
	// On the cell below l1, sum = (1 - a) S + a D with a = e^(eps - l1).
	eps := l1
	if S-D > 0 {
		a := math.Min(1, math.Max((S-target)/(S-D), e))
		eps = l1 + logf(a)
	}
	eps = math.Max(eps, 0)
	// Make the answer safe against the rounding of the closed form: step up
	// by relative 1e-12 until the direct evaluation agrees, then, failing
	// that, by grid points.
	for range 8 {
		if d.delta(eps, h) <= delta {
			return eps
		}
		eps = math.Max(eps*(1+1e-12), eps+1e-15)
	}
	for eps = math.Max(l1, 0); d.delta(eps, h) > delta; eps += h {
	}
	return eps
}

// ErrPLDInterval reports PLDs of different grid spacings composed together.
var ErrPLDInterval = errors.New("accountant: PLDs with different intervals cannot be composed")

// Compose returns the PLD of the adaptive composition of the mechanisms p
// and o (each direction composed with the same direction: a fixed pair of
// neighbouring data sets is in the same direction for every mechanism).
// Both must have the same interval, and both must be stated for the same
// neighbouring relation, which the caller guarantees: a PLD does not record
// it (a GaussianPLD fits either, its relation entering through sigma).
func (p *PLD) Compose(o *PLD) (*PLD, error) {
	if !p.valid() || !o.valid() {
		return nil, errNilPLD
	}
	if p.h != o.h {
		return nil, ErrPLDInterval
	}
	tail := math.Min(p.tail, o.tail)
	r := &PLD{h: p.h, tail: tail}
	var err error
	if r.remove, err = convolve(p.remove, o.remove); err != nil {
		return nil, err
	}
	if p.symmetric() && o.symmetric() {
		r.add = r.remove
		return r, nil
	}
	if r.add, err = convolve(p.add, o.add); err != nil {
		return nil, err
	}
	return r, nil
}

// SelfCompose returns the PLD of k adaptive compositions of p, computed by
// one FFT of each direction raised to the k-th power, on a window that a
// Chernoff bound shows to hold all but the tail mass of the composition.
//
// Special cases are:
//
//	SelfCompose(k) is an error for k < 1
//	SelfCompose(1) = p
//	SelfCompose(k) is an error if the composed grid would exceed 2^24 points
//	    (an error matching ErrPLDGrid: use a larger interval)
func (p *PLD) SelfCompose(k int) (*PLD, error) {
	if !p.valid() {
		return nil, errNilPLD
	}
	if err := checkCompositions(k); err != nil {
		return nil, err
	}
	if k == 1 {
		return p, nil
	}
	r := &PLD{h: p.h, tail: p.tail}
	var err error
	if r.remove, err = selfConvolve(p.remove, k, p.h, p.tail); err != nil {
		return nil, err
	}
	if p.symmetric() {
		r.add = r.remove
		return r, nil
	}
	if r.add, err = selfConvolve(p.add, k, p.h, p.tail); err != nil {
		return nil, err
	}
	return r, nil
}
