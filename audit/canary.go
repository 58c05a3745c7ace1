package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"gonum.org/v1/gonum/mat"
)

// analyticTolerance is the relative rounding allowed between the design's
// analytic mu and the claimed mu where the declared sensitivity is attained
// (a few 1e-16 seen; the tree's precision matrix comes from a Cholesky
// inverse).
const analyticTolerance = 1e-9

// CanaryOptions configure [Canary].
type CanaryOptions struct {
	// Canaries is m, the number of canary clients. 0 chooses the number
	// the statistics need for a mu-hat interval within 10% of the analytic
	// mu at Level (m = 400 z^2 (1 + mu^2 / 8) / mu^2, mu = 2 B_g sens(C) /
	// (n V)), at least 1000 and at
	// most the number of distinct slots the participation allows (n R for
	// single participation, n b for a period or separation b). A number
	// outside 3 to that many slots is a *ParamError naming "canaries".
	Canaries int
	// Level is the confidence level of the mu-hat interval, in [0.5, 1);
	// 0 means 0.99.
	Level float64
	// Confidence is the confidence of the one-run epsilon lower bound, in
	// [0.5, 1); 0 means 0.95.
	Confidence float64
	// Network runs the federation over gRPC instead of in one process: a
	// package fednet server on a loopback port of 127.0.0.1 (insecure
	// credentials, a temporary state directory removed afterwards, the
	// same noise mechanism and key) and n fednet.RunLearner goroutines
	// with the audit's adversarial model (fednet.LearnerOptions.Model).
	// The followers' anchors and the observers' models are the released
	// models read back from the server's state directory
	// (fednet.ReadRound). The canaries, the noise and the scoring are
	// those of the in-process run, which releases the same models bit for
	// bit when the transport is correct.
	Network bool
}

// Observer is what one observer of the run concludes. Its JSON writes a
// non-finite statistic (an eps of +Inf where mu is too large for the
// Gaussian curve's evaluation, the ends of an infinite mu-hat's interval)
// as the string "+Inf", "-Inf" or "NaN", as [MuEstimate]'s does.
type Observer struct {
	// Threat describes what the observer sees and knows.
	Threat string `json:"threat"`
	// MuAnalytic is the analytic mu of what this observer sees, for the
	// most exposed canary of the design: 2 B_g sqrt(1_S^T P 1_S) / (n V)
	// for all iterates (the claim's mu under exact calibration when a
	// canary sits where the sensitivity is attained), 2 B_g |S| / (n V
	// ||B[R-1, :]||) for the final model. EpsAnalytic is its eps at the
	// run's delta.
	MuAnalytic  float64 `json:"mu_analytic"`
	EpsAnalytic float64 `json:"eps_analytic"`
	// Mu is the estimate, EpsOfMu its eps at delta (and of the interval's
	// ends: EpsOfMuLo, EpsOfMuHi).
	Mu        MuEstimate `json:"mu"`
	EpsOfMu   float64    `json:"eps_of_mu_hat"`
	EpsOfMuLo float64    `json:"eps_of_mu_lo"`
	EpsOfMuHi float64    `json:"eps_of_mu_hi"`
	// Contains reports that the interval holds MuAnalytic: the run is
	// consistent with the analytic Gaussian model.
	Contains bool `json:"interval_contains_analytic"`
	// Bound is the rigorous one-run lower bound on eps.
	Bound Bound `json:"one_run"`
	// Scores are the canaries' scores, In whether each was included, and
	// Weights the ratio of each canary's analytic mu to MuAnalytic.
	Scores  []float64 `json:"scores"`
	In      []bool    `json:"in"`
	Weights []float64 `json:"weights"`
}

// add records a canary's score, its analytic mu (the weight, before
// Canary divides the weights by the largest, MuAnalytic) and whether it was
// included.
func (o *Observer) add(score, mu float64, in bool) {
	o.Scores, o.Weights, o.In = append(o.Scores, score), append(o.Weights, mu), append(o.In, in)
	o.MuAnalytic = math.Max(o.MuAnalytic, mu)
}

// CanaryReport is the outcome of [Canary].
type CanaryReport struct {
	// AuditedPlan describes the audited plan and its calibration (Dim is
	// the audit model's, max(d, m)).
	AuditedPlan
	// Sensitivity is the calibrated release's L2 sensitivity.
	Sensitivity float64 `json:"sensitivity"`
	// MuClaimed is sensitivity / noise std: the claimed mu-GDP of the
	// whole release (above the analytic mu where the declared sensitivity
	// is an upper bound, for example n times above with the paper's
	// calibration).
	MuClaimed float64 `json:"mu_claimed"`
	// Canaries is m.
	Canaries int `json:"canaries"`
	// Network reports a run over gRPC (CanaryOptions.Network).
	Network bool `json:"network"`
	// AllIterates observes x^0, ..., x^R; FinalModel only x^R.
	AllIterates Observer `json:"all_iterates"`
	FinalModel  Observer `json:"final_model"`
	// Violation: an interval lies wholly above the claimed mu, or a
	// one-run bound exceeds the claimed eps, or the all-iterates analytic
	// mu exceeds the claimed mu by more than a relative 1e-9 (the declared
	// sensitivity is below that of a canary's participation pattern; no
	// statistics). It combines the four statistical tests (two observers)
	// without correction: for the claimed Gaussian mechanism a false
	// violation has probability at most 2 (1 - Level) / 2 +
	// 2 (1 - Confidence) by the union bound (docs/audit.md).
	Violation bool `json:"violation"`
	// Seconds is the audit's wall-clock time.
	Seconds float64 `json:"seconds"`
}

// Canary runs the canary audit of the setup's plan: one run of the real
// roles (fedopt.Simulate with fedopt.Learner, fedopt.Server and the
// plan's mechanism) with m canary clients. Canary j has a learner-round
// slot (learner i_j, the rounds S_j its sample takes part in under the
// participation), a coordinate k_j (the model has max(d, m) coordinates,
// so the canaries' directions are orthogonal and do not interfere) and a
// random sign; with probability 1/2 it is included (its push sample has
// gradient +B_g along its direction) and otherwise its replace-one
// neighbour, the mirrored canary, is (gradient -B_g); the learner's other
// samples in those rounds follow the trajectory, so every canary moves
// its rows of G by the full 2 B_g / n of the sensitivity analysis. All
// other samples have zero gradient.
//
// The observer sees the released models: Y = (x^r - x^{r+1}) / eta~ =
// G + W with W the mechanism's noise, whose covariance per coordinate is
// V^2 Sigma (Sigma = M M^T, M = A^{-1} B). Canary j's score is the
// whitened matched filter T_j = sign_j <P y_{k_j}, 1_{S_j}> / (V sqrt(1_S^T P 1_S)),
// P = Sigma^{-1} (C^T C for square C), distributed N(+-mu_j / 2, 1) for a
// correct run, mu_j = 2 B_g sqrt(1_S^T P 1_S) / (n V). The final-model
// observer scores y = (x^0 - x^R) / eta~ = sum_r Y_r, whose noise has std
// V ||B[R-1, :]|| per coordinate.
//
// Canary checks ctx every round, every 1024 local steps of a learner and
// between its dense products; once ctx is done it returns ctx.Err() and no
// report.
func Canary(ctx context.Context, s *Setup, opt CanaryOptions) (*CanaryReport, error) {
	return canary(ctx, s, opt, nil)
}

// DefaultCanaries returns the number of canaries [Canary] plants when
// CanaryOptions.Canaries is 0, for an interval of mu-hat at level (0
// means 0.99): m = 400 z^2 (1 + mu^2 / 8) / mu^2 with Phi(z) = (1 +
// level) / 2 and mu = 2 B_g sens(C) / (n V), at least 1000 and at most the
// distinct slots the participation allows. The canary audit's model has
// max(d, m) coordinates, so its memory grows with m (dpaudit checks it).
func DefaultCanaries(s *Setup, level float64) (int, error) {
	level = cmp.Or(level, 0.99)
	if !(level >= 0.5 && level < 1) {
		return 0, fmt.Errorf("audit: level %v, want a number in [0.5, 1), as Canary takes", level)
	}
	return defaultCanaries(s, level, s.Plan.Learners*len(canarySlots(s.Plan.Participation, s.Plan.Rounds))), nil
}

// defaultCanaries is DefaultCanaries for a valid level and the plan's
// number of slots.
func defaultCanaries(s *Setup, level float64, slots int) int {
	p, priv := s.Plan, s.Privacy
	// The mu the canaries reach: the release's with the exact
	// sensitivity 2 B_g sens(C) / n (the claim's under exact
	// calibration, n times below it under the paper's).
	mu := 2 * p.Clip * priv.UnitSensitivity.Value / float64(p.Learners) / priv.NoiseStd
	z := levelZ(level)
	m := math.Ceil(400 * z * z * (1 + mu*mu/8) / (mu * mu))
	if math.IsInf(mu*mu, 1) {
		// mu^2 overflows (eps near 1e308): Inf / Inf was NaN, which
		// converted to a negative count. The limit is 50 z^2.
		m = math.Ceil(400 * z * z / 8)
	}
	return int(min(max(m, 1000), float64(slots)))
}

// canarySlots returns the distinct round sets a canary can own under the
// participation: every round (single), or every residue class c < b with
// its rounds c, c + b, ... (at most k of them for min-separation).
func canarySlots(p factorize.Participation, R int) [][]int {
	all := patterns(p, R)
	if p.Kind == factorize.KindMinSep {
		return all[:min(p.B, len(all))]
	}
	return all
}

func canary(ctx context.Context, s *Setup, opt CanaryOptions, h *hooks) (*CanaryReport, error) {
	start := time.Now()
	p := s.Plan
	priv := s.Privacy
	opt.Level, opt.Confidence = cmp.Or(opt.Level, 0.99), cmp.Or(opt.Confidence, 0.95)
	if !(opt.Level >= 0.5 && opt.Level < 1) || !(opt.Confidence >= 0.5 && opt.Confidence < 1) {
		// Below 1/2 a correct mechanism fails the audit by chance more
		// often than not.
		return nil, fmt.Errorf("audit: level %v and confidence %v, want both in [0.5, 1)", opt.Level, opt.Confidence)
	}
	n, R, tau := p.Learners, p.Rounds, p.Tau
	muClaimed := priv.Sensitivity / priv.NoiseStd
	sets := canarySlots(p.Participation, R)
	slots := n * len(sets)
	m := cmp.Or(opt.Canaries, defaultCanaries(s, opt.Level, slots))
	if m < 3 || m > slots {
		return nil, &ParamError{Param: "canaries", Value: m, Want: fmt.Sprintf("3 to %d (the distinct learner-round slots of the plan)", slots)}
	}
	d := max(p.Dim, m)
	shape := fedopt.Shape{Learners: n, Rounds: R, Tau: tau, Dim: d}
	cfg := p.Config(priv)

	rng := rand.New(rand.NewPCG(p.Seed, 0x13198a2e03707344))
	perm := rng.Perm(slots)
	coords := rng.Perm(d)
	data := &canaryData{slot: slices.Repeat([]int32{-1}, n*R), learners: n, cans: make([]plantedCanary, m), steps: h.stepCounter()}
	for j := range data.cans {
		sl := perm[j] // learner sl % n, round set sl / n
		c := plantedCanary{rounds: sets[sl/n], coord: coords[j], dir: 1, in: rng.IntN(2) == 1}
		if rng.IntN(2) == 1 {
			c.dir = -1
		}
		data.cans[j] = c
		for _, r := range c.rounds {
			data.slot[r*n+sl%n] = int32(j)
		}
	}

	// One run of the real roles, in process or over gRPC.
	key := streamKey(purposeCanaryNoise, p.Seed) // see seeds.go
	noise := func(key [32]byte) (mechanism.Mechanism, error) {
		pd := p
		pd.Dim = d
		return newMechanism(&Setup{Plan: pd, Factorization: s.Factorization, Privacy: priv}, h, priv.NoiseStd, key)
	}
	model := adversary{mag: 2 * p.Clip}
	y := mat.NewDense(R, d, nil)
	var prev []float64
	step := cfg.ServerStep(tau)
	// observe takes the released model x^r, in order: row r - 1 of Y.
	observe := func(r int, x []float64) {
		if h != nil && h.models != nil {
			*h.models = append(*h.models, slices.Clone(x))
		}
		if r > 0 {
			row := y.RawRowView(r - 1)
			for k := range row {
				row[k] = (prev[k] - x[k]) / step
			}
			if s.Progress != nil {
				s.Progress(r, R)
			}
		}
		prev = slices.Clone(x)
	}
	if opt.Network {
		if err := canaryNetwork(ctx, &netRun{cfg: cfg, shape: shape, model: model, noise: noise, key: key}, data, observe); err != nil {
			return nil, err
		}
	} else {
		m0, err := noise(key)
		if err != nil {
			return nil, err
		}
		srv, err := fedopt.NewServer(cfg, shape, m0)
		if err != nil {
			return nil, err
		}
		learners := make([]*fedopt.Learner, n)
		for i := range learners {
			if learners[i], err = fedopt.NewLearner(model, canaryStream{data, i}, cfg, tau, d); err != nil {
				return nil, err
			}
		}
		err = fedopt.Simulate(ctx, srv, learners, fedopt.SimOptions{Observe: func(r int, x []float64) error {
			data.x = x // the followers' anchors: the released model of the round
			observe(r, x)
			return nil
		}})
		if err != nil {
			return nil, err
		}
	}

	// The observers.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wh, err := newWhitener(s.Factorization, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var py mat.Dense
	py.Mul(wh.prec, y)
	V := priv.NoiseStd
	unit := 2 * p.Clip / float64(n) / V // mu of a unit-norm signal vector
	all := Observer{Threat: "sees x^0..x^R; knows the algorithm, factorization, steps, noise std, every non-canary sample, each canary's slot, coordinate and sign; not the inclusion bits or the noise; chooses the followers adaptively from the released models"}
	fin := Observer{Threat: "as all_iterates, but sees only the final model x^R (and x^0)"}
	finalNoise := V * wh.lastB
	for _, c := range data.cans {
		q := 0.0
		for _, a := range c.rounds {
			for _, b := range c.rounds {
				q += wh.prec.At(a, b)
			}
		}
		t, f := 0.0, 0.0
		for _, r := range c.rounds {
			t += py.At(r, c.coord)
		}
		for r := 0; r < R; r++ {
			f += y.At(r, c.coord)
		}
		all.add(c.dir*t/(V*math.Sqrt(q)), unit*math.Sqrt(q), c.in)
		fin.add(c.dir*f/finalNoise, 2*p.Clip*float64(len(c.rounds))/float64(n)/finalNoise, c.in)
	}
	rep := &CanaryReport{
		AuditedPlan: auditedPlan(s, n, R, tau, d, priv.Eps, priv.Delta, V),
		Sensitivity: priv.Sensitivity, MuClaimed: muClaimed, Canaries: m, Network: opt.Network,
		// A canary whose rounds the participation allows reaches more
		// than the claim: the declared sensitivity is below that of one
		// of its participation patterns, whatever the scores say.
		Violation: all.MuAnalytic > muClaimed*(1+analyticTolerance),
	}
	for _, o := range []*Observer{&all, &fin} {
		for j := range o.Weights {
			o.Weights[j] /= o.MuAnalytic
		}
		if o.Mu, err = estimateMu(o.Scores, o.In, o.Weights, opt.Level); err != nil {
			return nil, err
		}
		o.EpsAnalytic = epsOfMu(o.MuAnalytic, priv.Delta)
		o.EpsOfMu = epsOfMu(o.Mu.Mu, priv.Delta)
		o.EpsOfMuLo = epsOfMu(o.Mu.Lo, priv.Delta)
		o.EpsOfMuHi = epsOfMu(o.Mu.Hi, priv.Delta)
		o.Contains = o.Mu.Lo <= o.MuAnalytic && o.MuAnalytic <= o.Mu.Hi
		ranked := make([]float64, len(o.Scores))
		for j, t := range o.Scores {
			ranked[j] = t * o.Weights[j] // the log-likelihood ratio's order
		}
		o.Bound = oneRunBound(ranked, o.In, priv.Delta, opt.Confidence)
		rep.Violation = rep.Violation || o.Mu.Lo > muClaimed || o.Bound.Epsilon > priv.Eps
	}
	if err := ctx.Err(); err != nil {
		return nil, err // a report finished after a cancellation is not given
	}
	rep.AllIterates, rep.FinalModel = all, fin
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// plantedCanary is one canary: the rounds of its learner-round slot, its
// coordinate, the random sign of its direction, and whether it is included
// (otherwise its mirrored neighbour is).
type plantedCanary struct {
	rounds []int
	coord  int
	dir    float64
	in     bool
}

// push is the sign of the canary's push sample: its direction's if it is
// included, the opposite for its mirrored neighbour.
func (c plantedCanary) push() float64 {
	if c.in {
		return c.dir
	}
	return -c.dir
}

// canaryData is the canary run's data: slot[r n + i] is the canary of
// cans that owns learner i's round r (-1: none); x is the released model
// of the current round (in process), or release returns the model
// released for round r (over gRPC, where the learners run concurrently).
type canaryData struct {
	slot     []int32
	learners int
	cans     []plantedCanary
	x        []float64
	release  func(r int) []float64
	steps    *atomic.Int64 // if not nil, counts the samples handed out (hooks.steps)
}

// canaryNetwork runs the canary federation nr over gRPC (CanaryOptions.Network)
// in a temporary state directory, with data's followers anchored at the
// models read back from it, and hands the released models x^0..x^R, read
// back from it too, to observe in order.
func canaryNetwork(ctx context.Context, nr *netRun, data *canaryData, observe func(r int, x []float64)) error {
	xs, err := nr.released(ctx, "dpaudit-canary-", func(release func(int) []float64) func(int) fedopt.Stream {
		data.release = release
		return func(i int) fedopt.Stream { return canaryStream{data, i} }
	})
	if err != nil {
		return err
	}
	for r, x := range xs {
		if len(x) != nr.shape.Dim {
			return fmt.Errorf("audit: the networked run released round %d of dimension %d, want %d", r, len(x), nr.shape.Dim)
		}
		observe(r, x)
	}
	return nil
}

type canaryStream struct {
	d *canaryData
	i int
}

// Sample implements fedopt.Stream.
func (s canaryStream) Sample(r, t int) ([]float64, float64) {
	if s.d.steps != nil {
		s.d.steps.Add(1)
	}
	j := s.d.slot[r*s.d.learners+s.i]
	if j < 0 {
		return sample(kindBlank, 0, 0, 0), 0
	}
	c := s.d.cans[j]
	if t == 0 {
		return sample(kindPush, c.coord, c.push(), 0), 0
	}
	x := s.d.x
	if s.d.release != nil {
		x = s.d.release(r)
	}
	return sample(kindFollow, c.coord, 0, x[c.coord]), 0
}
