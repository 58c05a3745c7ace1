package plan

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The default threshold is the smallest majority above two thirds, and every
// default is valid (n/2 < T <= n), checked by brute force.
func TestDefaultThreshold(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 3, 4: 3, 5: 4, 10: 7, 50: 34} {
		if got := DefaultThreshold(n); got != want {
			t.Errorf("DefaultThreshold(%d) = %d, want %d", n, got, want)
		}
	}
	for n := 1; n <= 200; n++ {
		T := DefaultThreshold(n)
		if !(2*T > n && T <= n && 3*T > 2*n && 3*(T-1) <= 2*n) {
			t.Errorf("n = %d: default threshold %d is not floor(2n/3) + 1 in (n/2, n]", n, T)
		}
	}
}

// securePlan is a plan of n = 16 learners, tau = 2, clip 1 and d = 2^16, whose
// numbers are worked by hand: k = 47 (16 (2 2^k + 1/2) = 2^(k+5) + 8 <= 2^53
// holds at 47, not at 48), term = sqrt(2^16) 2^-48 = 2^-40.
func securePlan(t *testing.T, algo, rel string) *Plan {
	t.Helper()
	sa, err := NewSecureAggregation(16, 2, 1, 1<<16, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &Plan{Algorithm: algo, Rounds: 8, Learners: 16, Tau: 2, Clip: 1, SecureAggregation: sa,
		Target: &Target{Eps: 2, Delta: 1e-5, Relation: rel}}
}

func TestSecureAggregationWorked(t *testing.T) {
	p := securePlan(t, AlgoCorrelated, "")
	sa := p.SecureAggregation
	if sa.Threshold != 11 || sa.RingBits != 64 || sa.ScaleBits != 47 || sa.Dim != 1<<16 || sa.QuantizationTerm != 0x1p-40 {
		t.Fatalf("secure aggregation %+v, want T 11, ring 64, k 47, d 2^16, term 2^-40", *sa)
	}
	// B_g' = B_g + 5 term / tau (correlated, replace-one); B_g + 5 term for
	// the baselines; twice the share for add-remove (refused for the
	// correlated algorithm at tau = 2, below). Of the five, one is the
	// quantization of the learner's update and four the rounding of the
	// server's division by N (8 term / N for the two neighbours). All exact
	// here: 5 2^-41 and 10 2^-40 need 3 bits, and 1 + them 42.
	for _, c := range []struct {
		algo, rel string
		clip      float64
		sens      float64 // factor B_g' gamma / n with gamma = 1
	}{
		{AlgoCorrelated, "", 1 + 5*0x1p-41, 2 * (1 + 5*0x1p-41) / 16},
		{AlgoIndependent, "", 1 + 5*0x1p-40, 2 * (1 + 5*0x1p-40) / 16},
		{AlgoBaselineCorrelated, "add-remove", 1 + 10*0x1p-40, (1 + 10*0x1p-40) / 16},
	} {
		p := securePlan(t, c.algo, c.rel)
		if got := p.EffectiveClip(); got != c.clip {
			t.Errorf("%s %s: effective clip 1 + %g, want 1 + %g", c.algo, c.rel, got-1, c.clip-1)
		}
		if err := p.Calibrate(t.Context(), singleMetrics(c.algo, 1)); err != nil {
			t.Fatal(err)
		}
		r := p.Privacy
		if r.Sensitivity != c.sens || r.EffectiveClip != c.clip || r.QuantizationTerm != 0x1p-40 {
			t.Errorf("%s %s: sensitivity %v, effective clip %v, term %v; want %v, %v, 2^-40", c.algo, c.rel, r.Sensitivity, r.EffectiveClip, r.QuantizationTerm, c.sens, c.clip)
		}
		if !strings.Contains(r.Rule, "quantization term") || !strings.Contains(r.Rule, "secure aggregation") {
			t.Errorf("rule %q does not name the quantization term", r.Rule)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("calibrated secure plan: %v", err)
		}
	}
	if err := securePlan(t, AlgoCorrelated, "add-remove").Calibrate(t.Context(), singleMetrics(AlgoCorrelated, 1)); err == nil {
		t.Error("add-remove calibrated for the correlated algorithm at tau = 2 (fedopt.TestAddRemoveAlgorithm1: its update moves by more)")
	}
}

// The calibration of a secure plan is the plain calibration with clip B_g'
// (computed here from the quantizer's numbers, not by the plan), for the
// exact, paper and amplified recipes.
func TestSecureCalibrationIsPlainWithEffectiveClip(t *testing.T) {
	for _, c := range []struct {
		algo, rel, part string
		cal             Calibration
		n, tau, d       int
		clip, sampling  float64
	}{
		{AlgoCorrelated, "", "single", Exact, 10, 5, 7, 0.1, 0},
		{AlgoCorrelated, "add-remove", "single", Paper, 3, 1, 100, 3, 0},
		{AlgoIndependent, "", "single", Paper, 5, 4, 20, 1, 0},
		{AlgoBaselineCorrelated, "", "epochs:2", Exact, 255, 3, 1000000, 1e-3, 0},
		{AlgoCorrelated, "", "minsep:4", Exact, 50, 1, 10, 1, 0.5},
	} {
		sa, err := NewSecureAggregation(c.n, c.tau, c.clip, c.d, 0)
		if err != nil {
			t.Fatal(err)
		}
		strat := ""
		if c.sampling > 0 {
			strat = "banded:bands=4"
		}
		mk := func(clip float64, sa *SecureAggregation) *Plan {
			return &Plan{Algorithm: c.algo, Strategy: strat, Participation: c.part, Rounds: 8, Learners: c.n, Tau: c.tau, Clip: clip, SecureAggregation: sa,
				Target: &Target{Eps: 1.5, Delta: 1e-6, Relation: c.rel, Calibration: c.cal, Sampling: c.sampling}}
		}
		sec := mk(c.clip, sa)
		f, err := sec.Factorize(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := sec.Calibrate(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		// Independent B_g': term = sqrt(d) 2^-(k+1), share 5 term / tau or
		// 5 term (term for the quantization, 4 term for the server's
		// rounding of its division by N; see TestSecureAggregationWorked).
		term := math.Sqrt(float64(c.d)) * math.Pow(2, -float64(sa.ScaleBits+1))
		share := 5 * term
		if c.algo == AlgoCorrelated {
			share /= float64(c.tau)
		}
		if c.rel == "add-remove" {
			share *= 2
		}
		plain := mk(c.clip+share, nil)
		if err := plain.Calibrate(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		s, p := sec.Privacy, plain.Privacy
		if s.Sensitivity < p.Sensitivity || s.Sensitivity > p.Sensitivity*(1+1e-15) || math.Abs(s.NoiseStd/p.NoiseStd-1) > 1e-12 {
			t.Errorf("%+v: secure sensitivity %v, std %v; plain with B_g' %v, %v", c, s.Sensitivity, s.NoiseStd, p.Sensitivity, p.NoiseStd)
		}
		if s.QuantizationTerm != sa.QuantizationTerm || math.Abs(term/sa.QuantizationTerm-1) > 1e-15 {
			t.Errorf("%+v: record term %v, plan term %v, independent %v", c, s.QuantizationTerm, sa.QuantizationTerm, term)
		}
	}
}

// A secure plan travels: it round-trips through JSON, is omitted when nil,
// and every field that follows from n, tau, clip and d is recomputed.
func TestSecureAggregationValidate(t *testing.T) {
	p := securePlan(t, AlgoCorrelated, "")
	p.Model = &Model{Name: "logistic", Features: 1 << 16}
	if _, err := p.Build(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"secure_aggregation":{"threshold":11,"ring_bits":64,"scale_bits":47,"dim":65536,"quantization_term":9.094947017729282e-13}`)) {
		t.Errorf("JSON %s lacks the secure aggregation", data)
	}
	q, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	p.Format, p.Workload, p.Participation = Format, WorkloadPrefix, "single"
	if !reflect.DeepEqual(p, q) {
		t.Errorf("read back %+v, want %+v", q, p)
	}
	if plain, _ := (&Plan{Rounds: 1}).Marshal(); bytes.Contains(plain, []byte("secure")) {
		t.Errorf("plain plan %s mentions secure aggregation", plain)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"threshold":11`, `"threshold":8`, "threshold 8, want n/2 < T <= n"},
		{`"threshold":11`, `"threshold":17`, "threshold 17"},
		{`"ring_bits":64`, `"ring_bits":32`, "ring_bits 32, want 64"},
		{`"scale_bits":47`, `"scale_bits":48`, "scale_bits 48, want 47"},
		{`"scale_bits":47`, `"scale_bits":56`, "scale_bits 56, want 47 (the largest k with n (tau clip 2^k + 1/2) <= 2^53"},
		{`"scale_bits":47`, `"scale_bits":46`, "scale_bits 46, want 47"},
		{`"dim":65536`, `"dim":65537`, "quantization_term"},
		{`"dim":65536,"quantization_term":9.094947017729282e-13`, `"dim":65536,"quantization_term":9.094947017729284e-13`, "quantization_term"},
		{`"quantization_term":9.094947017729282e-13,"effective_clip"`, `"quantization_term":0,"effective_clip"`, "privacy.quantization_term"},
		{`"effective_clip":1.0000000000022737`, `"effective_clip":1`, "privacy.effective_clip"},
		{`"effective_clip":1.0000000000022737`, `"effective_clip":1.0000000000004547`, "privacy.effective_clip"},
		{`"learners":16`, `"learners":15`, "scale_bits"},
	} {
		bad := strings.Replace(string(data), c.from, c.to, 1)
		if bad == string(data) {
			t.Fatalf("%q not in %s", c.from, data)
		}
		_, err := Parse([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s -> %s: %v, want a one-line error with %q", c.from, c.to, err, c.want)
		}
	}
	// The logistic model's parameter count is its features.
	p.Model.Features = 3
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "secure_aggregation.dim") {
		t.Errorf("dim against 3 features: %v", err)
	}
	// A non-private run may use secure aggregation: no calibration term.
	np := &Plan{Algorithm: AlgoNonPrivate, Rounds: 3, Learners: 4, Tau: 1, Clip: 2, SecureAggregation: mustSA(t, 4, 1, 2, 5, 0)}
	if err := np.Validate(); err != nil {
		t.Errorf("non-private secure plan: %v", err)
	}
	np.Clip = 0
	if err := np.Validate(); err == nil || !strings.Contains(err.Error(), "clip > 0") {
		t.Errorf("secure plan without clipping: %v", err)
	}
	for _, c := range []struct {
		n, tau    int
		clip      float64
		dim, T    int
		wantError string
	}{
		{4, 1, 1, 3, 2, "threshold 2"},
		{4, 1, 1, 3, 5, "threshold 5"},
		{4, 1, 1, 0, 0, "dim 0"},
		{4, 0, 1, 3, 0, "tau = 0"},
		{4, 1, 0, 3, 0, "clip = 0"},
		{1, 1, 1, 3, 1, "with 1 learners, want 2..255"},
		{256, 1, 1, 3, 0, "with 256 learners, want 2..255"},
	} {
		_, err := NewSecureAggregation(c.n, c.tau, c.clip, c.dim, c.T)
		if err == nil || !strings.Contains(err.Error(), c.wantError) {
			t.Errorf("NewSecureAggregation(%d, %d, %v, %d, %d) = %v, want %q", c.n, c.tau, c.clip, c.dim, c.T, err, c.wantError)
		}
	}
}

func mustSA(t *testing.T, n, tau int, clip float64, dim, T int) *SecureAggregation {
	t.Helper()
	sa, err := NewSecureAggregation(n, tau, clip, dim, T)
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// The collusion rule at its boundary, worked by hand: with n = 10, T = 6
// gives 2T = 12 > 10 + c for c <= 1 only; T = 8 gives 16 > 10 + c for c <= 5;
// T = n = 10 gives 20 > 10 + c for c <= 9 = n - 1. The default threshold of
// n = 10 is 7: c <= 3. And a brute force over n <= 40 against the rule as
// stated (0 <= c < T, 2T > n + c), counted without MaxColluders.
func TestColludersBoundary(t *testing.T) {
	for _, c := range []struct{ n, T, maxC int }{{10, 6, 1}, {10, 8, 5}, {10, 10, 9}, {10, 7, 3}, {2, 2, 1}, {3, 2, 0}, {255, 128, 0}, {255, 255, 254}} {
		if got := MaxColluders(c.n, c.T); got != c.maxC {
			t.Errorf("MaxColluders(%d, %d) = %d, want %d", c.n, c.T, got, c.maxC)
		}
		for col := -1; col <= c.n+1; col++ {
			err := CheckColluders(c.n, c.T, col)
			if ok := col >= 0 && col <= c.maxC; ok != (err == nil) {
				t.Errorf("CheckColluders(n %d, T %d, c %d) = %v, want allowed %v", c.n, c.T, col, err, ok)
			}
		}
	}
	for n := 2; n <= 40; n++ {
		for T := n/2 + 1; T <= n; T++ {
			allowed := 0
			for col := 0; col < n; col++ {
				if col < T && 2*T > n+col {
					allowed++
				}
				if ok := CheckColluders(n, T, col) == nil; ok != (col < T && 2*T > n+col) {
					t.Fatalf("n %d, T %d, c %d: allowed %v", n, T, col, ok)
				}
			}
			if allowed-1 != MaxColluders(n, T) {
				t.Fatalf("n %d, T %d: %d values of c allowed, MaxColluders %d", n, T, allowed, MaxColluders(n, T))
			}
		}
		// Every plan written before Colluders (c = 0) validates at every
		// threshold it could have had.
		if CheckColluders(n, n/2+1, 0) != nil {
			t.Errorf("n %d: c = 0 refused at T = %d", n, n/2+1)
		}
	}
}

// A plan's colluders are checked where they enter (Parse, Validate), with
// a one-line error naming c, T and n and the fix; c round-trips through
// JSON, and a plan without the field (every plan before it) reads as c = 0
// and writes the same bytes back.
func TestSecureAggregationColluders(t *testing.T) {
	sa := mustSA(t, 10, 1, 1, 4, 6)
	p := &Plan{Algorithm: AlgoNonPrivate, Rounds: 3, Learners: 10, Tau: 1, Clip: 1, SecureAggregation: sa}
	old, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(old, []byte("colluders")) {
		t.Errorf("a plan with c = 0 writes %s: not the bytes of a plan written before the field", old)
	}
	q, err := Parse(old)
	if err != nil || q.SecureAggregation.Colluders != 0 {
		t.Fatalf("plan without colluders: %v, %+v", err, q)
	}
	if again, _ := q.Marshal(); !bytes.Equal(again, old) {
		t.Errorf("plan without colluders writes back %s, was %s", again, old)
	}
	sa.Colluders = 1
	with, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(with, []byte(`"threshold":6,"colluders":1,`)) {
		t.Errorf("JSON %s lacks colluders 1", with)
	}
	q, err = Parse(with)
	if err != nil || !reflect.DeepEqual(q.SecureAggregation, sa) {
		t.Fatalf("read back %v, %+v; want %+v", err, q, sa)
	}
	for _, c := range []struct {
		from, to string
		want     []string
	}{
		{`"colluders":1`, `"colluders":2`, []string{"colluders 2 with threshold 6 of 10 learners", "T = 6 allows c <= 1", "raise the threshold to 7 or more, or lower the colluders"}},
		{`"threshold":6,"colluders":1`, `"threshold":8,"colluders":6`, []string{"colluders 6 with threshold 8", "allows c <= 5", "threshold to 9"}},
		{`"colluders":1`, `"colluders":-1`, []string{"secure_aggregation.colluders -1 with threshold 6 of 10 learners: want 0 <= c < T", "c counts learners"}},
		{`"threshold":6,"colluders":1`, `"threshold":10,"colluders":10`, []string{"colluders 10 with threshold 10 of 10 learners", "allows c <= 9", "no threshold T <= n allows c >= n"}},
	} {
		bad := strings.Replace(string(with), c.from, c.to, 1)
		if bad == string(with) {
			t.Fatalf("%q not in %s", c.from, with)
		}
		_, err := Parse([]byte(bad))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v, want a one-line error with %q", c.to, err, w)
			}
		}
	}
	for _, c := range []struct{ T, col int }{{8, 5}, {10, 9}, {6, 0}} {
		sa.Threshold, sa.Colluders = c.T, c.col
		if err := p.Validate(); err != nil {
			t.Errorf("T %d, c %d: %v", c.T, c.col, err)
		}
	}
}
