package fedopt

import (
	"errors"
	"fmt"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/plan"
)

// Privacy is the privacy calibration of a private run: the guarantee, the
// accountant's record of how the noise was set (package accountant), and the
// quantities the sensitivity was derived from. It is a plan's record
// (plan.Record) in the form the optimiser checks and logs; [PrivacyOf]
// makes it.
type Privacy struct {
	// Record holds (Eps, Delta) for the whole sequence of released models
	// x^1, ..., x^R, the method, the sensitivity Delta of C G (the matrix
	// whose rows are the per-round directions the noise is added to), the
	// noise standard deviation V of each entry of Z, and the participation.
	accountant.Record
	// Algorithm is the private algorithm.
	Algorithm Algorithm
	// Calibration is exact or paper.
	Calibration plan.Calibration
	// Gamma is the largest column norm of the factorization's C (1 for
	// the baseline's identity).
	Gamma float64
	// UnitSensitivity is the sensitivity of C under the participation
	// (Gamma for single participation), see factorize.SensitivityOf.
	UnitSensitivity factorize.Sensitivity
	// ParticipationPattern is the pattern the sensitivity assumes (the
	// record's Participation is its name).
	ParticipationPattern factorize.Participation
	// Learners is n and Clip is B_g.
	Learners int
	Clip     float64
	// Rounds is the record's R (plan.Record's Rounds, the plan's), the
	// rounds the sensitivity of C was computed over, and Tau its local
	// steps per round (0: not set, as in mfsolve's plans). A server refuses a record of other rounds, or of another tau
	// when it is set: the record holds for the run it was calibrated for.
	Rounds, Tau int
	// AddRemove reports that the sensitivity is that of add/remove
	// neighbours (the plan's relation), which holds for Algorithm 1 only
	// when a sample enters its learner's update as one clipped gradient
	// (tau = 1): a server with local steps refuses such a calibration.
	// False: replace-one.
	AddRemove bool
	// QuantizationTerm is the secure aggregation's quantization term and
	// EffectiveClip the clip B_g' the sensitivity was computed with (both
	// 0 without secure aggregation; see plan.Plan.EffectiveClip).
	QuantizationTerm, EffectiveClip float64
	// Strategy is the spec of the record's strategy (plan.Record's
	// Strategy, for messages), and
	// OperatorSHA256 the digest of the factorization the sensitivity is
	// that of (plan.OperatorDigest, the record's operator_sha256). A
	// server refuses a record without it, and a noise mechanism whose
	// factorization (mechanism.FactorizationOf) has another digest: a
	// mechanism of another C with the same noise std and rounds has
	// another sensitivity.
	Strategy, OperatorSHA256 string
}

// RecordAt returns the accountant's record for the release of round r.
// With correlated noise the whole run is one Gaussian mechanism: every
// round's record states the same guarantee for the whole release.
func (p *Privacy) RecordAt(r int) accountant.Record {
	rec := p.Record
	rec.Round = r
	return rec
}

// PrivacyOf returns the privacy record of a calibrated plan (one whose
// Privacy plan.Plan.Calibrate set, or that was read back with it): it
// copies the record, it computes nothing. The plan's algorithm must be
// private and its method one of the accountant's (not the amplified
// accounting, which no run of the optimiser uses), and the plan must pass
// plan.Plan.Validate, which checks that the record is one its calibration
// can have written (its sensitivity from the plan's clip, learners and
// relation; its noise from its target) and that it was calibrated under
// the plan's settings: a plan whose participation, rounds, strategy,
// learners, tau, clip or relation changed after its calibration is
// refused, in one line naming the setting and both values, and so is a
// record of an older dpmf that does not name them (plan.Record). The
// participation, rounds, learners, tau, clip, relation and strategy of
// the Privacy are the record's (then equal to the plan's).
func PrivacyOf(p *plan.Plan) (*Privacy, error) {
	if p == nil || p.Privacy == nil || p.Target == nil {
		return nil, errors.New("fedopt: the plan has no privacy record (plan.Plan.Calibrate makes it)")
	}
	algo, err := ParseAlgorithm(p.Algorithm)
	if err != nil {
		return nil, err
	}
	if !algo.Private() {
		return nil, fmt.Errorf("fedopt: the %v algorithm has no privacy record", algo)
	}
	r := p.Privacy
	method, err := accountant.ParseMethod(r.Method)
	if err != nil {
		return nil, fmt.Errorf("fedopt: the plan's privacy record: %w", err)
	}
	// The record must be the plan's: calibrated under its settings, its
	// release sensitivity that of the plan's clip, learners and relation,
	// its noise that of its target (a plan changed after its calibration
	// is refused here).
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fedopt: the plan and its privacy record: %w", err)
	}
	part, err := factorize.ParseParticipation(r.Participation)
	if err != nil {
		return nil, fmt.Errorf("fedopt: the plan's privacy record: %w", err)
	}
	rel, err := accountant.ParseRelation(r.Relation)
	if err != nil {
		return nil, fmt.Errorf("fedopt: the plan's privacy record: %w", err)
	}
	return &Privacy{
		Record: accountant.Record{Eps: r.Eps, Delta: r.Delta, Method: method, Sensitivity: r.Sensitivity, NoiseStd: r.NoiseStd,
			Participation: accountant.Participation(part.String())},
		Algorithm: algo, Calibration: p.Target.Calibration,
		Gamma:                r.Gamma,
		UnitSensitivity:      factorize.Sensitivity{Value: r.UnitSensitivity, Exact: r.UnitExact, Rule: factorize.Rule(r.UnitRule)},
		ParticipationPattern: part,
		Learners:             r.Learners, Clip: r.Clip, Rounds: r.Rounds, Tau: r.Tau, AddRemove: rel == accountant.AddRemove,
		QuantizationTerm: r.QuantizationTerm, EffectiveClip: r.EffectiveClip,
		Strategy: r.Strategy, OperatorSHA256: r.OperatorSHA256,
	}, nil
}

// checkFactorization returns an error unless noise streams the
// factorization the record pr was calibrated for: the digest of
// mechanism.FactorizationOf(noise) must be pr.OperatorSHA256.
func checkFactorization(pr *Privacy, noise mechanism.Mechanism) error {
	if pr.OperatorSHA256 == "" {
		return fmt.Errorf("fedopt: the privacy record (strategy %q) names no factorization (Privacy.OperatorSHA256 is empty): make it with PrivacyOf of a plan calibrated by plan.Plan.Calibrate", pr.Strategy)
	}
	f, ok := mechanism.FactorizationOf(noise)
	if !ok {
		return fmt.Errorf("fedopt: noise mechanism %T does not report the factorization it streams, so the privacy record's (%q, operator sha256 %.12s) cannot be checked: make it with mechanism.New", noise, pr.Strategy, pr.OperatorSHA256)
	}
	d, err := plan.OperatorDigest(f)
	switch {
	case err != nil:
		return fmt.Errorf("fedopt: noise mechanism of factorization %q: %w", f.Strategy, err)
	case d != pr.OperatorSHA256:
		return fmt.Errorf("fedopt: noise mechanism of factorization %q (operator sha256 %.12s), the privacy record was calibrated for %q (operator sha256 %.12s): the record's sensitivity is that of another C", f.Strategy, d, pr.Strategy, pr.OperatorSHA256)
	}
	// The digest names C, not its sensitivity, nor the participation that
	// sensitivity is under: a record whose sensitivity of C was lowered
	// (with its release sensitivity, so that checkRecord passes), or whose
	// participation was changed after its calibration (the identity's,
	// the tree's and banded C are the same under every participation,
	// and so is their digest), names the right C. The sensitivity of the
	// C the mechanism streams is computed again under the record's
	// participation, as plan.Plan.Calibrate computes it
	// (TestServerRefusesInconsistentPrivacy,
	// TestServerRefusesRecordOfAnotherParticipation).
	gamma, sens, err := factorize.StreamedSensitivity(f, pr.ParticipationPattern)
	switch {
	case errors.Is(err, factorize.ErrNotRecomputed):
		// Beyond factorize.MaxRecomputeWork: gamma, recomputed, bounds it
		// below, and the factorization's own metrics under the record's
		// participation (Calibrate checked them against the same bound).
		sens.Value = gamma
		if m := f.Metrics; m.Participation == pr.ParticipationPattern {
			sens.Value = max(gamma, m.UnitSensitivity.Value)
		}
	case err != nil:
		return fmt.Errorf("fedopt: the sensitivity of the C that factorization %q streams, under the privacy record's participation %v, cannot be checked: %w", f.Strategy, pr.ParticipationPattern, err)
	}
	if !(pr.UnitSensitivity.Value >= sens.Value*(1-unitTolerance)) {
		return fmt.Errorf("fedopt: the privacy record states C's sensitivity %v under %v, below %v, that of the C factorization %q streams: the record understates its sensitivity (a record changed after its calibration, or of another participation)", pr.UnitSensitivity.Value, pr.ParticipationPattern, sens.Value, f.Strategy)
	}
	return nil
}

// unitTolerance is the relative amount by which a record's sensitivity
// of C may fall below the one [checkFactorization] computes again: the
// tolerance within which plan.Plan.Calibrate takes a recomputed
// sensitivity as the factorization's (a sum in another order); an edit
// that matters changes far more.
const unitTolerance = 1e-9

// checkRecord returns an error unless the fields of the record pr hold
// together for a run of n learners and tau local steps: the participation
// it states must be its pattern's, its noise std
// must give its (eps, delta) at its release sensitivity by the exact curve
// (accountant.Record.Verify), and that sensitivity must be at least the
// release sensitivity of the record's clip (with secure aggregation, the
// effective clip of its quantization term at tau, plan.Plan.EffectiveClip),
// n learners and relation at the record's sensitivity of C
// (accountant.ReleaseSensitivity, which the paper's calibration exceeds by
// the factor n). NewServer compares the learners, rounds, tau and clip
// with the run's and the digest with the mechanism's; without this check a
// record made by PrivacyOf and then edited (its learners or clip set to
// the run's, its eps or delta lowered) was accepted, and Server.Record
// stated a guarantee the run does not have
// (TestServerRefusesInconsistentPrivacy).
func checkRecord(pr *Privacy, n, tau int) error {
	if want := accountant.Participation(pr.ParticipationPattern.String()); pr.Participation != want {
		// Server.Record states the guarantee under the record's
		// participation; the sensitivity (and the learners' data) are
		// checked under its pattern (TestServerRecordNamesItsParticipation).
		return fmt.Errorf("fedopt: the privacy record states participation %q, but its sensitivity is under %q", pr.Participation, want)
	}
	rel := accountant.ReplaceOne
	if pr.AddRemove {
		rel = accountant.AddRemove
	}
	clip := pr.Clip
	if pr.QuantizationTerm > 0 {
		q := plan.Plan{Algorithm: pr.Algorithm.String(), Clip: pr.Clip, Tau: tau,
			SecureAggregation: &plan.SecureAggregation{QuantizationTerm: pr.QuantizationTerm},
			Target:            &plan.Target{Relation: rel.String()}}
		clip = q.EffectiveClip()
	}
	sens, err := accountant.ReleaseSensitivity(clip, n, rel, pr.UnitSensitivity.Value)
	if err != nil {
		return fmt.Errorf("fedopt: the privacy record's release sensitivity: %w", err)
	}
	if !(pr.Sensitivity >= sens) {
		return fmt.Errorf("fedopt: the privacy record states release sensitivity %v, below %v, that of the run's clip %v, %d learners and %v relation at the record's sensitivity of C %v: its noise does not cover the run's release", pr.Sensitivity, sens, clip, n, rel, pr.UnitSensitivity.Value)
	}
	if err := pr.Record.Verify(); err != nil {
		return fmt.Errorf("fedopt: the privacy record's noise does not give its guarantee: %w", err)
	}
	return nil
}
