package main

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dpmf/dpmf/accountant"
	"github.com/dpmf/dpmf/fedopt"
	"github.com/dpmf/dpmf/mechanism"
	"github.com/dpmf/dpmf/model"
	"github.com/dpmf/dpmf/plan"
)

func TestSecureAggregationUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-threshold", "2"}, "-threshold applies with -secure-aggregation only"},
		{[]string{"-secure-aggregation", "-learners", "4", "-threshold", "2"}, "-threshold 2: want n/2 < T <= n for -learners 4 (or 0: 3)"},
		{[]string{"-secure-aggregation", "-learners", "4", "-threshold", "5"}, "-threshold 5"},
		{[]string{"-secure-aggregation", "-algo", "nonprivate", "-clip", "0"}, "-clip 0 with -secure-aggregation"},
		// The colluders c the run assumes: 2T > n + c, by hand for n = 10
		// (T = 6: c <= 1; the default T = 7: c <= 3; T = 8: c <= 5).
		{[]string{"-colluders", "1"}, "-colluders applies with -secure-aggregation only"},
		{[]string{"-secure-aggregation", "-learners", "10", "-threshold", "6", "-colluders", "2"}, "-colluders 2 with threshold 6 of 10 learners: want 0 <= c < T and 2T > n + c (T = 6 allows c <= 1): raise the threshold to 7 or more, or lower the colluders (-threshold 6, -learners 10)"},
		{[]string{"-secure-aggregation", "-learners", "10", "-colluders", "4"}, "-colluders 4 with threshold 7 of 10 learners: want 0 <= c < T and 2T > n + c (T = 7 allows c <= 3): raise the threshold to 8"},
		{[]string{"-secure-aggregation", "-learners", "10", "-threshold", "8", "-colluders", "6"}, "(T = 8 allows c <= 5): raise the threshold to 9"},
		{[]string{"-secure-aggregation", "-learners", "10", "-colluders", "-1"}, "-colluders -1 with threshold 7 of 10 learners: want 0 <= c < T and 2T > n + c (T = 7 allows c <= 3): c counts learners"},
		// The protocol needs 2..255 learners: the run used to go on with the
		// quantized sum alone, without the protocol the docs promise.
		{[]string{"-secure-aggregation", "-learners", "1"}, "-learners 1 with -secure-aggregation: want 2..255 learners"},
		{[]string{"-secure-aggregation", "-learners", "256"}, "-learners 256 with -secure-aggregation: want 2..255 learners"},
	} {
		r := runOfl(t, c.args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, r.code)
		}
		requireOneErrorLine(t, r.stderr, c.want)
	}
}

// ofl -secure-aggregation: the report shows the plan's secure aggregation,
// eps is the target, and the sensitivity is the plain one with the clip
// B_g' = B_g + term / tau, term computed here by hand.
func TestSecureAggregationReport(t *testing.T) {
	type rep struct {
		Eps, Delta, Sensitivity, Gamma float64
		NoiseStd                       float64                 `json:"noise_std"`
		EffectiveClip                  float64                 `json:"effective_clip"`
		SecureAggregation              *plan.SecureAggregation `json:"secure_aggregation"`
	}
	get := func(args ...string) rep {
		r := runOfl(t, append(smallWith("-reps", "1"), append(args, "-json")...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var v rep
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	plain, sec := get(), get("-secure-aggregation", "-threshold", "3", "-colluders", "1")
	// n = 3, tau = 2, B_g = 5: 3 (10 2^k + 1/2) <= 2^53 holds at k = 48
	// (30 2^48 = 8.44e15 <= 9.01e15 - 1.5), not at 49; d = 5. The effective
	// clip is 5 + 5 term / tau (plan.Plan.EffectiveClip).
	const k = 48
	term := math.Sqrt(5) * math.Ldexp(1, -k-1)
	sa := sec.SecureAggregation
	if sa == nil || *sa != (plan.SecureAggregation{Threshold: 3, Colluders: 1, RingBits: 64, ScaleBits: k, Dim: 5, QuantizationTerm: sa.QuantizationTerm}) ||
		math.Abs(sa.QuantizationTerm/term-1) > 1e-15 {
		t.Fatalf("secure aggregation %+v, want threshold 3, colluders 1, ring 64, k %d, d 5, term %v", sa, k, term)
	}
	bg := 5 + 5*term/2
	want, err := accountant.ReleaseSensitivity(bg, 3, accountant.ReplaceOne, sec.Gamma)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Eps != 5 || sec.Delta != 1e-3 || sec.Sensitivity < want || sec.Sensitivity > want*(1+1e-15) || !(sec.Sensitivity > plain.Sensitivity) || sec.NoiseStd < plain.NoiseStd || !(plain.NoiseStd > 0) {
		t.Errorf("secure record eps %v, delta %v, sensitivity %v, std %v; want (5, 1e-3), sensitivity %v > plain %v, std >= %v", sec.Eps, sec.Delta, sec.Sensitivity, sec.NoiseStd, want, plain.Sensitivity, plain.NoiseStd)
	}
	if !(sec.EffectiveClip >= bg) || sec.EffectiveClip > bg*(1+1e-15) || plain.EffectiveClip != 0 || plain.SecureAggregation != nil {
		t.Errorf("effective clip %v (plain %v, %+v), want 5 + 5 term/2 = %v rounded up", sec.EffectiveClip, plain.EffectiveClip, plain.SecureAggregation, bg)
	}
	// The flags go into the plan and come back from it (ofl evaluate).
	c, err := parseArgs(append(append([]string{}, small...), "-secure-aggregation", "-threshold", "3", "-colluders", "1"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.runPlan(5)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	args, err := evaluateArgs(map[string]string{"seed": "7"}, p, "run.json")
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseArgs(args)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if q := back.runPlan(5); !reflect.DeepEqual(p, q) || q.SecureAggregation.Colluders != 1 {
		t.Errorf("plan %+v read back as %+v", p.SecureAggregation, q.SecureAggregation)
	}
	// Without -colluders the plan assumes none (c = 0, no field in its
	// JSON: the plan a run had before the flag), and evaluate of such a
	// run with -colluders 1 contradicts it.
	c, err = parseArgs(append(append([]string{}, small...), "-secure-aggregation", "-threshold", "3"))
	if err != nil {
		t.Fatal(err)
	}
	p = c.runPlan(5)
	if js, err := p.Marshal(); err != nil || p.SecureAggregation.Colluders != 0 || strings.Contains(string(js), "colluders") {
		t.Errorf("plan without -colluders: %v, %s", err, js)
	}
	if _, err := evaluateArgs(map[string]string{"colluders": "1"}, p, "run.json"); err == nil || !strings.Contains(err.Error(), "-colluders 1 contradicts the run's plan in run.json: colluders 0") {
		t.Errorf("evaluate -colluders 1 of a run without colluders: %v", err)
	}
}

// The secure run's models, round by round: from the secure model x^r with
// the same noise, the plain release differs from the secure one by at most
// step / (n tau) times n quantization terms (every present update moved by
// at most the term), plus the float64 rounding of the plain sum (a few ulps
// of the model). The quantization term of ofl's settings (about 2^-60 of the
// update's scale) is below that rounding: quantization at these scale bits
// is invisible in a float64 model.
func TestSecureModelsWithinTerm(t *testing.T) {
	c, err := parseArgs(append(append([]string{}, small...), "-secure-aggregation"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := loadData(c)
	if err != nil {
		t.Fatal(err)
	}
	m := model.Logistic{L2: c.l2}
	dim := m.NumParams(ds.Dim)
	pl := c.runPlan(ds.Dim)
	f, priv, err := buildNoise(t.Context(), pl)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.optimiser()
	cfg.Privacy = priv
	shape := fedopt.Shape{Learners: c.learners, Rounds: c.rounds, Tau: c.tau, Dim: dim}
	noiseAt := func(r int) mechanism.Mechanism {
		nz, err := mechanism.New(f, dim, priv.NoiseStd, mechanism.WithSeed(11), mechanism.WithStartRound(r))
		if err != nil {
			t.Fatal(err)
		}
		return nz
	}
	srv, err := fedopt.NewServer(cfg, shape, noiseAt(0))
	if err != nil {
		t.Fatal(err)
	}
	learners := make([]*fedopt.Learner, c.learners)
	for i := range learners {
		if learners[i], err = fedopt.NewLearner(m, ds.Stream(i), cfg, c.tau, dim); err != nil {
			t.Fatal(err)
		}
	}
	var xs [][]float64
	err = fedopt.Simulate(t.Context(), srv, learners, fedopt.SimOptions{Observe: func(r int, x []float64) error {
		xs = append(xs, append([]float64(nil), x...))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	plainCfg := cfg
	plainCfg.Quantizer, plainCfg.Privacy = nil, nil
	bound := cfg.ServerStep(c.tau) / float64(c.learners*c.tau) * float64(c.learners) * pl.SecureAggregation.QuantizationTerm
	for r := 0; r < c.rounds; r++ {
		ps, err := fedopt.NewServerAt(plainCfg, shape, noiseAt(r), r, xs[r])
		if err != nil {
			t.Fatal(err)
		}
		updates := make([][]float64, c.learners)
		for i, l := range learners {
			updates[i] = make([]float64, dim)
			if err := l.Update(updates[i], r, xs[r]); err != nil {
				t.Fatal(err)
			}
		}
		if err := ps.Release(updates); err != nil {
			t.Fatal(err)
		}
		for k, v := range ps.Model() {
			slack := 8 * math.Abs(v) * 0x1p-52
			if d := math.Abs(v - xs[r+1][k]); d > bound+slack {
				t.Fatalf("round %d, entry %d: |plain - secure| = %v > %v + rounding %v", r, k, d, bound, slack)
			}
		}
	}
}
