package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// jsonFloat is a float64 in a report's JSON: a number when finite, else
// the string "+Inf", "-Inf" or "NaN" (JSON has no number for them, and
// encoding/json refuses to write a non-finite float64). It reads back
// either form.
type jsonFloat float64

// MarshalJSON writes f as a number, or as "+Inf", "-Inf" or "NaN".
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON reads a number, or "+Inf", "-Inf" or "NaN".
func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = jsonFloat(math.NaN())
		return nil
	case `"+Inf"`:
		*f = jsonFloat(math.Inf(1))
		return nil
	case `"-Inf"`:
		*f = jsonFloat(math.Inf(-1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("audit: %s: want a number in the float64 range, \"+Inf\", \"-Inf\" or \"NaN\"", jsonValue(b))
	}
	*f = jsonFloat(v)
	return nil
}

// jsonValue names the JSON value b for an error message in one short
// line: "an object" or "an array", any other value quoted
// (strconv.Quote) and cut after 40 bytes. b is the reader's: echoed
// whole, an object or array spanning lines made the error as many lines,
// and a long one as long.
func jsonValue(b []byte) string {
	s := strings.TrimSpace(string(b))
	switch {
	case strings.HasPrefix(s, "{"):
		return "an object"
	case strings.HasPrefix(s, "["):
		return "an array"
	case len(s) > 40:
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}

// muEstimateJSON is MuEstimate as its JSON holds it (the same fields,
// names and order, every float64 a jsonFloat; TestJSONShadowsMirror
// compares the two types by reflection, TestReportJSONNonFinite the
// encodings).
type muEstimateJSON struct {
	Mu    jsonFloat `json:"mu_hat"`
	Lo    jsonFloat `json:"mu_lo"`
	Hi    jsonFloat `json:"mu_hi"`
	Level jsonFloat `json:"level"`
	Sigma jsonFloat `json:"score_std"`
}

// MarshalJSON writes e with its non-finite statistics as strings (see
// [MuEstimate]).
func (e MuEstimate) MarshalJSON() ([]byte, error) {
	return json.Marshal(muEstimateJSON{jsonFloat(e.Mu), jsonFloat(e.Lo), jsonFloat(e.Hi), jsonFloat(e.Level), jsonFloat(e.Sigma)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *MuEstimate) UnmarshalJSON(b []byte) error {
	var j muEstimateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = MuEstimate{float64(j.Mu), float64(j.Lo), float64(j.Hi), float64(j.Level), float64(j.Sigma)}
	return nil
}

// observerJSON is Observer as its JSON holds it (the same fields, names
// and order, every float64 a jsonFloat; TestJSONShadowsMirror compares
// the two types by reflection).
type observerJSON struct {
	Threat      string     `json:"threat"`
	MuAnalytic  jsonFloat  `json:"mu_analytic"`
	EpsAnalytic jsonFloat  `json:"eps_analytic"`
	Mu          MuEstimate `json:"mu"`
	EpsOfMu     jsonFloat  `json:"eps_of_mu_hat"`
	EpsOfMuLo   jsonFloat  `json:"eps_of_mu_lo"`
	EpsOfMuHi   jsonFloat  `json:"eps_of_mu_hi"`
	Contains    bool       `json:"interval_contains_analytic"`
	Bound       Bound      `json:"one_run"`
	Scores      []float64  `json:"scores"`
	In          []bool     `json:"in"`
	Weights     []float64  `json:"weights"`
}

// MarshalJSON writes o with its non-finite statistics as strings (see
// [Observer]).
func (o Observer) MarshalJSON() ([]byte, error) {
	return json.Marshal(observerJSON{o.Threat, jsonFloat(o.MuAnalytic), jsonFloat(o.EpsAnalytic), o.Mu,
		jsonFloat(o.EpsOfMu), jsonFloat(o.EpsOfMuLo), jsonFloat(o.EpsOfMuHi), o.Contains, o.Bound, o.Scores, o.In, o.Weights})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *Observer) UnmarshalJSON(b []byte) error {
	var j observerJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*o = Observer{j.Threat, float64(j.MuAnalytic), float64(j.EpsAnalytic), j.Mu,
		float64(j.EpsOfMu), float64(j.EpsOfMuLo), float64(j.EpsOfMuHi), j.Contains, j.Bound, j.Scores, j.In, j.Weights}
	return nil
}

// auditedPlanJSON is AuditedPlan as a report's JSON holds it (the same
// fields, names and order), its numbers through jsonFloat
// (TestJSONShadowsMirror compares the two types by reflection). AuditedPlan
// itself has no JSON methods: they would be promoted to the reports that
// embed it and encode only its fields.
type auditedPlanJSON struct {
	Algorithm     string    `json:"algorithm"`
	Strategy      string    `json:"strategy"`
	Participation string    `json:"participation"`
	Learners      int       `json:"learners"`
	Rounds        int       `json:"rounds"`
	Tau           int       `json:"tau"`
	Dim           int       `json:"dim"`
	Clip          jsonFloat `json:"clip"`
	Eps           jsonFloat `json:"eps"`
	Delta         jsonFloat `json:"delta"`
	NoiseStd      jsonFloat `json:"noise_std"`
}

func auditedPlanToJSON(p AuditedPlan) auditedPlanJSON {
	return auditedPlanJSON{p.Algorithm, p.Strategy, p.Participation, p.Learners, p.Rounds, p.Tau, p.Dim,
		jsonFloat(p.Clip), jsonFloat(p.Eps), jsonFloat(p.Delta), jsonFloat(p.NoiseStd)}
}

func (j auditedPlanJSON) plan() AuditedPlan {
	return AuditedPlan{j.Algorithm, j.Strategy, j.Participation, j.Learners, j.Rounds, j.Tau, j.Dim,
		float64(j.Clip), float64(j.Eps), float64(j.Delta), float64(j.NoiseStd)}
}

// replayReportJSON is ReplayReport as its JSON holds it (the same fields,
// names and order; TestJSONShadowsMirror compares the two types by
// reflection, TestReplayReportJSONNonFinite the encodings).
type replayReportJSON struct {
	auditedPlanJSON
	Declared       jsonFloat `json:"declared_sensitivity"`
	DeclaredRule   string    `json:"declared_rule"`
	Measured       jsonFloat `json:"measured_distance"`
	Ratio          jsonFloat `json:"ratio"`
	Expected       jsonFloat `json:"expected_distance"`
	AuditedLearner int       `json:"audited_learner"`
	AuditedRounds  []int     `json:"audited_rounds"`
	Dropped        int       `json:"dropped"`
	AuditedDropped int       `json:"audited_rounds_dropped"`
	Network        bool      `json:"network"`
	Checks         []Check   `json:"checks"`
	OK             bool      `json:"ok"`
	Seconds        jsonFloat `json:"seconds"`
}

// MarshalJSON writes r with its non-finite numbers as strings (see
// [ReplayReport]).
func (r ReplayReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(replayReportJSON{auditedPlanToJSON(r.AuditedPlan), jsonFloat(r.Declared), r.DeclaredRule,
		jsonFloat(r.Measured), jsonFloat(r.Ratio), jsonFloat(r.Expected), r.AuditedLearner, r.AuditedRounds,
		r.Dropped, r.AuditedDropped, r.Network, r.Checks, r.OK, jsonFloat(r.Seconds)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *ReplayReport) UnmarshalJSON(b []byte) error {
	var j replayReportJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = ReplayReport{j.plan(), float64(j.Declared), j.DeclaredRule, float64(j.Measured), float64(j.Ratio),
		float64(j.Expected), j.AuditedLearner, j.AuditedRounds, j.Dropped, j.AuditedDropped, j.Network,
		j.Checks, j.OK, float64(j.Seconds)}
	return nil
}
