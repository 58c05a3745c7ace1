package accountant

import (
	"cmp"
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"

	"github.com/dpmf/dpmf/internal/par"
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
	// safeOnly skips the optimistic side (for calibrations, which use
	// only the safe one): its distributions are noOpt, whose delta, 0, is
	// a valid lower bound.
	safeOnly bool
	// ctx, if not nil, is checked while the loss distributions are
	// discretised (every cancelEvery cells): a calibration's PLD at a
	// large eps takes seconds.
	ctx context.Context
}

// noOpt is the optimistic distribution of a PLD built without that side:
// no mass, so its delta is 0 at every eps. Compositions keep it.
var noOpt = &lossDist{mass: []float64{0}, logErr: math.Inf(-1)}

func (o PLDOptions) resolve() (h, tail float64, err error) {
	h, tail = cmp.Or(o.Interval, DefaultInterval), cmp.Or(o.TailMass, DefaultTailMass)
	if !(h >= 1e-8 && h <= 1) {
		return 0, 0, &ParamError{Param: "interval", Value: h, Want: "0 (the default) or in [1e-8, 1]"}
	}
	if !(tail >= 1e-300 && tail <= 1e-3) {
		return 0, 0, &ParamError{Param: "tail mass", Value: tail, Want: "0 (the default) or in [1e-300, 1e-3]"}
	}
	return h, tail, nil
}

// PLD is a discretised privacy loss distribution held twice: for each
// direction of the neighbouring relation, a pessimistic distribution of
// privacy losses on the grid {i h} plus a mass at +Inf, whose hockey-stick
// divergence delta(eps) is at least that of the mechanism it describes, and
// an optimistic one whose delta(eps) is at most it, for every eps.
//
// Build one with [GaussianPLD] or [SampledGaussianPLD], combine with
// [PLD.Compose] and [PLD.SelfCompose], and query with [PLD.DeltaBounds] and
// [PLD.EpsilonBounds] (both sides) or [PLD.Delta] and [PLD.Epsilon] (the
// safe side). A PLD is immutable and safe for concurrent use.
//
// Pessimistic side: each event is discretised so that its discrete pair
// dominates the true pair (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
// 2022, "Connect the dots": each grid cell's mass is split between its two
// ends so that the cell's contributions to P and Q are kept, which makes
// the discrete delta(eps) the chord of the true, convex, delta as a
// function of e^eps); the mass below the grid is moved up to its lowest
// point and the mass above it to +Inf. Composition of dominating pairs
// dominates the composition (Zhu, Dong & Wang 2022, Theorem 10); the upper
// tail cut in composition, bounded by a Chernoff bound, counts as infinite
// loss.
//
// Optimistic side: each event is mapped to cells of width h around the
// grid points (a post-processing, so a dominated pair), cells are merged
// with fractions of their neighbours until each cell's loss reaches its
// grid point (or, at the ends of a bounded loss, the next one), and the
// losses are rounded down to it (see discretiseOpt);
// cut tails are dropped. Its delta is a lower bound for the pair the PLD
// accounts: the mechanism's own delta for the Gaussian and the add/remove
// sampled Gaussian, whose pairs are tight; for the replace-one sampled
// Gaussian, a lower bound for the dominating pair, not for the mechanism.
//
// Rounding: floating-point error in the masses is bounded relatively
// (each pessimistic mass raised by its own bound when discretised, the rest
// a factor 1 + rel), and the FFT's error absolutely, per output index, in an
// exponentially tilted norm that makes it small relative to the masses of
// high loss (see selfConvolve); the bound is added on the pessimistic side
// and subtracted on the optimistic one. There is no fixed allowance. docs/privacy.md
// states the argument and the measured accuracy and cost.
type PLD struct {
	h    float64
	tail float64
	// remove and add are the pessimistic distributions, removeOpt and
	// addOpt the optimistic ones; add == remove (and addOpt == removeOpt)
	// for a symmetric pair.
	remove, add       *lossDist
	removeOpt, addOpt *lossDist
	// base and count record that this PLD is base.SelfCompose(count)
	// (or a Compose of two compositions of base, count copies in all; nil
	// for every other PLD): a further SelfCompose(k) composes base
	// count k times in one transform instead of composing this PLD's
	// computed masses, whose rounding noise (real, at the losses far below
	// the tilt the count-fold composition was tuned for) and error bound
	// (at that tilt only) the second transform would carry (see
	// SelfCompose).
	base  *PLD
	count int
	// composeBase records that Compose with a PLD of another base
	// composes base (count 1) joined below this PLD's masses (splicePLD):
	// the one replace-one step of SampledGaussianPLD and SampledGaussian,
	// whose tilted masses composed with others at lower tilts were loose,
	// and whose base alone has a floor near 1e-11 (see Compose).
	composeBase bool
	// joined holds what one returns once computed (the join costs a
	// composition of base at tilt 0): Compose calls with one such PLD and
	// several others join it once. Concurrent first calls may each
	// compute it; the results are the same.
	joined atomic.Pointer[PLD]
}

// lossDist is one direction's discretised loss distribution: mass[i] at
// loss (lo+i) h, inf at +Inf. The exact masses of the discrete pair it
// stands for are within a factor 1+rel of the computed ones after an
// additive error e_i with sum_{i >= j} |e_i| <= e^(logErr - tau (lo+j)) for
// every j (the FFT's error, weighted by the tilt tau >= 0 per grid step).
//
// No error lies above the last stored index hi = lo + len(mass) - 1: the
// pair it stands for has no finite mass above hi (a pessimistic
// distribution holds the mass of losses above its grid in inf, an
// optimistic one has dropped it), which logErrAt needs to carry the bound
// to a higher tilt. Errors below lo are allowed (masses trim dropped, the
// lower tail a self-composition's window cut). Every producer keeps it:
// single events have no additive error; convolveBound stores the whole
// linear convolution, whose indices end at the sum of its inputs' last
// ones, where the products of their errors end too, on an FFT long enough
// not to wrap; selfConvolve stores its window, moves the part of its
// input's error propagated above it to inf (pessimistic) or drops it with
// the mass there (optimistic), and its FFT folds mass into the window
// only; trim cuts only from the bottom. The propagated part (prop) keeps
// it too: selfConvolve moves its part above the window to inf or drops it.
type lossDist struct {
	lo   int
	mass []float64
	inf  float64
	rel  float64
	// infl bounds how far the masses were raised above the exact ones
	// (each by its own error bound, see discretise): the computed masses
	// are at most a factor 1+infl above the exact ones, before rel.
	infl   float64
	tau    float64
	logErr float64 // -Inf: no additive error
	// logGapW is the log of the factor by which the bound on the error in
	// the weighted l1 norm, sum_i |e_i| e^(tau i) over absolute indices i,
	// exceeds e^logErr: 0 (the zero value) where the tail-sum bound is one
	// in that norm too (tau = 0, no error, an l1 bound of the tilted
	// error). A per-index bound on the FFT's error gives tail sums about
	// n tau times smaller than the weighted l1 norm, which a product of
	// two errors needs (see convolveBound).
	logGapW float64
	// perIdx records a second form of the bound on the error above (set
	// by convolveBound for two inputs without error, such as Compose of
	// single events): |e_i| <= e^(logPer - tau i) at each absolute index
	// i <= hi, plus a part whose weighted l1 norm sum_i |e_i| e^(tau i) is
	// at most e^logC. Its tail sums are then at most
	// e^(-tau j) (e^logC + e^logPer min(hi - j + 1, 1 / (1 - e^-tau))),
	// far below e^(logErr - tau j) near the top where the error is spread
	// over many indices; logErrAt takes the smaller when it carries the
	// bound to a higher tilt. The queries (errFrom) do not use it.
	perIdx       bool
	logPer, logC float64
	// prop is a second part of the error, added to the one above: the
	// error of a self-composition's input, propagated through it (see
	// selfConvolve), or, in a composition of two distributions of
	// different tilts, the lower-tilted one's error convolved with the
	// other's masses (see splitLow); it lies at or below hi. Each entry bounds that whole
	// part at its own tilt (tail sums at most e^(logErr - tau j), weighted
	// l1 norm at most e^(logErr + logGapW)); the smallest is taken. Its
	// tilts may be below the FFT's, where the input's error bound is
	// tighter (an untilted input error is spread over the input's whole
	// grid). nil: no such part.
	prop []errBound
	// errLo, where hasErrLo, is an absolute index at or above which
	// every error lies (the part other than prop; set by convolveBound
	// at a positive tilt for two inputs without error, whose output's
	// errors lie at or above the sum of their first indices): logErrAt
	// carries the bound to tilts below tau with it.
	errLo    int
	hasErrLo bool
	// spliced marks a distribution that splice joined from an untilted
	// and a tilted computation: composeDists composes it at a tilt fitted
	// to the composition rather than at its own (see splice).
	spliced bool
	// unbounded records that the true losses have no upper bound (a
	// Gaussian, the remove direction of a sampled one), so the true delta is
	// positive at every eps even where the discrete one underflows to 0.
	unbounded bool
}

// errBound is one bound on a part of a lossDist's additive error: tail
// sums sum_{i >= j} |e_i| <= e^(logErr - tau j) at every absolute index
// j, weighted l1 norm sum_i |e_i| e^(tau i) <= e^(logErr + logGapW).
// Where capped, the part has no error above the absolute index top (its
// tail sums above top are 0, and it is carried to higher tilts from top
// rather than from the distribution's last index; see splice).
type errBound struct {
	tau, logErr, logGapW float64
	top                  int
	capped               bool
}

// Bounds is a two-sided result of the PLD accountant: the true value (the
// delta or eps of the pair the PLD accounts) lies in [Optimistic, Safe].
// Safe is the guarantee to state and to calibrate with; Optimistic shows
// how much the discretisation and rounding cost.
type Bounds struct {
	Optimistic float64 // a lower bound on the true value
	Safe       float64 // an upper bound on the true value (pessimistic)
}

// Width returns (Safe - Optimistic) / Safe, the relative width; 0 when
// Safe is 0 or +Inf with Optimistic equal to it, +Inf when only Safe is
// +Inf.
func (b Bounds) Width() float64 {
	if b.Safe == b.Optimistic {
		return 0
	}
	if math.IsInf(b.Safe, 1) {
		return math.Inf(1)
	}
	return (b.Safe - b.Optimistic) / b.Safe
}

// Floor returns the least delta the PLD reports at any eps: the mass at
// infinite loss (the cut upper tails) plus the rounding bound of the
// masses above the grid, the larger over the two directions.
// [PLD.Epsilon] is +Inf for a delta at or below it. Floor of a nil or zero
// PLD is 1 (no guarantee).
func (p *PLD) Floor() float64 {
	if !p.valid() {
		return 1
	}
	f := 0.0
	for _, d := range p.dirs(false) {
		f = math.Max(f, newCurve(d, p.h, true).value(math.Inf(1)))
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
func (p *PLD) valid() bool {
	return p != nil && p.remove != nil && p.add != nil && p.removeOpt != nil && p.addOpt != nil && p.h > 0
}

// Interval returns the spacing of the PLD's loss grid (0 for a nil PLD).
func (p *PLD) Interval() float64 {
	if p == nil {
		return 0
	}
	return p.h
}

// symmetric reports whether both directions share one distribution.
func (p *PLD) symmetric() bool { return p.add == p.remove }

// dist returns p's distribution i: remove, add, removeOpt or addOpt (the
// order of each).
func (p *PLD) dist(i int) *lossDist {
	return [4]*lossDist{p.remove, p.add, p.removeOpt, p.addOpt}[i]
}

// dirs returns the pessimistic distributions of the directions, or the
// optimistic ones if opt.
func (p *PLD) dirs(opt bool) []*lossDist {
	ds := []*lossDist{p.remove, p.add}
	if opt {
		ds = []*lossDist{p.removeOpt, p.addOpt}
	}
	if p.symmetric() {
		return ds[:1]
	}
	return ds
}

// curve is one side's delta(eps) of one direction, ready for queries:
// with S_j = sum_{i >= j} m_i and D_j = sum_{i > j} m_i (1 - e^(l_j - l_i)),
// the sum sum_{l_i > eps} m_i (1 - e^(eps - l_i)) is (1 - a) S_j + a D_j
// on the cell l_{j-1} <= eps < l_j, with a = e^(eps - l_j): both terms sums
// of non-negative numbers, so nothing cancels. The safe side reports
// (1+rel)(inf + sum + err_j), the optimistic (sum - err_j)/(1+rel) with
// err_j the additive error bound of the masses from index j up; rel adds
// the rounding of the recurrences (a few u per step) and of eps - l_j.
type curve struct {
	d    *lossDist
	h    float64
	safe bool
	S, D []float64
	rel  float64
}

func newCurve(d *lossDist, h float64, safe bool) *curve {
	n := len(d.mass)
	c := &curve{d: d, h: h, safe: safe, S: make([]float64, n+1), D: make([]float64, n+1)}
	e, em := math.Exp(-h), -math.Expm1(-h)
	for j := n - 1; j >= 0; j-- {
		// D_j = (1 - e^-h) S_{j+1} + e^-h D_{j+1}
		c.D[j] = em*c.S[j+1] + e*c.D[j+1]
		c.S[j] = c.S[j+1] + d.mass[j]
	}
	lmax := math.Max(math.Abs(float64(d.lo)*h), math.Abs(float64(d.lo+n)*h))
	q := 4*unitRound*float64(n+4) + 8*unitRound*(2+lmax)/h
	c.rel = (1+d.rel)*(1+q) - 1
	return c
}

// cell returns the index j of the first mass above eps (len(mass) if none).
func (c *curve) cell(eps float64) int {
	n := len(c.d.mass)
	l := func(j int) float64 { return float64(c.d.lo+j) * c.h }
	j := int(math.Max(-1, math.Min(float64(n), math.Floor(eps/c.h)-float64(c.d.lo))))
	for j > 0 && l(j-1) > eps {
		j--
	}
	for j < n && (j < 0 || l(j) <= eps) {
		j++
	}
	return j
}

// value returns the reported delta at eps (+Inf: the limit above the grid).
func (c *curve) value(eps float64) float64 { return c.onCell(c.cell(eps), eps) }

// onCell returns the reported delta at eps on cell j.
func (c *curve) onCell(j int, eps float64) float64 {
	d := c.d
	s := 0.0
	if j < len(d.mass) {
		lj := float64(d.lo+j) * c.h
		x := math.Min(eps-lj, 0)
		s = -math.Expm1(x)*c.S[j] + math.Exp(x)*c.D[j]
	}
	// The error bound counts every grid index above eps, those below the
	// stored masses too (trim dropped masses there and counted them).
	J := d.lo + j
	if g := math.Floor(eps/c.h) + 1; g < float64(J) {
		J = int(math.Max(g, math.MinInt32))
	}
	err := d.errFrom(float64(J))
	if c.safe {
		r := (1 + c.rel) * (d.inf + s + err)
		if r == 0 && d.unbounded {
			// The truth is positive but below the float64 range: report
			// the least positive float64 rather than 0.
			return math.SmallestNonzeroFloat64
		}
		return math.Min(r, 1)
	}
	return math.Min(math.Max(0, s-err)/(1+c.rel), 1)
}

// epsilon returns the safe side's least eps >= 0 at which the reported
// delta is at most delta (non-increasing in eps: the sum decreases and the
// error bound steps down), or the optimistic side's greatest eps at which
// it is above delta (every eps at which a lower bound on the true delta
// exceeds delta is below the true eps), to a relative 1e-13 by bisection
// and rounded outward: up on the safe side, down on the optimistic one.
func (c *curve) epsilon(delta float64) float64 {
	n := len(c.d.mass)
	top := math.Max(float64(c.d.lo+n)*c.h, 0)
	if c.safe {
		if c.onCell(n, top) > delta {
			return math.Inf(1)
		}
		if c.value(0) <= delta {
			return 0
		}
		_, eps := bisect(func(e float64) bool { return c.value(e) <= delta }, 0, top, false)
		return eps
	}
	// Optimistic: the highest cell of positive losses whose left end
	// (at least 0) is above delta holds the last crossing; the value is
	// decreasing within a cell. The right ends grow with j, so the cells
	// of positive losses are those from the first such one up.
	j := lastWhere(n, costCurve, func(j int) bool {
		right := float64(c.d.lo+j) * c.h
		return right > 0 && c.onCell(j, math.Max(float64(c.d.lo+j-1)*c.h, 0)) > delta
	})
	if j < 0 {
		return 0
	}
	left := math.Max(float64(c.d.lo+j-1)*c.h, 0)
	right := float64(c.d.lo+j) * c.h
	if c.onCell(j, right) > delta {
		return right // can only happen through rounding; still below the truth
	}
	// The last point still above delta: below the truth.
	eps, _ := bisect(func(e float64) bool { return c.onCell(j, e) <= delta }, left, right, false)
	return eps
}

// Delta returns a delta for which the mechanism the PLD describes is
// (eps, delta)-DP under its neighbouring relation: the Safe side of
// [PLD.DeltaBounds]. It is never below the mechanism's true delta(eps).
func (p *PLD) Delta(eps float64) (float64, error) {
	b, err := p.DeltaBounds(eps)
	return b.Safe, err
}

// DeltaBounds returns bounds on the delta at eps of the pair the PLD
// accounts: Safe, the larger over the two directions of the pessimistic
// discrete hockey-stick divergence
//
//	delta(eps) = inf + sum_i mass_i (1 - e^(eps - l_i))_+
//
// plus the rounding bound, is never below the true delta(eps), and
// Optimistic, the optimistic distributions' value less the rounding bound,
// never above it (see [PLD] for why).
//
// Special cases are:
//
//	DeltaBounds(eps) is an error for eps < 0, eps = +Inf or NaN
//	DeltaBounds(eps) = {0, 0} for a PLD of no privacy loss (sigma = +Inf or
//	    q = 0), and where the losses are bounded below eps (the add
//	    direction of a sampled Gaussian); a positive Safe below the float64
//	    range is reported as 5e-324, never 0
//	DeltaBounds(eps).Safe <= 1 always (a bound above 1 is reported as 1)
func (p *PLD) DeltaBounds(eps float64) (Bounds, error) {
	return p.bounds(checkNonNegative("eps", eps), func(c *curve) float64 { return c.value(eps) })
}

// bounds returns the larger of f over the safe curves of the directions
// as Safe, and over the optimistic ones (at most Safe) as Optimistic, or
// errNilPLD for a PLD not built by this package, then checkX, the error
// of the query's argument check. The curves are built and f evaluated on
// up to four cores, one curve each; the maxima are taken in the order of
// the directions.
func (p *PLD) bounds(checkX error, f func(c *curve) float64) (Bounds, error) {
	if !p.valid() {
		return Bounds{}, errNilPLD
	}
	if checkX != nil {
		return Bounds{}, checkX
	}
	safe := p.dirs(false)
	ds := append(safe, p.dirs(true)...)
	v := make([]float64, len(ds))
	work := 0.0
	for _, d := range ds {
		work += costCurve * float64(len(d.mass))
	}
	par.For(len(ds), work, func(i int) { v[i] = f(newCurve(ds[i], p.h, i < len(safe))) })
	var b Bounds
	for i, x := range v {
		if i < len(safe) {
			b.Safe = math.Max(b.Safe, x)
		} else {
			b.Optimistic = math.Max(b.Optimistic, x)
		}
	}
	b.Optimistic = math.Min(b.Optimistic, b.Safe)
	return b, nil
}

// Epsilon returns an eps >= 0 at which the mechanism the PLD describes is
// (eps, delta)-DP: the Safe side of [PLD.EpsilonBounds].
func (p *PLD) Epsilon(delta float64) (float64, error) {
	b, err := p.EpsilonBounds(delta)
	return b.Safe, err
}

// EpsilonBounds returns bounds on the least eps at which the pair the PLD
// accounts is (eps, delta)-DP: Safe is the least eps >= 0 (to a relative
// 1e-13, and never below it) at which the Safe side of [PLD.DeltaBounds] is
// at most delta, never below the true eps; Optimistic is the greatest eps
// at which the optimistic side is above delta (0 if none), never above the
// true eps.
//
// Special cases are:
//
//	EpsilonBounds(delta) is an error unless 0 < delta < 1
//	EpsilonBounds(delta).Safe = +Inf if delta is at most [PLD.Floor] (no
//	    finite eps reaches it)
//	EpsilonBounds(delta).Safe = 0 if the safe delta at 0 is at most delta
func (p *PLD) EpsilonBounds(delta float64) (Bounds, error) {
	return p.bounds(checkDelta(delta), func(c *curve) float64 { return c.epsilon(delta) })
}

// ErrPLDInterval reports PLDs of different grid spacings composed together.
var ErrPLDInterval = errors.New("accountant: PLDs with different intervals cannot be composed")

// intervalError is an ErrPLDInterval naming the two intervals and what to
// do about them.
type intervalError struct{ a, b float64 }

func (e *intervalError) Error() string {
	return ErrPLDInterval.Error() + " (" + ftoa(e.a) + " and " + ftoa(e.b) +
		"): build both with the same PLDOptions.Interval (GaussianPLD or SampledGaussianPLD, then SelfCompose; SampledGaussian and AmplifiedBanded choose their own)"
}

func (e *intervalError) Is(target error) bool { return target == ErrPLDInterval }

// Compose returns the PLD of the adaptive composition of the mechanisms p
// and o (each direction composed with the same direction: a fixed pair of
// neighbouring data sets is in the same direction for every mechanism).
// Both must have the same interval (else an error matching
// ErrPLDInterval: two SampledGaussian results usually differ in it, so
// build runs to be composed with SampledGaussianPLD on one interval and
// SelfCompose), and both must be stated for the same
// neighbouring relation, which the caller guarantees: a PLD does not record
// it (a GaussianPLD fits either, its relation entering through sigma).
//
// Where p and o are compositions of one and the same PLD B (B itself, or
// what B.SelfCompose, or Compose as here, returned: a copies of B and b
// copies), the result is B.SelfCompose(a + b), composed from B in one
// transform, and SelfCompose of it composes B again: p.Compose(p) is
// p.SelfCompose(2), B.SelfCompose(8).Compose(B.SelfCompose(4)) is
// B.SelfCompose(12), bit for bit (unless that grid exceeds SelfCompose's
// limits, where the masses are composed). Composing the computed masses
// carries each input's rounding bound at its own tilt, or, for two single
// events, at tilt 0, which is loose far from the losses it was tuned for
// (see docs/privacy.md). PLDs are the same only as the same pointer:
// two PLDs built separately with the same parameters are composed from
// their masses. A replace-one step of SampledGaussianPLD or of
// SampledGaussian (one step, q < 1) is composed with a PLD of another base
// as its base (its two directions composed at tilt 0) joined below its
// own tilted masses (see SampledGaussianPLD), at a tilt fitted to the
// composition and at tilt 0, joined again; so are Gaussian single events
// built apart (two distributions unbounded above whose pairTilt is 0),
// compositions of such joined PLDs, and self-compositions (what
// SelfCompose returned, k >= 2: its masses joined below with the same
// composition computed at tilt 0; composed at their own tilt,
// GaussianPLD(2).SelfCompose(2).Compose(GaussianPLD(0.5)) had eps(1e-6)
// in [0, 13.1] against 11.81116). Their safe delta then carries no
// floor near 1e-11 (T Gaussians of sigma built apart bracket the mu-GDP
// truth of sigma / sqrt(T) at delta 1e-14). The pairs left at tilt 0 are
// the add direction (bounded above) of sampled single events whose pairTilt
// is 0 (composed with a Gaussian): joined, that direction self-composed
// was floored at delta 1e-12 (see docs/privacy.md).
func (p *PLD) Compose(o *PLD) (*PLD, error) {
	if !p.valid() || !o.valid() {
		return nil, errNilPLD
	}
	if p.h != o.h {
		return nil, &intervalError{p.h, o.h}
	}
	bp, a := p.root()
	if bo, b := o.root(); bo == bp && a <= math.MaxInt-b {
		if r, err := bp.selfCompose(nil, a+b, bp.tail); err == nil {
			r.base, r.count = bp, a+b
			return r, nil
		}
	}
	// SampledGaussianPLD's replace-one step holds masses tilted for its
	// own upper tail; composed with another PLD's masses at that tilt,
	// the bound was loose (q = 0.01, sigma = 1, composed with the
	// add/remove PLD at the same q, sigma and interval: Delta(0.5) = 1).
	// Its base is the same pair composed at tilt 0, whose bound holds at
	// every tilt but has a floor near 1e-11: compose the two joined
	// (splicePLD), whose bound is small at every tilt between.
	p, o = p.one(), o.one()
	r := &PLD{h: p.h, tail: math.Min(p.tail, o.tail)}
	sym := p.symmetric() && o.symmetric()
	err := r.each(sym, func(i int) (*lossDist, error) {
		return composeDists(p.dist(i), o.dist(i), p.dist(i%2).unbounded && o.dist(i%2).unbounded)
	})
	return r, err
}

// each sets r's distributions to f(0..3) (remove, add, removeOpt, addOpt),
// the add ones shared with the remove ones when sym, computing them
// concurrently.
func (r *PLD) each(sym bool, f func(i int) (*lossDist, error)) error {
	out := make([]*lossDist, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		if !sym || i%2 == 0 { // the add ones (odd i) are shared when sym
			wg.Go(func() { out[i], errs[i] = f(i) })
		}
	}
	wg.Wait()
	if err := cmp.Or(errs...); err != nil {
		return err
	}
	if sym {
		out[1], out[3] = out[0], out[2]
	}
	r.remove, r.add, r.removeOpt, r.addOpt = out[0], out[1], out[2], out[3]
	return nil
}

// SelfCompose returns the PLD of k adaptive compositions of p, computed by
// one FFT of each distribution raised to the k-th power, on a window that
// a Chernoff bound shows to hold all but the tail mass of the composition.
// A PLD that SelfCompose returned is composed from the PLD it composed:
// p.SelfCompose(a).SelfCompose(b) is p.SelfCompose(a b), bit for bit
// (unless that grid exceeds the limits below, where the a-fold
// composition's masses are composed b times instead).
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
	if err := checkCount("compositions", k); err != nil {
		return nil, err
	}
	if k == 1 {
		return p, nil
	}
	// A self-composition of a self-composition, base^a composed k times,
	// is base composed a k times (adaptive composition is associative):
	// composed from base in one transform it is exactly
	// base.SelfCompose(a k), with one transform's rounding. Composing
	// base^a's computed masses instead carried their rounding noise and
	// error bound through a second transform at base^a's own tilt, tuned
	// for base^a's upper tail: far below it the noise is real (the
	// Gaussian of sigma 3 at interval 1e-3, composed twice, errs by 5e-6
	// of its mass at loss -1 and trim drops its masses below -1.25), and
	// the bound, a Chernoff bound at that tilt, exceeded 1 at eps = 1 of
	// the 16-fold composition (G.SelfCompose(2).SelfCompose(8) reported
	// Delta(1) = 1). Where base cannot be composed a k times (a grid
	// beyond the limits that the composed masses fit), the masses are
	// composed.
	if p.base != nil && p.count <= math.MaxInt/k {
		if r, err := p.base.selfCompose(nil, p.count*k, p.base.tail); err == nil {
			r.base, r.count = p.base, p.count*k
			return r, nil
		}
	}
	r, err := p.selfCompose(nil, k, p.tail)
	if err != nil {
		return nil, err
	}
	if p.base == nil {
		r.base, r.count = p, k
	}
	return r, nil
}

// root returns the PLD B and the count a such that p is a copies of B
// composed (see SelfCompose and Compose): p's base and count where it
// records them, else p itself, once.
func (p *PLD) root() (*PLD, int) {
	if p.base != nil {
		return p.base, p.count
	}
	return p, 1
}

// one returns what Compose composes for p with a PLD of another base:
// p's masses joined below with its base's where p is to be composed as
// it (composeBase, splicePLD), a self-composition's masses joined below
// with the same composition computed at tilt 0 (spliceSelf), else p.
func (p *PLD) one() *PLD {
	if !p.composeBase && (p.base == nil || p.count <= 1) {
		return p
	}
	if r := p.joined.Load(); r != nil {
		return r
	}
	var r *PLD
	if p.composeBase {
		r = p.splicePLD()
	} else {
		r = p.spliceSelf()
	}
	p.joined.CompareAndSwap(nil, r)
	return p.joined.Load()
}

// selfComposeUntilted is selfCompose at tilt 0 (see spliceSelf).
func (p *PLD) selfComposeUntilted(k int, fold float64) (*PLD, error) {
	r := &PLD{h: p.h, tail: p.tail}
	err := r.each(p.symmetric(), func(i int) (*lossDist, error) {
		return selfConvolveTilt(nil, p.dist(i), k, p.h, p.tail, fold, i < 2, true)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// selfCompose is SelfCompose with the tilted composition's window cut at a
// tilted tail mass of fold (see selfConvolve), stopped by ctx if not nil
// (see selfConvolveTilt).
func (p *PLD) selfCompose(ctx context.Context, k int, fold float64) (*PLD, error) {
	if k == 1 {
		return p, nil
	}
	r := &PLD{h: p.h, tail: p.tail}
	err := r.each(p.symmetric(), func(i int) (*lossDist, error) {
		return selfConvolve(ctx, p.dist(i), k, p.h, p.tail, fold, i < 2)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}
