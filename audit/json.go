package audit

import (
	"encoding/json"
	"fmt"
	"math"
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
		return fmt.Errorf("audit: %s: want a number, \"+Inf\", \"-Inf\" or \"NaN\"", b)
	}
	*f = jsonFloat(v)
	return nil
}

// muEstimateJSON is MuEstimate as its JSON holds it (the same fields,
// names and order; TestReportJSONNonFinite checks them against the plain
// encoding).
type muEstimateJSON struct {
	Mu    jsonFloat `json:"mu_hat"`
	Lo    jsonFloat `json:"mu_lo"`
	Hi    jsonFloat `json:"mu_hi"`
	Level float64   `json:"level"`
	Sigma jsonFloat `json:"score_std"`
}

// MarshalJSON writes e with its non-finite statistics as strings (see
// [MuEstimate]).
func (e MuEstimate) MarshalJSON() ([]byte, error) {
	return json.Marshal(muEstimateJSON{jsonFloat(e.Mu), jsonFloat(e.Lo), jsonFloat(e.Hi), e.Level, jsonFloat(e.Sigma)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *MuEstimate) UnmarshalJSON(b []byte) error {
	var j muEstimateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = MuEstimate{float64(j.Mu), float64(j.Lo), float64(j.Hi), j.Level, float64(j.Sigma)}
	return nil
}

// observerJSON is Observer as its JSON holds it (the same fields, names
// and order).
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
