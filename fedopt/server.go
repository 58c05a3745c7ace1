package fedopt

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"gonum.org/v1/gonum/floats"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/secagg"
)

// Shape is the shape of a run: n learners, R rounds, tau local steps per
// round, models of dimension Dim.
type Shape struct {
	Learners, Rounds, Tau, Dim int
}

// Server is the server's role in the online federated optimiser: it holds
// the released model x^r and the noise mechanism, and in round r aggregates
// the learners' updates u_i (see [Learner.Update]), adds round r's noise
// vector w^r and releases
//
//	x^{r+1} = x^r - eta~ (s sum_i u_i + w^r),
//
// s = 1/(n tau) for Algorithm 1 (the mean clipped gradient g^r) and 1/n for
// the baselines (Independent, BaselineCorrelated). n is the planned number
// of learners whatever number of updates a round receives: a missing update
// counts as zero. Replacing one client's sample of learner i changes u_i by
// at most 2 tau B_g if u_i is aggregated (both versions have norm at most
// tau B_g, which [Server.CheckUpdate] enforces) and not at all otherwise, so
// the round's direction changes by at most 2 B_g / n whichever learners are
// present, and the calibrated privacy record stays true under dropouts
// (averaging over the n' present learners would raise it to 2 B_g / n'); the
// price is a shorter step. The server needs no data; evaluation is an
// observer of the released models (see experiment.Evaluator).
type Server struct {
	cfg   Config
	shape Shape
	noise mechanism.Mechanism
	round int
	x     []float64
	dir   []float64
	nz    []float64
	step  float64
	scale float64
	bound float64
	// With Config.Quantizer: the ring sum and one quantized update.
	ring, qu []uint64
	// With clipping: the server's copy of an accepted update scaled to
	// norm at most tau B_g exactly (fitNorm), and for each learner whether
	// the norm measured by the check of its update in this Release puts
	// it within tau B_g exactly (clearlyWithin: no exact pass).
	fit   []float64
	clear []bool
}

// NewServer returns a server at round 0 with model cfg.X0 (zero if nil).
// noise must be nil for NonPrivate and otherwise a fresh mechanism of
// shape.Rounds rounds and dimension shape.Dim; the server draws one vector
// per round from it. If cfg.Privacy is set, it must match the run: its
// learners, rounds, tau (where set) and noise std, and the factorization
// noise streams (its plan.OperatorDigest, see [Privacy]); and its fields
// must hold together: its release sensitivity at least that of the run's
// clip, learners and relation at its sensitivity of C, which must not be
// below that of the C the noise streams under the record's participation
// (factorize.StreamedSensitivity, computed again here), and its noise std
// giving its (eps, delta) at that sensitivity (accountant.Record.Verify).
// The server keeps its own copies of cfg.Privacy and cfg.Quantizer.
func NewServer(cfg Config, shape Shape, noise mechanism.Mechanism) (*Server, error) {
	return NewServerAt(cfg, shape, noise, 0, cfg.X0)
}

// NewServerAt returns a server that resumes at round `round` with released
// model x (x^round; nil means zero). noise must be at round `round` (for
// example made with mechanism.WithStartRound), so that the noise stream
// continues exactly as if uninterrupted. round must be the first round
// not yet released: neither can tell, and a released round's noise added
// again to other updates releases their difference without noise, which
// the privacy record does not cover (package fednet's state directory
// refuses to be rewound).
func NewServerAt(cfg Config, shape Shape, noise mechanism.Mechanism, round int, x []float64) (*Server, error) {
	// The server checks and keeps its own copies: before, it kept the
	// caller's pointers, and a record or quantizer changed after
	// NewServer changed the guarantee Record states, or the quantization
	// the record's term was checked against, with no check
	// (TestServerKeepsItsRecord, TestServerKeepsItsQuantizer).
	cfg = cfg.own()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, R, tau, dim := shape.Learners, shape.Rounds, shape.Tau, shape.Dim
	switch private := cfg.Algorithm.Private(); {
	case n < 1 || R < 1 || tau < 1 || dim < 1:
		return nil, fmt.Errorf("fedopt: run of shape n = %d, R = %d, tau = %d, d = %d, want all >= 1", n, R, tau, dim)
	case round < 0 || round > R:
		return nil, fmt.Errorf("fedopt: start round %d, want 0 <= round <= %d", round, R)
	case private && noise == nil:
		return nil, fmt.Errorf("fedopt: the %v algorithm needs a noise mechanism", cfg.Algorithm)
	case private && (noise.Dim() != dim || noise.Rounds() != R || noise.Round() != round):
		return nil, fmt.Errorf("fedopt: noise mechanism of dimension %d for %d rounds at round %d, want dimension %d for %d rounds at round %d", noise.Dim(), noise.Rounds(), noise.Round(), dim, R, round)
	case !private && noise != nil:
		return nil, fmt.Errorf("fedopt: the %v algorithm takes no noise mechanism", cfg.Algorithm)
	}
	switch pr := cfg.Privacy; {
	case pr == nil:
	case pr.Learners != n:
		return nil, fmt.Errorf("fedopt: privacy calibrated for %d learners, the data has %d", pr.Learners, n)
	case pr.Rounds != R:
		// C's sensitivity depends on R (the tree's grows with it): the
		// record's is that of its own rounds.
		return nil, fmt.Errorf("fedopt: privacy calibrated for %d rounds, the run has %d", pr.Rounds, R)
	case pr.Tau != 0 && pr.Tau != tau:
		return nil, fmt.Errorf("fedopt: privacy calibrated for tau = %d local steps, the run has tau = %d", pr.Tau, tau)
	case pr.AddRemove && cfg.Algorithm == Correlated && tau > 1:
		// Without the sample its learner's later local steps start
		// elsewhere: the update moves by up to (2 tau - 1) B_g, not
		// the tau B_g the add-remove sensitivity assumes.
		return nil, fmt.Errorf("fedopt: privacy calibrated for add-remove neighbours, which Algorithm 1 with tau = %d local steps does not satisfy (removing a sample moves the learner's later steps); calibrate for replace-one", tau)
	case noise.Std() != pr.NoiseStd:
		return nil, fmt.Errorf("fedopt: noise mechanism with standard deviation %v, calibrated %v", noise.Std(), pr.NoiseStd)
	default:
		// The record's fields must hold together for this run: its noise
		// must cover the release sensitivity of the run's clip, learners
		// and relation at C's sensitivity, at its (eps, delta).
		if err := checkRecord(pr, n, tau); err != nil {
			return nil, err
		}
		// The same std and rounds are not the same noise: the record's
		// sensitivity is that of its factorization's C.
		if err := checkFactorization(pr, noise); err != nil {
			return nil, err
		}
	}
	if q := cfg.Quantizer; q != nil {
		switch most, err := secagg.NewQuantizer(n, tau, cfg.Clip); {
		case err != nil:
			return nil, fmt.Errorf("fedopt: secure aggregation: %w", err)
		case q.ScaleBits > most.ScaleBits:
			return nil, fmt.Errorf("fedopt: quantizer with %d scale bits, want at most %d for n = %d, tau = %d, B_g = %v (the sum of the updates could exceed 2^53, where its read-back rounds, and wrap)", q.ScaleBits, most.ScaleBits, n, tau, cfg.Clip)
		case q.ScaleBits < secagg.MinScaleBits:
			return nil, fmt.Errorf("fedopt: quantizer with %d scale bits, want at least %d (a sum's read-back 2^53 2^-k would overflow)", q.ScaleBits, secagg.MinScaleBits)
		case cfg.Privacy != nil && cfg.Privacy.QuantizationTerm != q.Term(dim):
			return nil, fmt.Errorf("fedopt: privacy calibrated with quantization term %v, the quantizer's is %v for d = %d", cfg.Privacy.QuantizationTerm, q.Term(dim), dim)
		}
	}
	if err := cfg.CheckSteps(tau); err != nil {
		// Each factor is finite; their product is not: every model would
		// be Inf or NaN.
		return nil, err
	}
	if x != nil && len(x) != dim {
		return nil, fmt.Errorf("fedopt: initial model of length %d, want %d", len(x), dim)
	}
	if k := firstNonFinite(x); k >= 0 {
		return nil, fmt.Errorf("fedopt: initial model entry %d is %v, want a finite number", k, x[k])
	}
	s := &Server{
		cfg: cfg, shape: shape, noise: noise, round: round,
		x: make([]float64, dim), dir: make([]float64, dim),
		step: cfg.ServerStep(tau), bound: UpdateBound(cfg.Clip, tau),
	}
	copy(s.x, x)
	if noise != nil {
		s.nz = make([]float64, dim)
	}
	if cfg.Quantizer != nil {
		s.ring, s.qu = make([]uint64, dim), make([]uint64, dim)
	}
	if cfg.Clip > 0 {
		s.fit, s.clear = make([]float64, dim), make([]bool, n)
	}
	// Baselines: h^r = (1/n) sum_i sum_t; Algorithm 1: g^r = (1/(n tau)) sum_i sum_t.
	// n tau in float64: the int product wraps where it exceeds MaxInt (n =
	// 2^10, tau = 2^54 + 4 gave 4096; on 32-bit platforms n = 1000, tau =
	// 2^22), which multiplied the direction and its sensitivity. Below 2^53
	// both are exact, so the scale is the same bit for bit.
	s.scale = 1 / (float64(n) * float64(tau))
	if !cfg.Algorithm.LocalSteps() {
		s.scale = 1 / float64(n)
	}
	return s, nil
}

// Shape returns the run's shape.
func (s *Server) Shape() Shape { return s.shape }

// Config returns the run's configuration, with copies of its Privacy and
// Quantizer (a change of them changes nothing in the server).
func (s *Server) Config() Config { return s.cfg.own() }

// Round returns r, the next round to aggregate: x^r is the last released
// model. It is Rounds() when the run is over.
func (s *Server) Round() int { return s.round }

// Done reports whether all R rounds have been released.
func (s *Server) Done() bool { return s.round == s.shape.Rounds }

// Model returns the last released model x^r. The slice is the server's:
// it must not be modified and changes at the next [Server.Release].
func (s *Server) Model() []float64 { return s.x }

// Record returns the privacy record of the release x^r (the guarantee is
// for the whole sequence of released models); ok is false without
// Config.Privacy.
func (s *Server) Record() (rec accountant.Record, ok bool) {
	if s.cfg.Privacy == nil {
		return rec, false
	}
	return s.cfg.Privacy.RecordAt(s.round), true
}

// CheckUpdate returns an error if u cannot be a learner's update: wrong
// length, an entry that is NaN or infinite, or a norm above
// [UpdateBound] (tau B_g, which a learner that clips cannot exceed), the
// norm and the comparison in exact arithmetic: a float64 norm that rounds
// past the bound is decided exactly ([normWithin]), so that every update
// of exact norm at most tau B_g (every [Clip] output at tau = 1, whatever
// its dimension) is accepted.
func (s *Server) CheckUpdate(u []float64) error {
	_, _, err := s.checkUpdate(u)
	return err
}

// checkUpdate is [Server.CheckUpdate], which also returns the norm it
// measured and whether that is the plain float64 norm ([measureNorm]).
func (s *Server) checkUpdate(u []float64) (norm float64, plain bool, err error) {
	if len(u) != s.shape.Dim {
		return 0, false, fmt.Errorf("fedopt: update of dimension %d, want %d", len(u), s.shape.Dim)
	}
	if k := firstNonFinite(u); k >= 0 {
		return 0, false, fmt.Errorf("fedopt: update entry %d is %v, want a finite number", k, u[k])
	}
	if norm, plain = measureNorm(u); norm > s.bound && !normWithin(u, s.bound, 1) {
		// Beyond the bound in exact arithmetic. Before, the float64 norm
		// alone decided: it is within a relative (1.01 d + 2) 2^-53 of the
		// exact one, so an update of exact norm tau B_g could be refused
		// from d of about 10^7 in the worst case (a vector of d = 6 10^7
		// that Clip leaves as it is, built to round up, was refused), and
		// from d = 4 within an ulp of the bound.
		tb := fmt.Sprint(float64(s.shape.Tau) * s.cfg.Clip)
		if s.bound == math.MaxFloat64 {
			tb = fmt.Sprintf("%d x %v (beyond float64: only a norm that overflows exceeds it)", s.shape.Tau, s.cfg.Clip)
		}
		return 0, false, fmt.Errorf("fedopt: update of norm %v, want at most tau B_g = %s", norm, tb)
	}
	return norm, plain, nil
}

// updateNorm returns the Euclidean norm of the finite vector u as
// [Server.CheckUpdate] measures it, the norm that [UpdateBound] bounds.
func updateNorm(u []float64) float64 {
	norm, _ := measureNorm(u)
	return norm
}

// measureNorm is [updateNorm], which also reports whether the norm is the
// plain fl(sqrt(ss)) of the recursive sum ss of the rounded squares, with
// ss in [2^-968, MaxFloat64] (then [clearlyWithin] can use it), rather
// than gonum's scaled norm.
func measureNorm(u []float64) (norm float64, plain bool) {
	ss := 0.0
	for _, v := range u {
		ss += v * v
	}
	if math.IsInf(ss, 1) || ss < 0x1p-968 {
		// Finite entries whose squares overflow (a clipping bound near
		// 1e300), or whose squares underflow to subnormals or to zero (a
		// clipping bound below about 1e-150, where entries of 1e-163
		// made the sum of squares 0 and any number of them passed): the
		// scaled norm neither overflows nor underflows, and is what the
		// bound is for (as in [Clip]).
		return floats.Norm(u, 2), false
	}
	return math.Sqrt(ss), true
}

// Release aggregates round r's updates, updates[i] being learner i's (nil
// if learner i sent none), adds round r's noise and releases x^{r+1}. The
// updates are summed in learner order, so the result does not depend on
// the order in which they arrived. Every update is checked first
// ([Server.CheckUpdate]), and so is the new model (every entry finite); on
// any error the model and the round do not change. If the error came after
// the noise was drawn, that noise was never released, but the mechanism
// is at round r+1: the server then refuses every later release (round r
// must add row r of the stream, never the next one); resume with
// [NewServerAt] and a mechanism at round r. With Config.Quantizer the checked updates are quantized
// ([QuantizeUpdate]), summed in Z_{2^64} and the sum dequantized, exactly as
// [Server.ReleaseRingSum] does with a sum computed elsewhere.
//
// With clipping, an accepted update whose norm exceeds tau B_g in exact
// arithmetic (it is within [UpdateBound], which allows a relative 1e-9 for
// rounding) enters the aggregate scaled down, in the server's own copy, to
// a vector whose exact norm is at most tau B_g (checked in exact
// arithmetic after the rounding of the scaling): the norm the sensitivity
// analysis and the calibration use, whatever a learner sends. An update of
// norm at most tau B_g enters as it is, bit for bit; the slices in updates
// are never written. An update whose float64 norm (the one the check
// measured) is below tau B_g by more than that norm's rigorous rounding
// error bound ([clearlyWithin]) needs no exact pass. Where n tau B_g
// exceeds MaxFloat64, a float64 sum of the updates that overflows is
// taken again with every update scaled by a power of two, so that
// whether a round is released never turns on whether the honest updates
// sum past MaxFloat64.
func (s *Server) Release(updates [][]float64) error {
	if err := s.checkRound(); err != nil {
		return err
	}
	if len(updates) != s.shape.Learners {
		return fmt.Errorf("fedopt: %d update slots, want one per learner (%d)", len(updates), s.shape.Learners)
	}
	for i, u := range updates {
		if u == nil {
			continue
		}
		norm, plain, err := s.checkUpdate(u)
		if err != nil {
			return fmt.Errorf("learner %d, round %d: %w", i, s.round, err)
		}
		if s.clear != nil {
			s.clear[i] = clearlyWithin(norm, plain, len(u), s.cfg.Clip, s.shape.Tau)
		}
	}
	if q := s.cfg.Quantizer; q != nil {
		clear(s.ring)
		for i, u := range updates {
			if u == nil {
				continue
			}
			if err := quantizeUpdate(*q, s.qu, u, s.cfg.Clip, s.shape.Tau, s.fit); err != nil {
				return fmt.Errorf("learner %d, round %d: %w", i, s.round, err)
			}
			secagg.AddRing(s.ring, s.qu)
		}
		q.Dequantize(s.dir, s.ring)
		return s.release()
	}
	if !s.sumUpdates(updates, 0) {
		// The float64 sum overflowed although every update is finite and
		// the mean is within B_g (n tau B_g beyond MaxFloat64): sum again
		// with every update scaled by 2^-e, 2^e > 2n, which no sum of n
		// entries up to MaxFloat64 overflows, and scale back in the
		// division. Refusing the round instead made its release depend
		// on one sample without noise (the sum of four updates of 2^1022
		// overflows, of three does not): TestReleaseSumOverflowNotDataDependent.
		// Where the plain sum is finite nothing changes, bit for bit.
		e := bits.Len(uint(s.shape.Learners)) + 1
		s.sumUpdates(updates, e)
		floats.Scale(math.Ldexp(s.scale, e), s.dir)
		return s.addNoise()
	}
	return s.release()
}

// sumUpdates writes into s.dir the sum of the checked updates, learner
// i's as fitNorm holds it (s.clear from the check), each entry multiplied
// by 2^-e first (e = 0: as they are), in learner order. It reports
// whether every entry of the sum is finite.
func (s *Server) sumUpdates(updates [][]float64, e int) bool {
	clear(s.dir)
	f := math.Ldexp(1, -e)
	for i, u := range updates {
		if u != nil && s.fit != nil && !s.clear[i] && fitNorm(s.fit, u, s.cfg.Clip, s.shape.Tau) {
			u = s.fit // never the learner's buffer
		}
		if e == 0 {
			for k, v := range u {
				s.dir[k] += v
			}
			continue
		}
		for k, v := range u {
			s.dir[k] += v * f
		}
	}
	return firstNonFinite(s.dir) < 0
}

// ReleaseRingSum is [Server.Release] from the ring sum of the present
// learners' quantized updates ([QuantizeUpdate]) computed elsewhere (the
// unmasked sum of secure aggregation): it dequantizes sum and releases
// x^{r+1} exactly as Release would from those updates, bit for bit. It needs
// Config.Quantizer. present is the number of updates in the sum (0 <=
// present <= n): an entry beyond what present updates of norm at most
// tau B_g can give (a malicious learner's input, or a forged share, in the
// sum) is folded back into that range along the ring (foldRing), not
// refused, so that the release never depends on the honest updates more
// than the calibration allows.
func (s *Server) ReleaseRingSum(sum []uint64, present int) error {
	if err := s.checkRound(); err != nil {
		return err
	}
	q := s.cfg.Quantizer
	switch {
	case q == nil:
		return fmt.Errorf("fedopt: a ring sum needs Config.Quantizer (secure aggregation)")
	case len(sum) != s.shape.Dim:
		return fmt.Errorf("fedopt: ring sum of dimension %d, want %d", len(sum), s.shape.Dim)
	case present < 0 || present > s.shape.Learners:
		return fmt.Errorf("fedopt: ring sum of %d updates, want 0 to %d", present, s.shape.Learners)
	}
	// One update's entry is at most bound 2^k + 1 in magnitude (Quantize's
	// range plus the rounding); and no entry beyond 2^53 is read back, so
	// that the read-back is exact (secagg.Quantizer.Dequantize). The fold
	// is in integers: float64(int64(v)) would round 2^53 + 1 down to 2^53.
	most := int64(secagg.MaxExactSum)
	if m := float64(present) * (math.Ldexp(s.bound, q.ScaleBits) + 1); m < secagg.MaxExactSum {
		most = int64(m)
	}
	for k, v := range sum {
		// An entry beyond what present updates can give holds a malicious
		// learner's input or a forged share: it is folded into [-most,
		// most] (foldRing), not refused, and the folded integer is read
		// back exactly.
		s.dir[k] = math.Ldexp(float64(foldRing(int64(v), most)), -q.ScaleBits)
	}
	return s.release()
}

// foldRing maps an entry v of a ring sum (Z_{2^64}, read as a signed
// integer) to an integer in [-most, most], 0 <= most <= 2^53: v itself when
// |v| <= most, the range of an honest sum; beyond it, down along the rest
// of the ring from most to -most with slope s = 2 most / (2^64 - 2 most)
// (at most 2^-9), rounded down in exact integer arithmetic:
//
//	v > most:   most - floor((v - most) s),
//	v < -most: -most + floor((-most - v) s).
//
// Since s <= 1, one step along the ring (v to v + 1, 2^63 - 1 to -2^63
// included: 1 and 0) moves the result by 0 or 1, so for any two entries
// |foldRing(a) - foldRing(b)| is at most their circular distance on the
// ring, at most |S - S'| when a = S + m and b = S' + m for honest sums S,
// S' and any input m of a malicious learner: an entry moved to the edge of
// the range, or next to the wrap point, still changes by at most as much
// as the honest sum does, so neither whether the round is released nor
// what is released depends on the honest updates more than the
// calibration allows (refusing such an entry, as ReleaseRingSum did, told
// the learner, free of noise, on which side of a threshold of its choice
// the honest sum lay). The result is an integer of magnitude at most 2^53,
// whose read-back is exact (secagg.Quantizer.Dequantize).
func foldRing(v, most int64) int64 {
	if v >= -most && v <= most {
		return v
	}
	if most <= 0 {
		return 0
	}
	var t uint64 // the distance past the range's edge, 1 to 2^63 - most
	if v > most {
		t = uint64(v - most)
	} else {
		t = uint64(-most) - uint64(v)
	}
	// floor(t 2 most / (2^64 - 2 most)): the product is below 2^63 2^54, so
	// its high word is below 2^53 < 2^64 - 2 most, Div64's condition.
	hi, lo := bits.Mul64(t, uint64(2*most))
	f, _ := bits.Div64(hi, lo, -uint64(2*most))
	if v > most {
		return most - int64(f)
	}
	return -most + int64(f)
}

// QuantizeUpdate quantizes a learner's update u into dst with q
// (secagg.Quantizer.Quantize), with the bound [UpdateBound] of clip and
// tau: what the server does with every update in [Server.Release], and what
// a learner of secure aggregation does with its own before it masks it.
// An update whose norm is within [UpdateBound] but above tau clip in exact
// arithmetic is quantized scaled down to exact norm at most tau clip, as
// [Server.Release] sums it (u itself is never written); one of norm at
// most tau clip is quantized as it is. An update whose norm exceeds
// [UpdateBound], or an entry out of range, is an error and nothing must be
// sent.
func QuantizeUpdate(q secagg.Quantizer, dst []uint64, u []float64, clip float64, tau int) error {
	return quantizeUpdate(q, dst, u, clip, tau, nil)
}

// quantizeUpdate is [QuantizeUpdate] that scales into buf (allocated if
// nil), never into u, which is the caller's.
func quantizeUpdate(q secagg.Quantizer, dst []uint64, u []float64, clip float64, tau int, buf []float64) error {
	if clip > 0 && !math.IsInf(clip, 1) && len(dst) == len(u) && firstNonFinite(u) < 0 {
		// The server of secure aggregation sees only the sum: an update
		// beyond the margin is refused here, not quantized entry by entry
		// (each entry within tau clip, the norm up to sqrt(d) tau clip).
		// An entry out of range is named first, as Quantize names it.
		nu, plain := measureNorm(u)
		if most := UpdateBound(clip, tau); nu > most && !normWithin(u, most, 1) {
			if err := q.Quantize(dst, u, most); err != nil {
				return fmt.Errorf("fedopt: update: %s", strings.TrimPrefix(err.Error(), "secagg: "))
			}
			return fmt.Errorf("fedopt: update: norm %v exceeds tau B_g = %d x %v (at most %v with rounding): a clipped update never does", nu, tau, clip, most)
		}
		if !clearlyWithin(nu, plain, len(u), clip, tau) && !normWithin(u, clip, tau) {
			if buf == nil {
				buf = make([]float64, len(u))
			}
			scaleInto(buf, u, clip, tau)
			u = buf
		}
	}
	if err := q.Quantize(dst, u, UpdateBound(clip, tau)); err != nil {
		return fmt.Errorf("fedopt: update: %s", strings.TrimPrefix(err.Error(), "secagg: "))
	}
	return nil
}

// checkRound returns an error if every round is released, or unless the
// noise mechanism is at the server's round: its next row must be the one
// of the round to release. It is not after a release that drew its noise
// and failed (or when the mechanism was drawn from elsewhere).
func (s *Server) checkRound() error {
	if s.Done() {
		return fmt.Errorf("fedopt: all %d rounds are released", s.shape.Rounds)
	}
	if s.noise == nil || s.noise.Round() == s.round {
		return nil
	}
	return fmt.Errorf("fedopt: the noise mechanism is at round %d, the server at round %d (a failed release drew round %d's noise, or the mechanism was drawn from elsewhere): round %d must add row %d of the noise stream; resume with NewServerAt and a mechanism at round %d",
		s.noise.Round(), s.round, s.round, s.round, s.round, s.round)
}

// release scales the aggregate in s.dir, adds the round's noise and
// releases x^{r+1}.
func (s *Server) release() error {
	floats.Scale(s.scale, s.dir)
	return s.addNoise()
}

// addNoise adds the round's noise to the scaled direction in s.dir and
// releases x^{r+1}.
func (s *Server) addNoise() error {
	if s.noise != nil {
		if err := s.noise.Next(s.nz); err != nil {
			return fmt.Errorf("fedopt: noise for round %d: %w", s.round, err)
		}
		floats.Add(s.dir, s.nz)
	}
	for k, v := range s.x {
		if y := v - s.step*s.dir[k]; math.IsNaN(y) || math.IsInf(y, 0) {
			// The updates are finite but their mean, or the step along it
			// with the noise, overflows: no clipping (NonPrivate, Clip 0),
			// or a clipping bound or noise near the top of the float64
			// range. (A sum that overflows where the mean does not is
			// summed again scaled, in Release.)
			return fmt.Errorf("fedopt: round %d would release a model whose entry %d is %v; nothing released", s.round, k, y)
		}
	}
	for k := range s.x {
		s.x[k] -= s.step * s.dir[k]
	}
	s.round++
	return nil
}
