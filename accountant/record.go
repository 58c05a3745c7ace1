package accountant

import (
	"cmp"
	"math"
)

// Participation names how often one client's sample may enter the release,
// as a label of a [Record]: the sensitivity recorded with it must have
// been derived for it, and package accountant computes nothing from it.
// It holds the name of a factorize.Participation (its String, such as
// "single" or "epochs:4"; fedopt.PrivacyOf writes it so), the pattern a
// user normally wants, which sensitivities are computed under; a plan
// holds the same name in its Participation field.
type Participation string

// SingleParticipation is the participation dpmf's sensitivity derivation
// assumes: each client sample is used in exactly one round (one row of the
// gradient matrix G).
const SingleParticipation Participation = "single"

// Record is the privacy record of one round, for optimisers to emit and runs
// to log: the target (Eps, Delta), how the noise was calibrated, and the
// noise actually used. With correlated noise the whole run is one Gaussian
// mechanism, so every round's record states the same guarantee for the
// whole release; records of successive rounds do not add up.
//
// It is derived, not calibrated: a run's guarantee is its plan.Record (the
// plan's Privacy, what plan.Plan.Calibrate gave and run.json binds), the
// record a user normally reads; fedopt.PrivacyOf turns that into the
// per-round Records a trace logs (fedopt.Privacy.RecordAt). A
// factorize.Record is no privacy record: it is a factorization's stored
// form (the cache).
type Record struct {
	Round         int           `json:"round"`         // 0-based round index
	Eps           float64       `json:"eps"`           // target eps of the whole release
	Delta         float64       `json:"delta"`         // target delta of the whole release
	Method        Method        `json:"method"`        // calibration method
	Sensitivity   float64       `json:"sensitivity"`   // L2 sensitivity of the release (for example 2 gamma B_g / n)
	NoiseStd      float64       `json:"noise_std"`     // standard deviation of each noise entry
	Participation Participation `json:"participation"` // participation the sensitivity assumes
}

// NewRecord returns the record of round with the noise standard deviation
// that [NoiseStd] calibrates for (eps, delta), sensitivity and m. Its errors
// are those of NoiseStd; a negative round or an empty participation is an
// error too.
func NewRecord(round int, eps, delta, sensitivity float64, m Method, p Participation) (Record, error) {
	if round < 0 {
		return Record{}, &ParamError{Param: "round", Value: float64(round), Want: "an integer >= 0"}
	}
	if p == "" {
		return Record{}, &ParamError{Param: "participation", Value: 0, Want: "a non-empty name such as \"single\""}
	}
	v, err := NoiseStd(eps, delta, sensitivity, m)
	if err != nil {
		return Record{}, err
	}
	return Record{Round: round, Eps: eps, Delta: delta, Method: m, Sensitivity: sensitivity, NoiseStd: v, Participation: p}, nil
}

// Verify checks, with the exact curve whatever the record's Method, that
// one Gaussian release with the record's Sensitivity and NoiseStd is
// (Eps, Delta)-DP; use it to audit a logged run. It returns an error naming
// the achieved delta when the noise falls short, and a *ParamError for a
// record whose fields are out of range.
func (r Record) Verify() error {
	if err := cmp.Or(checkEpsDelta(r.Eps, r.Delta), checkPositive("sensitivity", r.Sensitivity), checkPositive("noise_std", r.NoiseStd)); err != nil {
		return err
	}
	if !r.Method.valid() {
		return errMethod(r.Method)
	}
	mu := nextUp(nextUp(r.Sensitivity / r.NoiseStd))
	if exactSafe(r.Eps, mu, r.Delta) {
		return nil
	}
	d := math.Exp(logDeltaGDP(r.Eps, mu))
	return &MethodError{Method: r.Method, Reason: "round " + itoa(r.Round) + ": noise std " + ftoa(r.NoiseStd) +
		" at sensitivity " + ftoa(r.Sensitivity) + " gives delta = " + ftoa(d) + " > " + ftoa(r.Delta) + " at eps = " + ftoa(r.Eps)}
}
