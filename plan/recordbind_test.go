package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRecordBoundToItsPlan: a privacy record holds for the plan settings
// it was calibrated under, and Validate (so Parse, and fedopt.PrivacyOf,
// which copies the record) must refuse a plan edited after its
// calibration, in one line that names the setting and both values.
// Before, the record did not name its participation, rounds, strategy,
// workload, algorithm or tau, and Validate recomputed only the release
// sensitivity from the plan's clip, learners and relation at the record's
// sensitivity of C: a plan calibrated under single participation and
// relabelled epochs:2 (the identity's sensitivity is then sqrt(2), not 1;
// the tree's over 8 rounds sqrt(4 + 4 + 4 + 4 x 1) = 4 against 2 by hand,
// and so on) passed, and so did one whose rounds, strategy or workload
// changed (C's sensitivity depends on each), or whose learners and clip
// were doubled together, or relation and clip changed together (the
// release sensitivity is the same, but the record's rule names the old
// settings). Each edit below was accepted except the last three groups,
// refused by the sensitivity or the quantization term, which now name the
// setting.
func TestRecordBoundToItsPlan(t *testing.T) {
	plans := builtPlans(t)
	type edit struct {
		name, base string
		edit       func(p *Plan)
		field      string // the setting the refusal names
		was, now   any    // its recorded and edited values
	}
	cases := []edit{
		{"participation single -> epochs:2", "paper", func(p *Plan) { p.Participation = "epochs:2" }, "participation", "single", "epochs:2"},
		{"participation single -> minsep:2", "zcdp", func(p *Plan) { p.Participation = "minsep:2" }, "participation", "single", "minsep:2"},
		{"participation minsep:2 -> minsep:2,2 (k 4 -> 2)", "exact", func(p *Plan) { p.Participation = "minsep:2,2" }, "participation", "minsep:2", "minsep:2,2"},
		{"participation minsep:2 -> minsep:4", "exact", func(p *Plan) { p.Participation = "minsep:4" }, "participation", "minsep:2", "minsep:4"},
		{"rounds 8 -> 16", "exact", func(p *Plan) { p.Rounds = 16 }, "rounds", 8, 16},
		{"rounds 8 -> 4", "paper", func(p *Plan) { p.Rounds = 4 }, "rounds", 8, 4},
		{"strategy banded -> bsr", "exact", func(p *Plan) { p.Strategy = "bsr:bands=2" }, "strategy", "banded:bands=2", "bsr:bands=2"},
		{"strategy tree -> identity", "paper", func(p *Plan) { p.Strategy = "identity" }, "strategy", "tree", "identity"},
		{"workload prefix -> momentum:0.9", "exact", func(p *Plan) { p.Workload = "momentum:0.9" }, "workload", "prefix", "momentum:0.9"},
		{"algorithm correlated -> baseline-correlated", "exact", func(p *Plan) { p.Algorithm = AlgoBaselineCorrelated }, "algorithm", AlgoCorrelated, AlgoBaselineCorrelated},
		{"tau unset -> 4", "exact", func(p *Plan) { p.Tau = 4 }, "tau", 0, 4},
		{"learners and clip doubled", "exact", func(p *Plan) { p.Learners, p.Clip = 6, 2 }, "learners", 3, 6},
		{"relation add-remove -> replace-one, clip halved", "paper", func(p *Plan) { p.Target.Relation, p.Clip = "replace-one", 0.25 }, "relation", "add-remove", "replace-one"},
		{"sampling 0.5 -> 0.25", "amplified", func(p *Plan) { p.Target.Sampling = 0.25 }, "sampling", 0.5, 0.25},
		// Refused before by the release sensitivity: now named.
		{"learners 3 -> 6", "exact", func(p *Plan) { p.Learners = 6 }, "learners", 3, 6},
		{"clip 1 -> 2", "exact", func(p *Plan) { p.Clip = 2 }, "clip", 1, 2},
		{"relation add-remove -> replace-one", "paper", func(p *Plan) { p.Target.Relation = "replace-one" }, "relation", "add-remove", "replace-one"},
		// Bound through other fields of the record: the calibration by
		// the method, the secure aggregation by its quantization term
		// (its scale bits follow from the learners, tau and clip).
		{"calibration exact -> paper", "exact", func(p *Plan) { p.Target.Calibration = Paper }, "method", "exact", "paper"},
		{"secure aggregation dim 4 -> 16", "secagg", func(p *Plan) {
			sa := *p.SecureAggregation
			sa.Dim, sa.QuantizationTerm, p.Model.Features = 16, 2*sa.QuantizationTerm, 16
			p.SecureAggregation = &sa
		}, "quantization_term", term(t, plans["secagg"]), 2 * term(t, plans["secagg"])},
		{"secure aggregation removed", "secagg", func(p *Plan) { p.SecureAggregation = nil }, "quantization_term", term(t, plans["secagg"]), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(plans[c.base]))
			if err != nil {
				t.Fatal(err)
			}
			c.edit(p)
			err = p.Validate()
			if err == nil {
				t.Fatalf("a record calibrated under %s %v accepted for a plan of %v", c.field, c.was, c.now)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "privacy."+c.field) ||
				!strings.Contains(msg, fmt.Sprint(c.was)) || !strings.Contains(msg, fmt.Sprint(c.now)) {
				t.Errorf("error %q, want one line naming privacy.%s, %v and %v", msg, c.field, c.was, c.now)
			}
			data, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(data); err == nil {
				t.Error("Parse accepts the edited plan")
			}
		})
	}
	// What the guarantee does not rest on may change: the step sizes, the
	// model's L2, the secure aggregation's threshold.
	for name, edit := range map[string]func(p *Plan){
		"eta":       func(p *Plan) { p.Eta, p.EtaG = 0.5, 2 },
		"l2":        func(p *Plan) { p.Model.L2 = 0.1 },
		"threshold": func(p *Plan) { p.SecureAggregation.Threshold = 2 },
	} {
		p, err := Parse([]byte(plans["secagg"]))
		if err != nil {
			t.Fatal(err)
		}
		edit(p)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestLegacyRecordRefused: a record written before records named the
// settings they were calibrated under (the JSON of a calibrated plan with
// the record's participation, workload, rounds, strategy, algorithm,
// learners, tau, clip, relation and sampling taken out, as an older dpmf
// wrote run.json) does not say which participation its sensitivity of C
// is under: Parse refuses it in one line that says to calibrate again,
// and the same plan calibrated again parses.
func TestLegacyRecordRefused(t *testing.T) {
	for name, data := range builtPlans(t) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatal(err)
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(m["privacy"], &r); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"participation", "workload", "rounds", "strategy", "algorithm", "learners", "tau", "clip", "relation", "sampling"} {
			if _, ok := r[k]; !ok && k != "tau" && k != "algorithm" && k != "sampling" {
				t.Errorf("%s: the record has no %q", name, k)
			}
			delete(r, k)
		}
		var err error
		if m["privacy"], err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		legacy, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(legacy)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "without its participation") || !strings.Contains(err.Error(), "calibrate the plan again") {
			t.Errorf("%s: a record without its settings: %v, want one line saying to calibrate again", name, err)
		}
		if p, err = parseWithoutRecord(legacy); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Build(t.Context()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if again, err := p.Marshal(); err != nil {
			t.Fatal(err)
		} else if _, err := Parse(again); err != nil {
			t.Errorf("%s: calibrated again: %v", name, err)
		}
	}
}

// parseWithoutRecord parses a plan's JSON without its privacy record.
func parseWithoutRecord(data []byte) (*Plan, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "privacy")
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// TestRecordNamesItsSettings: the settings a record names are the plan's
// in canonical form, whatever the plan's spelling of a default: a plan
// without participation, workload, strategy or relation records single,
// prefix, optimal and replace-one (the independent algorithm, identity);
// one that names them records the same.
func TestRecordNamesItsSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Plan
		want Record
	}{
		{"defaults", &Plan{Rounds: 4, Algorithm: AlgoCorrelated, Learners: 2, Tau: 3, Clip: 1, Target: &Target{Eps: 1, Delta: 1e-5}},
			Record{Participation: "single", Workload: "prefix", Rounds: 4, Strategy: "optimal", Algorithm: AlgoCorrelated, Learners: 2, Tau: 3, Clip: 1, Relation: "replace-one"}},
		{"named", &Plan{Rounds: 4, Workload: "prefix", Participation: "single", Strategy: "optimal", Algorithm: AlgoCorrelated, Learners: 2, Tau: 3, Clip: 1,
			Target: &Target{Eps: 1, Delta: 1e-5, Relation: "replace-one"}},
			Record{Participation: "single", Workload: "prefix", Rounds: 4, Strategy: "optimal", Algorithm: AlgoCorrelated, Learners: 2, Tau: 3, Clip: 1, Relation: "replace-one"}},
		{"independent", &Plan{Rounds: 4, Participation: "epochs:2", Algorithm: AlgoIndependent, Learners: 2, Clip: 0.5, Target: &Target{Eps: 1, Delta: 1e-5, Relation: "add-remove"}},
			Record{Participation: "epochs:2", Workload: "prefix", Rounds: 4, Strategy: "identity", Algorithm: AlgoIndependent, Learners: 2, Clip: 0.5, Relation: "add-remove"}},
	} {
		if _, err := c.p.Build(t.Context()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := *c.p.Privacy
		got := Record{Participation: r.Participation, Workload: r.Workload, Rounds: r.Rounds, Strategy: r.Strategy, Algorithm: r.Algorithm,
			Learners: r.Learners, Tau: r.Tau, Clip: r.Clip, Relation: r.Relation, Sampling: r.Sampling}
		if got != c.want {
			t.Errorf("%s: record names %+v, want %+v", c.name, got, c.want)
		}
	}
}

// term returns the quantization term of the record of a plan's JSON.
func term(t *testing.T, data string) float64 {
	t.Helper()
	p, err := Parse([]byte(data))
	if err != nil || p.Privacy == nil || !(p.Privacy.QuantizationTerm > 0) {
		t.Fatalf("a plan with secure aggregation: %v", err)
	}
	return p.Privacy.QuantizationTerm
}
