package plan

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
)

// builtPlans returns the JSON of calibrated plans, one per method a record
// can carry: exact, paper, zcdp (the independent baseline under the paper's
// calibration), the amplified accounting, and exact with secure
// aggregation.
func builtPlans(t testing.TB) map[string]string {
	t.Helper()
	sa, err := NewSecureAggregation(3, 2, 1, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]*Plan{
		"exact": {Rounds: 8, Algorithm: AlgoCorrelated, Learners: 3, Clip: 1, Strategy: "banded:bands=2", Participation: "minsep:2",
			Target: &Target{Eps: 1, Delta: 1e-5}},
		"paper": {Rounds: 8, Algorithm: AlgoBaselineCorrelated, Learners: 3, Clip: 0.5, Strategy: "tree",
			Target: &Target{Eps: 2, Delta: 1e-3, Calibration: Paper, Relation: "add-remove"}},
		"zcdp": {Rounds: 8, Algorithm: AlgoIndependent, Learners: 2, Clip: 1,
			Target: &Target{Eps: 1, Delta: 1e-6, Calibration: Paper}},
		"amplified": {Rounds: 8, Algorithm: AlgoCorrelated, Learners: 3, Clip: 1, Strategy: "banded:bands=2", Participation: "minsep:2",
			Target: &Target{Eps: 4, Delta: 1e-5, Sampling: 0.5}},
		"secagg": {Rounds: 8, Algorithm: AlgoCorrelated, Learners: 3, Tau: 2, Clip: 1, Strategy: "bsr:bands=2",
			Model: &Model{Name: "logistic", Features: 4}, SecureAggregation: sa, Target: &Target{Eps: 1, Delta: 1e-5}},
	}
	out := map[string]string{}
	for name, p := range plans {
		if _, err := p.Build(t.Context()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := p.Marshal()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = string(data)
	}
	return out
}

// A privacy record read back from JSON is data: Parse refuses one that
// Calibrate cannot have written for the plan (before, a negative noise
// std, a record for another (eps, delta), an unknown method or a noise
// that falls short of the target were all accepted), and a plan without
// "format" is read as the current format, as Plan.Format documents
// (before, it was an error). A key repeated in one object is an error
// (before, the last one silently won).
func TestParseRefusesInconsistentRecord(t *testing.T) {
	plans := builtPlans(t)
	for name, data := range plans {
		if _, err := Parse([]byte(data)); err != nil {
			t.Errorf("%s: the calibrated plan does not parse: %v", name, err)
		}
	}
	exact := plans["exact"]
	rec := func(s string) string { return s[strings.Index(s, `"privacy"`):] }
	// field returns the JSON text of a record field's value.
	field := func(s, key string) string {
		r := rec(s)
		i := strings.Index(r, `"`+key+`":`) + len(key) + 3
		j := i + strings.IndexAny(r[i:], ",}")
		return r[i:j]
	}
	// setField replaces a record field's value.
	setField := func(s, key, v string) string {
		old := `"` + key + `":` + field(s, key)
		return strings.Replace(s, old, `"`+key+`":`+v, 1)
	}
	std := field(exact, "noise_std")
	for _, c := range []struct {
		name, data, want string
	}{
		{"negative noise std", setField(exact, "noise_std", "-"+std), "privacy.noise_std"},
		{"zero noise std", setField(setField(exact, "noise_std", "0"), "sigma", "0"), "privacy.noise_std"},
		{"another eps", strings.Replace(exact, `"privacy":{"eps":1`, `"privacy":{"eps":100`, 1), "privacy (eps, delta)"},
		{"negative eps", strings.Replace(exact, `"privacy":{"eps":1`, `"privacy":{"eps":-1`, 1), "privacy (eps, delta)"},
		{"another delta", setField(exact, "delta", "0.5"), "privacy (eps, delta)"},
		{"unknown method", setField(exact, "method", `"bogus"`), "privacy.method"},
		{"method of another calibration", setField(exact, "method", `"paper"`), "privacy.method"},
		{"amplified method without sampling", setField(exact, "method", `"amplified-banded-pld"`), "privacy.method"},
		{"negative gamma", setField(exact, "gamma", "-1"), "privacy.gamma"},
		{"negative loss", setField(exact, "loss", "-1"), "privacy.loss"},
		{"smaller sensitivity", setField(exact, "sensitivity", "0.1"), "privacy.sensitivity"},
		{"halved noise", setField(setField(exact, "noise_std", "2"), "sigma", strconv.FormatFloat(2/1.3333333333333335, 'g', -1, 64)), "privacy.noise_std"},
		{"sigma not std / sensitivity", setField(exact, "sigma", "1"), "privacy.sigma"},
		{"smaller unit sensitivity", setField(exact, "unit_sensitivity", "1"), "privacy.sensitivity"},
		{"amplified noise not sigma times sensitivity", setField(plans["amplified"], "noise_std", "1e-3"), "privacy.noise_std"},
		{"amplified zero sigma", setField(plans["amplified"], "sigma", "0"), "privacy.sigma"},
		{"rounds past MaxRounds", strings.Replace(exact, `"rounds":8`, `"rounds":1099511627776`, 1), "rounds"},
		// Before, any string was taken, and then no seed matched it.
		{"seed digest not hex", strings.Replace(exact, `"format":1`, `"format":1,"seed_sha256":"zz"`, 1), "seed_sha256"},
		{"seed digest in upper case", strings.Replace(exact, `"format":1`, `"format":1,"seed_sha256":"`+strings.ToUpper(SeedDigest(1))+`"`, 1), "seed_sha256"},
	} {
		if c.data == exact {
			t.Fatalf("%s: the edit did not apply", c.name)
		}
		_, err := Parse([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming %s", c.name, err, c.want)
		}
	}
	// The halved noise is indeed short of the target (an independent check
	// by the exact curve of the Gaussian mechanism, Balle and Wang 2018).
	if d, err := accountant.Delta(1, 4.0/3/2); err != nil || !(d > 1e-5) {
		t.Errorf("delta of the halved noise %v (%v), want > 1e-5", d, err)
	}

	// A key twice in one object is an error (encoding/json keeps the
	// last); the same key in different objects is not.
	for _, dup := range []string{
		strings.Replace(exact, `"rounds":8`, `"rounds":8,"rounds":9`, 1),
		strings.Replace(exact, `"target":{"eps":1`, `"target":{"eps":1,"eps":2`, 1),
		strings.Replace(exact, `"privacy":{"eps":1`, `"privacy":{"eps":1,"eps":1`, 1),
		strings.Replace(exact, `"format":1`, `"format":1,"target":null`, 1),
	} {
		if _, err := Parse([]byte(dup)); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("a repeated key: %v, want an error naming it", err)
		}
	}
	// encoding/json matches keys to fields without regard to case
	// (Unicode simple folding, so also the long s and the Kelvin sign): a
	// key spelled otherwise than Marshal writes it is an error, alone or
	// beside the field's own key (before, "ROUNDS":9 after "rounds":8 read
	// as 9, and "Eps":100 raised the target's eps past the duplicate check).
	for _, other := range []string{
		strings.Replace(exact, `"rounds":8`, `"rounds":8,"ROUNDS":9`, 1),
		strings.Replace(exact, `"rounds":8`, `"Rounds":8`, 1),
		strings.Replace(exact, `"target":{"eps":1`, `"target":{"eps":1,"Eps":100`, 1),
		strings.Replace(exact, `"noise_std":`+std, `"noise_std":`+std+`,"NOISE_STD":1e9`, 1),
		strings.Replace(exact, `"sigma":`, `"ſigma":1e9,"sigma":`, 1),
		strings.Replace(exact, `"rounds":8`, `"rounds":8,"K":1`, 1),
	} {
		if other == exact {
			t.Fatal("the edit did not apply")
		}
		if _, err := Parse([]byte(other)); err == nil || !strings.Contains(err.Error(), "want a field name as the plan writes it") {
			t.Errorf("a key in another case: %v, want an error naming it", err)
		}
	}
	if !strings.Contains(exact, `"target":{"eps":1,"delta"`) || !strings.Contains(exact, `"privacy":{"eps":1,"delta"`) {
		t.Error("eps and delta are not in both the target and the record")
	}

	noFormat := strings.Replace(exact, `"format":1,`, ``, 1)
	p, err := Parse([]byte(noFormat))
	if err != nil || p.Format != Format {
		t.Errorf("a plan without format: %v, format %v, want it read as %d", err, p, Format)
	}
	if _, err := Parse([]byte(strings.Replace(exact, `"format":1`, `"format":2`, 1))); err == nil {
		t.Error("format 2 accepted")
	}
}

// Calibrate refuses metrics it cannot record and a nil plan is an error:
// before, gamma = +Inf went into the record (which then could not be
// written), the amplified accounting dereferenced a factorization without
// a workload, and Validate and Marshal of a nil *Plan panicked.
func TestCalibrateBadFactorization(t *testing.T) {
	amplified := func() *Plan {
		return &Plan{Rounds: 8, Algorithm: AlgoCorrelated, Learners: 3, Clip: 1, Strategy: "banded:bands=2", Participation: "minsep:2",
			Target: &Target{Eps: 4, Delta: 1e-5, Sampling: 0.5}}
	}
	f, err := amplified().Factorize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	noWorkload := *f
	noWorkload.Workload = nil
	if err := amplified().Calibrate(t.Context(), &noWorkload); err != nil {
		t.Errorf("amplified calibration of a factorization without its workload: %v", err)
	}
	for _, gamma := range []float64{math.Inf(1), math.NaN(), 0} {
		g := *f
		g.Metrics.Gamma = gamma
		for _, sampling := range []float64{0, 0.5} {
			p := amplified()
			p.Target.Sampling = sampling
			if err := p.Calibrate(t.Context(), &g); err == nil || p.Privacy != nil {
				t.Errorf("gamma %v, sampling %v: calibrated to %+v", gamma, sampling, p.Privacy)
			}
		}
	}
	var nilPlan *Plan
	if err := nilPlan.Validate(); err == nil {
		t.Error("Validate of a nil plan succeeded")
	}
	if _, err := nilPlan.Marshal(); err == nil {
		t.Error("Marshal of a nil plan succeeded")
	}
	if _, err := nilPlan.Build(t.Context()); err == nil {
		t.Error("Build of a nil plan succeeded")
	}
}

// Every record Calibrate writes passes Parse's record checks (including
// the exact-curve verification of its noise), over a grid of budgets,
// algorithms, calibrations, relations and learners: the checks refuse
// edits, never a calibration.
func TestCalibratedRecordsParse(t *testing.T) {
	for _, eps := range []float64{1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 100, 1000} {
		for _, delta := range []float64{1e-12, 1e-8, 1e-5, 1e-3, 0.1, 0.5, 0.9} {
			for _, algo := range []string{AlgoCorrelated, AlgoIndependent, AlgoBaselineCorrelated} {
				for _, cal := range []Calibration{Exact, Paper} {
					for _, rel := range []string{"", "add-remove"} {
						for _, n := range []int{1, 7} {
							g := 1.7
							if algo == AlgoIndependent {
								g = 1
							}
							p := &Plan{Algorithm: algo, Rounds: 8, Learners: n, Clip: 0.3, Target: &Target{Eps: eps, Delta: delta, Calibration: cal, Relation: rel}}
							if err := p.Calibrate(t.Context(), singleMetrics(algo, g)); err != nil {
								t.Fatalf("calibrate %v %v %s %v %q %d: %v", eps, delta, algo, cal, rel, n, err)
							}
							p.Privacy.Loss = 1
							data, err := p.Marshal()
							if err != nil {
								t.Errorf("marshal: %v", err)
								continue
							}
							if _, err := Parse(data); err != nil {
								t.Errorf("%v %v %s %v %q %d: %v", eps, delta, algo, cal, rel, n, err)
							}
						}
					}
				}
			}
		}
	}
}

// An amplified record whose sigma falls short of its target is refused,
// even when its noise std is that sigma times the sensitivity: Parse
// bounds the eps of the record's sigma with the PLD accountant (before, an
// amplified record was checked only for sigma x sensitivity = noise std,
// so a sigma of any size passed). At q = 1 the accounting is two
// compositions of the Gaussian mechanism, whose exact curve (Balle and
// Wang 2018) tells the two sigmas apart independently.
func TestParseRefusesAmplifiedSigmaShortOfTarget(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		ok    bool
	}{{20, true}, {0.5, false}} {
		// Two compositions of sensitivity 1 at noise sigma: mu = sqrt(2) / sigma.
		d, err := accountant.Delta(1, math.Sqrt2/c.sigma)
		if err != nil || (d <= 1e-5) != c.ok {
			t.Fatalf("sigma %v: delta at eps 1 is %v (%v)", c.sigma, d, err)
		}
		p := &Plan{Rounds: 4, Algorithm: AlgoCorrelated, Learners: 3, Clip: 1, Strategy: "banded:bands=2", Participation: "minsep:2",
			Target: &Target{Eps: 1, Delta: 1e-5, Sampling: 1}}
		sens, err := accountant.ReleaseSensitivity(1, 3, accountant.ReplaceOne, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Privacy = &Record{Eps: 1, Delta: 1e-5, Method: MethodAmplified, Sensitivity: sens, Rule: "by hand",
			NoiseStd: c.sigma * sens, Sigma: c.sigma, Gamma: 1, Loss: 1, UnitSensitivity: 2,
			Participation: "minsep:2", Workload: WorkloadPrefix, Rounds: 4, Strategy: "banded:bands=2", Algorithm: AlgoCorrelated,
			Learners: 3, Clip: 1, Relation: "replace-one", Sampling: 1}
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Parse(data)
		if c.ok && err != nil {
			t.Errorf("sigma %v: %v", c.sigma, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "privacy.sigma") || !strings.Contains(err.Error(), "PLD accountant's eps at this sigma")) {
			t.Errorf("sigma %v: %v, want an error naming privacy.sigma", c.sigma, err)
		}
	}
}

// VerifyRecord computes the factorization again and refuses a record whose
// metrics are not its own, which Parse cannot see: a unit sensitivity
// halved together with the release sensitivity and sigma (consistent, so
// Parse accepts it, and the noise then "gives" a smaller eps), another
// gamma, loss or rule. The record Calibrate wrote passes.
func TestVerifyRecordRefusesOtherMetrics(t *testing.T) {
	p := &Plan{Rounds: 8, Algorithm: AlgoCorrelated, Learners: 3, Clip: 1, Strategy: "banded:bands=2", Participation: "minsep:2",
		Target: &Target{Eps: 1, Delta: 1e-5}}
	if _, err := p.Build(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.VerifyRecord(t.Context()); err != nil {
		t.Fatalf("the calibrated record: %v", err)
	}
	// banded:bands=2 under minsep:2 at R = 8: the columns of C take part
	// 4 times, 2 rounds apart, and a banded C's columns that far apart do
	// not overlap: unit sensitivity sqrt(4) gamma = 2 gamma.
	if r := p.Privacy; math.Abs(r.UnitSensitivity-2*r.Gamma) > 1e-12 {
		t.Fatalf("unit sensitivity %v, gamma %v: want 2 gamma", r.UnitSensitivity, r.Gamma)
	}
	halved := func(r *Record) {
		r.UnitSensitivity /= 2
		r.Sensitivity, _ = accountant.ReleaseSensitivity(1, 3, accountant.ReplaceOne, r.UnitSensitivity)
		r.Sigma = r.NoiseStd / r.Sensitivity
	}
	for _, c := range []struct {
		name string
		edit func(*Record)
		want string
	}{
		{"unit sensitivity halved", halved, "privacy.unit_sensitivity"},
		{"gamma", func(r *Record) { r.Gamma *= 1.01 }, "privacy.gamma"},
		{"loss", func(r *Record) { r.Loss /= 2 }, "privacy.loss"},
		{"rule", func(r *Record) { r.UnitRule = "largest column norm" }, "privacy.unit_sensitivity_rule"},
		{"exactness", func(r *Record) { r.UnitExact = !r.UnitExact }, "privacy.unit_sensitivity_rule"},
	} {
		q := *p
		r := *p.Privacy
		c.edit(&r)
		q.Privacy = &r
		data, err := q.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		read, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: Parse refuses the edit itself (%v): VerifyRecord is not what is tested", c.name, err)
		}
		if err := read.VerifyRecord(t.Context()); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line naming %s", c.name, err, c.want)
		}
	}
	if err := (&Plan{Rounds: 8}).VerifyRecord(t.Context()); err == nil {
		t.Error("a plan without a record verified")
	}
}
