package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
)

// Factorize computes the plan's factorization: its strategy (the identity
// for the independent algorithm) on the prefix sums over its rounds, with
// metrics under its participation. The algorithm must add noise. The
// plan's privacy record, which the factorization does not depend on, is
// not checked (see [Plan.Calibrate]).
func (p *Plan) Factorize(ctx context.Context) (*factorize.Factorization, error) {
	if err := p.validateSettings(); err != nil {
		return nil, err
	}
	if !p.Private() {
		return nil, fmt.Errorf("plan: the %s algorithm adds no noise: no factorization", p.Algorithm)
	}
	if w := p.workload(); w != WorkloadPrefix {
		return nil, fmt.Errorf("plan: workload %q, want %s (the only workload a plan factorizes; mfsolve factorizes the others)", w, WorkloadPrefix)
	}
	part, _ := p.Pattern() // checked by Validate
	s, err := p.strategy()
	if err != nil {
		return nil, err
	}
	w, err := factorize.Prefix(p.Rounds)
	if err != nil {
		return nil, wrap(err)
	}
	f, err := s.Factorize(ctx, w, part)
	if err != nil {
		return nil, fmt.Errorf("plan: %s factorization for %d rounds: %w", s.Name(), p.Rounds, err)
	}
	return f, nil
}

// Build computes the plan's factorization and calibrates its noise: the
// plan's Privacy is then its record.
func (p *Plan) Build(ctx context.Context) (*factorize.Factorization, error) {
	f, err := p.Factorize(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.Calibrate(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// recordTolerance is the relative difference [Plan.VerifyRecord] allows
// between a record's metrics and those of the factorization computed
// again: a solver's answer may differ in its last digits between machines
// (a fused multiply-add, another order of a parallel sum).
const recordTolerance = 1e-6

// VerifyRecord computes the plan's factorization again and checks that the
// privacy record holds its metrics: gamma, the unit sensitivity under the
// participation (its value within a relative 1e-6, its exactness and rule)
// and the loss. With Parse's checks of the record, which it runs first
// ([Plan.Validate]: the release sensitivity from the unit sensitivity, the
// noise from the sensitivity), a record that passes holds the metrics
// Calibrate can have written for the plan: a record whose sensitivity was
// lowered together with its eps is refused. The record's operator_sha256
// is not compared (a solver's last bits, which it hashes, may differ
// between machines): a server checks it against the mechanism it is
// given. It costs one factorization; a plan without a record is an error.
func (p *Plan) VerifyRecord(ctx context.Context) error {
	if p == nil || p.Privacy == nil {
		return errors.New("plan: no privacy record to verify")
	}
	if err := p.Validate(); err != nil { // the record against the plan, as Parse checks it
		return err
	}
	f, err := p.Factorize(ctx)
	if err != nil {
		return err
	}
	r, m := p.Privacy, f.Metrics
	for _, c := range []struct {
		name     string
		rec, got float64
	}{{"privacy.gamma", r.Gamma, m.Gamma}, {"privacy.unit_sensitivity", r.UnitSensitivity, m.UnitSensitivity.Value}, {"privacy.loss", r.Loss, m.Loss}} {
		if !(math.Abs(c.rec-c.got) <= recordTolerance*math.Abs(c.got)) {
			return bad(c.name, c.rec, fmt.Sprintf("%v, that of the plan's factorization (%s over %d rounds under %s)", c.got, f.Strategy, p.Rounds, m.Participation))
		}
	}
	if r.UnitExact != m.UnitSensitivity.Exact || r.UnitRule != string(m.UnitSensitivity.Rule) {
		return bad("privacy.unit_sensitivity_rule", fmt.Sprintf("%q (exact %v)", r.UnitRule, r.UnitExact),
			fmt.Sprintf("%q (exact %v), the plan's factorization's", m.UnitSensitivity.Rule, m.UnitSensitivity.Exact))
	}
	return nil
}

// Calibrate sets p.Privacy to the record of the plan's target for f, the
// factorization whose noise is released (its metrics must be under the
// plan's participation, and the identity's for the independent
// algorithm, and of the plan's strategy: a factorization of another
// strategy, or of the plan's with other settings, is an error, since the
// record names the plan's). This is the calibration recipe of dpmf, the
// only one. The
// record names f by its [OperatorDigest], so that a server can refuse the
// noise of another factorization with the same noise std.
//
// Neighbouring data sets differ in one client's sample (the target's
// relation: replace-one by default, or add-remove); the sample takes part
// in the rounds the participation allows; every per-sample gradient is
// clipped to norm B_g (Clip). In Algorithm 1 replacing one sample of
// learner i in round r can change learner i's whole local trajectory of
// that round, so its mean clipped gradient changes by at most 2 B_g and
// g^r, the mean over the n learners, by 2 B_g / n; in the baselines the
// sample enters the round's mean gradient at x^r once, with the same bound
// (B_g and B_g / n for add/remove). Add/remove is refused for Algorithm 1
// (or an unnamed algorithm) with Tau > 1, by Validate and so by Parse too: removing a sample also moves the learner's later local
// steps, so its update can move by (2 - 1/tau) tau B_g, more than the
// add/remove bound tau B_g (with Tau 0, unset, as in mfsolve's plans, the
// add/remove bound assumes tau = 1: the record's rule says so, and a
// fedopt server with tau > 1 refuses the record). The rule states the
// algorithm and tau the sensitivity rests on. Only the rows of G of the rounds the sample takes part in
// change, so ||C (G - G')||_F <= sens 2 B_g / n, sens the sensitivity of C
// under the participation (factorize's Metrics.UnitSensitivity: gamma, the
// largest column norm, for single participation):
// accountant.ReleaseSensitivity. The whole release is one Gaussian
// mechanism with that sensitivity:
//
//   - exact: the analytic Gaussian mechanism (accountant.Exact) at that
//     sensitivity, the least noise that gives (eps, delta)-DP;
//   - paper: the paper's sensitivity 2 sens B_g (conservative by the
//     factor n) with its classical formula (accountant.Paper), and for
//     the independent baseline zCDP (accountant.ZCDP);
//   - with Sampling q > 0: the amplified banded accounting of
//     Choquette-Choo et al. 2023 (Thm. 4). C has at most b bands, b the
//     separation of the minsep:b participation; the samples are split
//     into b groups and round r samples each member of group r mod b
//     with probability q, so the release is as private as ceil(R/b)
//     compositions of the Poisson-subsampled Gaussian with noise
//     multiplier V / s, s the release sensitivity of one participation
//     (accountant.ReleaseSensitivity with gamma). For replace-one with
//     q < 1 the accounting is an upper bound.
//
// With secure aggregation every sensitivity above is computed with the
// effective clip B_g' of [Plan.EffectiveClip] in place of B_g: the
// quantized updates differ from the exact ones by at most the quantization
// term, and the record holds the term and B_g'.
//
// The factorization's metrics are not taken on trust: its sensitivity
// under the participation and its gamma must not be below those that
// factorize.StreamedSensitivity computes again from its operator (or its
// dense factors), the C whose noise the record's digest names, by more
// than a relative 1e-9 (the strategies sum in other orders), and where
// they are below them within that, the record holds the recomputed ones,
// so the noise is never calibrated below C's sensitivity. A
// factorization assembled or edited with an understated sensitivity is an
// error: a fedopt or fednet server checks the record's digest against the
// noise it is given, not the record's metrics. Where the recomputation
// would cost more than factorize.MaxRecomputeWork (a rule quadratic in R
// at a large R: the min-separation bound of a scaled Toeplitz or
// quasiseparable C, many epochs), gamma is still recomputed and must not
// be above the reported gamma or sensitivity, and the record's rule says
// that C's sensitivity is the factorization's own. A loss-only result
// (no operator, no factors) is not checked: nothing streams it, its record
// names no operator, and no server accepts it.
//
// The search of the amplified accounting stops when ctx is done.
//
// A record the plan already holds is replaced, whether or not it is still
// the plan's (a target or clip changed since it was made); on an error
// p.Privacy is left as it was.
func (p *Plan) Calibrate(ctx context.Context, f *factorize.Factorization) error {
	if err := p.validateSettings(); err != nil {
		return err
	}
	t := p.Target
	switch {
	case t == nil:
		return errors.New("plan: no target (eps, delta) to calibrate for: set Plan.Target")
	case !p.Private():
		return fmt.Errorf("plan: the %s algorithm has no privacy calibration", p.Algorithm)
	case f == nil:
		return errors.New("plan: no factorization to calibrate: pass the one Plan.Factorize returns (or call Plan.Build)")
	}
	if err := p.checkStrategy(f); err != nil {
		return err
	}
	part, _ := p.Pattern()
	m := f.Metrics
	unit := m.UnitSensitivity.Value
	switch {
	case m.Participation != part:
		return fmt.Errorf("plan: factorization with metrics under %v, want the plan's %v (%s)", m.Participation, part, participationDiff(m.Participation, part))
	case f.Workload != nil && f.Workload.R() != p.Rounds:
		return fmt.Errorf("plan: factorization of %d rounds, want the plan's %d", f.Workload.R(), p.Rounds)
	case !(unit > 0) || math.IsInf(unit, 1):
		return fmt.Errorf("plan: factorization sensitivity %v under %v, want a finite number > 0", unit, part)
	case !factorize.FiniteMetrics(m) || !(m.Gamma > 0):
		return fmt.Errorf("plan: factorization metrics gamma %v, loss %v, want finite numbers (gamma > 0) for the record", m.Gamma, m.Loss)
	case p.Algorithm == AlgoIndependent && m.Gamma != 1:
		return fmt.Errorf("plan: the independent baseline adds noise with C = I, got metrics with gamma = %v", m.Gamma)
	}
	note, checked, err := p.checkStreamedSensitivity(f, part)
	if err != nil {
		return err
	}
	if checked != m {
		// Reported within the tolerance below the recomputed values: the
		// record takes the larger, so that the noise is never calibrated
		// below the sensitivity of the C it streams.
		g := *f
		g.Metrics = checked
		f, m, unit = &g, checked, checked.UnitSensitivity.Value
	}
	rel, _ := t.relation() // Validate refused add-remove for Algorithm 1 with tau > 1
	if t.Sampling > 0 {
		if err := p.calibrateAmplified(ctx, f, rel, note); err != nil {
			return err
		}
		p.Privacy.OperatorSHA256, _ = OperatorDigest(f)
		return nil
	}
	method, learners := p.method()
	sens, err := accountant.ReleaseSensitivity(p.EffectiveClip(), learners, rel, unit)
	if err != nil {
		return wrap(err)
	}
	std, err := accountant.NoiseStd(t.Eps, t.Delta, sens, method)
	if err != nil {
		return fmt.Errorf("plan: calibrating the noise: %w", err)
	}
	if math.IsInf(std, 0) || math.IsNaN(std) {
		return fmt.Errorf("plan: the noise std for (%g, %g)-DP at sensitivity %g is %v: no finite noise gives this guarantee", t.Eps, t.Delta, sens, std)
	}
	bound := ""
	if !m.UnitSensitivity.Exact {
		bound = " (an upper bound)"
	}
	p.setRecord(method.String(), sens, std, std/sens, m,
		fmt.Sprintf("(%g, %g)-DP, %s calibration, release sensitivity %.6g%s: %s client sample, participation %v with C's sensitivity %.6g%s, clip %g, %d learners, %s%s%s",
			t.Eps, t.Delta, t.Calibration, sens, paperRule[t.Calibration == Paper], rel, part, unit, bound, p.Clip, p.Learners, p.algorithmRule(rel), p.quantizationRule(), note))
	// The factorization the record holds for (empty for one that cannot
	// stream: no server accepts the record then).
	p.Privacy.OperatorSHA256, _ = OperatorDigest(f)
	return nil
}

// checkStrategy refuses a factorization that another strategy computed,
// or the plan's strategy with other settings: the record names the plan's
// strategy (Record.Strategy, the spec [Plan.VerifyRecord] factorizes
// again), so it would describe another factorization than the one whose
// noise it calibrates. The name is always compared (the independent
// algorithm's is the identity); the settings where f knows the strategy
// whose Factorize computed it (factorize's StrategyKey; a factorization
// built by hand, by a function such as factorize.Optimal, or moved to
// another participation has none), the loss-only switch aside: it decides
// whether C is formed, not what C is.
func (p *Plan) checkStrategy(f *factorize.Factorization) error {
	s, err := p.parsedStrategy()
	if err != nil {
		return err
	}
	if f.Strategy != s.Name() {
		return fmt.Errorf("plan: factorization of strategy %q, want one of the plan's strategy %q", f.Strategy, s.Spec())
	}
	got := strings.TrimSuffix(f.StrategyKey(), "/loss-only")
	if want := strings.TrimSuffix(factorize.CacheKey(s), "/loss-only"); got != "" && got != want {
		return fmt.Errorf("plan: factorization of strategy %s with the settings %s, want the plan's strategy %q (settings %s)", f.Strategy, got, s.Spec(), want)
	}
	return nil
}

// streamedTolerance is the relative amount by which the sensitivity and
// gamma a factorization reports may fall below those
// factorize.StreamedSensitivity computes again from its operator: the
// strategies sum in other orders (as the cache's check of a stored
// result allows, 1e-9); an edit that matters changes far more.
const streamedTolerance = 1e-9

// checkStreamedSensitivity checks that f's metrics (its unit sensitivity
// under part, and gamma) are not below those of the C that f streams,
// computed again by factorize.StreamedSensitivity from its operator (or
// its dense factors), so that a factorization assembled or edited with an
// understated sensitivity gets no record: a server checks the record's
// operator digest, not its metrics. It returns a note for the record's
// rule where the recomputation is beyond factorize.MaxRecomputeWork (the
// metrics are then the factorization's own, and the rule says so), and
// nothing to check for a factorization that streams nothing (a loss-only
// result: its record names no operator, and no server accepts it). It
// also returns f's metrics with gamma and the unit sensitivity raised to
// the recomputed ones where they are below them, by at most the
// tolerance, for the record.
func (p *Plan) checkStreamedSensitivity(f *factorize.Factorization, part factorize.Participation) (string, factorize.Metrics, error) {
	m := f.Metrics
	if f.Operator == nil && (f.B == nil || f.C == nil) {
		return "", m, nil
	}
	if f.Workload == nil {
		// The plan's rounds (the operator's must be as many): its digest
		// names it whatever workload it was handed with.
		w, err := factorize.Prefix(p.Rounds)
		if err != nil {
			return "", m, wrap(err)
		}
		g := *f
		g.Workload = w
		f = &g
	}
	gamma, sens, err := factorize.StreamedSensitivity(f, part)
	switch {
	case errors.Is(err, factorize.ErrNotRecomputed):
		// gamma, recomputed, bounds the sensitivity below.
		if !(m.Gamma >= gamma*(1-streamedTolerance)) || !(m.UnitSensitivity.Value >= gamma*(1-streamedTolerance)) {
			return "", m, fmt.Errorf("plan: factorization %s reports gamma %v and sensitivity %v under %v, below %v, the largest column norm of the C its operator streams (a lower bound on its sensitivity)",
				f.Strategy, m.Gamma, m.UnitSensitivity.Value, part, gamma)
		}
		m.Gamma = max(m.Gamma, gamma)
		m.UnitSensitivity.Value = max(m.UnitSensitivity.Value, gamma)
		return fmt.Sprintf("; C's sensitivity is the factorization's own (at least its recomputed gamma), not recomputed from its operator (%s)", strings.TrimPrefix(err.Error(), "factorize: ")), m, nil
	case err != nil:
		return "", m, fmt.Errorf("plan: the sensitivity of the C that factorization %s streams cannot be checked: %w", f.Strategy, err)
	case !(m.UnitSensitivity.Value >= sens.Value*(1-streamedTolerance)):
		return "", m, fmt.Errorf("plan: factorization %s reports sensitivity %v under %v, below %v, that of the C its operator streams (%s): calibrated to it, the noise would be too small",
			f.Strategy, m.UnitSensitivity.Value, part, sens.Value, sens)
	case !(m.Gamma >= gamma*(1-streamedTolerance)):
		return "", m, fmt.Errorf("plan: factorization %s reports gamma %v, below %v, the largest column norm of the C its operator streams", f.Strategy, m.Gamma, gamma)
	}
	m.Gamma = max(m.Gamma, gamma)
	m.UnitSensitivity.Value = max(m.UnitSensitivity.Value, sens.Value)
	return "", m, nil
}

// participationDiff names the fields in which got differs from want, with
// both values: String shows only the fields of its kind, so that a
// pattern with a stray count (single with K set, epochs with B set) reads
// as the plan's own.
func participationDiff(got, want factorize.Participation) string {
	kind := func(k factorize.ParticipationKind) string {
		if n, ok := map[factorize.ParticipationKind]string{factorize.KindSingle: "single", factorize.KindEpochs: "epochs", factorize.KindMinSep: "minsep"}[k]; ok {
			return n
		}
		return strconv.Itoa(int(k))
	}
	var d []string
	if got.Kind != want.Kind {
		d = append(d, fmt.Sprintf("Kind %s, want %s", kind(got.Kind), kind(want.Kind)))
	}
	for _, f := range []struct {
		name      string
		got, want int
	}{{"K", got.K, want.K}, {"B", got.B, want.B}} {
		if f.got != f.want {
			d = append(d, fmt.Sprintf("%s %d, want %d", f.name, f.got, f.want))
		}
	}
	return "differing fields: " + strings.Join(d, ", ")
}

// validateSettings is [Plan.Validate] of the plan without its privacy
// record: what Factorize and Calibrate read. Before, they validated the
// record too, so a plan calibrated before a change of its target or clip
// could not be calibrated again: both refused with an error about the old
// record, the one thing Calibrate is called to replace.
func (p *Plan) validateSettings() error {
	if p == nil {
		return errNilPlan
	}
	q := *p
	q.Privacy = nil
	return q.Validate()
}

// method returns the accountant's method of the plan's calibration
// without sampling, and the learners its release sensitivity divides by:
// the paper's sensitivity does not divide, and its independent baseline
// is calibrated by zCDP.
func (p *Plan) method() (accountant.Method, int) {
	switch {
	case p.Target.Calibration != Paper:
		return accountant.Exact, p.Learners
	case p.Algorithm == AlgoIndependent:
		return accountant.ZCDP, 1
	}
	return accountant.Paper, 1
}

// setRecord sets the plan's privacy record: the target's (eps, delta),
// the calibration's method, release sensitivity, noise and rule, the
// factorization's metrics m, with secure aggregation the quantization
// term and the effective clip, and the plan's settings it is calibrated
// under (participation, rounds, workload, strategy, algorithm, learners,
// tau, clip, relation, sampling).
func (p *Plan) setRecord(method string, sens, std, sigma float64, m factorize.Metrics, rule string) {
	p.Privacy = &Record{
		Eps: p.Target.Eps, Delta: p.Target.Delta, Method: method,
		Sensitivity: sens, Rule: rule, NoiseStd: std, Sigma: sigma,
		Gamma: m.Gamma, Loss: m.Loss,
		UnitSensitivity: m.UnitSensitivity.Value, UnitExact: m.UnitSensitivity.Exact, UnitRule: string(m.UnitSensitivity.Rule),
	}
	// What it was calibrated under (validateSettings checked each).
	part, _ := p.Pattern()
	spec, _ := p.strategySpec()
	rel, _ := p.Target.relation()
	r := p.Privacy
	r.Participation, r.Workload, r.Rounds, r.Strategy = part.String(), p.workload(), p.Rounds, spec
	r.Algorithm, r.Learners, r.Tau, r.Clip = p.Algorithm, p.Learners, p.Tau, p.Clip
	r.Relation, r.Sampling = rel.String(), p.Target.Sampling
	if sa := p.SecureAggregation; sa != nil {
		p.Privacy.QuantizationTerm, p.Privacy.EffectiveClip = sa.QuantizationTerm, p.EffectiveClip()
	}
}

// calibrateAmplified is Calibrate's amplified banded accounting.
func (p *Plan) calibrateAmplified(ctx context.Context, f *factorize.Factorization, rel accountant.Relation, note string) error {
	t, m := p.Target, f.Metrics
	b := m.Participation.B // the groups of the sampling
	if bands, ok := factorize.BandsOf(f.Operator); !ok || bands > b || m.Participation.Kind != factorize.KindMinSep {
		return fmt.Errorf("plan: the amplified accounting (sampling) needs a lower-triangular C with at most %d bands under minsep:%d", b, b)
	}
	r := p.Rounds // f's, where f has a workload (Calibrate checks)
	sens, err := accountant.ReleaseSensitivity(p.EffectiveClip(), p.Learners, rel, m.Gamma)
	if err != nil {
		return wrap(err)
	}
	sigma, err := accountant.AmplifiedBandedSigma(ctx, t.Sampling, r, b, t.Eps, t.Delta, rel)
	if err != nil {
		return err
	}
	std, err := accountant.Scale(sigma, sens)
	if err != nil {
		return err
	}
	k, _ := accountant.BandedCompositions(r, b)
	// Both sides of the PLD's eps at the calibrated sigma: the safe one
	// (at most the target) is the guarantee, the optimistic one shows the
	// accountant's own slack. Parse checks a record with the same bound.
	eb, err := amplifiedEps(ctx, t.Sampling, sigma, r, b, t.Delta, rel)
	if err != nil {
		return err
	}
	if eb.Safe > t.Eps {
		return fmt.Errorf("plan: the amplified accounting's sigma %v gives eps %v by the PLD accountant's bound, above the target's %v", sigma, eb.Safe, t.Eps)
	}
	bound := ""
	if rel == accountant.ReplaceOne && t.Sampling < 1 {
		bound = " (an upper bound)"
	}
	p.setRecord(MethodAmplified, sens, std, sigma, m,
		fmt.Sprintf("(%g, %g)-DP, amplified banded accounting (PLD, %d compositions of the Poisson-subsampled Gaussian%s): cyclic Poisson sampling q = %g over %d groups (C has at most %d bands), %s client sample, release sensitivity %.6g per participation (gamma %.6g), clip %g, %d learners, %s%s; PLD eps at this sigma %.6g (safe), %.6g (optimistic)%s",
			t.Eps, t.Delta, k, bound, t.Sampling, b, b, rel, sens, m.Gamma, p.Clip, p.Learners, p.algorithmRule(rel), p.quantizationRule(), eb.Safe, eb.Optimistic, note))
	return nil
}

// EffectiveClip returns the clipping bound the calibration puts in the
// sensitivity: the plan's Clip B_g without secure aggregation, and with it
//
//	B_g' = B_g + 5 m term / c,
//
// term = sqrt(d) 2^{-k-1} the quantization term, c = tau for the
// correlated algorithm (its direction is the sum of the updates over
// N = n tau) and 1 for the baselines (over N = n, with one gradient per
// sample), m = 1 for replace-one and 2 for add-remove; rounded up.
//
// Quantization moves every update by at most term in L2, so replacing one
// client's sample moves a learner's quantized update, and (the read-back
// being exact, secagg.Quantizer.Dequantize) the read-back sum x, by at most
// 2 c B_g + 2 term (replace-one) or c B_g + 2 term (add-remove): m term / c
// of the five. The server then computes y = fl(fl(1/N) x) before it adds the
// noise: a coordinate |x_k| <= 2^(53-k) (the sum's integers are at most
// 2^53) is moved from x_k / N by at most 2^-53 |x_k| / N for rounding 1/N
// and as much for the product (round to nearest, relative error at most
// 2^-53 / (1 + 2^-53) each, no underflow by secagg.NewQuantizer's range of
// k), so by at most 2^(1-k) / N, and y by at most sqrt(d) 2^(1-k) / N =
// 4 term / N in L2; for the two neighbours 8 term / N, which is 4 m term / c
// in B_g' (the sensitivity being 2 B_g' / n for replace-one, B_g' / n for
// add-remove, per unit of C). So ||y - y'|| is at most the plain bound with
// B_g' in place of B_g.
func (p *Plan) EffectiveClip() float64 {
	sa := p.SecureAggregation
	if sa == nil {
		return p.Clip
	}
	m := 1.0
	if t := p.Target; t != nil && t.Relation != "" {
		if rel, err := t.relation(); err == nil && rel == accountant.AddRemove {
			m = 2
		}
	}
	c := 1.0
	if p.Algorithm == AlgoCorrelated || p.Algorithm == "" {
		c = float64(p.Tau)
	}
	a := 5 * m * sa.QuantizationTerm // m a power of two: only the factor 5 rounds
	if math.FMA(5*m, sa.QuantizationTerm, -a) > 0 {
		a = math.Nextafter(a, math.Inf(1))
	}
	x := a / c
	if math.FMA(x, c, -a) < 0 {
		x = math.Nextafter(x, math.Inf(1))
	}
	return addUp(p.Clip, x)
}

// addUp returns a + b (a, b >= 0) rounded up.
func addUp(a, b float64) float64 {
	s := a + b
	if s-max(a, b) < min(a, b) { // the exact error of the rounded sum (a, b >= 0) is negative
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// paperRule is the record's words for the paper's sensitivity, which does
// not divide by the learners.
var paperRule = map[bool]string{true: " (the paper's: not divided by the learners)"}

// algorithmRule is the record's words for how a sample enters the update,
// which the sensitivity rests on: Algorithm 1's local trajectory (its tau,
// and for add/remove or replace-one with sampling q < 1, where tau is not
// set, the tau = 1 the bound needs) or the baselines' one gradient at x^r.
func (p *Plan) algorithmRule(rel accountant.Relation) string {
	switch {
	case p.Algorithm == AlgoBaselineCorrelated || p.Algorithm == AlgoIndependent:
		return fmt.Sprintf("the %s algorithm (one gradient per sample at x^r)", p.Algorithm)
	case p.Tau > 0:
		return fmt.Sprintf("Algorithm 1 with tau = %d", p.Tau)
	case rel == accountant.AddRemove:
		return "Algorithm 1, tau not set: tau = 1 assumed (the add-remove bound fails with local steps)"
	case p.Target != nil && p.Target.Sampling > 0 && p.Target.Sampling < 1:
		return "Algorithm 1, tau not set: tau = 1 assumed (the sampled replace-one bound compares a round with the sample against one without it, and fails with local steps)"
	}
	return "Algorithm 1 (any tau)"
}

// quantizationRule is the record's words for the quantization term.
func (p *Plan) quantizationRule() string {
	sa := p.SecureAggregation
	if sa == nil {
		return ""
	}
	return fmt.Sprintf(", quantization term sqrt(%d) 2^-%d = %.6g for secure aggregation (effective clip %.17g in the sensitivity)",
		sa.Dim, sa.ScaleBits+1, sa.QuantizationTerm, p.EffectiveClip())
}
