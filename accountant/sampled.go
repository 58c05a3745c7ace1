package accountant

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
)

// This file holds the PLD accounting of repeated Poisson-subsampled
// Gaussian releases (DP-SGD-style training, and amplified banded matrix
// factorizations), with a grid chosen for the number of steps.

// gridBudget is about the number of grid points an automatic grid puts in
// the composed distribution's window, and coarseBudget the number the first
// phase of a calibration uses (BenchmarkPLD measures their cost).
const (
	gridBudget   = 1 << 17
	coarseBudget = 1 << 14
)

// defaultSampledTail is about the total tail mass SampledGaussian cuts
// from its steps (counted as infinite loss): its Floor.
const defaultSampledTail = 1e-20

// autoOptions returns PLDOptions for steps compositions of the
// Poisson-subsampled Gaussian (q, sigma): an interval that puts about
// budget points in the Chernoff window of the composition (16 standard
// deviations of the composed loss), but no more than 2 budget points in one
// step's loss range and no finer than 1e-8; on the full budget also at
// most s1/16, s1 the standard deviation of one step's loss, unless that
// puts more than 2^22 points in one step's loss range, or more than 4
// budget (then 2 budget, unless that is coarser than s1/16; for one step
// more than 2 budget). Any interval gives a safe
// result; this one makes it accurate (the error of the eps it reports grows
// like steps h^2) at a bounded cost. Under ReplaceOne (q < 1) a step is the
// composition of the remove and add pairs at noise multiplier sqrt2 sigma
// (see SampledGaussianPLD), so the grid is chosen as for 2 steps of those.
func autoOptions(q, sigma float64, steps int, budget int, tail float64, rel Relation) PLDOptions {
	one := steps == 1
	if rel == ReplaceOne && q < 1 {
		sigma, steps = sigma*math.Sqrt2, 2*steps
	}
	sigma = math.Min(sigma, maxSampledSigma) // as SampledGaussianPLD accounts it
	// Standard deviation of one step's loss: 1/sigma for the Gaussian, and
	// about q sqrt(e^(1/sigma^2) - 1) (the chi-square divergence) when q is
	// small.
	s1 := 1 / sigma
	if q < 1 {
		s1 = math.Min(s1, q*math.Sqrt(math.Expm1(math.Min(1/(sigma*sigma), 700))))
	}
	spread := 16 * math.Sqrt(float64(steps)) * s1
	// One step's losses reach about (1 + 8.5 sigma)/sigma^2 + log q.
	rng := math.Max(spread, (1+8.5*sigma)/(sigma*sigma)+logf(q)+1)
	h := math.Max(spread/float64(budget), rng/float64(2*budget))
	if budget >= gridBudget {
		// The relative width of the two-sided result grows like
		// (h/s1)^2: at most s1/16 keeps it near 1e-3 at 10^6 steps (the
		// window then holds about 2^18 points) where one step's loss
		// is spread evenly; refineInterval refines it where not.
		h = math.Min(h, s1/16)
		// But not so fine that one step's losses need more than a
		// quarter of the grid limit: at a tiny q, s1 is set by a rare
		// tail and s1/16 can be far finer than the range of the rare
		// large losses allows (q = 1e-6, sigma = 0.6: 2.4e-7 against
		// losses from about 0 to 17), which failed every PLD and sent a
		// calibration's search up by 2% steps of seconds each.
		if q < 1 {
			span := sampledStepSpan(q, sigma, stepTail(tail, steps))
			h = math.Max(h, span/(maxGrid/4))
			// One step's losses are the whole window of a one-step
			// PLD: there at most 2 budget points in them, unless
			// that is coarser than s1/16 (the accuracy rule above).
			// With more steps too where the spread's interval puts
			// more than 4 budget points in them: the composition's
			// bulk is then far narrower than one step's range (a rare
			// large loss), and composing the steps over that range
			// costs time and memory without making the bracket
			// narrower. The rule of thumb for the largest loss above
			// is below 0 where q e^((1 + 8.5 sigma)/sigma^2) < 1, and
			// the spread's interval had only the grid limit above it:
			// q = 1e-4, sigma = 1, one replace-one step took interval
			// 2.4e-8, 4.2e6 points and 25 s for losses over 0.101,
			// where sigma = 0.656 and 2 took 2.2e5 and 3.0e5 points;
			// 10 such steps took 2.7e6 points per step, 28 s and
			// 2.2 GB (TestAutoOptionsStepRangeAnySteps). Below 4
			// budget the finer grid is kept: at 10^5 steps a coarser
			// one would be refined (refineInterval), at more cost.
			if one || span > float64(4*budget)*h {
				h = math.Max(h, math.Min(span/float64(2*budget), s1/16))
			}
		}
	}
	// Each step's cut upper tail counts as infinite loss, steps times over:
	// cut tail / steps per step (tail = 1e-20 unless a calibration asks for
	// more), so that the composition's infinite mass stays near tail, far
	// below any delta of interest.
	h = math.Min(math.Max(h, 1e-8), 1)
	return PLDOptions{Interval: h, TailMass: stepTail(tail, steps)}
}

// stepTail returns the tail mass autoOptions cuts per step: tail (0:
// defaultSampledTail) over the steps, within [1e-300, 1e-3].
func stepTail(tail float64, steps int) float64 {
	tail = cmp.Or(tail, defaultSampledTail)
	return math.Min(math.Max(tail/float64(steps), 1e-300), 1e-3)
}

// sampledStepSpan returns the larger over the two directions of the range
// of losses that SampledGaussianPLD discretises for one step (q < 1) at
// the tail mass tail, as lossGrid finds it; 0 where it is not finite
// (lossGrid then reports the error).
func sampledStepSpan(q, sigma, tail float64) float64 {
	span := 0.0
	for _, m := range []lossModel{sampledRemoveModel(q, sigma), sampledAddModel(q, sigma)} {
		if d := m.loss(m.xhi(tail)) - m.loss(m.xlo(tail)); d > span && !math.IsInf(d, 1) {
			span = d
		}
	}
	return span
}

// checkSampled checks the parameters of a sampled Gaussian run (of one
// step for SampledGaussianPLD).
func checkSampled(q, sigma float64, steps int, rel Relation) error {
	if !(q >= 0 && q <= 1) {
		return &ParamError{Param: "q", Value: q, Want: "a sampling probability in [0, 1]"}
	}
	if !(sigma > 0) {
		return &ParamError{Param: "sigma", Value: sigma, Want: "> 0"}
	}
	return cmp.Or(checkRelation(rel), checkCount("steps", steps))
}

// checkRelation requires AddRemove or ReplaceOne.
func checkRelation(rel Relation) error {
	if rel != AddRemove && rel != ReplaceOne {
		return &ParamError{Param: "relation", Value: float64(rel), Want: "AddRemove or ReplaceOne"}
	}
	return nil
}

// SampledGaussian returns the PLD of steps adaptive compositions of the
// Poisson-subsampled Gaussian mechanism (sampling probability q, noise
// multiplier sigma = noise std / L2 sensitivity of one record under rel:
// the clipping norm C for AddRemove, 2 C for ReplaceOne) under the
// relation rel, on a grid chosen for steps (about 2^17 points in the
// composed window, refined where a Chernoff prediction of the relative
// width of eps at delta = 1e-10 exceeds 7e-4: see refineInterval). Under
// AddRemove the accounting is tight up to the
// discretisation; under ReplaceOne with q < 1 it is an upper bound (see
// [SampledGaussianPLD] for the dominating pair and its proof), composed
// in one transform: the spectra of the remove pair and the add pair are
// each raised to the steps-th power, multiplied and transformed back once,
// the same distribution as steps compositions of the step's pair, with
// one inverse transform's rounding where composing the step first raised
// a transform's rounding steps-fold (docs/privacy.md, "How the replace-one
// steps are composed"). One step is composed the same way; SelfCompose and
// Compose of that one-step PLD compose SampledGaussianPLD's pair for it.
//
// Special cases are:
//
//	SampledGaussian(0, sigma, T, r) and SampledGaussian(q, +Inf, T, r) have
//	    no privacy loss (Delta = 0)
//	SampledGaussian(1, sigma, T, r) is T Gaussian mechanisms (mu = sqrt(T)/sigma)
//	SampledGaussian(q, sigma, T, r) is an error for q outside [0, 1] or NaN,
//	    sigma <= 0 or NaN, T < 1, or a relation other than AddRemove and
//	    ReplaceOne
//
// Its time grows with the composed grid, up to 2^24 points: under a
// second for thousands of steps, 17 s (idle) to 40 s (loaded two-core
// machine) at q = 0.01, sigma = 1 and 10^9 steps, mostly FFTs of 2^24
// points and the double-word refinement of the spectrum's low
// frequencies. It cannot be stopped; [SampledGaussianContext] can.
//
// On a 32-bit platform the answer is the same to the last bits of rounding
// (amd64's math functions are assembly) wherever the stored losses lie
// within 2^30 grid intervals of 0: the composed grid's offsets are int64s
// there too, and its transforms of 2^22 points or more run one at a time
// to fit the 4 GiB address space (10^9 add/remove steps at q = 0.01,
// sigma = 1: 4.4 minutes and 3.6 GB on 386, 1.8 minutes and 5.9 GB on
// amd64, on the same loaded machine). Losses beyond that (eps near 3e8 at
// 2^31 - 1 steps of q = 0.5, sigma = 1) need a coarser interval, which it
// takes as for any grid beyond the limits: a safe, looser answer (3.77e8
// against amd64's 3.03e8).
func SampledGaussian(q, sigma float64, steps int, rel Relation) (*PLD, error) {
	return sampledGaussian(q, sigma, steps, rel, sampledOpts{budget: gridBudget})
}

// sampledOpts sets how sampledGaussian builds a PLD: on a grid of about
// budget points, cutting a tail mass of about tail in all (0:
// defaultSampledTail), with the tilted composition's window cut at a
// tilted tail mass of fold (0: the per-step tail, see selfConvolve), and
// without the optimistic side if safeOnly. Each only loosens the safe side
// (the calibration's search uses them to make its evaluations cheaper).
type sampledOpts struct {
	budget     int
	tail, fold float64
	safeOnly   bool
	ctx        context.Context // checked while discretising and before composing (nil: never)
}

// sampledGaussian is SampledGaussian as o sets it.
func sampledGaussian(q, sigma float64, steps int, rel Relation, so sampledOpts) (*PLD, error) {
	if err := checkSampled(q, sigma, steps, rel); err != nil {
		return nil, err
	}
	if q == 0 || math.IsInf(sigma, 1) {
		return identityPLD(DefaultInterval, DefaultTailMass), nil
	}
	o := autoOptions(q, sigma, steps, so.budget, so.tail, rel)
	o.safeOnly, o.ctx = so.safeOnly, so.ctx
	fold := cmp.Or(so.fold, math.Max(o.TailMass, foldFloor))
	// build composes the steps on the grid of o, refined first if refine.
	build := func(o PLDOptions, refine bool) (*PLD, error) {
		var p *PLD
		var err error
		if refine {
			o, p, err = refineInterval(q, sigma, steps, rel, o)
			if err != nil {
				return nil, err
			}
		}
		// One step too: SampledGaussianPLD composes its two directions at
		// tilt 0, whose rounding bound left a floor near 1e-11 under every
		// delta (q = 0.01, sigma = 1: eps(1e-12) = +Inf, two steps 0.67).
		if rel == ReplaceOne && q < 1 {
			r, err := replaceOneSteps(q, sigma, steps, fold, o, p)
			if err != nil || steps > 1 || so.safeOnly {
				return r, err
			}
			// The one step's result is tilted for its own tail, and
			// SelfCompose of it, which needs the error at lower tilts,
			// was loose (q = 0.3, sigma = 1, 10 copies: eps(1e-10) in
			// [0, 9.31] against [7.756656, 7.756657]): record the step's
			// pair as its base, so that SelfCompose and Compose of it
			// compose that pair as they did before. Compose with a PLD of
			// another base joins the pair's masses below and the step's
			// above (composeBase, as SampledGaussianPLD's step; see
			// splice): composed as it is, at its own tilt, with the
			// add/remove PLD of the same q, sigma and interval, Delta(0.5)
			// was in [1.4e-11, 1] against [2.2327e-7, 2.2332e-7] from the
			// pair, and the pair alone kept its floor near 1e-11.
			b, err := sampledGaussianPLD(q, sigma, rel, o, false)
			if err != nil {
				return nil, err
			}
			r.base, r.count, r.composeBase = b, 1, true
			return r, nil
		}
		if p == nil {
			if p, err = SampledGaussianPLD(q, sigma, rel, o); err != nil {
				return nil, err
			}
		}
		if so.ctx != nil && so.ctx.Err() != nil {
			return nil, so.ctx.Err()
		}
		return p.selfCompose(so.ctx, steps, fold)
	}
	p, err := build(o, !so.safeOnly && so.budget >= gridBudget && steps > 1)
	// The automatic interval is chosen for accuracy, and at a tiny q it
	// can be far finer than a step's rare large losses allow (q = 1e-6,
	// sigma = 0.6: about s1/16 = 2.4e-7 against losses up to 17, 7e7
	// points). Every interval is safe: on a grid error, try coarser ones
	// (each 4 times the last, unrefined) up to the largest, 1, so that the
	// error below is only reported when no interval fits. Not in a
	// calibration's search (safeOnly), which takes a grid error as "more
	// noise needed": a coarse grid's loose delta would only slow it.
	for !so.safeOnly && errors.Is(err, ErrPLDGrid) && o.Interval < 1 {
		o.Interval = math.Min(1, 4*o.Interval)
		p, err = build(o, false)
	}
	if errors.Is(err, ErrPLDGrid) {
		// The automatic grid is as coarse as it gets: name what can change.
		return nil, &gridError{"sigma = " + ftoa(sigma) + " with q = " + ftoa(q) + " over " + itoa(steps) +
			" steps needs a loss grid beyond the accountant's limit (2^24 points) even at its largest interval: use a larger sigma or fewer steps"}
	}
	return p, err
}

// SampledGaussianDeltaBounds returns bounds on the delta at eps of steps
// compositions of the Poisson-subsampled Gaussian (q, sigma) under rel:
// [PLD.DeltaBounds] of [SampledGaussian]. Safe is never below the true
// delta, Optimistic never above it (for ReplaceOne with q < 1: never above
// the delta of the dominating pair the accountant uses). Its special cases
// and errors are those of SampledGaussian and PLD.DeltaBounds.
func SampledGaussianDeltaBounds(q, sigma float64, steps int, eps float64, rel Relation) (Bounds, error) {
	return sampledBounds(q, sigma, steps, rel, checkNonNegative("eps", eps), (*PLD).DeltaBounds, eps)
}

// SampledGaussianEpsilonBounds returns bounds on the eps at delta of steps
// compositions of the Poisson-subsampled Gaussian (q, sigma) under rel:
// [PLD.EpsilonBounds] of [SampledGaussian]. Safe is never below the true
// eps, Optimistic never above it (for ReplaceOne with q < 1, the eps of the
// dominating pair). Its special cases and errors are those of
// SampledGaussian and PLD.EpsilonBounds.
func SampledGaussianEpsilonBounds(q, sigma float64, steps int, delta float64, rel Relation) (Bounds, error) {
	return sampledBounds(q, sigma, steps, rel, checkDelta(delta), (*PLD).EpsilonBounds, delta)
}

// sampledBounds returns query(p, x) for the PLD p of [SampledGaussian],
// or the error of the query's argument check, checkX, before any PLD is
// built.
func sampledBounds(q, sigma float64, steps int, rel Relation, checkX error, query func(*PLD, float64) (Bounds, error), x float64) (Bounds, error) {
	if checkX != nil {
		return Bounds{}, checkX
	}
	p, err := SampledGaussian(q, sigma, steps, rel)
	if err != nil {
		return Bounds{}, err
	}
	return query(p, x)
}

// SampledGaussianDelta returns a delta for which steps compositions of the
// Poisson-subsampled Gaussian (q, sigma) are (eps, delta)-DP under rel:
// [PLD.Delta] of [SampledGaussian]. It is never below the true delta. Its
// special cases and errors are those of SampledGaussian and PLD.Delta.
func SampledGaussianDelta(q, sigma float64, steps int, eps float64, rel Relation) (float64, error) {
	b, err := SampledGaussianDeltaBounds(q, sigma, steps, eps, rel)
	return b.Safe, err
}

// SampledGaussianEpsilon returns an eps for which steps compositions of the
// Poisson-subsampled Gaussian (q, sigma) are (eps, delta)-DP under rel:
// [PLD.Epsilon] of [SampledGaussian]. It is never below the true eps. Its
// special cases and errors are those of SampledGaussian and PLD.Epsilon
// (+Inf when no finite eps reaches delta).
func SampledGaussianEpsilon(q, sigma float64, steps int, delta float64, rel Relation) (float64, error) {
	b, err := SampledGaussianEpsilonBounds(q, sigma, steps, delta, rel)
	return b.Safe, err
}

// SampledGaussianSigma returns a noise multiplier sigma (noise std / L2
// sensitivity of one record under rel, as for [SampledGaussian]) for which
// steps compositions of the Poisson-subsampled Gaussian with sampling
// probability q are (eps, delta)-DP under rel: [SampledGaussianDelta] at
// the result is at most delta. It is within a relative 1e-4 (plus about
// 1e-7 for the search's cut tails) above the least sigma the search's
// accounting certifies, which is never below the least sigma
// SampledGaussian's accounting certifies by more than about 1e-7 relative.
//
// The search keeps a bracket [lo, hi] whose upper end has been checked
// safe (Delta(eps) <= delta) and whose lower end has been found unsafe,
// narrows it by regula falsi on log delta against log sigma, and returns
// hi. Its evaluations cut tails of 1e-6 delta (SampledGaussian cuts 1e-20)
// and take the tilted composition's window smaller: both only raise the
// safe delta, by about 2e-6 relative. It starts from the central-limit
// guess and works first on a coarse grid (2^14 points) to a relative 1e-2,
// then on the full grid, where the coarse bracket's slope predicts the
// root and two evaluations around it usually end the search; the result
// is then confirmed with SampledGaussian's own accounting (and the search
// goes on with it in the rare case it disagrees). A calibration costs
// about 5 coarse PLDs, 3 search PLDs on the full grid and one full one
// (docs/privacy.md). It checks ctx before each PLD and every 1024 grid
// cells while one is built, and returns ctx.Err() within milliseconds once
// ctx is done.
//
// eps is at most [MaxSampledEps]: a PLD's losses reach about 2 eps at the
// sigma sought, and its cost grows in proportion (eps = 1e4 took about
// 2 s, 1e5 15 s, 1e6 over a minute), while a guarantee with eps beyond
// e^709 (the float64 range) bounds nothing a release could need.
//
// Special cases are:
//
//	SampledGaussianSigma(nil, q, T, eps, delta, r) is an error
//	SampledGaussianSigma(ctx, 0, T, eps, delta, r) is an error (no noise is needed)
//	SampledGaussianSigma(ctx, q, T, eps, delta, r) is an error naming q when
//	    1 - (1-q)^T <= delta: a record is used at all with at most that
//	    probability, so the steps are (0, delta)-DP without noise
//	SampledGaussianSigma(ctx, q, T, eps, delta, r) is an error for q outside
//	    (0, 1], T < 1, eps <= 0 or above MaxSampledEps, delta outside (0, 1),
//	    or a relation other than AddRemove and ReplaceOne
//	SampledGaussianSigma(ctx, q, T, eps, delta, r) is an error matching
//	    ErrPLDGrid when T steps need more than 2^24 grid points at every
//	    sigma tried (beyond about 4e9 steps)
//
// Its accounting resolves eps to the grid's interval: at a tiny eps it is
// looser (at q = 1, T = 10, delta = 1e-5: 0.04% above the exact sigma at
// eps = 1e-4, 1.2% at 1e-6; docs/privacy.md). Where the search's cheaper
// windows make its delta more than 1% above the full accounting's at its
// answer (a tiny eps, where delta is the bulk of the composition), or make
// it fail, the search runs again with SampledGaussian's windows.
func SampledGaussianSigma(ctx context.Context, q float64, steps int, eps, delta float64, rel Relation) (float64, error) {
	if err := checkContext(ctx); err != nil {
		return 0, err
	}
	if !(q > 0 && q <= 1) {
		return 0, &ParamError{Param: "q", Value: q, Want: "a sampling probability in (0, 1] (q = 0 needs no noise)"}
	}
	if err := cmp.Or(checkCount("steps", steps), checkEpsDelta(eps, delta)); err != nil {
		return 0, err
	}
	if eps > MaxSampledEps {
		return 0, &ParamError{Param: "eps", Value: eps, Want: "at most " + ftoa(MaxSampledEps) +
			" for the sampled noise search (its cost grows like eps, a PLD's losses reaching about 2 eps; and e^eps overflows float64 beyond 709, where the guarantee bounds nothing)"}
	}
	if err := checkRelation(rel); err != nil {
		return 0, err
	}
	// g(sigma) = log(Delta(eps) / delta) of the PLD at sigma: <= 0 is safe.
	// A sigma too small for the grid limit counts as unsafe (+Inf); so
	// does any sigma where the steps alone are too many for it (the
	// window grows like sqrt(steps) at every sigma), which lastErr keeps
	// so that the search's failure can say so.
	var lastErr error
	var lastSigma float64
	logRatio := func(o sampledOpts) func(float64) float64 {
		return func(s float64) float64 {
			if ctx.Err() != nil {
				return math.Inf(1) // calibrateRoot returns ctx.Err()
			}
			p, err := sampledGaussian(q, s, steps, rel, o)
			lastErr, lastSigma = err, s
			if err != nil {
				return math.Inf(1)
			}
			d, err := p.Delta(eps)
			if err != nil {
				return math.Inf(1)
			}
			return logf(d) - logf(delta)
		}
	}
	if q*q*float64(steps) < 1e-300 {
		return 0, &ParamError{Param: "q", Value: q,
			Want: "q^2 x steps >= 1e-300 for the noise search (a smaller q needs almost no noise: bound a chosen sigma instead)"}
	}
	// A record takes part in some step with probability 1 - (1-q)^steps,
	// and the outputs on neighbouring data sets can differ only then (the
	// same coupling under both relations), so that probability bounds
	// delta(eps) at every eps >= 0 and every sigma. At or below delta no
	// noise is needed: the search would walk down to the smallest sigma
	// the grid allows, through ever costlier PLDs (minutes at q = 1e-7,
	// one step, delta = 1e-5), and return an arbitrary one.
	if used := -math.Expm1(float64(steps) * math.Log1p(-q)); used*(1+1e-9) <= delta {
		return 0, &ParamError{Param: "q", Value: q,
			Want: "a probability 1 - (1-q)^steps that a record is used (here " + ftoa(used) + ") above delta = " + ftoa(delta) +
				": at or below it the steps are (0, delta)-DP without noise"}
	}
	guess, err := sampledGuess(q, steps, eps, delta, rel)
	if err != nil {
		return 0, err
	}
	what := func() string {
		return "(eps, delta) = (" + ftoa(eps) + ", " + ftoa(delta) + ") with q = " + ftoa(q) + " over " + itoa(steps) + " steps"
	}
	// gridFailure replaces a failed search's error by the grid error of
	// its last evaluation, if that is why it failed: more noise did not
	// help, so delta and eps are not to blame.
	gridFailure := func(err error) error {
		if err != nil && ctx.Err() == nil && errors.Is(lastErr, ErrPLDGrid) {
			return &gridError{"no noise multiplier reaches " + what() + ": up to the largest tried, " + ftoa(lastSigma) +
				", the steps need a loss grid beyond the accountant's limit (2^24 points); use fewer steps"}
		}
		return err
	}
	// run is the search with its windows cut at a tilted tail mass of
	// fold (0: the per-step tail, as SampledGaussian cuts them). It
	// returns the fine bracket, and done when that is the answer (an
	// error, or no unsafe point found).
	run := func(fold float64) (fine root, done bool, err error) {
		// The search cuts a tail of searchTail delta instead of 1e-20: the
		// windows of its compositions shrink (most of all those of the tilted
		// masses, whose upper tails are long), and its delta is still a safe
		// bound, higher than the full one's by about 2 searchTail delta (the
		// cut mass counts as infinite loss), which moves its root by far less
		// than 1e-4.
		search := sampledOpts{budget: coarseBudget, tail: searchTail * delta, fold: fold, safeOnly: true, ctx: ctx}
		coarse, err := calibrateRoot(ctx, root{hi: guess, ghi: math.NaN()}, logRatio(search), 0.25, 1e-2, what)
		if err != nil || coarse.lo == 0 {
			return coarse, true, gridFailure(err)
		}
		// The coarse grid's answer is safe but up to a few percent high; redo
		// the last steps on the full grid. The full grid's value at the coarse
		// answer and the coarse bracket's slope predict the root r: try just
		// below it and, if that is unsafe, just above, which ends the search
		// when the prediction is within the tolerance (the usual case);
		// otherwise bracket from the points found by steps of about 1.5 times
		// the predicted distance.
		search.budget = gridBudget
		fineG := logRatio(search)
		start := root{hi: coarse.hi, ghi: fineG(coarse.hi)}
		width := 2e-2
		if sl := coarse.slope(); sl < 0 && start.ghi <= 0 {
			width = math.Min(math.Max(math.Expm1(1.5*start.ghi/sl), 2e-4), 2e-2)
			r := start.hi * math.Exp(-start.ghi/sl)
			for _, x := range []float64{r * (1 - 2e-5), r * (1 + 2e-5)} {
				if !(x < start.hi) {
					break
				}
				gx := fineG(x)
				if gx <= 0 {
					start.hi, start.ghi = x, gx
					break
				}
				start.lo, start.glo = x, gx
			}
		}
		if err := ctx.Err(); err != nil {
			return root{}, true, err
		}
		fine, err = calibrateRoot(ctx, start, fineG, width, 1e-4, what)
		if err != nil || fine.lo == 0 {
			return fine, true, gridFailure(err)
		}
		return fine, false, nil
	}
	// A fold of searchFold raises the search's delta by far less than
	// 1e-4 where delta is the tail of the composition, but at a tiny eps
	// (delta near the composition's total variation, its bulk) the
	// untilted fold can dominate it: at q = 0.01, T = 100, eps = 1e-10,
	// delta = 1e-5 the search's delta at sigma = 4000 was 20 times the
	// full one, and the search returned sigma = 5.1e6 for a least sigma
	// of about 4000; at q = 1, T = 10, eps = 1e-6 it failed. So a search
	// that fails (not for the grid or ctx), or whose delta at its answer
	// is more than 1% above the full accounting's, is run again with the
	// per-step fold.
	fold := math.Min(searchFold, searchFoldRel*delta)
	fine, done, err := run(fold)
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrPLDGrid) {
		fine, done, err = run(0)
	}
	if done {
		return fine.hi, err
	}
	// Confirm with the full accounting (SampledGaussian's), which is what
	// SampledGaussianDelta reports; if it disagrees (its rounding bound is
	// not the search's), search on from there with it.
	full := logRatio(sampledOpts{budget: gridBudget, safeOnly: true, ctx: ctx})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	gFull := full(fine.hi)
	if gFull <= 0 && fine.ghi-gFull > 1e-2 {
		again, done, err := run(0)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err != nil {
			return fine.hi, nil // fine.hi is safe by the full accounting
		}
		if done {
			return again.hi, nil
		}
		fine, gFull = again, full(again.hi)
	}
	if gFull <= 0 {
		return fine.hi, nil
	}
	r, err := calibrateRoot(ctx, root{hi: fine.hi * (1 + 1e-4), ghi: math.NaN()}, full, 2e-2, 1e-4, what)
	return r.hi, gridFailure(err)
}

// MaxSampledEps is the largest eps [SampledGaussianSigma] (and
// [AmplifiedBandedSigma]) calibrates for; a larger one is a *ParamError
// naming eps.
const MaxSampledEps = 1000

// searchTail is the tail mass, relative to delta, that the evaluations of
// SampledGaussianSigma's search cut, and the smaller of searchFold and
// searchFoldRel delta the tilted tail mass f at which they cut the tilted
// composition's window (see there). The folded tilted mass adds about f C
// to the safe delta, C the Chernoff bound of the tail at eps at the
// composition's tilt: about delta where the tilt is tuned (delta near
// 1e-5), up to e^((z - z5)^2 / 2) delta for a Gaussian tail z standard
// deviations out (z5 that of 1e-5): 140 delta at 1e-10, 6e12 delta at
// 1e-30, so that f C stays below 1e-6 delta from 1e-2 to 1e-30.
const (
	searchTail    = 1e-6
	searchFold    = 1e-9
	searchFoldRel = 1e-4
)

// sampledGuess returns the starting point of SampledGaussianSigma: the
// central-limit approximation mu = q sqrt(T (e^(1/sigma^2) - 1)) (Bu, Dong,
// Long & Su 2020) with mu from the exact Gaussian calibration. Under
// ReplaceOne (q < 1) a step is two events at noise multiplier sqrt2 sigma.
// It is only a guess; the search verifies every point it returns.
func sampledGuess(q float64, steps int, eps, delta float64, rel Relation) (float64, error) {
	g, err := Sigma(eps, delta, Exact)
	if err != nil {
		return 0, err
	}
	if q == 1 {
		return g * math.Sqrt(float64(steps)), nil
	}
	t, scale := float64(steps), 1.0
	if rel == ReplaceOne {
		t, scale = 2*t, math.Sqrt2
	}
	mu := 1 / g
	return 1 / math.Sqrt(math.Log1p(mu*mu/(q*q*t))) / scale, nil
}

// root is the state of calibrateRoot's search: the bracket [lo, hi] with
// g(lo) > 0 >= g(hi).
type root struct {
	lo, hi, glo, ghi float64
}

// slope returns the secant slope of g against log x across the bracket
// (negative for a decreasing g; NaN where it is not finite).
func (r root) slope() float64 {
	s := (r.ghi - r.glo) / (logf(r.hi) - logf(r.lo))
	if math.IsInf(s, 0) {
		return math.NaN()
	}
	return s
}

// calibrateRoot returns a bracket whose end hi has g(hi) <= 0 (safe) and
// whose end lo < hi has g(lo) > 0, with hi <= lo (1 + tol), for g
// decreasing in x. It brackets the root near start.hi, the guess, by steps
// of a factor 1 + width (up until safe, then down until unsafe), then
// narrows the bracket by the Illinois variant of regula falsi in log x
// (bisection where g is infinite), keeping the safe end hi. start.ghi is
// g(guess) if known, NaN if not; start.lo, if positive, is a point below
// the guess known unsafe, with g(start.lo) = start.glo. The result's lo is
// 0 where g(x) <= 0 down to x = 2^-1000 or after 10000 steps.
//
// A guess that is not finite and positive (eps and delta so small that the
// central-limit guess overflows) is an error: stepping from +Inf by a
// factor never ends. what names the target for the error messages. ctx is
// checked before every evaluation of g. A NaN from g counts as unsafe.
func calibrateRoot(ctx context.Context, start root, g0 func(float64) float64, width, tol float64, what func() string) (root, error) {
	guess, gGuess := start.hi, start.ghi
	if !(guess > 0) || math.IsInf(guess, 1) {
		return root{}, errPLD(what() + " needs a noise multiplier outside the float64 range (central-limit estimate " + ftoa(guess) + ")")
	}
	var cerr error
	g := func(x float64) float64 {
		if cerr = ctx.Err(); cerr != nil {
			return math.NaN()
		}
		if v := g0(x); !math.IsNaN(v) {
			return v
		}
		// A value that is not a number is not known safe: unsafe, so
		// the search steps past it (or fails) rather than stop on it.
		return math.Inf(1)
	}
	hi, ghi := guess, gGuess
	if math.IsNaN(ghi) {
		ghi = g(hi)
	}
	lo, glo := 0.0, math.NaN() // the last unsafe point, if any
	if ghi <= 0 && start.lo > 0 {
		lo, glo = start.lo, start.glo
	}
	for i := 0; ghi > 0 || cerr != nil; i++ {
		if cerr != nil {
			return root{}, cerr
		}
		if i == 60 || math.IsInf(hi, 1) {
			return root{}, errPLD("no noise multiplier up to " + ftoa(hi) + " reaches " + what() +
				": delta is below the least delta the accountant certifies (the tail mass it cuts plus its rounding bound, PLD.Floor), or eps is too small")
		}
		lo, glo = hi, ghi
		hi *= 1 + width
		ghi = g(hi)
	}
	if lo == 0 {
		lo = hi / (1 + width)
		glo = g(lo)
		for i := 0; glo <= 0; i++ {
			if lo < 0x1p-1000 || i == 10000 {
				// Safe (10000 steps span far more than the float64 range).
				return root{hi: lo, ghi: glo, glo: math.NaN()}, nil
			}
			hi, ghi = lo, glo
			lo /= 1 + width
			glo = g(lo)
		}
		if cerr != nil {
			return root{}, cerr
		}
	}
	side := 0 // which end the last step replaced: -1 lo, +1 hi
	// Illinois halves the g kept at an end; the bracket keeps the true ones.
	fl, fh := glo, ghi
	for hi > lo*(1+tol) {
		xl, xh := logf(lo), logf(hi)
		x := 0.5 * (xl + xh)
		if !math.IsInf(fl, 0) && !math.IsInf(fh, 0) && fl > fh {
			x = xh - fh*(xh-xl)/(fh-fl)
			// Keep the step away from the ends so the bracket shrinks.
			m := 0.01 * (xh - xl)
			x = math.Min(math.Max(x, xl+m), xh-m)
		}
		mid := math.Exp(x)
		if !(mid > lo && mid < hi) {
			break
		}
		gm := g(mid)
		if cerr != nil {
			return root{}, cerr
		}
		if gm <= 0 {
			hi, ghi, fh = mid, gm, gm
			if side == 1 {
				fl /= 2 // Illinois: halve the end kept twice
			}
			side = 1
		} else {
			lo, glo, fl = mid, gm, gm
			if side == -1 {
				fh /= 2
			}
			side = -1
		}
	}
	return root{lo: lo, hi: hi, glo: glo, ghi: ghi}, nil
}

// replaceOneSteps returns steps compositions of the replace-one pair of
// SampledGaussianPLD: the remove and add pairs at noise multiplier
// sqrt2 sigma, composed steps times each and then with each other, in one
// transform (pairPower): each direction's spectrum is raised to the steps-th
// power at the tilt of the whole composition, the two powers are
// multiplied and transformed back once. Composing each step's pair first
// and then the steps amplified the rounding of that first FFT steps-fold,
// and it dominated the width (q = 1e-4, sigma = 0.656, steps = 1000:
// eps(1e-10) in [0.0202, 0.921], where the discretisation alone gives
// [0.08054, 0.08054]); self-composing each direction and composing the two
// results by FFT, as it did next, left three transforms' rounding, about
// equal shares of a width of 4.7e-3 there; pairPower's one inverse
// transform, at the tilt of the exact moment generating function, gives
// 2.2e-4. The composition is the same, the factors taken in another
// order. Where a direction is a single point (a grid coarse
// against the losses), the directions are self-composed and composed by
// convolveBound. ar is SampledGaussianPLD(q, sqrt2 sigma, AddRemove, o)
// where the caller has it (refineInterval's last step), nil otherwise.
func replaceOneSteps(q, sigma float64, steps int, fold float64, o PLDOptions, ar *PLD) (*PLD, error) {
	var err error
	if ar == nil {
		if ar, err = SampledGaussianPLD(q, math.Sqrt2*sigma, AddRemove, o); err != nil {
			return nil, err
		}
	}
	one := &PLD{h: ar.h, tail: ar.tail}
	err = one.each(true, func(i int) (*lossDist, error) {
		a, b := ar.dist(i), ar.dist(i+1)
		if a == noOpt || b == noOpt {
			return noOpt, nil
		}
		fa, la := a.support()
		fb, lb := b.support()
		if fa < la && fb < lb {
			return pairPower(o.ctx, a, b, steps, ar.h, ar.tail, fold, i < 2)
		}
		// The tilt of the composition of steps copies of a composed with b.
		both, err := convolveAt(a, b, 0)
		if err != nil {
			return nil, err
		}
		guess := spreadGuess(both, steps, ar.tail)
		t := kTilt(both, steps, guess, logf(ar.tail))
		// Each direction composed steps times at that tilt (selfConvolve
		// takes a distribution's own tilt as the one to use).
		at, bt := *a, *b
		at.tau, bt.tau = t, t
		ak, err := selfConvolve(o.ctx, &at, steps, ar.h, ar.tail, fold, i < 2)
		if err != nil {
			return nil, err
		}
		bk, err := selfConvolve(o.ctx, &bt, steps, ar.h, ar.tail, fold, i < 2)
		if err != nil {
			return nil, err
		}
		return convolveBound(ak, bk, t, &tailSpans{lowB: steps * b.lo})
	})
	if err != nil {
		return nil, err
	}
	return one, nil
}

// Refinement of the automatic grid of a two-sided PLD: widthTarget is the
// predicted relative width at widthDelta the refinement aims for, and
// maxRefine bounds how much finer than autoOptions's it makes the interval.
const (
	widthTarget = 7e-4
	widthDelta  = 1e-10
	maxRefine   = 8
)

// refineInterval returns o with its interval refined until the predicted
// relative width of the two-sided eps at delta = 1e-10 of steps
// compositions is at most widthTarget (or the interval is maxRefine times
// finer), and the one-step PLD at that interval (under ReplaceOne with
// q < 1, whose steps replaceOneSteps composes from the two directions,
// the add/remove PLD at sqrt2 sigma that it composes them from). The
// prediction is a Chernoff estimate: with K(l) =
// log E_P[e^(l L)] of one step's pessimistic and optimistic distributions,
// eps is about min over l of (steps K_pes(l) + log(1/delta)) / l, and the
// sides drift apart by steps (K_pes(l) - K_opt(l)) / l at the minimiser.
// The optimistic side's error is first order in h where most of a step's
// mass lies within a few intervals (q sigma-dependent: the mass piled up
// near log(1-q) at small sigma and q), which no fixed rule of thumb for h
// catches. Under ReplaceOne with q < 1, K of a step is the sum of the
// remove and add pairs' at sqrt2 sigma, each taken from its own
// discretised masses: the step composed by an FFT (SampledGaussianPLD)
// carries that FFT's rounding noise, which swamps K at the l that matters
// and the difference of the two sides altogether (q = 1e-4, sigma = 0.5,
// 10^6 steps: a predicted width of 0, and 1.34e-3 measured).
// Any interval is safe on both sides: this only trades time for width.
func refineInterval(q, sigma float64, steps int, rel Relation, o PLDOptions) (PLDOptions, *PLD, error) {
	h0 := o.Interval
	pair := rel == ReplaceOne && q < 1
	for {
		var one *PLD
		var err error
		if pair {
			one, err = SampledGaussianPLD(q, math.Sqrt2*sigma, AddRemove, o)
		} else {
			one, err = SampledGaussianPLD(q, sigma, rel, o)
		}
		if err != nil {
			return o, nil, err
		}
		w := predictWidth(one, steps, pair)
		if !(w > widthTarget) || o.Interval <= h0/maxRefine || o.Interval <= 1e-8 {
			return o, one, nil
		}
		f := math.Max(0.5, math.Min(0.8, math.Pow(widthTarget/w, 0.3)))
		o.Interval = math.Max(math.Max(o.Interval*f, h0/maxRefine), 1e-8)
	}
}

// predictWidth returns refineInterval's prediction of the relative width
// of eps at widthDelta over steps compositions of one (of the composition
// of one's two directions if pair, one step's loss then the sum of a
// remove loss and an add loss, independent): per direction, the
// drift of the optimistic side's eps below the pessimistic one's at the
// Chernoff parameter of the pessimistic side, relative to an estimate e of
// eps; then the largest relative drift over the directions whose e is
// within predictSpread of the largest (EpsilonBounds reports the larger
// eps over the directions on each side; 0 if one has no optimistic side).
// e is the Chernoff estimate unless that is more than twice the larger of
// two estimates from below, mu-GDP at the composed variance (the bulk) and
// one step's eps at widthDelta / steps (a single rare step of large loss;
// for a pair, the larger of its directions', which the pair's is at least,
// a marginal of a pair being a post-processing of it),
// which it then is: where rare large losses dominate the moment generating
// function the Chernoff estimate is several times the true eps (q = 1e-4,
// sigma = 1, 10^5 steps: 0.88 against 0.2355), and dividing by it
// predicted a quarter of the width. Elsewhere it is within about 25% above
// the true eps, and the estimates from below up to 20% under it. For a
// pair whose bulk makes delta, the drift is the larger of the Chernoff
// one and a Gaussian one (see the body): on q in {1e-4, 1e-3, 1e-2, 0.1},
// sigma in {0.5, 1, 4, 20}, 10^6 steps, the prediction is then within 12%
// of the measured width at every point (docs/privacy.md).
func predictWidth(one *PLD, steps int, pair bool) float64 {
	kf, h := float64(steps), one.h
	cgf := func(ds []*lossDist, s float64) float64 {
		c := 0.0
		for i, d := range ds {
			first, last := d.support()
			v := s*float64(d.lo) + d.logMGF(s, first, last)
			if i == 0 {
				c = v
			} else {
				c += v
			}
		}
		return c
	}
	pes, opt := one.dirs(false), one.dirs(true)
	parts, optParts := make([][]*lossDist, len(pes)), make([][]*lossDist, len(pes))
	for i := range pes {
		parts[i], optParts[i] = pes[i:i+1], opt[i:i+1]
	}
	if pair {
		parts, optParts = [][]*lossDist{pes}, [][]*lossDist{opt}
	}
	var es, drifts []float64
	for i, ds := range parts {
		dos := optParts[i]
		if slices.Contains(dos, noOpt) {
			return 0
		}
		n := 0
		for _, d := range ds {
			n += len(d.mass)
		}
		s, e := scanMin(func(s float64) float64 { return h * (kf*cgf(ds, s) - logf(widthDelta)) / s }, h, mgfCost(n))
		if !(e > 0) || math.IsInf(e, 0) {
			continue
		}
		drift := math.Max(0, h*kf*(cgf(ds, s)-cgf(dos, s))/s)
		single, v := 0.0, 0.0   // one step's eps at widthDelta / steps; the composed variance over steps
		var dMean, dVar float64 // the pessimistic side's mean and variance above the optimistic's
		for k, d := range ds {
			m0, mean, vd := lossMoments(d, h)
			single = math.Max(single, newCurve(d, h, true).epsilon(widthDelta/kf))
			if m0 > 0 && vd > 0 {
				v += vd
			}
			if pair {
				_, meanO, vdO := lossMoments(dos[k], h)
				dMean, dVar = dMean+mean-meanO, dVar+vd-vdO
			}
		}
		low := single
		if v > 0 {
			low = math.Max(low, exactEpsilon(math.Sqrt(kf*v), widthDelta))
		}
		if low > 0 && 2*low < e {
			e = low
		}
		if eG := gaussEps(pair, kf*v); eG > 0 && eG >= single && !math.IsInf(eG, 0) {
			// Where the bulk makes delta (mu-GDP at the composed
			// variance kf v above one step's eps at widthDelta /
			// steps), the drift at the tilt that makes delta in that
			// Gaussian: its eps eG is at tilt eG / (kf v) - 1/2, where
			// the drift steps (K_pes - K_opt) / l is kf (dMean + l dVar
			// / 2) to second order in the cumulants. Where a step's
			// rare large losses dominate K beyond that tilt, the
			// Chernoff minimiser above lies below it and its drift
			// falls short: q = 1e-4, sigma = 0.5, 10^6 steps:
			// minimiser 6.7, -d log delta / d eps 13.8 at the eps of
			// 1e-10; 3.6e-4 predicted by the minimiser, 1.49e-3 by
			// this, 1.34e-3 measured. (Where one step makes delta, as
			// at 10^3 steps there, the Gaussian's eps is a tenth of
			// the true one and this would predict 50 times the width.)
			l := math.Max(0, eG/(kf*v)-0.5)
			if g := kf * (dMean + l*dVar/2) / eG; g*e > drift {
				drift = g * e
			}
		}
		es, drifts = append(es, e), append(drifts, drift)
	}
	top := 0.0
	for _, e := range es {
		top = math.Max(top, e)
	}
	w := 0.0
	for i, e := range es {
		if e >= (1-predictSpread)*top {
			w = math.Max(w, drifts[i]/e)
		}
	}
	return w
}

// gaussEps returns the eps at widthDelta of mu-GDP with mu^2 = variance
// for a pair (predictWidth's estimate of the bulk), 0 otherwise or for no
// variance.
func gaussEps(pair bool, variance float64) float64 {
	if !pair || !(variance > 0) {
		return 0
	}
	return exactEpsilon(math.Sqrt(variance), widthDelta)
}

// lossMoments returns the total mass of d and the mean and variance of
// its losses (offsets times h) under its normalised masses (0, 0 when it
// has no mass).
func lossMoments(d *lossDist, h float64) (m0, mean, variance float64) {
	var m1, m2 float64
	for j, x := range d.mass {
		l := float64(d.lo+j) * h
		m0 += x
		m1 += x * l
		m2 += x * l * l
	}
	if !(m0 > 0) {
		return m0, 0, 0
	}
	return m0, m1 / m0, m2/m0 - (m1/m0)*(m1/m0)
}

// predictSpread is the relative uncertainty of predictWidth's estimates of
// eps: a direction whose estimate is within it of the largest may be the
// one whose eps the safe side reports, so its drift counts.
const predictSpread = 0.2

// foldFloor is the least tilted tail mass at which SampledGaussian cuts the
// tilted composition's window (see selfConvolve): the folded mass adds to
// the FFT's error bound, which is about u or more in the same tilted norm
// anyway, and cutting there rather than at the per-step tail (1e-20 / T)
// keeps the window short enough for the full tilt where a step's rare
// large losses, tilted up, would stretch it (q = 1e-3, sigma = 1,
// T = 1000: width 1.2e-3 -> 2.8e-4, and a window a quarter shorter at
// q = 1e-4, sigma = 0.5, T = 10^6).
const foldFloor = 1e-16
