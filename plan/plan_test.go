package plan

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/factorize"
	"github.com/dpmf/dpmf/internal/param"
)

// singleMetrics returns a factorization whose metrics are those of single
// participation with largest column norm gamma, named as the strategy of a
// plan of algorithm algo that names none (the identity for the independent
// algorithm, else optimal): only the metrics matter to the calibration,
// which refuses a factorization of another strategy than the plan's.
func singleMetrics(algo string, gamma float64) *factorize.Factorization {
	name := factorize.StrategyOptimal
	if algo == AlgoIndependent {
		name = factorize.StrategyIdentity
	}
	return &factorize.Factorization{Strategy: name, Metrics: factorize.Metrics{Gamma: gamma,
		UnitSensitivity: factorize.Sensitivity{Value: gamma, Exact: true, Rule: factorize.RuleColumnNorm}}}
}

// The noise std of a calibration is the accountant's for its sensitivity,
// and reproduces independently computed values: the published exact noise
// multiplier 0.68984233 at (5, 1e-3) (notes, section 4), and the paper's two
// formulas evaluated directly; the sensitivity is 2 gamma B_g / n (exact)
// or 2 gamma B_g (paper).
func TestCalibrate(t *testing.T) {
	const eps, delta, n, clip, gamma = 5.0, 1e-3, 10, 2.0, 1.3
	L := math.Log(1 / delta)
	for _, c := range []struct {
		algo   string
		cal    Calibration
		method accountant.Method
		sens   float64
		want   float64
		tol    float64
	}{
		{AlgoCorrelated, Exact, accountant.Exact, 2 * gamma * clip / n, 0.68984233 * 2 * gamma * clip / n, 1e-8},
		{AlgoIndependent, Exact, accountant.Exact, 2 * clip / n, 0.68984233 * 2 * clip / n, 1e-8},
		{AlgoBaselineCorrelated, Exact, accountant.Exact, 2 * gamma * clip / n, 0.68984233 * 2 * gamma * clip / n, 1e-8},
		// V^2 = 4 gamma^2 B_g^2 (2 log(1/delta) + eps) / eps^2.
		{AlgoBaselineCorrelated, Paper, accountant.Paper, 2 * gamma * clip, math.Sqrt(4 * gamma * gamma * clip * clip * (2*L + eps) / (eps * eps)), 1e-10},
		{AlgoCorrelated, Paper, accountant.Paper, 2 * gamma * clip, math.Sqrt(4 * gamma * gamma * clip * clip * (2*L + eps) / (eps * eps)), 1e-10},
		// V^2 = 2 B_g^2 / rho, rho = (sqrt(eps + L) - sqrt(L))^2.
		{AlgoIndependent, Paper, accountant.ZCDP, 2 * clip, math.Sqrt(2 * clip * clip / math.Pow(math.Sqrt(eps+L)-math.Sqrt(L), 2)), 1e-10},
	} {
		g := gamma
		if c.algo == AlgoIndependent {
			g = 1
		}
		p := &Plan{Algorithm: c.algo, Rounds: 8, Learners: n, Clip: clip, Target: &Target{Eps: eps, Delta: delta, Calibration: c.cal}}
		if err := p.Calibrate(t.Context(), singleMetrics(c.algo, g)); err != nil {
			t.Fatal(err)
		}
		r := p.Privacy
		acc, err := accountant.NoiseStd(eps, delta, r.Sensitivity, c.method)
		if err != nil {
			t.Fatal(err)
		}
		if r.NoiseStd != acc || r.Method != c.method.String() || math.Abs(r.Sensitivity-c.sens) > 1e-15*c.sens {
			t.Errorf("%v, %v: std %v with %v for sensitivity %v; accountant %v, sensitivity %v", c.algo, c.cal, r.NoiseStd, r.Method, r.Sensitivity, acc, c.sens)
		}
		if math.Abs(r.NoiseStd-c.want) > c.tol*c.want || r.NoiseStd < c.want*(1-1e-12) && c.cal == Paper {
			t.Errorf("%v, %v: std %.12g, want %.12g", c.algo, c.cal, r.NoiseStd, c.want)
		}
		rec := accountant.Record{Eps: r.Eps, Delta: r.Delta, Sensitivity: r.Sensitivity, NoiseStd: r.NoiseStd, Participation: accountant.SingleParticipation}
		if err := rec.Verify(); err != nil || r.Eps != eps || r.Delta != delta {
			t.Errorf("%v, %v: record %+v does not verify: %v", c.algo, c.cal, r, err)
		}
	}
	for _, c := range []struct {
		name                    string
		algo                    string
		eps, delta, clip, gamma float64
		n                       int
	}{
		{"nonprivate", AlgoNonPrivate, 1, 1e-5, 1, 1, 1},
		{"eps 0", AlgoCorrelated, 0, 1e-5, 1, 1, 1},
		{"eps Inf", AlgoCorrelated, math.Inf(1), 1e-5, 1, 1, 1},
		{"delta 0", AlgoCorrelated, 1, 0, 1, 1, 1},
		{"delta 1", AlgoCorrelated, 1, 1, 1, 1, 1},
		{"clip 0", AlgoCorrelated, 1, 1e-5, 0, 1, 1},
		{"clip Inf", AlgoIndependent, 1, 1e-5, math.Inf(1), 1, 1},
		{"gamma NaN", AlgoCorrelated, 1, 1e-5, 1, math.NaN(), 1},
		{"learners 0", AlgoCorrelated, 1, 1e-5, 1, 1, 0},
		{"independent with gamma 2", AlgoIndependent, 1, 1e-5, 1, 2, 1},
	} {
		p := &Plan{Algorithm: c.algo, Rounds: 8, Learners: c.n, Clip: c.clip, Target: &Target{Eps: c.eps, Delta: c.delta}}
		err := p.Calibrate(t.Context(), singleMetrics(c.algo, c.gamma))
		if err == nil {
			t.Errorf("%s: no error", c.name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error of several lines: %q", c.name, err)
		}
	}
}

// The recipe's sensitivity under fixed epochs is the factorization's,
// checked against ||C u|| for the worst epoch pattern u (C >= 0 here, so
// that is the sensitivity), times 2 B_g / n.
func TestCalibrateEpochs(t *testing.T) {
	const R, n, clip, eps, delta = 24, 4, 1.5, 2.0, 1e-5
	for _, part := range []string{"single", "epochs:3"} {
		p := &Plan{Algorithm: AlgoCorrelated, Strategy: factorize.StrategySqrt, Participation: part, Rounds: R, Learners: n, Clip: clip,
			Target: &Target{Eps: eps, Delta: delta}}
		f, err := p.Build(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		b := R
		if part != "single" {
			b = R / 3
		}
		want := 0.0
		for r := 0; r < b; r++ {
			s := 0.0
			for i := 0; i < R; i++ {
				v := 0.0
				for j := r; j < R; j += b {
					v += f.C.At(i, j)
				}
				s += v * v
			}
			want = math.Max(want, math.Sqrt(s))
		}
		want *= 2 * clip / n
		if got := p.Privacy.Sensitivity; math.Abs(got-want) > 1e-12*want {
			t.Errorf("%s: sensitivity %v, want %v", part, got, want)
		}
	}
}

// The amplified accounting is the accountant's sigma for the banded
// compositions times the per-participation sensitivity 2 gamma B_g / n
// (replace-one) or gamma B_g / n (add-remove).
func TestCalibrateAmplified(t *testing.T) {
	const R, b, n, clip = 32, 4, 5, 2.0
	rels := []accountant.Relation{accountant.ReplaceOne, accountant.AddRemove}
	if testing.Short() {
		rels = rels[:1] // each relation's search takes about a second
	}
	for _, rel := range rels {
		p := &Plan{Algorithm: AlgoCorrelated, Strategy: factorize.StrategyBanded, Participation: "minsep:4", Rounds: R, Learners: n, Clip: clip,
			Target: &Target{Eps: 2, Delta: 1e-5, Relation: rel.String(), Sampling: 0.5}}
		f, err := p.Factorize(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Calibrate(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		sigma, err := accountant.AmplifiedBandedSigma(t.Context(), 0.5, R, b, 2, 1e-5, rel)
		if err != nil {
			t.Fatal(err)
		}
		k := 1.0
		if rel == accountant.ReplaceOne {
			k = 2
		}
		sens := k * f.Metrics.Gamma * clip / n
		if r := p.Privacy; r.Method != MethodAmplified || r.Sigma != sigma || math.Abs(r.Sensitivity-sens) > 1e-15*sens || math.Abs(r.NoiseStd-sigma*sens) > 1e-14*sigma*sens {
			t.Errorf("%v: record %+v, want sigma %v sensitivity %v", rel, r, sigma, sens)
		}
	}
	// A C with more bands than the separation is refused.
	p := &Plan{Algorithm: AlgoCorrelated, Strategy: factorize.StrategyOptimal, Participation: "minsep:4", Rounds: R, Learners: n, Clip: clip,
		Target: &Target{Eps: 2, Delta: 1e-5, Sampling: 0.5}}
	if _, err := p.Build(t.Context()); err == nil {
		t.Error("amplified accounting of the optimal (dense) C accepted")
	}
}

// The amplified accounting's eps bounds, which Calibrate computes after
// its search and Parse to check a record, stop when the context is done
// (they took no context: mfsolve -sampling ran on through a PLD of up to
// seconds after SIGINT), and are otherwise SampledGaussianEpsilonBounds's
// bit for bit.
func TestCalibrateAmplifiedEpsContext(t *testing.T) {
	const q, sigma, R, b, delta = 0.5, 2.0, 32, 4, 1e-5
	got, err := amplifiedEps(t.Context(), q, sigma, R, b, delta, accountant.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	want, err := accountant.SampledGaussianEpsilonBounds(q, sigma, R/b, delta, accountant.AddRemove)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("amplifiedEps = %+v, SampledGaussianEpsilonBounds %+v", got, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := amplifiedEps(ctx, q, sigma, R, b, delta, accountant.AddRemove); !errors.Is(err, context.Canceled) {
		t.Errorf("amplifiedEps with a done context = %v, want context.Canceled", err)
	}
}

// A plan is written to JSON and read back bit for bit, float64 values
// included (values with 17 significant digits and subnormals), and its
// record survives the trip.
func TestJSONRoundTrip(t *testing.T) {
	p := &Plan{Workload: WorkloadPrefix, Rounds: 12, Participation: "epochs:3", Strategy: factorize.StrategySemisep,
		Algorithm: AlgoCorrelated, Learners: 3, Tau: 1, Clip: 0.1 + 0.2, Eta: 1.0 / 3, EtaG: math.Nextafter(1, 2), EtaInd: 5e-324,
		Model: &Model{Name: "logistic", Features: 4, L2: 1e-4}, SeedSHA256: SeedDigest(7),
		Target: &Target{Eps: math.Pi, Delta: 1e-3, Calibration: Paper, Relation: "add-remove"}}
	if _, err := p.Build(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p.Format = Format
	if !reflect.DeepEqual(p, q) {
		t.Errorf("read back %+v, want %+v", q, p)
	}
	for _, v := range [][2]float64{{p.Clip, q.Clip}, {p.Eta, q.Eta}, {p.EtaG, q.EtaG}, {p.EtaInd, q.EtaInd},
		{p.Privacy.NoiseStd, q.Privacy.NoiseStd}, {p.Privacy.Sensitivity, q.Privacy.Sensitivity}, {p.Target.Eps, q.Target.Eps}} {
		if math.Float64bits(v[0]) != math.Float64bits(v[1]) {
			t.Errorf("%v read back as %v", v[0], v[1])
		}
	}
	again, _ := q.Marshal()
	if !bytes.Equal(again, data) {
		t.Errorf("second encoding differs:\n%s\n%s", data, again)
	}
	// Unknown fields, trailing data and invalid plans are errors.
	for _, bad := range []string{
		strings.Replace(string(data), `"rounds"`, `"round"`, 1),
		string(data) + "{}",
		strings.Replace(string(data), `"format":1`, `"format":2`, 1),
		strings.Replace(string(data), `"algorithm":"correlated"`, `"algorithm":"bogus"`, 1),
		strings.Replace(string(data), `"strategy":"semiseparable"`, `"strategy":"bogus"`, 1),
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("parsed %s", bad)
		}
	}
	if _, err := (&Plan{Rounds: 1, Clip: math.NaN()}).Marshal(); err == nil {
		t.Error("NaN clip marshalled")
	}
}

// Semiseparable keeps its factors under repeated participation, where the
// sensitivity needs C: the plan's factorization under epochs has them.
func TestSemisepEpochs(t *testing.T) {
	p := &Plan{Algorithm: AlgoCorrelated, Strategy: factorize.StrategySemisep, Participation: "epochs:2", Rounds: 16, Learners: 2, Clip: 1,
		Target: &Target{Eps: 1, Delta: 1e-5}}
	f, err := p.Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f.C == nil || p.Privacy == nil || p.Privacy.UnitSensitivity < f.Metrics.Gamma {
		t.Errorf("factors %v, record %+v", f.C != nil, p.Privacy)
	}
}

// A plan records the strategy's full spec (SpecOf is s.Spec()): the plan
// factorizes the strategy value it was given, with the same metrics as
// factorize computes for that value, and its JSON reads back the spec;
// every registered strategy's spec reads back as the same value. A spec
// that does not parse, or a setting the participation would ignore
// (factorize.CheckUnder), is refused before solving.
func TestStrategySpec(t *testing.T) {
	w, _ := factorize.Prefix(24)
	for _, s := range []factorize.Strategy{
		factorize.BandedStrategy{Bands: 3},
		factorize.BLTStrategy{Buffers: 2},
		factorize.BandInvStrategy{Bands: 5},
		factorize.OptimalStrategy{},
	} {
		p := &Plan{Algorithm: AlgoCorrelated, Strategy: SpecOf(s), Rounds: 24, Learners: 2, Clip: 1}
		if s.Spec() == s.Name() && s.Name() != factorize.StrategyOptimal {
			t.Fatalf("%s: spec %q records no setting", s.Name(), s.Spec())
		}
		got, err := p.Factorize(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.Factorize(t.Context(), w, factorize.SingleParticipation())
		if err != nil {
			t.Fatal(err)
		}
		if got.Metrics.Loss != want.Metrics.Loss || got.Metrics.Gamma != want.Metrics.Gamma {
			t.Errorf("%s: plan's loss %v gamma %v, want %v %v", p.Strategy, got.Metrics.Loss, got.Metrics.Gamma, want.Metrics.Loss, want.Metrics.Gamma)
		}
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(data)
		if err != nil || q.Strategy != s.Spec() {
			t.Errorf("%s: read back %q, %v", s.Spec(), q.Strategy, err)
		}
	}
	// Every registered strategy's spec reads back as the same value.
	for _, name := range factorize.Strategies() {
		for _, spec := range []string{name, SpecOf(factorize.BandedStrategy{Bands: 7}), SpecOf(factorize.BLTStrategy{Buffers: 3})} {
			if !strings.HasPrefix(spec, name) {
				continue
			}
			s, err := factorize.ParseStrategy(spec)
			if err != nil {
				t.Fatal(err)
			}
			back, err := factorize.ParseStrategy(SpecOf(s))
			if err != nil || !reflect.DeepEqual(back, s) {
				t.Errorf("%s: SpecOf %q reads back as %#v, %v; want %#v", spec, SpecOf(s), back, err, s)
			}
		}
	}
	for _, c := range []struct{ spec, part, want string }{
		{"banded:bands=x", "single", "bands"},
		{"banded:tol=0.001", "single", "participation"},
		{"optimal:path=dense", "epochs:2", "participation"},
	} {
		p := &Plan{Algorithm: AlgoCorrelated, Strategy: c.spec, Participation: c.part, Rounds: 24, Learners: 2, Clip: 1}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s under %s: error %v, want one mentioning %q", c.spec, c.part, err, c.want)
		}
	}
}

// An error of another package reads with the plan's prefix alone, and is
// still the other package's error.
func TestErrorPrefix(t *testing.T) {
	for _, p := range []Plan{
		{Rounds: 10, Strategy: "bogus"},
		{Rounds: 10, Participation: "zz"},
		{Rounds: 10, Participation: "epochs:3"},
		{Rounds: 10, Learners: 1, Clip: 1, Target: &Target{Eps: 1, Delta: 1e-5, Calibration: Exact, Relation: "foo"}},
	} {
		err := p.Validate()
		if err == nil {
			t.Fatalf("%+v: no error", p)
		}
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "plan: "); !ok || strings.HasPrefix(rest, "dpmf: ") || strings.HasPrefix(rest, "accountant: ") {
			t.Errorf("%+v: error %q, want one prefix \"plan: \"", p, msg)
		}
	}
	var pe *param.Error
	if err := (&Plan{Rounds: 10, Strategy: "bogus"}).Validate(); !errors.As(err, &pe) || pe.Param != "strategy" {
		t.Errorf("error %v is not the strategy's param.Error", err)
	}
}

// Calibrate's errors for a missing input say what to supply: a newcomer who
// leaves out the target or the factorization learns the field or call.
func TestCalibrateMissingInputsSayWhatToSet(t *testing.T) {
	noTarget := &Plan{Algorithm: AlgoCorrelated, Rounds: 4, Learners: 2, Clip: 1}
	f, err := noTarget.Factorize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := noTarget.Calibrate(t.Context(), f); err == nil || !strings.Contains(err.Error(), "Plan.Target") {
		t.Errorf("Calibrate without a target: error %v, want one naming Plan.Target", err)
	}
	p := &Plan{Algorithm: AlgoCorrelated, Rounds: 4, Learners: 2, Clip: 1, Target: &Target{Eps: 1, Delta: 1e-5}}
	if err := p.Calibrate(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "Plan.Factorize") {
		t.Errorf("Calibrate of a nil factorization: error %v, want one naming Plan.Factorize", err)
	}
}

// Calibrate refuses a factorization of another strategy than the plan's,
// or of the plan's with other settings, in one line naming both: the
// record names the plan's strategy, so it would describe another
// factorization than the one whose noise it calibrates. Before, each got
// a record (the sqrt-normalized one, of gamma 1, even for the independent
// baseline, whose record names the identity), and only VerifyRecord,
// factorizing the plan's strategy again, told them apart. The plan's own
// factorization, the same strategy's loss-only result and one moved to
// the plan's participation (which keeps the name, not the settings) are
// accepted.
func TestCalibrateRefusesAnotherStrategy(t *testing.T) {
	const r = 8
	w, err := factorize.Prefix(r)
	if err != nil {
		t.Fatal(err)
	}
	factorizeSpec := func(spec string, part factorize.Participation, lossOnly bool) *factorize.Factorization {
		t.Helper()
		s, err := factorize.ParseStrategy(spec)
		if err == nil && lossOnly {
			s, err = factorize.WithLossOnly(s, true)
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Factorize(t.Context(), w, part)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	newPlan := func(algo, strategy, part string) *Plan {
		return &Plan{Rounds: r, Algorithm: algo, Learners: 4, Clip: 1, Strategy: strategy, Participation: part, Target: &Target{Eps: 2, Delta: 1e-5}}
	}
	single := factorize.SingleParticipation()
	for _, c := range []struct {
		algo, plan, part string
		f                *factorize.Factorization
		want             []string
	}{
		{AlgoCorrelated, "", "", factorizeSpec("sqrt", single, false), []string{`strategy "sqrt"`, `plan's strategy "optimal"`}},
		{AlgoCorrelated, "identity", "", factorizeSpec("tree", single, false), []string{`strategy "tree"`, `plan's strategy "identity"`}},
		{AlgoIndependent, "", "", factorizeSpec("sqrt-normalized", single, false), []string{`strategy "sqrt-normalized"`, `plan's strategy "identity"`}},
		{AlgoBaselineCorrelated, "banded:bands=2", "minsep:2", factorizeSpec("banded:bands=3", factorize.MinSeparation(2, 0), false), []string{"banded", "bands=2", "settings"}},
	} {
		p := newPlan(c.algo, c.plan, c.part)
		err := p.Calibrate(t.Context(), c.f)
		ok := err != nil && p.Privacy == nil && !strings.Contains(err.Error(), "\n")
		for _, w := range c.want {
			ok = ok && strings.Contains(err.Error(), w)
		}
		if !ok {
			t.Errorf("%s plan of strategy %q, factorization of %s: %v (record %v), want one line saying %q", c.algo, c.plan, c.f.Strategy, err, p.Privacy, c.want)
		}
	}
	moved, err := factorizeSpec("optimal", single, false).WithParticipation(factorize.MinSeparation(4, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		plan, part string
		f          *factorize.Factorization
	}{
		{"the plan's own", "banded:bands=2", "minsep:2", factorizeSpec("banded:bands=2", factorize.MinSeparation(2, 0), false)},
		{"the plan's, loss-only", "", "", factorizeSpec("optimal", single, true)},
		{"the plan's, moved to its participation", "", "minsep:4", moved},
	} {
		if err := newPlan(AlgoCorrelated, c.plan, c.part).Calibrate(t.Context(), c.f); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// Calibrate replaces the record of a plan calibrated before, whatever
// that record says: the plan's target and clip changed since, so the old
// record no longer validates, and it is the one thing Calibrate is
// called to replace. The new record is that of the plan as it is now:
// the identity over 8 rounds (C = I, sensitivity 1) at (2, 1e-5) with
// clip 3 and 4 learners has noise std 1.99381245 x 2 x 3 / 4 (the
// published multiplier, notes section 4). Factorize, which does not read
// the record, works too. Before, both refused with an error about the
// old record ("privacy (eps, delta) (1, 1e-05), want the target's (2,
// 1e-05)"), which named nothing the caller had set wrong.
func TestCalibrateReplacesAnOldRecord(t *testing.T) {
	p := &Plan{Rounds: 8, Algorithm: AlgoCorrelated, Learners: 4, Clip: 1, Strategy: "identity", Target: &Target{Eps: 1, Delta: 1e-5}}
	if _, err := p.Build(t.Context()); err != nil {
		t.Fatal(err)
	}
	old := *p.Privacy
	p.Target.Eps, p.Clip = 2, 3
	f, err := p.Factorize(t.Context())
	if err != nil {
		t.Fatalf("Factorize of a plan whose record is of an older target: %v", err)
	}
	if err := p.Calibrate(t.Context(), f); err != nil {
		t.Fatalf("Calibrate of a plan whose record is of an older target: %v", err)
	}
	r := p.Privacy
	if want := 1.99381245 * 2 * 3 / 4; r.Eps != 2 || r.Sensitivity != 2*3.0/4 || math.Abs(r.NoiseStd-want) > 1e-8*want {
		t.Errorf("record (eps %v, sensitivity %v, std %v), want (2, %v, %v)", r.Eps, r.Sensitivity, r.NoiseStd, 2*3.0/4, want)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("the recalibrated plan: %v", err)
	}
	// A failed calibration leaves the plan's record as it was.
	p.Privacy = &old
	if err := p.Calibrate(t.Context(), nil); err == nil || p.Privacy == nil || *p.Privacy != old {
		t.Errorf("a failed Calibrate: %v, record %+v, want an error and the record as it was", err, p.Privacy)
	}
}
